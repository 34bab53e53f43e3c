import KinetraceConformance
import KinetraceHost
import KinetraceSupport
import KinetraceTestSupport
import KinetraceWire
import Testing

/// Issue 16, item 7: the suite from another program's tests, through `Conformance.check`.
@Suite struct LibraryEntryTests {
    /// A host built from the library's host core, as an embedder would write one.
    final class CoreHost: @unchecked Sendable {  // called from the adapter's one thread only
        var core: HostCore<String>
        init(maximumControllers: Int) { core = HostCore(wireProtocol: MotionLinkV1(), rule: .default, maximumControllers: maximumControllers) }
        func receive(_ datagram: [UInt8], from controller: String) -> [[UInt8]] {
            guard let decision = core.handle(datagram, from: controller, receivedNs: SystemClock.monotonicNs()),
                  let reply = MotionLinkV1.reply(to: decision) else { return [] }
            return [reply]
        }
    }

    /// The timing cases belong to a quiet machine (as in the CLI tests); every other case passes.
    static var untimed: Conformance.Options {
        var options = Conformance.Options()
        options.exclude = ["AC-ACK-DEADLINE", "AC-ACK-PROMPT", "AC-LOAD"]
        options.parameters.maxControllers = 256
        return options
    }

    @Test func aCorrectInProcessHostPassesEveryCase() throws {
        let host = CoreHost(maximumControllers: 256)
        var seen: [String] = []
        let report = try Conformance.check(MotionLinkV1(), against: .inProcess { host.receive($0, from: $1) }, options: Self.untimed) {
            seen.append($0.info.id)
        }
        #expect(report.results.count == 13 && seen.count == 13)
        #expect(!report.failed(strict: true), "\(report.results.map { "\($0.info.id) \($0.verdict.name) \($0.verdict.reason ?? "")" })")
        #expect(report.results.allSatisfy { $0.verdict.name == "PASS" })
        #expect(report.target.hasPrefix("an in-process host on 127.0.0.1:"))
    }

    /// A host that never acks fails, and the verdicts say which requirement.
    @Test func aHostThatNeverAcksFails() throws {
        var options = Conformance.Options()
        options.cases = ["AC-TRIGGER-THRESHOLD", "AC-ACK-FORMAT"]
        let report = try Conformance.check(MotionLinkV1(), against: .inProcess { _, _ in [] }, options: options)
        #expect(report.failed(strict: false))
        #expect(report.results.count == 2)
        #expect(report.results.contains { $0.info.id == "AC-TRIGGER-THRESHOLD" && $0.verdict.name == "FAIL" }, "\(report.results.map(\.verdict.name))")
    }

    /// The same entry point runs an exec host behind the stdio adapter: kinetrace's own.
    @Test func anExecHostThroughTheStdioAdapter() throws {
        var options = Conformance.Options()
        options.cases = ["AC-ACK-FORMAT", "AC-TRIGGER-REFRACTORY"]
        let command = "exec '\(try Fixture.binary.path)' host --stdio"
        let report = try Conformance.check(MotionLinkV1(), against: .exec(command), options: options)
        #expect(!report.failed(strict: true), "\(report.results.map { "\($0.info.id) \($0.verdict.name)" })")
        #expect(report.results.count == 2)
    }

    @Test func whatCannotRunIsAFailureNotAVerdict() throws {
        var none = Conformance.Options()
        none.cases = ["AC-NO-SUCH-CASE"]
        #expect(throws: Conformance.Failure.self) { try Conformance.check(MotionLinkV1(), against: .inProcess { _, _ in [] }, options: none) }
        do {
            _ = try Conformance.check(AttitudeStream(), against: .inProcess { _, _ in [] })
            Issue.record("a byte-stream protocol has no in-process datagram host")
        } catch {
            #expect(error.code == .unreachable && error.description.contains("byte stream"), "\(error)")
        }
    }
}
