/// Why a detector could not be set up or run; one line for the user.
package struct GestureError: Error, CustomStringConvertible, Hashable, Sendable {
    package enum Code: String, Hashable, Sendable {
        case unknownDetector = "unknown_detector"
        case unknownParameter = "unknown_parameter"
        case badValue = "bad_value"
        case needsGravity = "needs_gravity"
        /// The trace's samples lack what the detector reads (its protocol does not carry it).
        case notApplicable = "not_applicable"
    }
    package var code: Code
    package var message: String
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    package var description: String { message }
}

/// One tunable of a detector.
package struct DetectorParameter: Hashable, Sendable {
    package var name: String
    package var defaultValue: Double
    package var unit: String
    package var summary: String
    /// The allowed values for a choice (stored as the index), empty for a number.
    package var choices: [String] = []
    package var minimum: Double? = nil
    /// Times are capped at an hour: beyond that a window means nothing, and it keeps nanoseconds in range.
    package var maximum: Double? = nil
}

/// The detectors, their gestures and their parameters.
package enum DetectorKind: String, CaseIterable, Hashable, Sendable {
    case threshold
    case thresholdLatch = "threshold-latch"
    case thresholdRefractory = "threshold-refractory"
    case badgerJump = "badger-jump"
    case badgerDuck = "badger-duck"
    case badgerTilt = "badger-tilt"
    case attitudeTilt = "attitude-tilt"
    /// The trace's own protocol's host model, compiled or declared: what its host decides is what is detected.
    case hostModel = "host-model"

    package var summary: String {
        switch self {
        case .threshold: return "The source paper's rule: a jump when ay crosses τ upwards."
        case .thresholdLatch: return "A threshold latched on arrival time: y > τ (of the protocol's own vector when samples carry one), then latch_ms of the game's clock ignored."
        case .thresholdRefractory: return "A threshold with a refractory window: ay > τ, then R ms of the sender's clock before the next; stale samples ignored."
        case .badgerJump: return "WWDC 2017 \"Badger with Attitude\" jump: the mean rotation rate about y over a window crosses τ."
        case .badgerDuck: return "WWDC 2017 \"Badger with Attitude\" duck: the mean user acceleration along gravity over a window crosses τ."
        case .badgerTilt: return "WWDC 2017 \"Badger with Attitude\" tilt: atan2(g.y, |g.xz|) beyond ±τ degrees; needs gravity samples."
        case .attitudeTilt: return "The 3D mouse's attitude: roll (or pitch, held in landscape) beyond ±τ degrees; needs attitude samples."
        case .hostModel: return "The trace's protocol's own host model (a declaration's threshold and window, or a compiled protocol's rule): each decision it makes is a detection, named as the protocol names it."
        }
    }

    package var gestures: [String] {
        switch self {
        case .threshold, .thresholdLatch, .thresholdRefractory, .badgerJump, .hostModel: return ["jump"]
        case .badgerDuck: return ["duck"]
        case .badgerTilt, .attitudeTilt: return ["tilt_left", "tilt_right"]
        }
    }

    package var needsGravity: Bool { self == .badgerTilt }

    /// What the detector reads, as alternatives: a controller's samples must carry all of one of them.
    package var reads: [SampleContents] {
        switch self {
        case .threshold, .badgerDuck: return [.userAcceleration]
        case .thresholdLatch: return [.ownVector, .userAcceleration]
        case .thresholdRefractory: return [[.userAcceleration, .senderClock]]
        case .badgerJump: return [.rotationRate]
        case .badgerTilt: return [.gravity]
        case .attitudeTilt: return [.attitude]
        case .hostModel: return []
        }
    }

    /// Why the detector cannot run on samples carrying `contents`, or nil when it can.
    package func unmet(by contents: SampleContents) -> String? {
        // The host model reads what its protocol carries; it judges any sample.
        guard !reads.isEmpty, !reads.contains(where: { contents.isSuperset(of: $0) }) else { return nil }
        return reads.map { $0.names.joined(separator: " and ") }.joined(separator: " or ")
    }

    package var parameters: [DetectorParameter] {
        switch self {
        case .threshold:
            return [.init(name: "threshold", defaultValue: 0.5, unit: "g", summary: "τ on ay")]
        case .thresholdLatch:
            return [.init(name: "threshold", defaultValue: 0.5, unit: "g", summary: "τ on y"),
                    .init(name: "latch_ms", defaultValue: 400, unit: "ms", summary: "how long a jump latches, on the game's clock", minimum: 0, maximum: 3_600_000)]
        case .thresholdRefractory:
            return [.init(name: "threshold", defaultValue: 0.5, unit: "g", summary: "τ on ay"),
                    .init(name: "refractory_ms", defaultValue: 400, unit: "ms", summary: "R, sender time between triggers", minimum: 0, maximum: 3_600_000)]
        case .badgerJump:
            return [.init(name: "threshold", defaultValue: 1.5, unit: "rad/s", summary: "τ on the mean rotation rate about y"),
                    .init(name: "window_ms", defaultValue: 100, unit: "ms", summary: "the averaging window", minimum: 1, maximum: 3_600_000)]
        case .badgerDuck:
            return [.init(name: "threshold", defaultValue: 0.25, unit: "g", summary: "τ on the mean acceleration along gravity"),
                    .init(name: "window_ms", defaultValue: 150, unit: "ms", summary: "the averaging window", minimum: 1, maximum: 3_600_000),
                    .init(name: "orientation", defaultValue: 0, unit: "", summary: "how the phone is held, for gravity when samples lack it",
                          choices: HeldOrientation.allCases.map(\.rawValue))]
        case .badgerTilt:
            return [.init(name: "threshold", defaultValue: 20, unit: "°", summary: "τ on the tilt angle", minimum: 0),
                    .init(name: "hysteresis", defaultValue: 0.8, unit: "", summary: "back within this fraction of τ re-arms a side", minimum: 0)]
        case .attitudeTilt:
            // 12°: the smallest persona tilt (15° about the screen normal) shows as about 13.5° of pitch with the screen leaning back.
            return [.init(name: "threshold", defaultValue: 12, unit: "°", summary: "τ on the angle", minimum: 0),
                    .init(name: "hysteresis", defaultValue: 0.8, unit: "", summary: "back within this fraction of τ re-arms a side", minimum: 0),
                    .init(name: "axis", defaultValue: 0, unit: "", summary: "roll for a phone held flat or in portrait, pitch for landscape",
                          choices: AttitudeTiltDetector.Axis.allCases.map(\.rawValue))]
        case .hostModel:
            return []
        }
    }

    /// The parameter values, defaults filled in, after checking names and values.
    package func settings(_ given: [String: String]) throws(GestureError) -> DetectorSettings {
        var values = Dictionary(uniqueKeysWithValues: parameters.map { ($0.name, $0.defaultValue) })
        for (name, text) in given {
            guard let parameter = parameters.first(where: { $0.name == name }) else {
                throw GestureError(.unknownParameter, "\(rawValue) has no parameter \"\(name)\"; it has \(parameters.map(\.name).joined(separator: ", "))")
            }
            values[name] = try parameter.parse(text)
        }
        return DetectorSettings(kind: self, values: values)
    }
}

extension DetectorParameter {
    package func parse(_ text: String) throws(GestureError) -> Double {
        if !choices.isEmpty {
            guard let index = choices.firstIndex(of: text) else {
                throw GestureError(.badValue, "\(name) must be one of \(choices.joined(separator: ", ")), not \"\(text)\"")
            }
            return Double(index)
        }
        guard let value = Double(text), value.isFinite else {
            throw GestureError(.badValue, "\(name) must be a number, not \"\(text)\"")
        }
        if let minimum, value < minimum {
            throw GestureError(.badValue, "\(name) must be at least \(self.text(minimum)), not \(text)")
        }
        if let maximum, value > maximum {
            throw GestureError(.badValue, "\(name) must be at most \(self.text(maximum)), not \(text)")
        }
        return value
    }

    /// The value as the user would write it.
    package func text(_ value: Double) -> String {
        if !choices.isEmpty { return choices[min(max(Int(value), 0), choices.count - 1)] }
        return value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// A detector with every parameter set.
package struct DetectorSettings: Hashable, Sendable {
    package var kind: DetectorKind
    package var values: [String: Double]

    package subscript(_ name: String) -> Double { values[name]! }

    /// `name=value` pairs in the catalogue's order, for reports.
    package var description: [(name: String, value: String)] {
        kind.parameters.map { ($0.name, $0.text(values[$0.name]!)) }
    }

    func millis(_ name: String) -> UInt64 { UInt64(max(0, self[name]).rounded()) }
}
