/// A fingerprint of one shard's share of a schedule that adds up across shards:
/// each controller's steps are fingerprinted in plan order (`ScheduleDigest`),
/// mixed with its number, and the shard's value is their sum mod 2^64. So the N
/// shards' values add up to the whole replay's (`ReplayShard.whole`), and equal
/// sums mean every controller got the same sends, deadlines, bytes and draws.
package struct ShareDigest: Hashable, Sendable, CustomStringConvertible {
    private var perController: [Int: ScheduleDigest] = [:]

    package init() {}

    /// Adds a step of the whole schedule that belongs to the share (the caller filters).
    package mutating func add(_ step: ReplaySchedule.Step) {
        perController[step.controller, default: ScheduleDigest()].add(step)
    }

    package var value: UInt64 {
        perController.reduce(0) { sum, entry in sum &+ Self.mix(UInt64(entry.key), entry.value.value) }
    }

    /// Sums values (the shards' values give the whole replay's).
    package static func sum(_ values: [UInt64]) -> UInt64 { values.reduce(0, &+) }

    /// SplitMix64's finaliser over the controller and its digest, so the sum does
    /// not cancel when two controllers' steps swap.
    private static func mix(_ controller: UInt64, _ digest: UInt64) -> UInt64 {
        var z = digest &+ controller &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    package var description: String { ScheduleDigest.hex(value) }
}
