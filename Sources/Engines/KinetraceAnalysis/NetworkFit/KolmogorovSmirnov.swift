#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A Kolmogorov–Smirnov test: the largest distance between two distribution functions and
/// its asymptotic p-value; needs one finite value in each sample.
///
/// The p-value is Kolmogorov's limit distribution at λ = (√nₑ + 0.12 + 0.11/√nₑ)·D
/// (Stephens' small-sample correction), nₑ the effective sample size: n for one sample,
/// n·m/(n+m) for two. It assumes continuous distributions and, for one sample, a CDF fixed
/// before seeing the data: with parameters fitted to the same sample the true p-value is
/// smaller than the one given (Lilliefors), so the test then errs towards accepting.
package struct KSResult: Hashable, Sendable {
    /// sup |F − G| over all values, in [0, 1].
    package let distance: Double
    /// P(a distance at least this large | both sides have the same distribution), in [0, 1].
    package let pValue: Double
    /// n for one sample, n·m/(n+m) for two.
    package let effectiveN: Double

    /// The result for a distance seen with an effective sample size (> 0).
    package init(distance: Double, effectiveN: Double) {
        self.distance = distance
        self.effectiveN = effectiveN
        let root = effectiveN.squareRoot()
        pValue = Self.kolmogorovQ((root + 0.12 + 0.11 / root) * distance)
    }

    /// Two samples against each other; nil when either is empty or holds a value that is not finite.
    /// The distance is exact: both samples are sorted and merged, and at a value several
    /// observations share (within or across samples) both functions step past all of them at once.
    package static func twoSample(_ a: [Double], _ b: [Double]) -> KSResult? {
        guard !a.isEmpty, !b.isEmpty, a.allSatisfy(\.isFinite), b.allSatisfy(\.isFinite) else { return nil }
        let x = a.sorted(), y = b.sorted()
        let n = x.count, m = y.count
        // |i/n − j/m| = |i·m − j·n| / (n·m): integers, so equal functions give exactly 0.
        var i = 0, j = 0, widest = 0
        while i < n || j < m {
            let value = Swift.min(i < n ? x[i] : .infinity, j < m ? y[j] : .infinity)
            while i < n && x[i] == value { i += 1 }
            while j < m && y[j] == value { j += 1 }
            widest = Swift.max(widest, abs(i * m - j * n))
        }
        return KSResult(distance: Double(widest) / (Double(n) * Double(m)),
                        effectiveN: Double(n) * Double(m) / Double(n + m))
    }

    /// A sample against a distribution function; nil when the sample is empty, holds a value
    /// that is not finite, or `cdf` gives NaN. `cdf(x)` is P(X ≤ x), clamped to [0, 1]. The
    /// distance is taken on both sides of each distinct observation: just below it (the model
    /// at the next smaller double, so a model with a step there is compared below the step)
    /// and at it (after the sample's whole step, so ties count once).
    package static func oneSample(_ sample: [Double], cdf: (Double) -> Double) -> KSResult? {
        guard !sample.isEmpty, sample.allSatisfy(\.isFinite) else { return nil }
        let x = sample.sorted()
        let n = Double(x.count)
        func model(_ value: Double) -> Double? {
            let f = cdf(value)
            return f.isNaN ? nil : Swift.min(Swift.max(f, 0), 1)
        }
        var widest = 0.0
        var i = 0
        while i < x.count {
            let first = i
            while i < x.count && x[i] == x[first] { i += 1 }
            guard let below = model(x[first].nextDown), let at = model(x[first]) else { return nil }
            // Between observations the empirical function is flat, so these two sides bound the gap.
            widest = Swift.max(widest, below - Double(first) / n, Double(i) / n - at)
        }
        return KSResult(distance: Swift.min(Swift.max(widest, 0), 1), effectiveN: n)
    }

    /// Q(λ) = P(K > λ) for Kolmogorov's distribution, clamped to [0, 1]: 1 at λ ≤ 0.
    /// Uses 2·Σ (−1)^(k−1)·e^(−2k²λ²) where that converges fast (λ ≥ 1.18), and below it the
    /// equivalent theta-function form 1 − (√(2π)/λ)·Σ e^(−(2k−1)²π²/(8λ²)), whose terms
    /// fall fast there (the alternating series needs many terms and cancels for small λ).
    package static func kolmogorovQ(_ lambda: Double) -> Double {
        guard lambda > 0 else { return 1 }
        guard lambda.isFinite else { return 0 }
        var sum = 0.0
        if lambda < 1.18 {
            let c = -Double.pi * Double.pi / (8 * lambda * lambda)
            for k in 1...50 {
                let odd = Double(2 * k - 1)
                let term = exp(c * odd * odd)
                sum += term
                if term <= 1e-17 * sum { break }
            }
            return Swift.min(Swift.max(1 - (2 * Double.pi).squareRoot() / lambda * sum, 0), 1)
        }
        var sign = 1.0
        for k in 1...100 {
            let kk = Double(k * k)
            let term = exp(-2 * kk * lambda * lambda)
            sum += sign * term
            if term <= 1e-17 * abs(sum) || term == 0 { break }
            sign = -sign
        }
        return Swift.min(Swift.max(2 * sum, 0), 1)
    }
}
