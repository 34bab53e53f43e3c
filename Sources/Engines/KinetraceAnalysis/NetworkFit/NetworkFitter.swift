import KinetraceSupport
import KinetraceTrace

/// Why no network can be fitted from a recording: one line naming what is missing.
package struct NetworkFitError: Error, Hashable, Sendable, CustomStringConvertible {
    package var description: String
}

/// A path fitted from a recording (`PathSet`): the delay with each sender's clock skew
/// removed, the loss model, duplication and reordering, the segments whose conditions differ,
/// each with the evidence behind it. What a network file needs, before it is written as one.
package struct FittedPath: Sendable {
    /// A controller's skew, when it had the evidence (`NetworkFitter.minimumSkewSpanS`).
    package struct ControllerSkew: Sendable {
        package var controller: Endpoint
        package var estimate: SkewEstimate
    }

    /// One figure's minimum evidence, and what the recording had.
    package struct Evidence: Hashable, Sendable {
        package var figure: String
        package var needs: String
        package var had: String
        /// Nil where the figure was not asked for.
        package var met: Bool?
    }

    package var evidence: PathSet.Evidence
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
    /// Every delay as measured, skew removed, all controllers together, in time order.
    package var delaysMs: [Double]
    /// The delay the network should draw: the fastest segments' (or each segment's with its
    /// step taken out), less the lab's own path.
    package var delay: DelayFit
    /// What the lab's own path adds, ms, taken out of `delay` (0: nothing).
    package var labPathMs: Double = 0
    package var loss: LossFit
    package var duplicates: Int
    package var reordered: Int
    package var pauses: Int
    /// The spans the recording was split into (one, unsplit), and the change points found.
    package var segments: ConditionSegments
    package var meanMessageBytes: Double
    package var unmatched: Int
    package var invalidMessages: Int
    package var minimumEvidence: [Evidence]
    package var notes: [String]

    package var duplicateRate: Double { received == 0 ? 0 : Double(duplicates) / Double(received) }
    package var reorderRate: Double { received == 0 ? 0 : Double(reordered) / Double(received) }
    /// Whether the recording can show duplicates and reordering at all (unstamped arrivals cannot).
    package var ordersKnown: Bool { evidence != .arrivals }
}

package enum NetworkFitter {
    /// A skew is removed only when the two halves of the controller's samples, fitted alone,
    /// agree with it: both of its sign, and apart by less than half of it. The lower bound's
    /// slope is exact over a path with a sharp minimum delay and noise over one without;
    /// removing noise as skew would bend every delay by it.
    static func isSignificant(_ whole: SkewEstimate, timesS: [Double], delaysMs: [Double]) -> Bool {
        let middle = timesS.count / 2
        guard middle >= 2,
              let first = SkewEstimate.fit(timesS: Array(timesS[..<middle]), delaysMs: Array(delaysMs[..<middle])),
              let second = SkewEstimate.fit(timesS: Array(timesS[middle...]), delaysMs: Array(delaysMs[middle...]))
        else { return false }
        let slope = whole.slopeMsPerS
        return slope != 0 && first.slopeMsPerS.sign == slope.sign && second.slopeMsPerS.sign == slope.sign
            && abs(first.slopeMsPerS - second.slopeMsPerS) < abs(slope) / 2
    }

    /// A skew is fitted for a controller whose samples span at least this long: over less, the
    /// path's own variation swamps a drift of tens of ppm (50 ppm over 30 s is 1.5 ms).
    package static let minimumSkewSpanS: Double = 30

    /// The longest delay a network may hold (specs/networks/README.md §2.4): a recording that
    /// shows more has a clock that jumped, not a path.
    package static let maximumDelayMs = 3_600_000.0

    /// Fixed segments are refused beyond this many: each is reported, and a network with
    /// thousands of rate steps describes noise, not a link.
    package static let maximumFixedSegments = 1_000

    package static func fit(_ evidence: PathEvidence, baseMs: Double?, segments: SegmentPolicy = .whole,
                            labPathMs: Double = 0) throws(NetworkFitError) -> FittedPath {
        try fit(evidence.pathSet, baseMs: baseMs, segments: segments, labPathMs: labPathMs)
    }

    /// The delays of every controller with skew removed and (clocks not comparable) placed at
    /// `baseMs`, in time order; `stepMs` is the rate steps' delay at a time, taken out while
    /// the skew is fitted so that a step is not read as drift.
    struct Placed {
        var delaysMs: [Double] = []
        var timesS: [Double] = []
        /// When each message reached the recorder, s on the timeline.
        var arrivalsS: [Double] = []
        var skews: [FittedPath.ControllerSkew] = []
        var unskewed = 0
        var insignificant = 0
    }

    static func place(_ set: PathSet, comparable: Bool, baseMs: Double?, stepMs: (Double) -> Double) -> Placed {
        var placed = Placed()
        var pairs: [(t: Double, d: Double, arrival: Double)] = []
        for path in set.paths where !path.rawDelaysMs.isEmpty {
            let level = zip(path.rawDelaysMs, path.timesS).map { $0 - stepMs($1) }
            var corrected = path.rawDelaysMs
            let span = (path.senderTimesS.max() ?? 0) - (path.senderTimesS.min() ?? 0)
            var floor = level.min() ?? 0
            if span >= minimumSkewSpanS, let estimate = SkewEstimate.fit(timesS: path.senderTimesS, delaysMs: level) {
                if isSignificant(estimate, timesS: path.senderTimesS, delaysMs: level) {
                    corrected = estimate.removing(from: path.rawDelaysMs, timesS: path.senderTimesS)
                    floor = estimate.floorMs
                    placed.skews.append(.init(controller: path.controller, estimate: estimate))
                } else {
                    floor = estimate.lineMs(atS: estimate.startS)
                    placed.insignificant += 1
                }
            } else {
                placed.unskewed += 1
            }
            if !comparable, let baseMs {
                // Each phone its own offset: its lower bound is placed at the base.
                corrected = corrected.map { $0 - floor + baseMs }
            }
            // A join's timeline is the send; the others' is the arrival.
            for (i, (d, t)) in zip(corrected, path.timesS).enumerated() {
                pairs.append((t, d, set.evidence == .joined ? t + path.rawDelaysMs[i] / 1000 : t))
            }
        }
        pairs.sort { $0.t < $1.t }
        placed.delaysMs = pairs.map(\.d)
        placed.timesS = pairs.map(\.t)
        placed.arrivalsS = pairs.map(\.arrival)
        return placed
    }

    /// Fits `set`. `baseMs` places the delays when the two clocks cannot be compared (the
    /// path's minimum one-way delay, which such a recording cannot show); without it the fit is
    /// refused for such a recording rather than invent one.
    /// `labPathMs` is what the lab's own path adds to every message a replay sends (the median
    /// delay of a replay through `perfect` there): taken out of the delay written, so that a
    /// replay through the network in that lab shows the delays this recording shows.
    package static func fit(_ set: PathSet, baseMs: Double?, segments policy: SegmentPolicy = .whole,
                            labPathMs: Double = 0) throws(NetworkFitError) -> FittedPath {
        let received = set.received
        guard !set.controllers.isEmpty, received > 0 else {
            switch set.evidence {
            case .joined:
                throw NetworkFitError(description: set.controllers.isEmpty
                    ? "the sender's recording holds no valid \(set.protocolName) messages: nothing to join"
                    : "the join matches nothing: none of the sender's \(set.paths.reduce(0) { $0 + $1.lost.count }) messages is in the host's recording (\(set.unmatched) host messages unmatched); are they one session, the sender's recording first?")
            default:
                throw NetworkFitError(description: "the recording holds no valid \(set.protocolName) messages from a controller: nothing to fit")
            }
        }
        guard received >= DelayFit.minimumSamples else {
            throw NetworkFitError(description: "\(received) distinct messages arrived: a delay needs at least \(DelayFit.minimumSamples), and a loss model \(LossFit.minimumMessages) messages")
        }
        let raw = set.paths.flatMap(\.rawDelaysMs).sorted()
        let medianRaw = raw[raw.count / 2]
        // A stamp after its own arrival is a sender clock running ahead: no delay is below 0.
        let comparable = set.stampsOnRecorderClock ?? (abs(medianRaw) <= ClockComparison.plausibleOneWayMs && raw[0] >= 0)
        var notes: [String] = []
        if !comparable && baseMs == nil {
            if set.evidence == .arrivals {
                throw NetworkFitError(description: "unstamped arrivals show the path's jitter, not its delay: give --base-ms, the path's minimum one-way delay")
            }
            throw NetworkFitError(description: "the sender's times and the recording's clock cannot be compared (median difference \(Int64(medianRaw.rounded())) ms, smallest \(Int64(raw[0].rounded())) ms), so the delay is known only up to a constant: give --base-ms, the path's minimum one-way delay")
        }

        var placed = place(set, comparable: comparable, baseMs: baseMs, stepMs: { _ in 0 })
        let start = placed.timesS.first ?? 0, end = max(set.spanS, placed.timesS.last ?? 0)
        let minimumShift = max(1, 0.1 * interquartileRange(placed.delaysMs))
        let found = ChangePoints.segment(values: placed.delaysMs, timesS: placed.timesS, minimumShiftMs: minimumShift)
            .map { (placed.timesS[$0 - 1] + placed.timesS[$0]) / 2 }
        var boundaries: [Double] = []
        switch policy {
        case .whole: break
        case .changePoints: boundaries = found
        case .every(let seconds):
            let count = ((end - start) / seconds).rounded(.up)
            guard count <= Double(maximumFixedSegments) else {
                throw NetworkFitError(description: "--segment \(FixedPoint.text(seconds, 1)) s cuts \(FixedPoint.text(end - start, 1)) s into \(FixedPoint.text(count, 0)) segments; at most \(maximumFixedSegments): give a longer one")
            }
            var t = start + seconds
            while t < end - seconds / 10 { boundaries.append(t); t += seconds }
        }
        let lost = set.paths.flatMap(\.lost), lostTimes = set.paths.flatMap(\.lostTimesS)
        let bits = (set.meanMessageBytes + Double(RateStepSize.overheadBytes)) * 8
        func measure() -> ConditionSegments {
            ConditionSegments.measure(delaysMs: placed.delaysMs, timesS: placed.timesS, arrivalsS: placed.arrivalsS, lost: lost, lossTimesS: lostTimes,
                                      boundariesS: boundaries, spanS: (start, end), messageBits: bits, changePointsS: found)
        }
        var segments = measure()
        if !segments.rateSteps.isEmpty {
            // Again, with the steps out of the skew's way.
            let first = segments
            placed = place(set, comparable: comparable, baseMs: baseMs, stepMs: { first.shiftMs(atS: $0) })
            segments = measure()
        }
        if placed.insignificant > 0 {
            notes.append("\(placed.insignificant) controller(s) showed no skew that both halves of their samples agree on: left in (a path without a sharp minimum delay gives the lower bound no edge to hold)")
        }
        if placed.unskewed > 0 {
            notes.append("\(placed.unskewed) \(set.evidence == .arrivals ? "run(s)" : "controller(s)") spanned under \(Int(minimumSkewSpanS)) s: their delays are as measured, skew not removed")
        }
        if !comparable, let baseMs {
            notes.append("clocks not comparable: each \(set.evidence == .arrivals ? "run's" : "controller's") delays placed so that its lower bound is --base-ms \(baseMs) ms (assumed)")
        }
        if let lowest = placed.delaysMs.min(), lowest < 0 {
            // With a base given, a delay below 0 can only come from a stamp far from its neighbours.
            throw NetworkFitError(description: baseMs == nil
                ? "a delay of \(Int64(lowest.rounded())) ms after the skew was removed: the stamps run ahead of the recording's clock; give --base-ms"
                : "a delay of \(Int64(lowest.rounded())) ms after the skew was removed and --base-ms applied: a sender stamp lies far from its neighbours (a clock that jumped); cut the recording around it")
        }
        if let highest = placed.delaysMs.max(), highest > maximumDelayMs {
            throw NetworkFitError(description: "a delay of \(Int64(highest.rounded())) ms, over the hour a network's delay may be: "
                + (comparable ? "a sender stamp far behind its arrival (a clock that jumped); cut the recording around it"
                              : "a sender stamp far from its neighbours (a clock that jumped), or senders whose clocks differ; cut the recording around it"))
        }
        // With rate steps, the path's own delay is what the fastest segments show: a slower
        // segment's delays hold its link's queue, which the written rate rebuilds on replay.
        // Too few of them, and every delay is used with its segment's level taken out.
        var ownDelays = placed.delaysMs
        if !segments.rateSteps.isEmpty {
            let fastest = zip(placed.delaysMs, placed.timesS).filter { segments.shiftMs(atS: $0.1) == 0 }.map(\.0)
            ownDelays = fastest.count >= DelayFit.minimumSamples
                ? fastest : zip(placed.delaysMs, placed.timesS).map { max(0, $0 - segments.shiftMs(atS: $1)) }
        }
        if labPathMs > 0 {
            ownDelays = ownDelays.map { max(0, $0 - labPathMs) }
            notes.append("the lab's own path, \(FixedPoint.text(labPathMs, 3)) ms (--lab-baseline), taken out of the delay written")
        }
        guard let delay = DelayFit.fit(delaysMs: ownDelays) else {
            throw NetworkFitError(description: "the delays are not finite numbers: nothing to fit")
        }
        guard let loss = LossFit.fit(lost: lost) else {
            throw NetworkFitError(description: "\(lost.count) messages in send order: a loss model needs at least \(LossFit.minimumMessages)")
        }
        let pauses = set.paths.reduce(0) { $0 + $1.pauses }
        if pauses > 0 {
            notes.append("\(pauses) gap(s) over \(PathSet.longGapPeriods) periods taken as pauses of the sender, not loss")
        }
        notes += segmentNotes(segments, policy: policy, messageBytes: set.meanMessageBytes)
        if set.unmatched > 0 {
            notes.append("\(set.unmatched) host message(s) match nothing the sender's recording holds: left out (another sender, or bytes changed on the way)")
        }
        let duplicates = set.paths.reduce(0) { $0 + $1.duplicates }, reordered = set.paths.reduce(0) { $0 + $1.reordered }
        let evidence = minimumEvidence(set, received: received, lost: lost.count, placed: placed, segments: segments, policy: policy)
        return FittedPath(evidence: set.evidence, controllers: set.controllers.count, received: received, spanS: set.spanS,
                          skews: placed.skews, unskewedControllers: placed.unskewed,
                          clocksComparable: comparable, baseMs: comparable ? nil : baseMs, delaysMs: placed.delaysMs, delay: delay,
                          labPathMs: labPathMs, loss: loss,
                          duplicates: duplicates, reordered: reordered, pauses: pauses, segments: segments,
                          meanMessageBytes: set.meanMessageBytes, unmatched: set.unmatched, invalidMessages: set.invalidMessages,
                          minimumEvidence: evidence, notes: notes)
    }

    static func segmentNotes(_ segments: ConditionSegments, policy: SegmentPolicy, messageBytes: Double) -> [String] {
        var notes: [String] = []
        let f = { (x: Double) in FixedPoint.text(x, 1) }
        if policy == .whole && !segments.changePointsS.isEmpty {
            notes.append("the delay's level changes at \(segments.changePointsS.map { f($0) + " s" }.joined(separator: ", ")) (Pettitt, p < \(ChangePoints.alpha)): give --segment auto to write the changes as rate steps")
        }
        let slower = segments.segments.filter { $0.bitsPerS != nil }
        if !slower.isEmpty {
            notes.append("each slower segment's delay step is written as the rate at which a \(Int(messageBytes.rounded()))-byte message (the recording's mean) takes that long: exact for messages of that size")
        }
        for segment in segments.segments where segment.queued && !segment.saturated {
            notes.append("from \(f(segment.startS)) s messages queued back to back: the rate is from their spacing (packet-pair dispersion), and the written delay holds some of the queue the rate rebuilds")
        }
        for segment in segments.segments where segment.saturated {
            notes.append("from \(f(segment.startS)) s the link was slower than its load and queued: its rate is the throughput the recording shows, and the written delay holds some of the queue the rate rebuilds")
        }
        // Loss and spread changes have no timed form in network-v1.
        let intervals = segments.segments.filter { $0.messages > 0 }.map(\.lossInterval)
        if intervals.count > 1, let lowest = intervals.min(by: { $0.upperBound < $1.upperBound }),
           let highest = intervals.max(by: { $0.lowerBound < $1.lowerBound }), !lowest.overlaps(highest) {
            notes.append("the loss rate differs between segments (95 % intervals \(pct(lowest)) and \(pct(highest))): network-v1 has no timed loss, so the model written is the whole recording's")
        }
        return notes
    }

    static func pct(_ r: ClosedRange<Double>) -> String {
        let f = { (x: Double) in FixedPoint.text(100 * x, 2) }
        return "\(f(r.lowerBound))–\(f(r.upperBound)) %"
    }

    static func interquartileRange(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[(3 * sorted.count) / 4] - sorted[sorted.count / 4]
    }

    /// What each fitted figure needs, and whether the recording had it.
    static func minimumEvidence(_ set: PathSet, received: Int, lost: Int, placed: Placed, segments: ConditionSegments,
                                policy: SegmentPolicy) -> [FittedPath.Evidence] {
        let longest = set.paths.map { ($0.senderTimesS.max() ?? 0) - ($0.senderTimesS.min() ?? 0) }.max() ?? 0
        var rows: [FittedPath.Evidence] = [
            .init(figure: "delay", needs: "\(DelayFit.minimumSamples) delays", had: "\(received)", met: received >= DelayFit.minimumSamples),
            .init(figure: "loss", needs: "\(LossFit.minimumMessages) messages in send order", had: "\(lost)", met: lost >= LossFit.minimumMessages),
            .init(figure: "skew", needs: "a controller spanning \(Int(minimumSkewSpanS)) s, whose two halves agree on the slope",
                  had: "longest \(Int(longest.rounded())) s; removed for \(placed.skews.count)", met: longest >= minimumSkewSpanS),
            .init(figure: "segments", needs: "\(Int(ChangePoints.minimumSpanS)) s and \(ChangePoints.minimumSamples) delays each side of a change, Pettitt p < \(ChangePoints.alpha)",
                  had: "\(segments.changePointsS.count) change(s) found; " + (policy == .whole ? "not split (no --segment)" : "\(segments.segments.count) segment(s)"),
                  met: policy == .whole ? nil : segments.segments.count > 1),
            .init(figure: "rate", needs: "a segment's 10th-percentile delay above the fastest's, its 95 % interval clear of 0 and ≥ \(ConditionSegments.minimumShiftMs) ms",
                  had: policy == .whole ? "not asked (no --segment)" : "\(segments.rateSteps.count) step(s)",
                  met: policy == .whole ? nil : segments.segments.count > 1),
        ]
        if set.evidence == .arrivals {
            rows.append(.init(figure: "duplicates, reordering", needs: "messages that name themselves (a sender clock or a join)", had: "unstamped arrivals", met: false))
        } else {
            rows.append(.init(figure: "duplicates, reordering", needs: "one message seen twice, or out of order", had: "counted over \(received)", met: true))
        }
        return rows
    }
}

/// The rate model's header bytes, without depending on the replay engine.
enum RateStepSize {
    /// Ethernet 14, IPv4 20 and UDP 8 (specs/networks/README.md §2.6).
    static let overheadBytes = 42
}
