import KinetraceSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Extra one-way delay added to each message, in milliseconds.
package enum DelayDistribution: Hashable, Sendable {
    case none
    case constant(ms: Double)
    /// Uniform on [minMs, maxMs].
    case uniform(minMs: Double, maxMs: Double)
    /// Normal, clamped to [minMs, maxMs] (the paper reports min and max with its mean and sd).
    case normal(meanMs: Double, sdMs: Double, minMs: Double = 0, maxMs: Double = .infinity)
    /// Pareto with scale `scaleMs` (the minimum) and shape `shape`: a long tail, as on crowded Wi-Fi.
    case pareto(scaleMs: Double, shape: Double)
    /// Resampled from measured delays (e.g. a trace's one-way latencies), with
    /// linear interpolation between order statistics.
    case empirical(sortedMs: [Double])
    /// A piecewise-linear inverse CDF through `(p, ms)` points, p rising from
    /// 0 to 1: fits published summary statistics (mean, sd, percentiles,
    /// extremes) that no textbook distribution matches at once.
    case quantiles([QuantilePoint])

    /// An empirical distribution from unsorted samples; nil when empty or not finite.
    package static func empirical(samplesMs: [Double]) -> DelayDistribution? {
        guard !samplesMs.isEmpty, samplesMs.allSatisfy(\.isFinite) else { return nil }
        return .empirical(sortedMs: samplesMs.sorted())
    }

    /// Draws one delay. Uses exactly one uniform draw per call (two for
    /// `normal`), so schedules stay aligned when parameters change.
    package func sample(using rng: inout SeededGenerator) -> Double {
        switch self {
        case .none:
            return 0
        case .constant(let ms):
            return ms
        case .uniform(let lo, let hi):
            return lo + rng.unit() * (hi - lo)
        case .normal(let mean, let sd, let lo, let hi):
            return min(max(rng.normal(mean: mean, sd: sd), lo), hi)
        case .pareto(let scale, let shape):
            // Inverse CDF: x = xm / U^(1/α), U in (0, 1].
            let u = 1 - rng.unit()
            return scale / pow(u, 1 / shape)
        case .empirical(let sorted):
            let position = rng.unit() * Double(sorted.count - 1)
            let lower = Int(position.rounded(.down))
            let upper = min(lower + 1, sorted.count - 1)
            let weight = position - Double(lower)
            return sorted[lower] + (sorted[upper] - sorted[lower]) * weight
        case .quantiles(let points):
            return Self.quantile(rng.unit(), in: points)
        }
    }

    /// The delay at probability `p` of a table (quantiles, or an empirical sample); nil for the
    /// parametric forms, whose quantiles the replay never needs.
    package func quantileMs(_ p: Double) -> Double? {
        guard p.isFinite, (0...1).contains(p) else { return nil }
        switch self {
        case .quantiles(let points): return points.isEmpty ? nil : Self.quantile(p, in: points)
        case .empirical(let sorted):
            guard !sorted.isEmpty else { return nil }
            let position = p * Double(sorted.count - 1)
            let lower = Int(position.rounded(.down)), upper = Swift.min(lower + 1, sorted.count - 1)
            return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - Double(lower))
        default: return nil
        }
    }

    /// The value at probability `u` of a quantile table (binary search, then linear).
    static func quantile(_ u: Double, in points: [QuantilePoint]) -> Double {
        var lo = 0, hi = points.count - 1
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if points[mid].p <= u { lo = mid } else { hi = mid }
        }
        let a = points[lo], b = points[hi]
        guard b.p > a.p else { return a.ms }
        return a.ms + (b.ms - a.ms) * (u - a.p) / (b.p - a.p)
    }

    /// The distribution's mean, where it has one (Pareto needs shape > 1).
    package var meanMs: Double? {
        switch self {
        case .none: return 0
        case .constant(let ms): return ms
        case .uniform(let lo, let hi): return (lo + hi) / 2
        case .normal(let mean, _, let lo, let hi): return lo <= mean && mean <= hi ? mean : nil
        case .pareto(let scale, let shape): return shape > 1 ? shape * scale / (shape - 1) : nil
        case .empirical(let sorted): return sorted.reduce(0, +) / Double(sorted.count)
        case .quantiles(let points):
            // Uniform between neighbouring points: each segment contributes Δp × its midpoint.
            return zip(points, points.dropFirst()).reduce(0) { $0 + ($1.1.p - $1.0.p) * ($1.0.ms + $1.1.ms) / 2 }
        }
    }

    /// The longest delay a network holds a message: an hour. Parameters beyond are refused,
    /// and draws from a heavy tail (Pareto) are cut there, so a delay always fits a clock.
    package static let maximumMs = 3_600_000.0

    /// Why the parameters are unusable, if they are.
    package var problem: String? {
        if let problem = valueProblem { return problem }
        let largest: Double
        switch self {
        case .none: largest = 0
        case .constant(let ms): largest = ms
        case .uniform(let lo, let hi): largest = hi.isFinite ? Swift.max(lo, hi) : lo
        case .normal(let mean, _, let lo, _): largest = Swift.max(mean, lo)
        case .pareto(let scale, _): largest = scale
        case .empirical(let sorted): largest = sorted.last ?? 0
        case .quantiles(let points): largest = points.last?.ms ?? 0
        }
        return largest > Self.maximumMs ? "delays are at most \(Int(Self.maximumMs)) ms (an hour); \(largest) ms is not a network" : nil
    }

    private var valueProblem: String? {
        func bad(_ values: Double...) -> Bool { values.contains { !$0.isFinite || $0 < 0 } }
        switch self {
        case .none: return nil
        case .constant(let ms): return bad(ms) ? "a constant delay must be a finite number of ms, at least 0" : nil
        case .uniform(let lo, let hi):
            return bad(lo, hi) || lo > hi ? "a uniform delay needs 0 ≤ min ≤ max" : nil
        case .normal(let mean, let sd, let lo, let hi):
            return bad(mean, sd, lo) || hi.isNaN || lo > hi ? "a normal delay needs a finite mean and sd ≥ 0, and 0 ≤ min ≤ max" : nil
        case .pareto(let scale, let shape):
            return bad(scale, shape) || scale == 0 || shape == 0 ? "a Pareto delay needs scale > 0 and shape > 0" : nil
        case .empirical(let sorted):
            return sorted.isEmpty || bad(sorted.first!, sorted.last!) ? "an empirical delay needs finite samples ≥ 0" : nil
        case .quantiles(let points):
            guard points.count >= 2, points.first!.p == 0, points.last!.p == 1 else {
                return "a quantile table needs at least two points, from p = 0 to p = 1"
            }
            for (a, b) in zip(points, points.dropFirst()) where !(b.p > a.p) || !(b.ms >= a.ms) {
                return "quantile points need p strictly rising and ms never falling (at p = \(b.p))"
            }
            return points.contains { bad($0.ms) } ? "quantile values must be finite and at least 0 ms" : nil
        }
    }
}

/// One point of a quantile table: `ms` is the delay at cumulative probability `p`.
package struct QuantilePoint: Hashable, Sendable {
    package var p: Double
    package var ms: Double
    package init(p: Double, ms: Double) {
        self.p = p
        self.ms = ms
    }
}
