/// A link-rate limit from `fromNs` (replay time) on, netem's `rate`: each
/// message occupies the link for (bytes + overhead) × 8 / bitsPerSecond and
/// queues behind the one before it.
package struct RateStep: Hashable, Sendable {
    package var fromNs: Int64
    package var bitsPerSecond: Double

    /// Bytes of Ethernet (14), IPv4 (20) and UDP (8) headers counted with each payload.
    package static let overheadBytes = 42
    /// The latest a step may start, in seconds of replay (about 31 years): keeps its start in Int64 ns.
    package static let latestStartS = 1e9
    /// The slowest link: 1 bit/s. Slower would hold one message for longer than any clock counts.
    package static let slowestBitsPerSecond = 1.0

    package init(fromNs: Int64, bitsPerSecond: Double) {
        self.fromNs = fromNs
        self.bitsPerSecond = bitsPerSecond
    }

    static func problem(_ steps: [RateStep]) -> String? {
        guard !steps.isEmpty else { return nil }
        if steps[0].fromNs != 0 { return "the first rate step must start at 0 s" }
        if let slow = steps.first(where: { !($0.bitsPerSecond >= slowestBitsPerSecond && $0.bitsPerSecond.isFinite) }) {
            return "a rate must be a finite number of at least 1 bit/s, not \(slow.bitsPerSecond)"
        }
        for (a, b) in zip(steps, steps.dropFirst()) where b.fromNs <= a.fromNs {
            return "rate steps must start at strictly increasing times"
        }
        if steps.contains(where: { !($0.bitsPerSecond.isFinite && $0.bitsPerSecond > 0) }) {
            return "a rate must be a positive number of bits per second"
        }
        return nil
    }
}

/// The shared link's queue: when each message finishes serialising.
struct LinkQueue {
    let steps: [RateStep]
    private var freeAtNs: Int64 = .min

    init(_ steps: [RateStep]) { self.steps = steps }

    /// When a message of `length` bytes ready at `readyNs` has left the link.
    mutating func departure(readyNs: Int64, length: Int) -> Int64 {
        guard let step = steps.last(where: { $0.fromNs <= readyNs }) ?? steps.first else { return readyNs }
        let start = max(readyNs, freeAtNs)
        // The planner refuses queues past 30 days; this cap only keeps a missed case from trapping.
        let serialisation = Swift.min(Double((length + RateStep.overheadBytes) * 8) / step.bitsPerSecond * 1e9, 0x1p61).rounded()
        freeAtNs = Swift.min(start, 1 << 61) + Int64(serialisation)
        return freeAtNs
    }
}
