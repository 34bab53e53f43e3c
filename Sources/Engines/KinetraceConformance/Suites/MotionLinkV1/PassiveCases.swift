import KinetraceTrace
import KinetraceWire

// MARK: Frames

/// Every controller→host datagram is a valid MotionFrame.
package struct FrameLayoutCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-FRAME-LAYOUT", requirements: ["ML-TRANSPORT-4", "ML-FRAME-1", "ML-FRAME-2", "ML-FRAME-3", "ML-VALID-1"],
        level: .must, summary: "Every controller→host datagram is a 36-byte MotionFrame with a matching CRC and finite values.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var frames = 0
        var invalid = Kept<(MessageRef, String)>()
        var byReason: [String: Int] = [:]

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost else { return }
            frames += 1
            let reason: String
            switch d.decoded {
            case .success(.frame): return
            case .success(.ack): reason = "a HapticAck sent to the host (wrong direction)"
            case .failure(let error): reason = error.description
            }
            invalid.add((d.ref, reason))
            byReason[reason.split(separator: " ").first.map(String.init) ?? "?", default: 0] += 1
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            guard frames > 0 else { return CaseResult(info, .inconclusive("the capture holds no controller→host datagrams")) }
            let measurements = [Measurement("frames", Double(frames)), Measurement("invalid", Double(invalid.total))]
            guard !invalid.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            let reasons = byReason.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            return CaseResult(info, .fail("\(invalid.total) of \(frames) frames are invalid: \(reasons)"), measurements: measurements,
                              evidence: evidence(invalid.items, total: invalid.total) { "\(summary.describe($0.0)): expected a valid MotionFrame, found \($0.1)" })
        }
    }
}

/// `t_ms` strictly increases per controller.
package struct MonotonicTimestampCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-RATE-MONOTONIC", requirements: ["ML-RATE-1"], level: .must,
        summary: "Each controller's t_ms strictly increases from frame to frame.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var newest: [Endpoint: UInt64] = [:]
        var checked = 0
        var violations = Kept<(MessageRef, UInt64, UInt64)>()

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost, case .success(.frame(let f)) = d.decoded else { return }
            checked += 1
            if let last = newest[d.source] {
                if f.tMs <= last { violations.add((d.ref, last, f.tMs)) } else { newest[d.source] = f.tMs }
            } else {
                newest[d.source] = f.tMs
            }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            guard checked > 1 else { return CaseResult(info, .inconclusive("fewer than two valid frames")) }
            let measurements = [Measurement("frames", Double(checked)), Measurement("not_increasing", Double(violations.total))]
            guard !violations.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            return CaseResult(info, .fail("\(violations.total) frame(s) do not advance t_ms (reordering on the path looks the same)"),
                              measurements: measurements,
                              evidence: evidence(violations.items, total: violations.total) { "\(summary.describe($0.0)): expected t_ms > \($0.1), found \($0.2)" })
        }
    }
}

/// The mean frame interval over every full 10 s window is within a band of 100 ms.
package struct RateBandCase: PassiveCase {
    package let info: CaseInfo
    let toleranceMs: Double

    /// ML-RATE-3: ±10 ms, MUST.
    package static let must = RateBandCase(info: CaseInfo(
        id: "PC-RATE-BAND", requirements: ["ML-RATE-3"], level: .must,
        summary: "The mean frame interval over any 10 s window is 100 ms ± 10 ms."), toleranceMs: 10)
    /// ML-RATE-2: ±2 ms, SHOULD.
    package static let should = RateBandCase(info: CaseInfo(
        id: "PC-RATE-NOMINAL", requirements: ["ML-RATE-2"], level: .should,
        summary: "The mean frame interval over any 10 s window is 100 ms ± 2 ms (nominal 10 Hz)."), toleranceMs: 2)

    /// Valid frames' t_ms at their position among all the controller's datagrams,
    /// so an invalid frame still counts as a frame sent.
    package var rateSeries: RateSeriesKind? { .senderStamps }

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { SummaryJudge(body: verdict) }

    func verdict(_ summary: PassiveSummary) -> CaseResult {
        guard let rate = summary.rates[.senderStamps] else { return CaseResult(info, .error("the pass built no sender-stamp rate series")) }
        if let notJudged = rate.notJudged(info, message: "frame", sends: "streams") { return notJudged }
        let measurements = rate.measurements
        guard let worst = rate.worst, abs(worst.meanMs - 100) > toleranceMs else { return CaseResult(info, .pass, measurements: measurements) }
        let detail = "the window of \(worst.controller) from t_ms \(worst.startTime) averages \(fixed(worst.meanMs, 2)) ms, outside 100 ± \(Int(toleranceMs)) ms"
        return CaseResult(info, info.level == .must ? .fail(detail) : .nonStrict(detail), measurements: measurements,
                          evidence: ["expected a mean interval in [\(100 - toleranceMs), \(100 + toleranceMs)] ms, found \(fixed(worst.meanMs, 3)) ms"])
    }
}

/// Gaps over 300 ms between one controller's frames, reported as loss.
package struct GapCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-RATE-GAPS", requirements: ["ML-RATE-4"], level: .observation,
        summary: "Gaps over 300 ms between one controller's frames are reported as loss (an observation, not a violation).")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var newest: [Endpoint: UInt64] = [:]
        var gaps = Kept<(Endpoint, UInt64, UInt64)>()
        var missing = 0

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost, case .success(.frame(let f)) = d.decoded else { return }
            // Stamps may leap to 2^64 − 1 (ML-FRAME-4 bounds nothing): compare the difference, and
            // hold the estimate of missing frames to what an Int counts.
            if let last = newest[d.source], f.tMs > last, f.tMs - last > 300 {
                gaps.add((d.source, last, f.tMs))
                let (sum, overflow) = missing.addingReportingOverflow(Int(Swift.min((Double(f.tMs - last) / 100).rounded(), 1e15)) - 1)
                missing = overflow ? .max : sum
            }
            newest[d.source] = Swift.max(newest[d.source] ?? 0, f.tMs)
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            let measurements = [Measurement("gaps", Double(gaps.total)), Measurement("frames_missing", Double(missing))]
            guard !gaps.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            return CaseResult(info, .informational("\(gaps.total) gap(s) over 300 ms, about \(missing) frame(s) missing"),
                              measurements: measurements,
                              evidence: evidence(gaps.items, total: gaps.total) { "\($0.0): t_ms \($0.1) → \($0.2) (\($0.2 - $0.1) ms)" })
        }
    }
}
