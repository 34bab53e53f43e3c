import KinetraceImpairment
import KinetraceSupport
import KinetraceTrace

/// What a replay did, and what the host did in return.
package struct ReplayReport: Sendable {
    package enum Outcome: String, Sendable {
        /// Every message was sent (replies may still be missing: see the counts).
        case completed
        /// The host refused from the start (ICMP port unreachable) or could not be started.
        case unreachable
        /// The host answered, then went away (refused, exited or closed its output).
        case hostDied = "host_died"
        /// The rule predicted replies and none came.
        case silent
        /// The global timeout cut the replay short.
        case timedOut = "timed_out"
        /// Stopped on request (a signal).
        case interrupted
        /// The host process wrote something that is not stdio adapter records.
        case protocolError = "protocol_error"
        /// The host sent more replies nobody asked for than `ReplayReport.unaskedReplyLimit` allows.
        case flooded
    }

    /// Unexpected or invalid replies tolerated before a replay stops as flooded: 10,000 plus 10
    /// per message scheduled. A conforming host of a protocol with replies sends at most one per sample.
    package static func unaskedReplyLimit(scheduled: Int) -> Int { 10_000 + 10 * scheduled }
    /// Unexpected replies kept as evidence in `triggers`; beyond, they are only counted.
    package static let unexpectedRepliesKept = 1_000

    package struct Controller: Sendable {
        /// The controller's own address (its socket) in this replay.
        package var endpoint: Endpoint
        /// The input controller it replays.
        package var source: Endpoint
        package var offsetNs: Int64 = 0
        /// Its number in the whole plan (differs from its position in a shard's report).
        package var number = 0
        package var scheduled = 0
        package var sent = 0
        package var lost = 0
        package var sendErrors = 0
        package var repliesPredicted = 0
        package var repliesMatched = 0
        package var repliesUnexpected = 0
        package var invalidReceived = 0
        /// A few kilobytes at most (`DurationStatistics.perController`): at stadium scale, ten thousand
        /// three-digit histograms would take 600 MB. Exact for the first 64 round trips, within 1 % past them.
        package var roundTrips = DurationStatistics.perController
    }

    /// One trigger the rule predicted, or one reply the host sent unasked.
    package struct Trigger: Sendable, Hashable {
        package var controller: Int
        package var senderTimeMs: UInt64
        package var predicted: Bool
        /// Round trip from the frame's send to its reply, when the reply came.
        package var roundTripNs: Int64?
    }

    package var outcome = Outcome.completed
    /// One line on why, for any outcome but `completed`.
    package var detail: String?
    package var target = ""
    package var seed: UInt64 = 0
    package var elapsedNs: Int64 = 0
    /// Messages the schedule held (after loss, counting duplicates).
    package var scheduled = 0
    package var sent = 0
    package var sendErrors: [String: Int] = [:]
    /// Impairment decisions, by kind.
    package var impaired: [String: Int] = [:]
    package var datagramsReceived = 0
    /// Decisions the host reported on the stdio adapter's observation channel.
    package var observations = 0
    package var repliesPredicted = 0
    package var repliesMatched = 0
    package var repliesUnexpected = 0
    package var invalidReceived = 0
    /// |actual send − deadline| on CLOCK_MONOTONIC; empty for fast timing.
    package var lateness = DurationStatistics()
    /// Frame actually sent → its reply: the host and the real path, after the emulated delay.
    package var roundTrips = DurationStatistics()
    /// Frame's departure on the emulated path → its reply: the network's delay included.
    package var pathRoundTrips = DurationStatistics()
    package var controllers: [Controller] = []
    /// Predicted triggers in send order, then unexpected replies.
    package var triggers: [Trigger] = []
    /// How the host process ended (exec only).
    package var hostExit: String?
    /// Whether the sending thread ran at real-time priority.
    package var realtime = false
    /// CLOCK_REALTIME at the anchor: message i was due at this + its deadline offset.
    package var anchorWallNs: Int64 = 0
    /// The share of the plan's controllers sent here.
    package var shard = ReplayShard.whole
    /// Controllers in the whole plan (all shards).
    package var plannedControllers = 0
    /// With an agreed start instant: how much of the time needed to get ready it did not leave, ns (the first sends are late by up to this).
    package var startLateNs: Int64 = 0
    /// The wall clock's discipline as the kernel saw it at the start (nil where unsupported).
    package var clock: ClockDiscipline?

    package init() {}

    package var repliesMissing: Int { repliesPredicted - repliesMatched }
    /// Replies exactly as the gesture rule predicts.
    package var repliesAsPredicted: Bool { repliesMissing == 0 && repliesUnexpected == 0 }
}
