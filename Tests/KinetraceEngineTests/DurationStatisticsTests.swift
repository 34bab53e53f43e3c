import KinetraceSupport
import KinetraceTestSupport
import Testing

/// Percentiles come from an HDR histogram's buckets, rounded to three digits; they must
/// still lie between the smallest and largest values recorded (issue 16: a p99 above the max).
@Suite struct DurationStatisticsTests {
    /// 60 delays whose top bucket, rounded to three digits, is 2.05 ms: above the max of 2.049 ms.
    @Test func aPercentileNeverPassesTheMax() {
        var stats = DurationStatistics()
        for i in 0..<59 { stats.record(ns: 300_000 + Int64(i) * 4_000) }
        stats.record(ns: 2_049_000)
        let p99 = stats.percentileMs(99)!, p100 = stats.percentileMs(100)!
        #expect(p99 <= stats.maxMs! && p100 <= stats.maxMs!, "p99 \(p99), p100 \(p100), max \(stats.maxMs!)")
        #expect(abs(p100 - stats.maxMs!) <= stats.maxMs! * 0.005, "within the histogram's three digits")
    }

    @Test func percentilesStayInsideTheRangeRecorded() async {
        await seededPropertyCheck(count: 500, draw: { rng in
            (0..<Int.random(in: 1...200, using: &rng)).map { _ in Int64.random(in: 0...5_000_000_000, using: &rng) }
        }) { values in
            var stats = DurationStatistics()
            values.forEach { stats.record(ns: $0) }
            for percentile in [0.0, 50, 90, 99, 99.9, 100] {
                let value = stats.percentileMs(percentile)!
                #expect(value >= stats.minMs! && value <= stats.maxMs!, "p\(percentile) \(value) outside \(stats.minMs!)...\(stats.maxMs!)")
            }
        }
    }
}
