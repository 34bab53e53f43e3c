import KinetraceTrace
import KinetraceWire

/// The controllers' rate by capture time, for protocols whose messages carry
/// no sender stamp: the mean interval between one controller's messages over
/// every full 10 s window, within a band of the protocol's nominal interval
/// (bands relative to the nominal interval: ±10 % MUST, ±2 % SHOULD). Capture time
/// carries the path's jitter, which a 10 s mean averages out.
package struct CaptureRateCase: PassiveCase {
    package let info: CaseInfo
    /// The band, as a fraction of the nominal interval.
    package let tolerance: Double

    package init(info: CaseInfo, tolerance: Double) {
        self.info = info
        self.tolerance = tolerance
    }

    package var rateSeries: RateSeriesKind? { .captureTime }

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { SummaryJudge(body: verdict) }

    func verdict(_ summary: PassiveSummary) -> CaseResult {
        let nominalMs = 1000 / summary.wireProtocol.nominalRateHz
        let toleranceMs = nominalMs * tolerance
        guard let rate = summary.rates[.captureTime] else { return CaseResult(info, .error("the pass built no capture-time rate series")) }
        if let notJudged = rate.notJudged(info, message: "message", sends: "sends") { return notJudged }
        let measurements = rate.measurements
        guard let worst = rate.worst, abs(worst.meanMs - nominalMs) > toleranceMs else { return CaseResult(info, .pass, measurements: measurements) }
        let at = fixed(Double(Int64(bitPattern: worst.startTime) - summary.startNs) / 1e9, 3)
        let detail = "the window of \(worst.controller) from \(at) s averages \(fixed(worst.meanMs, 2)) ms, outside \(fixed(nominalMs, 2)) ± \(fixed(toleranceMs, 2)) ms"
        return CaseResult(info, info.level == .must ? .fail(detail) : .nonStrict(detail), measurements: measurements,
                          evidence: ["expected a mean interval in [\(fixed(nominalMs - toleranceMs, 2)), \(fixed(nominalMs + toleranceMs, 2))] ms, found \(fixed(worst.meanMs, 3)) ms"])
    }
}
