import KinetraceTrace
import KinetraceWire

/// What became of one label or one detection when a trace was scored: a label matched
/// by a detection (a true positive), a label nothing matched (a false negative), or a
/// detection no label claimed (a false positive). A scoring's outcomes are exactly its
/// counts: as many true positives, false negatives and false positives as its `GestureScore`.
package struct GestureOutcome: Hashable, Sendable {
    package enum Kind: String, CaseIterable, Hashable, Sendable {
        case truePositive = "TP"
        case falseNegative = "FN"
        case falsePositive = "FP"
    }

    package var kind: Kind
    /// The label's gesture (true positives and false negatives), or the detection's (false positives).
    package var gesture: String
    /// The label's controller, or the detection's; nil for a label that names none and was missed.
    package var controller: Endpoint?
    /// The label's onset on the controller's clock, ms; nil for a false positive.
    package var labelMs: Double?
    /// The detecting sample's time on the controller's clock, ms; nil for a false negative.
    package var detectionMs: UInt64?

    package init(kind: Kind, gesture: String, controller: Endpoint?, labelMs: Double?, detectionMs: UInt64?) {
        self.kind = kind
        self.gesture = gesture
        self.controller = controller
        self.labelMs = labelMs
        self.detectionMs = detectionMs
    }

    /// Detection time − label onset, ms, for a true positive.
    package var delayMs: Double? {
        guard let labelMs, let detectionMs else { return nil }
        return Double(detectionMs) - labelMs
    }

    /// When it happened on the controller's clock: the label's onset, or the detection's time.
    package var timeMs: Double { labelMs ?? detectionMs.map { Double($0) } ?? 0 }

    /// Outcomes in time order; ties by kind, then controller.
    package static func sorted(_ outcomes: [GestureOutcome]) -> [GestureOutcome] {
        outcomes.sorted { a, b in
            if a.timeMs != b.timeMs { return a.timeMs < b.timeMs }
            if a.kind != b.kind { return Kind.allCases.firstIndex(of: a.kind)! < Kind.allCases.firstIndex(of: b.kind)! }
            return (a.controller?.description ?? "") < (b.controller?.description ?? "")
        }
    }

    /// The one-to-one matching of `GestureScore.match`, with what became of each label and
    /// detection: each label, in onset order, takes the earliest unmatched detection of its
    /// gesture and controller inside its window.
    package static func match(labels: [GestureLabel], detections: [(controller: Endpoint, detection: Detection)],
                              window: MatchWindow) -> [GestureOutcome] {
        var outcomes: [GestureOutcome] = []
        let used = GestureScore.pair(labels: labels, detections: detections, window: window) { label, hit in
            if let hit {
                outcomes.append(GestureOutcome(kind: .truePositive, gesture: label.gesture, controller: detections[hit].controller,
                                               labelMs: label.senderTimeMs, detectionMs: detections[hit].detection.senderTimeMs))
            } else {
                outcomes.append(GestureOutcome(kind: .falseNegative, gesture: label.gesture, controller: label.controller,
                                               labelMs: label.senderTimeMs, detectionMs: nil))
            }
        }
        for (i, (controller, d)) in detections.enumerated() where !used[i] {
            outcomes.append(GestureOutcome(kind: .falsePositive, gesture: d.gesture, controller: controller, labelMs: nil,
                                           detectionMs: d.senderTimeMs))
        }
        return sorted(outcomes)
    }
}

extension GestureEvaluation {
    /// What became of every label and detection of one setting (`setting` indexes the trace's
    /// settings), matched as `evaluate` matches them, so the kinds counted are that setting's
    /// score: labels naming a controller take its detections of their gesture first, labels naming
    /// none take what is left, and labels naming a controller without samples are missed. Call it
    /// after `evaluate` has accepted the trace (it does not repeat the checks).
    package static func outcomes(_ trace: DetectedTrace, setting: Int, window: MatchWindow) -> [GestureOutcome] {
        guard setting >= 0, setting < trace.settingCount else { return [] }
        let gestures = trace.kind.gestures
        let gestureIndex = Dictionary(uniqueKeysWithValues: gestures.enumerated().map { ($1, $0) })
        let controllerIndex = Dictionary(uniqueKeysWithValues: trace.controllers.enumerated().map { ($1, $0) })
        var onsets = Array(repeating: Array(repeating: [GestureLabel](), count: gestures.count), count: trace.controllers.count)
        var loose: [GestureLabel] = []
        var outcomes: [GestureOutcome] = []
        for label in trace.labels {
            guard let g = gestureIndex[label.gesture] else { continue }
            if let controller = label.controller {
                if let c = controllerIndex[controller] {
                    onsets[c][g].append(label)
                } else {
                    outcomes.append(GestureOutcome(kind: .falseNegative, gesture: label.gesture, controller: controller,
                                                   labelMs: label.senderTimeMs, detectionMs: nil))
                }
            } else {
                loose.append(label)
            }
        }
        var leftovers: [(controller: Endpoint, detection: Detection)] = []
        for (c, found) in trace.detections.enumerated() where setting < found.count {
            let controller = trace.controllers[c]
            for (g, gesture) in gestures.enumerated() {
                // As `evaluate`: with one gesture every detection counts for it, whatever the detector named it.
                let mine = gestures.count == 1 ? found[setting] : found[setting].filter { $0.gesture == gesture }
                let labels = onsets[c][g].sorted { $0.senderTimeMs < $1.senderTimeMs }
                var used = Array(repeating: false, count: mine.count)
                var first = 0
                for label in labels {
                    let onset = label.senderTimeMs
                    let lower = onset - window.beforeMs, upper = onset + window.afterMs
                    while first < mine.count && (used[first] || Double(mine[first].senderTimeMs) < lower) { first += 1 }
                    if first < mine.count && Double(mine[first].senderTimeMs) <= upper {
                        used[first] = true
                        outcomes.append(GestureOutcome(kind: .truePositive, gesture: label.gesture, controller: controller,
                                                       labelMs: onset, detectionMs: mine[first].senderTimeMs))
                        first += 1
                    } else {
                        outcomes.append(GestureOutcome(kind: .falseNegative, gesture: label.gesture, controller: controller,
                                                       labelMs: onset, detectionMs: nil))
                    }
                }
                for (i, d) in mine.enumerated() where !used[i] {
                    if loose.isEmpty {
                        outcomes.append(GestureOutcome(kind: .falsePositive, gesture: d.gesture, controller: controller,
                                                       labelMs: nil, detectionMs: d.senderTimeMs))
                    } else {
                        // The loose labels may still claim it (by its own name, as `evaluate` matches them).
                        leftovers.append((controller, d))
                    }
                }
            }
        }
        if !loose.isEmpty {
            for gesture in gestures {
                outcomes += GestureOutcome.match(labels: loose.filter { $0.gesture == gesture },
                                                 detections: leftovers.filter { $0.detection.gesture == gesture }, window: window)
            }
        }
        return GestureOutcome.sorted(outcomes)
    }
}

/// A threshold a detector compares one axis of one motion vector with, to draw beside the signal.
package struct WatchedThreshold: Hashable, Sendable {
    /// The vector and axis (0 = x, 1 = y, 2 = z) compared; attitude's axes are roll, pitch and yaw.
    package var vector: VectorSlot
    package var axis: Int
    /// τ, or −τ and +τ for a detector that fires both ways; in the parameter's unit (degrees for angles).
    package var values: [Double]
    /// The parameter's unit ("g", "rad/s", "°").
    package var unit: String
    /// What is compared, in words: the parameter's summary.
    package var summary: String

    package init(vector: VectorSlot, axis: Int, values: [Double], unit: String, summary: String) {
        self.vector = vector
        self.axis = axis
        self.values = values
        self.unit = unit
        self.summary = summary
    }

    /// The protocol's host rule as a threshold: the quantity its host watches (its declaration's,
    /// a compiled protocol's built-in one) at `threshold`; nil for a host that decides on no threshold.
    package static func host(of wireProtocol: any WireProtocol, threshold: Double) -> WatchedThreshold? {
        let declared = wireProtocol.declaration ?? (type(of: wireProtocol) as? any CompiledWireProtocol.Type)?.builtInDeclaration?.declared
        guard case .threshold(let quantity, _, _, _, _, _)? = declared?.host?.behaviour, case .motion(let slot, let axis) = quantity,
              threshold.isFinite else { return nil }
        let unit: String
        switch slot {
        case .userAcceleration, .gravity: unit = "g"
        case .rotationRate: unit = "rad/s"
        case .attitude: unit = "rad"
        case .own: unit = ""
        }
        return WatchedThreshold(vector: slot, axis: axis, values: [threshold], unit: unit, summary: "the host's τ on \(quantity)")
    }
}

extension DetectorSettings {
    /// The threshold this setting compares a sample's vector with, when it compares one axis of
    /// one vector the samples carry (`contents`): nil for a detector of a derived quantity (the
    /// acceleration along gravity, the tilt angle) and for the host model (`WatchedThreshold.host`).
    package func watchedThreshold(carrying contents: SampleContents) -> WatchedThreshold? {
        guard let parameter = kind.parameters.first(where: { $0.name == "threshold" }), let tau = values["threshold"], tau.isFinite else {
            return nil
        }
        switch kind {
        case .threshold, .thresholdRefractory:
            return WatchedThreshold(vector: .userAcceleration, axis: 1, values: [tau], unit: parameter.unit, summary: parameter.summary)
        case .thresholdLatch:
            let vector: VectorSlot = contents.contains(.ownVector) ? .own : .userAcceleration
            return WatchedThreshold(vector: vector, axis: 1, values: [tau], unit: parameter.unit, summary: parameter.summary)
        case .badgerJump:
            return WatchedThreshold(vector: .rotationRate, axis: 1, values: [tau], unit: parameter.unit,
                                    summary: parameter.summary + " over \(text("window_ms")) ms")
        case .attitudeTilt:
            let axis = values["axis"].map { Int($0) } ?? 0
            return WatchedThreshold(vector: .attitude, axis: axis == 1 ? 1 : 0, values: [-tau, tau], unit: parameter.unit,
                                    summary: parameter.summary)
        case .badgerDuck, .badgerTilt, .hostModel:
            return nil
        }
    }

    private func text(_ name: String) -> String {
        guard let parameter = kind.parameters.first(where: { $0.name == name }), let value = values[name] else { return "?" }
        return parameter.text(value)
    }
}

extension GestureTrace {
    /// Reads every record once, handing over what `read` and `DetectedTrace.read` choose samples
    /// from, made the same way: each valid controller-to-host sample of the protocol (`frame`), each
    /// device-motion sample (`motion`), both with the controller's number in order of first
    /// appearance, and each label. Staleness is left to the caller. Returns the controllers in order.
    package static func scanSamples(_ reader: some TraceRecordSource, frame: (Int, GestureSample) -> Void,
                                    motion: (Int, GestureSample) -> Void, label: (GestureLabel) -> Void) throws(TraceError) -> [Endpoint] {
        try scan(reader, newController: {}, frame: frame, motion: motion, label: label)
    }
}
