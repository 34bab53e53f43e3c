import KinetraceTrace

/// Whether a trace's sender stamps and its own clock can be subtracted: a raw one-way figure
/// across two unrelated clocks (a replay that kept the capture's stamps, a phone whose clock
/// is days off) is an offset between clocks, not a latency.
package enum ClockComparison {
    /// No network delays a message by a minute; a clock offset easily does.
    package static let plausibleOneWayMs: Double = 60_000

    /// Why `samples` (capture time − sender time, ms) cannot be read as latency, or nil.
    package static func incomparable(header: TraceHeader, samples: [LatencySample]) -> String? {
        if let replay = header.replay, !replay.stampsOnRecorderClock {
            return "a replay's record whose stamps are the capture's (--timestamps \(replay.timestamps)), "
                + "not this machine's clock; replay with --timestamps wallclock for raw figures"
        }
        guard !samples.isEmpty else { return nil }
        let values = samples.map(\.ms).sorted()
        let median = values[values.count / 2]
        guard median.isFinite else { return "the stamps give no finite difference" }
        guard abs(median) > plausibleOneWayMs else { return nil }
        return "the sender's clock and the recorder's differ by \(describe(median)) (median), "
            + "beyond any network's delay: they are different clocks"
    }

    /// A clock difference in the largest unit that reads well.
    static func describe(_ ms: Double) -> String {
        let magnitude = abs(ms), sign = ms < 0 ? "−" : ""
        if magnitude >= 86_400_000 { return sign + String(Int64(magnitude / 86_400_000)) + " days" }
        if magnitude >= 3_600_000 { return sign + String(Int64(magnitude / 3_600_000)) + " hours" }
        return sign + String(Int64(magnitude / 60_000)) + " minutes"
    }
}
