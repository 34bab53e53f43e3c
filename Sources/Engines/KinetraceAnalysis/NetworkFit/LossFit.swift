#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Bernoulli and Gilbert loss models fitted to a per-message loss sequence, and the better of
/// the two by BIC; needs `minimumMessages` messages.
///
/// The Gilbert model is the replay's Gilbert–Elliott chain (specs/networks/README.md §2.5:
/// `p` good→bad, `r` bad→good, moving before each message, starting good) in its simple
/// form: 1−h = 1 (the bad state loses every message) and 1−k = 0 (the good state none). The
/// state is then the loss itself, so p and r have closed-form maximum-likelihood estimates:
/// p = (good→bad moves) / (moves out of the good state), r = (bad→good moves) / (moves out
/// of the bad state), where the chain's good start before the first message counts as a good
/// state whose move leads to the first message.
///
/// Only losses are seen, not states, so this estimator cannot tell a bad state that loses
/// some of its messages (1−h < 1) from several shorter bursts, nor a good state that loses a
/// few (1−k > 0) from bursts of one: such a network comes out as a Gilbert model with more,
/// shorter bursts (higher r, higher p) and the same loss rate.
package struct LossFit: Hashable, Sendable {
    /// Fewer messages than this give no fit: 100 messages at a 1 % loss rate hold one loss.
    package static let minimumMessages = 100
    /// The normal quantile of a two-sided 95 % interval.
    static let z95 = 1.959963984540054

    /// The two models, by their number of free parameters.
    package enum Model: String, Hashable, Sendable {
        /// Independent losses, one parameter: the rate.
        case bernoulli
        /// Bursts: the Gilbert chain's p and r.
        case gilbert
    }

    /// Maximal runs of one outcome (lost, or delivered) and their mean length.
    package struct Runs: Hashable, Sendable {
        package let count: Int
        package let messages: Int
        /// messages / count; nil when there is no run. Runs cut by the sequence's ends count
        /// as they are seen, so on short sequences the mean is a little low.
        package var meanLength: Double? { count > 0 ? Double(messages) / Double(count) : nil }
    }

    package let messages: Int
    package let lost: Int
    /// The Wilson score 95 % interval of the loss rate.
    package let rateInterval: ClosedRange<Double>
    /// Gilbert's P(good → bad).
    package let gilbertP: Double
    /// Gilbert's P(bad → good); nil when no lost message has a successor (nothing says how bursts end).
    package let gilbertR: Double?
    /// Natural-log likelihood of the sequence under the fitted Bernoulli model.
    package let bernoulliLogLikelihood: Double
    /// Natural-log likelihood of the sequence under the fitted Gilbert model (never below Bernoulli's:
    /// Bernoulli is Gilbert with p + r = 1), up to rounding.
    package let gilbertLogLikelihood: Double
    /// Maximal runs of lost messages.
    package let bursts: Runs
    /// Maximal runs of delivered messages.
    package let goodRuns: Runs

    /// The Bernoulli model's loss probability: lost / messages.
    package var rate: Double { Double(lost) / Double(messages) }
    /// Akaike's criterion, 2k − 2 ln L, k = 1 (reported).
    package var bernoulliAIC: Double { 2 - 2 * bernoulliLogLikelihood }
    /// Akaike's criterion, 2k − 2 ln L, k = 2 (reported).
    package var gilbertAIC: Double { 4 - 2 * gilbertLogLikelihood }
    /// Schwarz's criterion, k ln n − 2 ln L, k = 1.
    package var bernoulliBIC: Double { log(Double(messages)) - 2 * bernoulliLogLikelihood }
    /// Schwarz's criterion, k ln n − 2 ln L, k = 2.
    package var gilbertBIC: Double { 2 * log(Double(messages)) - 2 * gilbertLogLikelihood }
    /// The model with the smaller BIC; Bernoulli on a tie. Gilbert wins when it raises the log
    /// likelihood by more than ln(n)/2: with truly independent losses over 10,000 messages that
    /// happens with probability P(χ²₁ > 9.2) ≈ 0.2 % (AIC's fixed penalty would let it win 16 %
    /// of the time, however long the recording).
    package var choice: Model { gilbertBIC < bernoulliBIC ? .gilbert : .bernoulli }

    /// Fits both models to `lost` (true = lost, in send order); nil for fewer than `minimumMessages`.
    package static func fit(lost sequence: [Bool]) -> LossFit? {
        guard sequence.count >= minimumMessages else { return nil }
        // Moves of the chain, from the good start before the first message.
        var goodToGood = 0, goodToBad = 0, badToBad = 0, badToGood = 0
        var lostRuns = 0, deliveredRuns = 0
        var previous: Bool? = nil
        for isLost in sequence {
            switch (previous ?? false, isLost) {
            case (false, false): goodToGood += 1
            case (false, true): goodToBad += 1
            case (true, true): badToBad += 1
            case (true, false): badToGood += 1
            }
            if isLost != previous {
                if isLost { lostRuns += 1 } else { deliveredRuns += 1 }
            }
            previous = isLost
        }
        let n = sequence.count
        let lost = goodToBad + badToBad
        let q = Double(lost) / Double(n)
        let p = Double(goodToBad) / Double(goodToGood + goodToBad)
        let outOfBad = badToBad + badToGood
        let r = outOfBad > 0 ? Double(badToGood) / Double(outOfBad) : nil
        let bernoulli = xLogY(lost, q) + xLogY(n - lost, 1 - q)
        var gilbert = xLogY(goodToBad, p) + xLogY(goodToGood, 1 - p)
        if let r { gilbert += xLogY(badToGood, r) + xLogY(badToBad, 1 - r) }
        return LossFit(messages: n, lost: lost, rateInterval: wilson(successes: lost, trials: n, z: z95),
                       gilbertP: p, gilbertR: r,
                       bernoulliLogLikelihood: bernoulli, gilbertLogLikelihood: gilbert,
                       bursts: Runs(count: lostRuns, messages: lost),
                       goodRuns: Runs(count: deliveredRuns, messages: n - lost))
    }

    /// count · ln(probability), with 0 · ln 0 = 0.
    static func xLogY(_ count: Int, _ probability: Double) -> Double {
        count == 0 ? 0 : Double(count) * log(probability)
    }

    /// Wilson's score interval for a proportion (trials > 0), within [0, 1].
    package static func wilson(successes: Int, trials: Int, z: Double) -> ClosedRange<Double> {
        let n = Double(trials), phat = Double(successes) / n, z2 = z * z
        let centre = (phat + z2 / (2 * n)) / (1 + z2 / n)
        let half = z / (1 + z2 / n) * (phat * (1 - phat) / n + z2 / (4 * n * n)).squareRoot()
        // At 0 and at n successes one bound is exactly 0 or 1; rounding would leave it ~1e-18 off.
        let lower = successes == 0 ? 0 : Swift.max(centre - half, 0)
        let upper = successes == trials ? 1 : Swift.min(centre + half, 1)
        return lower...upper
    }
}
