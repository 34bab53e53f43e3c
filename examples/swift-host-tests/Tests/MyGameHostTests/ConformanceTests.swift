import KinetraceConformance
import KinetraceWire
import MyGameHost
import Testing

/// Kinetrace's MotionLink v1 suite against the game's host, in process: a FAIL fails `swift test`.
@Suite struct ConformanceTests {
    /// The timing cases need a quiet machine; CI runs the rest. The cap matches the host's.
    static var options: Conformance.Options {
        var options = Conformance.Options()
        options.exclude = ["AC-ACK-DEADLINE", "AC-ACK-PROMPT", "AC-LOAD"]
        options.maxControllers = 256
        return options
    }

    @Test func theHostConforms() throws {
        let host = try MyGameHost()
        let report = try Conformance.check(.motionLinkV1, against: .inProcess { host.receive($0, from: $1) }, options: Self.options)
        for result in report.results where result.fails(strict: false) {
            Issue.record("\(result.info.id) \(result.verdict.name): \(result.verdict.reason ?? "")")
        }
        #expect(!report.failed(strict: false))
    }

    /// The planted bug (an ack for every frame) is caught, by the case that names its requirement.
    @Test func aPlantedBugIsCaught() throws {
        let host = try MyGameHost(acksEverything: true)
        var options = Self.options
        options.cases = ["AC-ACK-UNSOLICITED"]
        let report = try Conformance.check(.motionLinkV1, against: .inProcess { host.receive($0, from: $1) }, options: options)
        #expect(report.failed(strict: false))
        #expect(report.results.first?.verdict.name == "FAIL")
    }
}
