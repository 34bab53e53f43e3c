#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// The conformance suite: its cases, selection, and a run's report.
public enum ConformanceSuite {
    public static let version = "0.1.0"
    public static let specVersion = "motionlink-v1 1.0"

    /// Every passive case, in report order.
    public static let passiveCases: [any PassiveCase] = [
        FrameLayoutCase(), MonotonicTimestampCase(), RateBandCase.must, RateBandCase.should, GapCase(),
        AckLayoutCase(), AckValuesCase(), AckRuleCase(), AckDestinationCase(), AckDeadlineCase.must, AckDeadlineCase.should,
    ]

    /// Every active case, in report order.
    public static let activeCases: [any ActiveCase] = [
        ThresholdCase(), RefractoryCase(), StaleCase(), DuplicateCase(), InvalidInputCase(), AckFormatCase(), IsolationCase(),
        NoUnsolicitedCase(), AckTimingCase.must, AckTimingCase.should, AckTimingCase.load,
    ]

    /// Cases whose ID matches one of `include` (all when empty) and none of `exclude` (shell globs).
    public static func select<Case>(_ cases: [Case], include: [String], exclude: [String], id: (Case) -> String) -> [Case] {
        cases.filter { c in
            (include.isEmpty || include.contains { matches(id(c), $0) }) && !exclude.contains { matches(id(c), $0) }
        }
    }

    public static func select(_ cases: [any PassiveCase], include: [String], exclude: [String]) -> [any PassiveCase] {
        select(cases, include: include, exclude: exclude) { $0.info.id }
    }

    public static func select(_ cases: [any ActiveCase], include: [String], exclude: [String]) -> [any ActiveCase] {
        select(cases, include: include, exclude: exclude) { $0.info.id }
    }

    /// Runs the active cases against a live host over one transport, each
    /// case from controllers the host has never seen, its frames stamped
    /// with the wall clock (ML-FRAME-4) and newer than any earlier case's.
    ///
    /// A preflight trigger first tells "nothing is there" (a harness error for
    /// every case) from a host that is there; a host that stops listening or
    /// exits later did so on a case's traffic, which that case then fails.
    public static func run(_ cases: [any ActiveCase], over transport: any ProbeTransport, target: String,
                           parameters: SuiteParameters, progress: (CaseResult) -> Void = { _ in }) -> SuiteReport {
        let started = SystemClock.monotonicNs()
        var results: [CaseResult] = []
        var newest = UInt64(SystemClock.realtimeNs() / 1_000_000)
        var hostGone = preflight(transport, target: target, newest: &newest)
        let absent = hostGone != nil
        for c in cases {
            let caseStarted = SystemClock.monotonicNs()
            var result: CaseResult
            if let hostGone {
                result = CaseResult(c.info, .error(absent ? hostGone : "not run: \(hostGone)"))
            } else {
                let probe = LiveProbe(transport: transport, t0: max(UInt64(SystemClock.realtimeNs() / 1_000_000), newest + 1))
                do throws(SocketError) {
                    result = try c.run(probe, parameters)
                    newest = max(newest, probe.newestTMs)
                    let stopped = probe.refused ? "the host stopped listening (ICMP port unreachable)" : probe.hostFailure
                    if let stopped {
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
        return SuiteReport(target: target, mode: "active", parameters: parameters, results: results,
                           elapsedNs: SystemClock.monotonicNs() - started)
    }

    /// One trigger from a fresh controller, waiting up to 500 ms for any reply:
    /// why the host is not there (refused, or an exec host that ended), or nil.
    /// Silence is not absence: a host that never acks is for the cases to fail.
    static func preflight(_ transport: any ProbeTransport, target: String, newest: inout UInt64) -> String? {
        let probe = LiveProbe(transport: transport, t0: newest + 1)
        do throws(SocketError) {
            let c = try probe.controllers(1).lowerBound
            probe.send(MotionFrame(tMs: probe.t0, ay: 1), from: c)
            probe.collect(forMs: 500) { _ in !probe.replies.isEmpty || probe.refused || probe.hostFailure != nil }
        } catch {
            return error.description
        }
        newest = probe.newestTMs
        if probe.refused { return "the host refused: ICMP port unreachable (nothing listens on \(target))" }
        return probe.hostFailure
    }

    static func matches(_ id: String, _ pattern: String) -> Bool { fnmatch(pattern, id, 0) == 0 }

    /// Runs the passive cases over a capture.
    public static func run(_ cases: [any PassiveCase], on observation: CaptureObservation, parameters: SuiteParameters) -> SuiteReport {
        let context = PassiveContext(observation, parameters)
        let started = SystemClock.monotonicNs()
        let results = cases.map { c in
            let caseStarted = SystemClock.monotonicNs()
            var result = c.evaluate(context)
            result.durationNs = SystemClock.monotonicNs() - caseStarted
            return result
        }
        return SuiteReport(target: "capture \(observation.source)", mode: "passive", parameters: parameters, results: results,
                           elapsedNs: SystemClock.monotonicNs() - started)
    }
}

/// A suite run's results and their summary.
public struct SuiteReport: Sendable {
    public var target: String
    public var mode: String
    public var parameters: SuiteParameters
    public var results: [CaseResult]
    public var elapsedNs: Int64

    /// How many results have each verdict name.
    public var counts: [String: Int] {
        Dictionary(grouping: results, by: \.verdict.name).mapValues(\.count)
    }

    /// The run fails when a MUST case fails, or, under `strict`, any SHOULD is missed too.
    public func failed(strict: Bool) -> Bool { results.contains { $0.fails(strict: strict) } }
}
