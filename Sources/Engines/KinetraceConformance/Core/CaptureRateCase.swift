import KinetraceTrace
import KinetraceWire

/// The controllers' rate by capture time, for protocols whose messages carry
/// no sender stamp: the mean interval between one controller's messages over
/// every full 10 s window, within a band of the protocol's nominal interval
/// (MotionLink's bands, relative: ±10 % MUST, ±2 % SHOULD). Capture time
/// carries the path's jitter, which a 10 s mean averages out.
public struct CaptureRateCase: PassiveCase {
    public let info: CaseInfo
    /// The band, as a fraction of the nominal interval.
    public let tolerance: Double

    public init(info: CaseInfo, tolerance: Double) {
        self.info = info
        self.tolerance = tolerance
    }

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        let observation = context.observation
        let nominalMs = 1000 / observation.wireProtocol.nominalRateHz
        let toleranceMs = nominalMs * tolerance
        let stream = observation.wireProtocol.transport == .byteStream
        // Every message counts as one sent, valid or not; after a gap in a captured stream, records cannot be told apart.
        // A stream loses nothing, and its records arrive several to a segment: no loss to leave out.
        let rate = RateWindows(observation.framesByController, nominalMs: nominalMs, ticksPerMs: 1e6, detectLoss: !stream) { messages in
            var samples = messages.enumerated().compactMap { (ordinal, d) -> RateSample? in
                d.framingError == nil ? RateSample(time: UInt64(bitPattern: d.timeNs), ordinal: ordinal) : nil
            }
            // Records that arrived together (one segment) take one time: keep the last of each,
            // so a window ends on a whole arrival and its mean counts every record in it.
            if stream { samples = zip(samples, samples.dropFirst().map(Optional.some) + [nil]).compactMap { $1?.time == $0.time ? nil : $0 } }
            return samples
        }
        guard rate.windows > 0 else {
            return CaseResult(info, .inconclusive(rate.skipped > 0 ? "every full 10 s window holds a lost message (a gap over 1.5 × the usual interval)"
                                                                   : "no controller sends for more than 10 s"),
                              measurements: [Measurement("windows_with_loss", Double(rate.skipped))])
        }
        let measurements = [Measurement("windows", Double(rate.windows)), Measurement("windows_with_loss", Double(rate.skipped)),
                            Measurement("mean_interval_min", rate.means.first!, "ms"), Measurement("mean_interval_max", rate.means.last!, "ms")]
        guard let worst = rate.worst, abs(worst.meanMs - nominalMs) > toleranceMs else { return CaseResult(info, .pass, measurements: measurements) }
        let at = fixed(Double(Int64(bitPattern: worst.startTime) - observation.startNs) / 1e9, 3)
        let detail = "the window of \(worst.controller) from \(at) s averages \(fixed(worst.meanMs, 2)) ms, outside \(fixed(nominalMs, 2)) ± \(fixed(toleranceMs, 2)) ms"
        return CaseResult(info, info.level == .must ? .fail(detail) : .nonStrict(detail), measurements: measurements,
                          evidence: ["expected a mean interval in [\(fixed(nominalMs - toleranceMs, 2)), \(fixed(nominalMs + toleranceMs, 2))] ms, found \(fixed(worst.meanMs, 3)) ms"])
    }
}
