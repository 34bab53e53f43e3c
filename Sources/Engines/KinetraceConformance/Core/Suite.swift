#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// One protocol's conformance suite: its cases, composed from small case
/// types (as swift-certificates composes `RFC5280Policy` from its
/// policies), and how to tell that a host is there at all.
package struct ProtocolSuite: Sendable {
    package var wireProtocol: any WireProtocol
    /// The spec and its version, as reports name them.
    public package(set) var specVersion: String
    /// Active cases against a live host, in report order.
    package var activeCases: [any ActiveCase]
    /// Passive cases on a capture, in report order.
    package var passiveCases: [any PassiveCase]
    /// A message a conforming host answers (given the stamp to use and the rule): sent once,
    /// from a fresh controller, before the cases run.
    package var preflight: @Sendable (_ senderTimeMs: UInt64, _ parameters: SuiteParameters) -> [UInt8]
    /// The host's decisions show nowhere on the wire: the active cases judge them on the
    /// stdio adapter's observation channel only, so a host on a socket leaves them INCONCLUSIVE.
    package var judgesObservations: Bool

    package init(wireProtocol: any WireProtocol, specVersion: String, activeCases: [any ActiveCase],
                passiveCases: [any PassiveCase], judgesObservations: Bool = false,
                preflight: @escaping @Sendable (UInt64, SuiteParameters) -> [UInt8]) {
        self.judgesObservations = judgesObservations
        self.wireProtocol = wireProtocol
        self.specVersion = specVersion
        self.activeCases = activeCases
        self.passiveCases = passiveCases
        self.preflight = preflight
    }
}

/// A protocol that has a conformance suite. Each suite folder conforms its
/// protocol in an extension; the suite is found from the protocol alone, so
/// no list of suites needs editing when a protocol is added.
package protocol ConformanceSuiteProviding: WireProtocol {
    static var conformanceSuite: ProtocolSuite { get }
}

/// Runs suites: selection, the active and passive runners, and a run's report.
package enum ConformanceSuite {
    package static let version = "0.1.0"

    /// The suite of `wireProtocol`, if it has one.
    package static func suite(for wireProtocol: any WireProtocol) -> ProtocolSuite? {
        if let compiled = wireProtocol as? any ConformanceSuiteProviding { return type(of: compiled).conformanceSuite }
        // A declaration that is exactly a compiled protocol's (same digest) means what that protocol means,
        // so its suite judges it: the passive pass reads messages through the declared value, and cases
        // that decode with the compiled codec decode the same bytes the same way (check-protocol-identity).
        guard let declared = wireProtocol.declaration else { return nil }
        guard let named = ProtocolRegistry.standard.named(declared.name),
              let compiled = named as? any ConformanceSuiteProviding, let codec = named as? any CompiledWireProtocol,
              type(of: codec).declarationDigest == declared.digest else { return DeclaredSuite.make(wireProtocol, declared) }
        var suite = type(of: compiled).conformanceSuite
        suite.wireProtocol = wireProtocol
        return suite
    }

    /// Cases whose ID matches one of `include` (all when empty) and none of `exclude` (shell globs).
    package static func select<Case>(_ cases: [Case], include: [String], exclude: [String], id: (Case) -> String) -> [Case] {
        cases.filter { c in
            (include.isEmpty || include.contains { matches(id(c), $0) }) && !exclude.contains { matches(id(c), $0) }
        }
    }

    package static func select(_ cases: [any PassiveCase], include: [String], exclude: [String]) -> [any PassiveCase] {
        select(cases, include: include, exclude: exclude) { $0.info.id }
    }

    package static func select(_ cases: [any ActiveCase], include: [String], exclude: [String]) -> [any ActiveCase] {
        select(cases, include: include, exclude: exclude) { $0.info.id }
    }

    /// Runs the active cases against a live host over one link, each case
    /// from controllers the host has never seen, its samples stamped with the
    /// wall clock and newer than any earlier case's.
    ///
    /// A preflight message first tells "nothing is there" (a harness error for
    /// every case) from a host that is there; a host that stops listening or
    /// exits later did so on a case's traffic, which that case then fails.
    package static func run(_ cases: [any ActiveCase], of suite: ProtocolSuite, over link: any ControllerLink, target: String,
                           parameters: SuiteParameters, progress: (CaseResult) -> Void = { _ in }) -> SuiteReport {
        let started = SystemClock.monotonicNs()
        var results: [CaseResult] = []
        var newest = UInt64(SystemClock.realtimeNs() / 1_000_000)
        var hostEnd: HostEnd?
        var reportedOnPreflight = false
        var hostGone = preflight(suite, link, target: target, parameters: parameters, newest: &newest, observed: &reportedOnPreflight,
                                 hostEnd: &hostEnd)
        let absent = hostGone != nil
        for c in cases {
            let caseStarted = SystemClock.monotonicNs()
            var result: CaseResult
            if let hostGone {
                result = CaseResult(c.info, .error(absent ? hostGone : "not run: \(hostGone)"))
            } else {
                let probe = LiveProbe(link: link, wireProtocol: suite.wireProtocol,
                                      t0: max(UInt64(SystemClock.realtimeNs() / 1_000_000), newest + 1))
                probe.hostReportsDecisions = reportedOnPreflight
                do throws(SocketError) {
                    result = try c.run(probe, parameters)
                    newest = max(newest, probe.newestSenderTimeMs)
                    if probe.strayObservationCount > 0, result.verdict != .pass {
                        // Say what the host did report, so a mixed-up controller id is not read as silence.
                        let shown = probe.strayObservations.map { "\"\($0.observation.decision)\" under controller id \($0.controllerID)" }
                        result.evidence.append("the host also reported \(probe.strayObservationCount) decision(s) under controller ids that are none of "
                                               + "this case's (\(probe.controllerIDs.map(String.init).joined(separator: ", "))): "
                                               + shown.joined(separator: "; ") + (probe.strayObservationCount > shown.count ? "; …" : ""))
                    }
                    let stopped = probe.refused ? "the host stopped listening (ICMP port unreachable)" : probe.hostFailure
                    if let flood = probe.flooded {
                        // A host owes at most one reply per sample; past the limit nothing more is kept or run.
                        result.verdict = .fail("flooded: \(flood)")
                        result.evidence.append("expected at most one reply per message, found \(probe.repliesReceived) replies "
                                               + "(\(probe.replyBytesReceived) bytes) and \(probe.observationsReceived) decisions "
                                               + "to \(probe.samplesSent) messages; the run stopped here")
                        hostGone = "the host flooded the harness during \(c.info.id)"
                    } else if let stopped {
                        hostEnd = hostEnd ?? probe.hostEnd
                        if case .fail = result.verdict {} else { result.verdict = .fail("\(stopped) during this case's traffic") }
                        result.evidence.append("expected the host to keep serving, found: \(stopped)")
                        hostGone = "\(stopped) during \(c.info.id)"
                    }
                } catch {
                    result = CaseResult(c.info, .error(error.description))
                }
            }
            result.durationNs = SystemClock.monotonicNs() - caseStarted
            progress(result)
            results.append(result)
        }
        var report = SuiteReport(target: target, mode: "active", specVersion: suite.specVersion, parameters: parameters, results: results,
                                 elapsedNs: SystemClock.monotonicNs() - started)
        report.hostEnd = hostEnd
        report.describe(suite.wireProtocol)
        return report
    }

    /// The suite's preflight message from a fresh controller, waiting up to 500 ms for any reply:
    /// why the host is not there (refused, or an exec host that ended), or nil.
    /// Silence is not absence: a host that never answers is for the cases to fail.
    static func preflight(_ suite: ProtocolSuite, _ link: any ControllerLink, target: String, parameters: SuiteParameters,
                          newest: inout UInt64, observed: inout Bool, hostEnd: inout HostEnd?) -> String? {
        let probe = LiveProbe(link: link, wireProtocol: suite.wireProtocol, t0: newest + 1)
        do throws(SocketError) {
            let c = try probe.controllers(1).lowerBound
            probe.send(suite.preflight(probe.t0, parameters), from: c)
            probe.collect(forMs: 500) { _ in !probe.replies.isEmpty || !probe.observations.isEmpty || probe.refused || probe.hostFailure != nil }
        } catch {
            return error.description
        }
        // A host that reported a decision on the preflight message has shown its observation channel works:
        // from then on, a case it reports nothing in has failed, not gone unjudged.
        observed = !probe.observations.isEmpty
        // A host that broke the framing on the preflight ends the run as SA-ERROR-1 says, report and all.
        if case .brokeFraming? = probe.hostEnd { hostEnd = probe.hostEnd }
        newest = max(newest, probe.newestSenderTimeMs)
        if probe.refused { return "the host refused: ICMP port unreachable (nothing listens on \(target))" }
        return probe.hostFailure
    }

    static func matches(_ id: String, _ pattern: String) -> Bool { fnmatch(pattern, id, 0) == 0 }

    /// Runs the passive cases over a capture in memory.
    package static func run(_ cases: [any PassiveCase], of suite: ProtocolSuite, on observation: CaptureObservation,
                           parameters: SuiteParameters) -> SuiteReport {
        let started = SystemClock.monotonicNs()
        var pass = PassivePass(cases, wireProtocol: observation.wireProtocol, source: observation.source,
                               capturePoint: observation.capturePoint, parameters: parameters)
        for event in observation.streamEvents { pass.observe(streamEvent: event) }
        for d in observation.datagrams { pass.observe(d) }
        let results = pass.finish(unfinished: observation.unfinished, truncation: observation.truncation)
        var report = SuiteReport(target: "capture \(observation.source)", mode: "passive", specVersion: suite.specVersion,
                                 parameters: parameters, results: results, elapsedNs: SystemClock.monotonicNs() - started)
        report.describe(suite.wireProtocol)
        return report
    }

    /// Runs the passive cases over a capture as it is read, in one pass: memory grows with
    /// controllers and triggers, not with the capture (`PassivePass`).
    package static func run(_ cases: [any PassiveCase], of suite: ProtocolSuite, reading input: any TraceRecordSource,
                           parameters: SuiteParameters) throws(TraceError) -> (report: SuiteReport, summary: PassiveSummary) {
        let started = SystemClock.monotonicNs()
        let (results, summary) = try PassivePass.run(cases, reading: input, parameters: parameters)
        var report = SuiteReport(target: "capture \(input.source)", mode: "passive", specVersion: suite.specVersion,
                                 parameters: parameters, results: results, elapsedNs: SystemClock.monotonicNs() - started)
        report.describe(suite.wireProtocol)
        return (report, summary)
    }
}

/// How a host behind the stdio adapter ended a run early: SA-ERROR-2 (it died: exit 69)
/// or SA-ERROR-1 (it broke the record framing: exit 76).
package enum HostEnd: Hashable, Sendable {
    case died(String)
    case brokeFraming(String)
}

/// A suite run's results and their summary.
public struct SuiteReport: Sendable {
    /// The host the cases ran against, as a phrase.
    public package(set) var target: String
    /// `active` (cases sent traffic to a host) or `passive` (cases read a capture).
    public package(set) var mode: String
    /// The spec the cases check, and its version (`NAME VERSION`).
    public package(set) var specVersion: String
    package var parameters: SuiteParameters
    public package(set) var results: [CaseResult]
    public package(set) var elapsedNs: Int64
    /// What the protocol's host does under the run's rule, as a phrase (`WireProtocol.hostRule`).
    package var hostRule = ""
    /// Whether the protocol's host answers on the wire (so a reply deadline means something).
    package var hostReplies = true
    /// How an exec host ended the run early, if it did (the cases say during which one).
    package var hostEnd: HostEnd?

    /// Fills in what the protocol says of its host.
    package mutating func describe(_ wireProtocol: any WireProtocol) {
        hostRule = wireProtocol.hostRule(parameters.rule)
        hostReplies = wireProtocol.hostReplies
    }

    /// How many results have each verdict name.
    public var counts: [String: Int] {
        Dictionary(grouping: results, by: \.verdict.name).mapValues(\.count)
    }

    /// The run fails when a MUST case fails, or, under `strict`, any SHOULD is missed too;
    /// and a run that judged nothing, or none of the host's decisions, never passes.
    public func failed(strict: Bool) -> Bool {
        judgedNothing || decisionsUnjudged || results.contains { $0.fails(strict: strict) }
    }

    /// An active run had cases that judge the host's decisions, and none of them decided: the
    /// host's behaviour was not shown (it reported no observation, or none could be seen), however
    /// its transport did. Inconclusive is not a pass.
    public var decisionsUnjudged: Bool {
        let judging = results.filter { $0.info.judgesDecisions && $0.info.level != .observation }
        return mode == "active" && !judging.isEmpty && !judging.contains { Self.decided($0.verdict) }
    }

    /// The cases that judge decisions and did not decide, for the status line.
    package var undecidedDecisionCases: Int {
        results.filter { $0.info.judgesDecisions && $0.info.level != .observation && !Self.decided($0.verdict) }.count
    }

    static func decided(_ verdict: Verdict) -> Bool {
        switch verdict {
        case .pass, .fail, .nonStrict: return true
        default: return false
        }
    }

    /// No MUST or SHOULD case reached a judgement (PASS, FAIL or NON-STRICT): every one was
    /// INCONCLUSIVE, INFORMATIONAL or an ERROR, so the run shows nothing about conformance.
    package var judgedNothing: Bool {
        !results.contains { $0.info.level != .observation && Self.decided($0.verdict) }
    }

    /// The run's one-word outcome for people.
    public func status(strict: Bool) -> String {
        if judgedNothing { return "NOTHING JUDGED (no case could decide: not shown conformant)" }
        if results.contains(where: { $0.fails(strict: strict) }) { return "NOT CONFORMANT" }
        if decisionsUnjudged {
            return "DECISIONS NOT JUDGED (none of the \(undecidedDecisionCases) cases that judge the host's decisions could decide: not shown conformant)"
        }
        return "conformant in what was checked"
    }
}
