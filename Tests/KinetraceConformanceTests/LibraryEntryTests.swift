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

    /// The public entry point checks its options where they enter: out of range is a
    /// `bad_options` failure naming the option, before any case runs; never clamped.
    @Test func optionsOutOfRangeAreRefusedNotClamped() throws {
        for (edit, named) in [({ (o: inout Conformance.Options) in o.maxControllers = 0 }, "maxControllers"),
                              ({ (o: inout Conformance.Options) in o.maxConnections = 100_000 }, "maxConnections"),
                              ({ (o: inout Conformance.Options) in o.replyDeadlineMs = .nan }, "replyDeadlineMs"),
                              ({ (o: inout Conformance.Options) in o.replyDeadlineMs = -1 }, "replyDeadlineMs")] {
            var options = Conformance.Options()
            edit(&options)
            var ran = 0
            #expect {
                _ = try Conformance.check(.motionLinkV1, against: .inProcess { _, _ in [] }, options: options) { _ in ran += 1 }
            } throws: { error in
                guard let failure = error as? Conformance.Failure else { return false }
                return failure.code == .badOptions && failure.description.hasPrefix(named)
            }
            #expect(ran == 0)
        }
        #expect(throws: ReferenceHostLogic.Failure.self) { _ = try ReferenceHostLogic(.motionLinkV1, maximumControllers: 0) }
        // The handle path names protocols it does not have.
        #expect(throws: WireProtocolHandle.Failure.self) { _ = try WireProtocolHandle.named("no-such-protocol") }
        #expect(try WireProtocolHandle.named("keepcalm-json").isDatagram)
    }

    /// The public host logic, as an embedder uses it, passes every untimed case: the same
    /// decisions as `kinetrace host`, through the public API only.
    @Test func thePublicHostLogicPassesTheSuite() throws {
        final class Embedded: @unchecked Sendable {  // called from the adapter's one thread only
            var logic: ReferenceHostLogic
            init() throws { logic = try ReferenceHostLogic(.motionLinkV1, maximumControllers: 256) }
        }
        let host = try Embedded()
        var options = Conformance.Options()
        options.exclude = ["AC-ACK-DEADLINE", "AC-ACK-PROMPT", "AC-LOAD"]
        options.maxControllers = 256
        let report = try Conformance.check(.motionLinkV1, against: .inProcess { datagram, controller in
            host.logic.receive(datagram, from: controller, receivedNs: SystemClock.monotonicNs())
        }, options: options)
        #expect(!report.failed(strict: true), "\(report.results.map { "\($0.info.id) \($0.verdict.name)" })")
        #expect(report.results.count == 13)
        #expect(host.logic.decisions > 0)
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
