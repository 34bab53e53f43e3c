import KinetraceTrace

/// Why no network can be fitted from a recording: one line naming what is missing.
package struct NetworkFitError: Error, Hashable, Sendable, CustomStringConvertible {
    package var description: String
}

/// A path fitted from one host-side recording (`PathEvidence`): the delay with each sender's
/// clock skew removed, the loss model, duplication and reordering, each with the evidence
/// behind it. What a network file needs, before it is written as one.
package struct FittedPath: Sendable {
    /// A controller's skew, when it had the evidence (`NetworkFitter.minimumSkewSpanS`).
    package struct ControllerSkew: Sendable {
        package var controller: Endpoint
        package var estimate: SkewEstimate
    }

    package var controllers: Int
    /// Distinct samples received, over all controllers.
    package var received: Int
    package var spanS: Double
    package var skews: [ControllerSkew]
    /// Controllers whose samples spanned too little time to fit a skew: their delays are as measured.
    package var unskewedControllers: Int
    /// Whether the sender stamps and the recorder's clock are one clock (or synchronised): the
    /// delays are then absolute. Otherwise each controller's delays are placed so that its
    /// lower bound starts at `baseMs`.
    package var clocksComparable: Bool
    package var baseMs: Double?
    /// Every delay, skew removed, all controllers together.
    package var delaysMs: [Double]
    package var delay: DelayFit
    package var loss: LossFit
    package var duplicates: Int
    package var reordered: Int
    package var pauses: Int
    package var notes: [String]

    package var duplicateRate: Double { received == 0 ? 0 : Double(duplicates) / Double(received) }
    package var reorderRate: Double { received == 0 ? 0 : Double(reordered) / Double(received) }
}

package enum NetworkFitter {
    /// A skew is removed only when the two halves of the controller's samples, fitted alone,
    /// agree with it: both of its sign, and apart by less than half of it. The lower bound's
    /// slope is exact over a path with a sharp minimum delay and noise over one without;
    /// removing noise as skew would bend every delay by it.
    static func isSignificant(_ whole: SkewEstimate, _ path: PathEvidence.ControllerPath) -> Bool {
        let middle = path.senderTimesS.count / 2
        guard middle >= 2,
              let first = SkewEstimate.fit(timesS: Array(path.senderTimesS[..<middle]), delaysMs: Array(path.rawDelaysMs[..<middle])),
              let second = SkewEstimate.fit(timesS: Array(path.senderTimesS[middle...]), delaysMs: Array(path.rawDelaysMs[middle...]))
        else { return false }
        let slope = whole.slopeMsPerS
        return slope != 0 && first.slopeMsPerS.sign == slope.sign && second.slopeMsPerS.sign == slope.sign
            && abs(first.slopeMsPerS - second.slopeMsPerS) < abs(slope) / 2
    }

    /// A skew is fitted for a controller whose samples span at least this long: over less, the
    /// path's own variation swamps a drift of tens of ppm (50 ppm over 30 s is 1.5 ms).
    package static let minimumSkewSpanS: Double = 30

    /// Fits `evidence`. `baseMs` places the delays when the two clocks cannot be compared (the
    /// path's minimum one-way delay, which such a recording cannot show); without it the fit is
    /// refused for such a recording rather than invent one.
    package static func fit(_ evidence: PathEvidence, baseMs: Double?) throws(NetworkFitError) -> FittedPath {
        guard !evidence.controllers.isEmpty else {
            throw NetworkFitError(description: "the recording holds no valid \(evidence.wireProtocol.id) samples from a controller: nothing to fit")
        }
        var paths: [PathEvidence.ControllerPath] = []
        for c in evidence.controllers.indices { paths.append(evidence.path(of: c)) }
        let received = paths.reduce(0) { $0 + $1.received }
        guard received >= DelayFit.minimumSamples else {
            throw NetworkFitError(description: "\(received) distinct samples: a delay needs at least \(DelayFit.minimumSamples), and a loss model \(LossFit.minimumMessages) messages")
        }
        let raw = paths.flatMap(\.rawDelaysMs)
        let sortedRaw = raw.sorted()
        let medianRaw = sortedRaw[sortedRaw.count / 2]
        let replayStampsOwnClock = evidence.header.replay.map(\.stampsOnRecorderClock)
        // A stamp after its own arrival is a sender clock running ahead: no delay is below 0.
        let comparable = replayStampsOwnClock ?? (abs(medianRaw) <= ClockComparison.plausibleOneWayMs && sortedRaw[0] >= 0)
        var notes: [String] = []
        if !comparable && baseMs == nil {
            throw NetworkFitError(description: "the sender's stamps and the recording's clock cannot be compared (median difference \(Int64(medianRaw.rounded())) ms, smallest \(Int64(sortedRaw[0].rounded())) ms), so the delay is known only up to a constant: give --base-ms, the path's minimum one-way delay")
        }

        var skews: [FittedPath.ControllerSkew] = []
        var unskewed = 0, insignificant = 0
        var delays: [Double] = []
        delays.reserveCapacity(raw.count)
        for (c, path) in paths.enumerated() where !path.rawDelaysMs.isEmpty {
            var corrected = path.rawDelaysMs
            let span = (path.senderTimesS.max() ?? 0) - (path.senderTimesS.min() ?? 0)
            var floor = corrected.min() ?? 0
            if span >= minimumSkewSpanS, let estimate = SkewEstimate.fit(timesS: path.senderTimesS, delaysMs: path.rawDelaysMs) {
                if Self.isSignificant(estimate, path) {
                    corrected = estimate.removing(from: path.rawDelaysMs, timesS: path.senderTimesS)
                    floor = estimate.floorMs
                    skews.append(.init(controller: evidence.controllers[c], estimate: estimate))
                } else {
                    floor = estimate.lineMs(atS: estimate.startS)
                    insignificant += 1
                }
            } else {
                unskewed += 1
            }
            if !comparable, let baseMs {
                // Each phone its own offset: its lower bound is placed at the base.
                corrected = corrected.map { $0 - floor + baseMs }
            }
            delays += corrected
        }
        if insignificant > 0 {
            notes.append("\(insignificant) controller(s) showed no skew that both halves of their samples agree on: left in (a path without a sharp minimum delay gives the lower bound no edge to hold)")
        }
        if unskewed > 0 {
            notes.append("\(unskewed) controller(s) spanned under \(Int(minimumSkewSpanS)) s: their delays are as measured, skew not removed")
        }
        if !comparable, let baseMs {
            notes.append("clocks not comparable: each controller's delays placed so that its lower bound is --base-ms \(baseMs) ms (assumed)")
        }
        if let lowest = delays.min(), lowest < 0 {
            // With a base given, a delay below 0 can only come from a stamp far from its neighbours.
            throw NetworkFitError(description: baseMs == nil
                ? "a delay of \(Int64(lowest.rounded())) ms after the skew was removed: the stamps run ahead of the recording's clock; give --base-ms"
                : "a delay of \(Int64(lowest.rounded())) ms after the skew was removed and --base-ms applied: a sender stamp lies far from its neighbours (a clock that jumped); cut the recording around it")
        }
        guard let delay = DelayFit.fit(delaysMs: delays) else {
            throw NetworkFitError(description: "the delays are not finite numbers: nothing to fit")
        }
        let lossSequence = paths.flatMap(\.lost)
        guard let loss = LossFit.fit(lost: lossSequence) else {
            throw NetworkFitError(description: "\(lossSequence.count) messages in sender order: a loss model needs at least \(LossFit.minimumMessages)")
        }
        let pauses = paths.reduce(0) { $0 + $1.pauses }
        if pauses > 0 {
            notes.append("\(pauses) gap(s) over \(PathEvidence.longGapPeriods) periods taken as pauses of the sender, not loss")
        }
        let span = Double((evidence.lastArrivalNs ?? 0) - (evidence.firstArrivalNs ?? 0)) / 1e9
        return FittedPath(controllers: paths.count, received: received, spanS: span, skews: skews, unskewedControllers: unskewed,
                          clocksComparable: comparable, baseMs: comparable ? nil : baseMs, delaysMs: delays, delay: delay, loss: loss,
                          duplicates: paths.reduce(0) { $0 + $1.duplicates }, reordered: paths.reduce(0) { $0 + $1.reordered },
                          pauses: pauses, notes: notes)
    }
}
