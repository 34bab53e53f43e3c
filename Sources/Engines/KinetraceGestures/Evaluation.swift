import KinetraceTrace
import KinetraceWire

/// A gesture a detector reported.
package struct Detection: Hashable, Sendable {
    package var gesture: String
    /// The triggering sample's time on the controller's clock.
    package var senderTimeMs: UInt64
    package var timeNs: Int64
    package init(gesture: String, senderTimeMs: UInt64, timeNs: Int64) {
        self.gesture = gesture
        self.senderTimeMs = senderTimeMs
        self.timeNs = timeNs
    }
}

/// When a detection counts for a label: from `beforeMs` before its onset to `afterMs` after.
package struct MatchWindow: Hashable, Sendable {
    package var beforeMs: Double
    package var afterMs: Double
    package init(beforeMs: Double = 100, afterMs: Double = 700) {
        self.beforeMs = beforeMs
        self.afterMs = afterMs
    }
}

/// True and false positives and negatives, and the delays of the true ones.
package struct GestureScore: Hashable, Sendable {
    package var truePositives = 0
    package var falsePositives = 0
    package var falseNegatives = 0
    /// Detection time − label onset on the controller's clock, ms, for each true positive.
    package var delaysMs: [Double] = []

    package init() {}

    /// nil when nothing was detected (precision is undefined, not 0 or 1).
    package var precision: Double? { truePositives + falsePositives == 0 ? nil : Double(truePositives) / Double(truePositives + falsePositives) }
    /// nil when there was nothing to detect.
    package var recall: Double? { truePositives + falseNegatives == 0 ? nil : Double(truePositives) / Double(truePositives + falseNegatives) }
    /// 2·TP / (2·TP + FP + FN): 0 when there were labels or detections and no hits; nil when neither.
    package var f1: Double? {
        let denominator = 2 * truePositives + falsePositives + falseNegatives
        return denominator == 0 ? nil : Double(2 * truePositives) / Double(denominator)
    }

    package static func + (a: GestureScore, b: GestureScore) -> GestureScore {
        var sum = a
        sum += b
        return sum
    }

    /// In place: summing controllers one at a time with `+` copied the delays so far each time.
    package static func += (a: inout GestureScore, b: GestureScore) {
        a.truePositives += b.truePositives
        a.falsePositives += b.falsePositives
        a.falseNegatives += b.falseNegatives
        a.delaysMs.append(contentsOf: b.delaysMs)
    }

    /// Matches detections to labels of the same gesture and controller, one to one: each
    /// label, in onset order, takes the earliest unmatched detection inside its window.
    /// Both lists are walked in time order, so the cost is linear plus what the windows overlap.
    package static func match(labels: [GestureLabel], detections: [(controller: Endpoint, detection: Detection)],
                             window: MatchWindow) -> GestureScore {
        var score = GestureScore()
        let used = pair(labels: labels, detections: detections, window: window) { label, hit in
            if let hit {
                score.truePositives += 1
                score.delaysMs.append(Double(detections[hit].detection.senderTimeMs) - label.senderTimeMs)
            } else {
                score.falseNegatives += 1
            }
        }
        score.falsePositives = used.filter { !$0 }.count
        return score
    }

    /// The matching itself, shared by the score and the outcome list (`GestureOutcome.match`):
    /// `visit` is told each label, in onset order, with the index of the detection it took, if
    /// any; returns which detections were taken.
    package static func pair(labels: [GestureLabel], detections: [(controller: Endpoint, detection: Detection)],
                             window: MatchWindow, visit: (GestureLabel, Int?) -> Void) -> [Bool] {
        var used = Array(repeating: false, count: detections.count)
        let order = detections.indices.sorted { detections[$0].detection.senderTimeMs < detections[$1].detection.senderTimeMs }
        var first = 0  // detections before this one are earlier than every remaining label's window
        for label in labels.sorted(by: { $0.senderTimeMs < $1.senderTimeMs }) {
            let lower = label.senderTimeMs - window.beforeMs, upper = label.senderTimeMs + window.afterMs
            while first < order.count && Double(detections[order[first]].detection.senderTimeMs) < lower { first += 1 }
            var hit: Int?
            var k = first
            while k < order.count {
                let i = order[k]
                let (controller, d) = detections[i]
                if Double(d.senderTimeMs) > upper { break }
                if !used[i] && d.gesture == label.gesture && (label.controller == nil || label.controller == controller) {
                    hit = i
                    break
                }
                k += 1
            }
            if let hit { used[hit] = true }
            visit(label, hit)
        }
        return used
    }
}

/// One detector setting's result on one trace.
package struct TraceScore: Sendable {
    package var score: GestureScore
    /// Per gesture the detector reports.
    package var byGesture: [String: GestureScore]
    package var detections: Int

    package init(score: GestureScore, byGesture: [String: GestureScore], detections: Int) {
        self.score = score
        self.byGesture = byGesture
        self.detections = detections
    }
}

/// Runs detectors over traces and scores them against the labels.
package enum GestureEvaluation {
    /// Every setting over every sample of the trace in one pass; one score per setting.
    package static func evaluate(_ trace: GestureTrace, settings: [DetectorSettings], window: MatchWindow) throws(GestureError) -> [TraceScore] {
        guard !settings.isEmpty else { return [] }
        return try evaluate(DetectedTrace(trace, settings: settings), window: window)
    }

    /// Scores a trace's detections (`DetectedTrace`) against its labels; one score per setting.
    package static func evaluate(_ trace: DetectedTrace, window: MatchWindow) throws(GestureError) -> [TraceScore] {
        let kind = trace.kind
        guard trace.settingCount > 0 else { return [] }
        if kind.needsGravity, let missing = trace.controllers.indices.first(where: { trace.lacksGravity[$0] }) {
            throw GestureError(.needsGravity, "\(trace.source): \(kind.rawValue) needs gravity, and \(trace.controllers[missing])'s samples "
                               + "(\(trace.sampleKinds[missing].rawValue)) carry none; record device-motion samples (trace minor 1 \"motion\" records)")
        }
        let contents = trace.sampleContents
        for c in trace.controllers.indices where trace.sampleCounts[c] > 0 {
            if let needed = kind.unmet(by: contents[c]) {
                let carried = contents[c].names
                throw GestureError(.notApplicable, "\(trace.source): \(kind.rawValue) reads \(needed), and \(trace.controllers[c])'s samples "
                                   + "(\(trace.sampleKinds[c].rawValue) of \(trace.protocolID)) carry "
                                   + (carried.isEmpty ? "none of it" : "only " + carried.joined(separator: ", ")))
            }
        }
        let settingCount = trace.settingCount, gestures = kind.gestures
        let gestureIndex = Dictionary(uniqueKeysWithValues: gestures.enumerated().map { ($1, $0) })
        let controllerIndex = Dictionary(uniqueKeysWithValues: trace.controllers.enumerated().map { ($1, $0) })
        // Label onsets per controller and gesture, sorted. Labels naming no controller ("loose") match
        // any controller's leftovers afterwards; labels naming a controller without samples are missed.
        var onsets = Array(repeating: Array(repeating: [Double](), count: gestures.count), count: trace.controllers.count)
        var loose: [GestureLabel] = []
        var unseen = Array(repeating: 0, count: gestures.count)
        for label in trace.labels {
            guard let g = gestureIndex[label.gesture] else { continue }
            if let controller = label.controller {
                if let c = controllerIndex[controller] { onsets[c][g].append(label.senderTimeMs) } else { unseen[g] += 1 }
            } else {
                loose.append(label)
            }
        }
        var scores = Array(repeating: Array(repeating: GestureScore(), count: gestures.count), count: settingCount)
        var detectionCounts = Array(repeating: 0, count: settingCount)
        var leftovers = Array(repeating: [(controller: Endpoint, detection: Detection)](), count: settingCount)
        for (c, found) in trace.detections.enumerated() {
            for g in gestures.indices { onsets[c][g].sort() }
            for s in 0..<settingCount {
                detectionCounts[s] += found[s].count
                for (g, gesture) in gestures.enumerated() {
                    // Samples are in controller-clock order, so each list of detections already is.
                    let mine = gestures.count == 1 ? found[s] : found[s].filter { $0.gesture == gesture }
                    let (score, used) = matchSorted(onsets[c][g], mine, window: window)
                    scores[s][g] += score
                    if !loose.isEmpty {
                        scores[s][g].falsePositives -= score.falsePositives  // the loose labels may still claim them
                        for (i, d) in mine.enumerated() where !used[i] { leftovers[s].append((trace.controllers[c], d)) }
                    }
                }
            }
        }
        return (0..<settingCount).map { s in
            var byGesture: [String: GestureScore] = [:]
            for (g, gesture) in gestures.enumerated() {
                var score = scores[s][g]
                score.falseNegatives += unseen[g]
                if !loose.isEmpty {
                    score = score + GestureScore.match(labels: loose.filter { $0.gesture == gesture },
                                                       detections: leftovers[s].filter { $0.detection.gesture == gesture }, window: window)
                }
                byGesture[gesture] = score
            }
            let total = gestures.reduce(GestureScore()) { $0 + byGesture[$1]! }
            return TraceScore(score: total, byGesture: byGesture, detections: detectionCounts[s])
        }
    }

    /// The one-to-one matching of `GestureScore.match` for one controller and gesture, with both
    /// lists sorted by time: a single walk. Returns which detections were used.
    static func matchSorted(_ onsets: [Double], _ detections: [Detection], window: MatchWindow) -> (GestureScore, [Bool]) {
        var score = GestureScore()
        var used = Array(repeating: false, count: detections.count)
        var first = 0
        for onset in onsets {
            let lower = onset - window.beforeMs, upper = onset + window.afterMs
            while first < detections.count && (used[first] || Double(detections[first].senderTimeMs) < lower) { first += 1 }
            if first < detections.count && Double(detections[first].senderTimeMs) <= upper {
                used[first] = true
                score.truePositives += 1
                score.delaysMs.append(Double(detections[first].senderTimeMs) - onset)
                first += 1
            } else {
                score.falseNegatives += 1
            }
        }
        score.falsePositives = used.count - score.truePositives
        return (score, used)
    }

    /// Detections of each setting over one controller's samples.
    package static func detect(_ kind: DetectorKind, _ settings: [DetectorSettings], _ samples: [GestureSample],
                              wireProtocol: (any WireProtocol)? = nil) -> [[Detection]] {
        withDetectors(kind, settings, wireProtocol: wireProtocol, SampleVisitor(samples: samples))
    }

    /// Calls `visitor` with every setting's detector, of the kind's concrete type: the one place
    /// a kind becomes its detector, and each detector type gets loops specialised for it.
    static func withDetectors<V: DetectorVisitor>(_ kind: DetectorKind, _ settings: [DetectorSettings], wireProtocol: (any WireProtocol)? = nil,
                                                  _ visitor: V) -> V.Output {
        switch kind {
        case .threshold:
            visitor.visit(settings.map { ThresholdDetector(threshold: $0["threshold"]) })
        case .thresholdLatch:
            visitor.visit(settings.map { LatchedThresholdDetector(threshold: $0["threshold"], latchMs: $0["latch_ms"]) })
        case .thresholdRefractory:
            visitor.visit(settings.map { RefractoryThresholdDetector(threshold: $0["threshold"], refractoryMs: $0.millis("refractory_ms")) })
        case .badgerJump:
            visitor.visit(settings.map { BadgerJumpDetector(threshold: $0["threshold"], windowMs: $0.millis("window_ms")) })
        case .badgerDuck:
            visitor.visit(settings.map {
                BadgerDuckDetector(threshold: $0["threshold"], windowMs: $0.millis("window_ms"),
                                   orientation: HeldOrientation.allCases[Int($0["orientation"])])
            })
        case .badgerTilt:
            visitor.visit(settings.map { BadgerTiltDetector(thresholdDegrees: $0["threshold"], hysteresis: $0["hysteresis"]) })
        case .attitudeTilt:
            visitor.visit(settings.map {
                AttitudeTiltDetector(thresholdDegrees: $0["threshold"], hysteresis: $0["hysteresis"],
                                     axis: AttitudeTiltDetector.Axis.allCases[Int($0["axis"])])
            })
        case .hostModel:
            visitor.visit(settings.map { _ in HostModelDetector(wireProtocol ?? ProtocolRegistry.defaultProtocol) })
        }
    }

    /// The single pass: each sample goes to every detector before the next sample.
    /// Generic, so each detector type gets its own specialised loop.
    static func run<D: GestureDetector>(_ detectors: [D], _ samples: [GestureSample]) -> [[Detection]] {
        var detectors = detectors
        var found = Array(repeating: [Detection](), count: detectors.count)
        for sample in samples { feed(sample, to: &detectors, into: &found) }
        return found
    }

    /// One sample to every detector, in setting order.
    @inline(__always)
    static func feed<D: GestureDetector>(_ sample: GestureSample, to detectors: inout [D], into found: inout [[Detection]]) {
        for i in detectors.indices {
            if let gesture = detectors[i].accept(sample) {
                found[i].append(Detection(gesture: gesture, senderTimeMs: sample.senderTimeMs, timeNs: sample.timeNs))
            }
        }
    }
}

/// Runs the detectors over samples in memory (`GestureEvaluation.detect`).
private struct SampleVisitor: DetectorVisitor {
    let samples: [GestureSample]
    func visit<D: GestureDetector>(_ detectors: [D]) -> [[Detection]] { GestureEvaluation.run(detectors, samples) }
}

/// Something done with every setting's detector, whatever the detectors' type (`GestureEvaluation.withDetectors`).
protocol DetectorVisitor {
    associatedtype Output
    func visit<D: GestureDetector>(_ detectors: [D]) -> Output
}

/// `name=lo:hi:step`: the values a sweep tries, lo to hi inclusive.
package struct SweepRange: Hashable, Sendable {
    package var parameter: String
    package var values: [Double]

    package init(parsing text: String) throws(GestureError) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        let bounds = parts.count == 2 ? parts[1].split(separator: ":").map { Double($0) } : []
        guard parts.count == 2, bounds.count == 3, let lo = bounds[0], let hi = bounds[1], let step = bounds[2],
              lo.isFinite, hi.isFinite, step.isFinite else {
            throw GestureError(.badValue, "--sweep takes NAME=LO:HI:STEP, e.g. threshold=0.2:1.2:0.01, not \"\(text)\"")
        }
        guard step > 0, hi >= lo else { throw GestureError(.badValue, "--sweep \(text): STEP must be > 0 and HI ≥ LO") }
        // Counted in Double first: a wide range or a tiny step gives more values than Int holds (or inf).
        let steps = ((hi - lo) / step + 1e-9).rounded(.down)
        guard steps < 100_000 else {
            throw GestureError(.badValue, "--sweep \(text) gives \(steps.isFinite ? "\(steps + 1)" : "unboundedly many") values; at most 100000")
        }
        let count = Int(steps) + 1
        parameter = parts[0]
        // Multiply, not accumulate, so 0.1-steps land on the decimal values.
        values = (0..<count).map { i in ((lo + Double(i) * step) * 1e9).rounded() / 1e9 }
    }
}
