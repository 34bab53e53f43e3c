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

    /// Runs the active cases against a live host, each from fresh controllers.
    public static func run(_ cases: [any ActiveCase], against target: SocketAddressBox, parameters: SuiteParameters,
                           progress: (CaseResult) -> Void = { _ in }) -> SuiteReport {
        let started = SystemClock.monotonicNs()
        var results: [CaseResult] = []
        for c in cases {
            let result: CaseResult
            do throws(SocketError) {
                let probe = LiveProbe(target: target)
                let judged = try c.run(probe, parameters)
                // A refused port is the harness's problem to report, not a verdict on a host.
                result = probe.refused ? CaseResult(c.info, .error("the host refused: ICMP port unreachable (nothing listens on \(target))"))
                                       : judged
            } catch {
                result = CaseResult(c.info, .error(error.description))
            }
            progress(result)
            results.append(result)
        }
        return SuiteReport(target: "host \(target)", mode: "active", parameters: parameters, results: results,
                           elapsedNs: SystemClock.monotonicNs() - started)
    }

    static func matches(_ id: String, _ pattern: String) -> Bool { fnmatch(pattern, id, 0) == 0 }

    /// Runs the passive cases over a capture.
    public static func run(_ cases: [any PassiveCase], on observation: CaptureObservation, parameters: SuiteParameters) -> SuiteReport {
        let context = PassiveContext(observation, parameters)
        let started = SystemClock.monotonicNs()
        let results = cases.map { $0.evaluate(context) }
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
