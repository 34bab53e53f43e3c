import KinetraceSupport

/// Which messages are lost.
package enum LossModel: Hashable, Sendable {
    case none
    /// Each message independently with probability `p`.
    case bernoulli(p: Double)
    /// Gilbert–Elliott, with netem's parameter meaning (`loss gemodel p r 1-h 1-k`):
    /// `p` is P(good → bad), `r` is P(bad → good), `lossInBad` is 1−h and
    /// `lossInGood` is 1−k. Starts in the good state.
    case gilbertElliott(p: Double, r: Double, lossInBad: Double, lossInGood: Double)

    /// The long-run fraction of messages lost.
    package var expectedLossRate: Double {
        switch self {
        case .none: return 0
        case .bernoulli(let p): return p
        case .gilbertElliott(let p, let r, let bad, let good):
            guard p + r > 0 else { return good }
            let inBad = p / (p + r)
            return inBad * bad + (1 - inBad) * good
        }
    }

    package var problem: String? {
        func probability(_ x: Double) -> Bool { x.isFinite && x >= 0 && x <= 1 }
        switch self {
        case .none: return nil
        case .bernoulli(let p): return probability(p) ? nil : "a loss probability must be in [0, 1]"
        case .gilbertElliott(let p, let r, let bad, let good):
            return [p, r, bad, good].allSatisfy(probability) ? nil : "Gilbert–Elliott parameters must each be in [0, 1]"
        }
    }
}

/// The loss model's state as messages go by.
package struct LossProcess: Sendable {
    package let model: LossModel
    /// Gilbert–Elliott's current state.
    package private(set) var inBadState = false

    package init(_ model: LossModel) { self.model = model }

    /// Decides one message: true when it is lost. Draws a fixed number of
    /// uniforms per message for each model, so schedules are reproducible.
    package mutating func isLost(using rng: inout SeededGenerator) -> Bool {
        switch model {
        case .none:
            return false
        case .bernoulli(let p):
            return rng.unit() < p
        case .gilbertElliott(let p, let r, let lossInBad, let lossInGood):
            // Move between states first, then decide in the state the message meets;
            // the long-run loss rate is `expectedLossRate` either way round.
            let transition = rng.unit()
            inBadState = inBadState ? !(transition < r) : transition < p
            return rng.unit() < (inBadState ? lossInBad : lossInGood)
        }
    }
}
