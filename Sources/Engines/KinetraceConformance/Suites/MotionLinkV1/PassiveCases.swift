import KinetraceTrace
import KinetraceWire

// MARK: Frames

/// Every controller→host datagram is a valid MotionFrame.
public struct FrameLayoutCase: PassiveCase {
    public let info = CaseInfo(
        id: "PC-FRAME-LAYOUT", requirements: ["ML-TRANSPORT-4", "ML-FRAME-1", "ML-FRAME-2", "ML-FRAME-3", "ML-VALID-1"],
        level: .must, summary: "Every controller→host datagram is a 36-byte MotionFrame with a matching CRC and finite values.")
    public init() {}

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        let frames = context.observation.frames
        guard !frames.isEmpty else { return CaseResult(info, .inconclusive("the capture holds no controller→host datagrams")) }
        var invalid: [(CaptureObservation.Datagram, String)] = []
        var byReason: [String: Int] = [:]
        for d in frames {
            switch d.decoded {
            case .success(.frame): continue
            case .success(.ack): invalid.append((d, "a HapticAck sent to the host (wrong direction)"))
            case .failure(let error): invalid.append((d, error.description))
            }
            byReason[invalid.last!.1.split(separator: " ").first.map(String.init) ?? "?", default: 0] += 1
        }
        let measurements = [Measurement("frames", Double(frames.count)), Measurement("invalid", Double(invalid.count))]
        guard !invalid.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
        let reasons = byReason.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        return CaseResult(info, .fail("\(invalid.count) of \(frames.count) frames are invalid: \(reasons)"), measurements: measurements,
                          evidence: evidence(invalid) { "\(context.describe($0.0)): expected a valid MotionFrame, found \($0.1)" })
    }
}

/// `t_ms` strictly increases per controller.
public struct MonotonicTimestampCase: PassiveCase {
    public let info = CaseInfo(
        id: "PC-RATE-MONOTONIC", requirements: ["ML-RATE-1"], level: .must,
        summary: "Each controller's t_ms strictly increases from frame to frame.")
    public init() {}

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        var violations: [(CaptureObservation.Datagram, UInt64, UInt64)] = []
        var checked = 0
        for (_, frames) in context.observation.framesByController {
            var last: UInt64?
            for d in frames {
                guard case .success(.frame(let f)) = d.decoded else { continue }
                checked += 1
                if let last, f.tMs <= last { violations.append((d, last, f.tMs)) }
                last = Swift.max(last ?? 0, f.tMs)
            }
        }
        guard checked > 1 else { return CaseResult(info, .inconclusive("fewer than two valid frames")) }
        let measurements = [Measurement("frames", Double(checked)), Measurement("not_increasing", Double(violations.count))]
        guard !violations.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
        return CaseResult(info, .fail("\(violations.count) frame(s) do not advance t_ms (reordering on the path looks the same)"),
                          measurements: measurements,
                          evidence: evidence(violations) { "\(context.describe($0.0)): expected t_ms > \($0.1), found \($0.2)" })
    }
}

/// The mean frame interval over every full 10 s window is within a band of 100 ms.
public struct RateBandCase: PassiveCase {
    public let info: CaseInfo
    let toleranceMs: Double

    /// ML-RATE-3: ±10 ms, MUST.
    public static let must = RateBandCase(info: CaseInfo(
        id: "PC-RATE-BAND", requirements: ["ML-RATE-3"], level: .must,
        summary: "The mean frame interval over any 10 s window is 100 ms ± 10 ms."), toleranceMs: 10)
    /// ML-RATE-2: ±2 ms, SHOULD.
    public static let should = RateBandCase(info: CaseInfo(
        id: "PC-RATE-NOMINAL", requirements: ["ML-RATE-2"], level: .should,
        summary: "The mean frame interval over any 10 s window is 100 ms ± 2 ms (nominal 10 Hz)."), toleranceMs: 2)

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        // Valid frames' t_ms with their position among all the controller's datagrams,
        // so an invalid frame still counts as a frame sent.
        let rate = RateWindows(context.observation.framesByController, nominalMs: 100, ticksPerMs: 1, detectLoss: true) { frames in
            frames.enumerated().compactMap { (ordinal, d) -> RateSample? in
                if case .success(.frame(let f)) = d.decoded { return RateSample(time: f.tMs, ordinal: ordinal) } else { return nil }
            }
        }
        let windows = rate.windows, skipped = rate.skipped, means = rate.means
        let worst = rate.worst.map { (controller: $0.controller, meanMs: $0.meanMs, startTMs: $0.startTime) }
        guard windows > 0 else {
            return CaseResult(info, .inconclusive(skipped > 0 ? "every full 10 s window holds a lost frame (a gap over 1.5 × the usual interval)"
                                                              : "no controller streams for more than 10 s"),
                              measurements: [Measurement("windows_with_loss", Double(skipped))])
        }
        let measurements = [Measurement("windows", Double(windows)), Measurement("windows_with_loss", Double(skipped)),
                            Measurement("mean_interval_min", means.first!, "ms"), Measurement("mean_interval_max", means.last!, "ms")]
        guard let worst, abs(worst.meanMs - 100) > toleranceMs else { return CaseResult(info, .pass, measurements: measurements) }
        let detail = "the window of \(worst.controller) from t_ms \(worst.startTMs) averages \(fixed(worst.meanMs, 2)) ms, outside 100 ± \(Int(toleranceMs)) ms"
        return CaseResult(info, info.level == .must ? .fail(detail) : .nonStrict(detail), measurements: measurements,
                          evidence: ["expected a mean interval in [\(100 - toleranceMs), \(100 + toleranceMs)] ms, found \(fixed(worst.meanMs, 3)) ms"])
    }
}

/// Gaps over 300 ms, reported as loss.
public struct GapCase: PassiveCase {
    public let info = CaseInfo(
        id: "PC-RATE-GAPS", requirements: ["ML-RATE-4"], level: .observation,
        summary: "Gaps over 300 ms between one controller's frames are reported as loss (an observation, not a violation).")
    public init() {}

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        var gaps: [(Endpoint, UInt64, UInt64)] = []
        var missing = 0
        for (controller, frames) in context.observation.framesByController {
            var last: UInt64?
            for d in frames {
                guard case .success(.frame(let f)) = d.decoded else { continue }
                // Stamps may leap to 2^64 − 1 (ML-FRAME-4 bounds nothing): compare the difference, and
                // hold the estimate of missing frames to what an Int counts.
                if let last, f.tMs > last, f.tMs - last > 300 {
                    gaps.append((controller, last, f.tMs))
                    let (sum, overflow) = missing.addingReportingOverflow(Int(Swift.min((Double(f.tMs - last) / 100).rounded(), 1e15)) - 1)
                    missing = overflow ? .max : sum
                }
                last = Swift.max(last ?? 0, f.tMs)
            }
        }
        let measurements = [Measurement("gaps", Double(gaps.count)), Measurement("frames_missing", Double(missing))]
        guard !gaps.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
        return CaseResult(info, .informational("\(gaps.count) gap(s) over 300 ms, about \(missing) frame(s) missing"),
                          measurements: measurements,
                          evidence: evidence(gaps) { "\($0.0): t_ms \($0.1) → \($0.2) (\($0.2 - $0.1) ms)" })
    }
}
