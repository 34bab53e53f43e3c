import Foundation
import KinetraceSupport
import KinetraceTestSupport
import Testing

/// Statistics kept per controller (`DurationStatistics.perController`): a few
/// kilobytes each however many values, and percentiles within the stated error
/// of the exact nearest-rank values, which numpy computes from the same values.
@Suite struct PerControllerStatisticsTests {
    /// Exact for up to 64 values; within 1 % past them; then three significant digits (0.5 %).
    static let binnedError = 0.01, roundingError = 0.005

    /// Series of nanosecond durations, seeded: few values (kept exactly), many around one rate,
    /// two modes, a heavy tail, zeros mixed in, and a spread wider than the bins can hold.
    static func series() -> [(name: String, ns: [Int64])] {
        var rng = SeededGenerator(seed: 2024_11_26)
        func lognormal(_ count: Int, medianMs: Double, sigma: Double) -> [Int64] {
            (0..<count).map { _ in Int64(medianMs * 1e6 * exp(sigma * rng.normal())) }
        }
        let bimodal = (0..<3000).map { _ in rng.unit() < 0.7 ? 10_000_000 + Int64(rng.normal() * 400_000) : 95_000_000 + Int64(rng.normal() * 5_000_000) }
        let zeros = (0..<500).map { i in i % 3 == 0 ? Int64(0) : Int64(200 + rng.unit() * 900) * 1000 }
        // 1 µs to 10^15 µs: wider than the 1,024 bins (7.6 × 10^8), so the lowest are merged.
        let spread = (0..<4000).map { _ in Int64(pow(10, 3 + 15 * rng.unit())) }
        return [
            ("few", lognormal(10, medianMs: 100, sigma: 0.2)),
            ("exactly 64", lognormal(64, medianMs: 16.7, sigma: 0.5)),
            ("65", lognormal(65, medianMs: 16.7, sigma: 0.5)),
            ("steady", lognormal(20_000, medianMs: 100, sigma: 0.05)),
            ("bimodal", bimodal),
            ("heavy tail", lognormal(5000, medianMs: 2, sigma: 2.5)),
            ("zeros", zeros),
            ("spread", spread),
        ]
    }

    /// Reads "name value value …" lines of microseconds and prints "name p value" for each
    /// percentile: the nearest rank in exact arithmetic (numpy's inverted_cdf, without its float rounding).
    static let numpyPercentiles = #"""
        import math, sys
        from fractions import Fraction
        import numpy as np
        for line in open(sys.argv[1]):
            name, *values = line.rstrip("\n").split("\t")
            x = np.sort(np.array([int(v) for v in values], dtype=np.int64))
            for p in ("0", "50", "90", "99", "99.9", "100"):
                rank = max(1, math.ceil(Fraction(p) / 100 * len(x)))
                print(f"{name}\t{p}\t{int(x[rank - 1])}")
        """#

    @Test(.enabled(if: Requirement.python("numpy").runs))
    func percentilesAreWithinTheStatedErrorOfNumpy() throws {
        try Requirement.python("numpy").check()
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let input = dir.appendingPathComponent("series.tsv")
        let all = Self.series()
        // What is recorded: whole microseconds, negative durations as 0.
        try all.map { series in ([series.name] + series.ns.map { String(max(0, $0 / 1000)) }).joined(separator: "\t") }
            .joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        let numpy = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.numpyPercentiles, input.path])
        #expect(numpy.status == 0, "\(numpy.stderr)")
        var exact: [String: [Double: Double]] = [:]
        for line in numpy.stdout.split(separator: "\n") {
            let fields = line.split(separator: "\t").map(String.init)
            exact[fields[0], default: [:]][Double(fields[1])!] = Double(fields[2])! / 1000
        }
        var checked = 0
        for series in all {
            var stats = DurationStatistics.perController
            series.ns.forEach { stats.record(ns: $0) }
            #expect(stats.count == series.ns.count)
            let kept = series.ns.count <= DurationSketch.exactCapacity
            for (percentile, wantMs) in try #require(exact[series.name]) {
                let got = try #require(stats.percentileMs(percentile))
                // The "spread" series passes the bins' span: only its lowest value falls among the merged bins, and it is kept exactly.
                let error = (kept ? 0 : Self.binnedError) + Self.roundingError
                // Values are recorded in whole microseconds, but the smallest and largest as given (up to 1 µs apart).
                #expect(abs(got - wantMs) <= error * wantMs + 1e-3,
                        "\(series.name) p\(percentile): \(got) ms, exact \(wantMs) ms, allowed \(error * 100) %")
                checked += 1
            }
        }
        #expect(checked == all.count * 6)
    }

    /// The memory bound, counted in allocated bytes (no timing, no RSS): a few hundred
    /// bytes for a controller with ten intervals, never past 4 KiB and its exact buffer.
    @Test func aControllerCostsAFewKilobytesAtMost() throws {
        var few = DurationStatistics.perController
        for i in 0..<10 { few.record(ns: 100_000_000 + Int64(i) * 1_000) }
        #expect(try #require(few.sketchBytes) <= 160)

        var rng = SeededGenerator(seed: 77)
        var wide = DurationStatistics.perController
        var largest = 0
        for _ in 0..<200_000 {
            // Every bin from 1 µs to 2^62 ns, in random order.
            wide.record(ns: Int64(pow(2, 10 + 52 * rng.unit())))
            largest = max(largest, wide.sketchBytes!)
        }
        #expect(largest <= DurationSketch.maxBins * MemoryLayout<UInt32>.stride + 64, "malloc rounds up a little")
        #expect(largest >= DurationSketch.maxBins * MemoryLayout<UInt32>.stride / 2, "the values spread over every bin")
        #expect(wide.count == 200_000)

        // The aggregate keeps its HDR histogram: no sketch.
        #expect(DurationStatistics().sketchBytes == nil)
    }

    /// The bins hold at most 1,024: a spread past them merges the lowest, and says so.
    @Test func aSpreadPastTheBinsMergesTheLowest() {
        var sketch = DurationSketch()
        for i in 0..<DurationSketch.exactCapacity { sketch.record(UInt64(1000 + i)) }
        #expect(!sketch.collapsed)
        sketch.record(1 << 40)  // 2^40 / 1000 ≈ 10^9: past 7.6 × 10^8
        #expect(sketch.collapsed)
        let top = sketch.value(atPercentile: 100)!
        #expect(abs(top - 0x1p40) <= 0x1p40 * DurationSketch.relativeError)
        #expect(sketch.count == DurationSketch.exactCapacity + 1)
    }
}
