#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A parametric delay distribution the network format can write (specs/networks/README.md §2.4),
/// with its parameters in ms; fitted from at least one finite delay (Pareto: all above 0, not all equal).
///
/// The format has no exponential or log-normal; a delay none of these fits is written as a
/// quantile table instead (see `DelayFit`).
package enum DelayFamily: Hashable, Sendable {
    /// Every delay `ms`; fitted as the mean.
    case constant(ms: Double)
    /// Uniform on [minMs, maxMs]; fitted by maximum likelihood: the sample's extremes.
    case uniform(minMs: Double, maxMs: Double)
    /// Normal, clamped below at 0 ms as the replay draws it (the format's default `min_ms`);
    /// fitted as the sample mean and the sample sd (n − 1).
    case normal(meanMs: Double, sdMs: Double)
    /// Pareto (at least `scaleMs`); fitted by maximum likelihood: scale = the minimum,
    /// shape = n / Σ ln(xᵢ / scale).
    case pareto(scaleMs: Double, shape: Double)

    /// The format's `distribution` name.
    package var distributionName: String {
        switch self {
        case .constant: return "constant"
        case .uniform: return "uniform"
        case .normal: return "normal"
        case .pareto: return "pareto"
        }
    }

    /// P(delay ≤ ms) of the distribution as the replay draws it.
    package func cdf(_ ms: Double) -> Double {
        switch self {
        case .constant(let c):
            return ms < c ? 0 : 1
        case .uniform(let lo, let hi):
            if ms < lo { return 0 }
            if ms >= hi { return 1 }
            return (ms - lo) / (hi - lo)
        case .normal(let mean, let sd):
            if ms < 0 { return 0 }  // draws below 0 are set to 0: a step there
            if sd == 0 { return ms < mean ? 0 : 1 }
            return 0.5 * erfc(-(ms - mean) / (sd * 2.0.squareRoot()))
        case .pareto(let scale, let shape):
            return ms < scale ? 0 : 1 - pow(scale / ms, shape)
        }
    }

    /// Each family fitted to `sortedMs` (ascending, finite, not empty), in the order above;
    /// Pareto only when every delay is above 0 and they are not all equal.
    package static func fits(sortedMs x: [Double]) -> [DelayFamily] {
        guard let lo = x.first, let hi = x.last else { return [] }
        let n = Double(x.count)
        let mean = x.reduce(0, +) / n
        let squares = x.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
        let sd = x.count > 1 ? (squares / (n - 1)).squareRoot() : 0
        var families: [DelayFamily] = [.constant(ms: mean), .uniform(minMs: lo, maxMs: hi), .normal(meanMs: mean, sdMs: sd)]
        if lo > 0 {
            let logs = x.reduce(0) { $0 + log($1 / lo) }
            if logs > 0 { families.append(.pareto(scaleMs: lo, shape: n / logs)) }
        }
        return families
    }
}

/// One point of a fitted quantile table: the delay `ms` at cumulative probability `p`.
package struct DelayQuantile: Hashable, Sendable {
    package let p: Double
    package let ms: Double
    package init(p: Double, ms: Double) {
        self.p = p
        self.ms = ms
    }
}

/// The delay a network should draw, fitted to measured delays (ms, clock skew already removed):
/// an empirical quantile table, every parametric family with its KS distance, and the choice;
/// needs `minimumSamples` finite delays.
///
/// The criterion: the family with the smallest one-sample KS distance is chosen when its KS
/// p-value is above `acceptanceP` (0.05); otherwise the quantile table is. The p-values come
/// from parameters fitted to the same sample, so they are too high (Lilliefors) and a family
/// is accepted somewhat more readily than a test at 5 % would; the table is always reported.
/// The format needs delays ≥ 0 ms: shift delays measured across an offset clock first.
package struct DelayFit: Hashable, Sendable {
    /// Fewer delays than this give no fit: 50 delays put about 5 in each tenth of the table.
    package static let minimumSamples = 50
    /// The KS p-value a family must exceed to be chosen over the quantile table.
    package static let acceptanceP = 0.05
    /// The table's default probabilities: those of the bundled lab-5ghz table, finer in the tails.
    package static let defaultLevels: [Double] = [
        0, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4,
        0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 1,
    ]

    /// A fitted family and how far its CDF lies from the sample's.
    package struct Candidate: Hashable, Sendable {
        package let family: DelayFamily
        package let ks: KSResult
    }

    /// What a network should write.
    package enum Choice: Hashable, Sendable {
        case family(DelayFamily)
        case quantiles
    }

    package let samples: Int
    /// The empirical quantile table: p from 0 to 1 strictly rising, ms never falling, its ends
    /// the sample's minimum and maximum.
    package let quantiles: [DelayQuantile]
    /// Every family fitted, the smallest KS distance first (ties in `DelayFamily.fits`' order).
    package let candidates: [Candidate]
    package let choice: Choice

    /// Fits `delaysMs`; nil for fewer than `minimumSamples` delays or one that is not finite.
    /// `levels` are the table's probabilities: values outside [0, 1] are dropped, and 0 and 1 are always in it.
    package static func fit(delaysMs: [Double], levels: [Double] = defaultLevels) -> DelayFit? {
        guard delaysMs.count >= minimumSamples, delaysMs.allSatisfy(\.isFinite) else { return nil }
        let sorted = delaysMs.sorted()
        var candidates: [Candidate] = []
        for family in DelayFamily.fits(sortedMs: sorted) {
            if let ks = KSResult.oneSample(sorted, cdf: family.cdf) { candidates.append(Candidate(family: family, ks: ks)) }
        }
        // A stable sort keeps the simpler family first on equal distances.
        candidates = candidates.enumerated()
            .sorted { ($0.element.ks.distance, $0.offset) < ($1.element.ks.distance, $1.offset) }
            .map(\.element)
        let choice: Choice
        if let best = candidates.first, best.ks.pValue > acceptanceP { choice = .family(best.family) } else { choice = .quantiles }
        return DelayFit(samples: sorted.count, quantiles: quantileTable(sortedMs: sorted, levels: levels),
                        candidates: candidates, choice: choice)
    }

    /// The delays at `levels` (with 0 and 1 added, sorted, repeats dropped), by linear
    /// interpolation between order statistics at position p·(n − 1): the rule the replay's
    /// `empirical` delay draws with. `sortedMs` is ascending and not empty.
    package static func quantileTable(sortedMs x: [Double], levels: [Double]) -> [DelayQuantile] {
        let ps = Set(levels.filter { $0 >= 0 && $0 <= 1 } + [0, 1]).sorted()
        return ps.map { p in
            if p == 1 { return DelayQuantile(p: 1, ms: x[x.count - 1]) }
            let position = p * Double(x.count - 1)
            let lower = Int(position.rounded(.down))
            let upper = Swift.min(lower + 1, x.count - 1)
            let ms = x[lower] + (x[upper] - x[lower]) * (position - Double(lower))
            return DelayQuantile(p: p, ms: Swift.min(Swift.max(ms, x[lower]), x[upper]))
        }
    }
}
