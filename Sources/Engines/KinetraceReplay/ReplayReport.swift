import KinetraceSupport
import KinetraceTrace

/// What a replay did, and what the host did in return.
public struct ReplayReport: Sendable {
    public enum Outcome: String, Sendable {
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
    public static func unaskedReplyLimit(scheduled: Int) -> Int { 10_000 + 10 * scheduled }
    /// Unexpected replies kept as evidence in `triggers`; beyond, they are only counted.
    public static let unexpectedRepliesKept = 1_000

    public struct Controller: Sendable {
        /// The controller's own address (its socket) in this replay.
        public var endpoint: Endpoint
        /// The input controller it replays.
        public var source: Endpoint
        public var offsetNs: Int64 = 0
        /// Its number in the whole plan (differs from its position in a shard's report).
        public var number = 0
        public var scheduled = 0
        public var sent = 0
        public var lost = 0
        public var sendErrors = 0
        public var repliesPredicted = 0
        public var repliesMatched = 0
        public var repliesUnexpected = 0
        public var invalidReceived = 0
        /// A few kilobytes at most (`DurationStatistics.perController`): at stadium scale, ten thousand
        /// three-digit histograms would take 600 MB. Exact for the first 64 round trips, within 1 % past them.
        public var roundTrips = DurationStatistics.perController
    }

    /// One trigger the rule predicted, or one reply the host sent unasked.
    public struct Trigger: Sendable, Hashable {
        public var controller: Int
        public var senderTimeMs: UInt64
        public var predicted: Bool
        /// Round trip from the frame's send to its reply, when the reply came.
        public var roundTripNs: Int64?
    }

    public var outcome = Outcome.completed
    /// One line on why, for any outcome but `completed`.
    public var detail: String?
    public var target = ""
    public var seed: UInt64 = 0
    public var elapsedNs: Int64 = 0
    /// Messages the schedule held (after loss, counting duplicates).
    public var scheduled = 0
    public var sent = 0
    public var sendErrors: [String: Int] = [:]
    /// Impairment decisions, by kind.
    public var impaired: [String: Int] = [:]
    public var datagramsReceived = 0
    /// Decisions the host reported on the stdio adapter's observation channel.
    public var observations = 0
    public var repliesPredicted = 0
    public var repliesMatched = 0
    public var repliesUnexpected = 0
    public var invalidReceived = 0
    /// |actual send − deadline| on CLOCK_MONOTONIC; empty for fast timing.
    public var lateness = DurationStatistics()
    public var roundTrips = DurationStatistics()
    public var controllers: [Controller] = []
    /// Predicted triggers in send order, then unexpected replies.
    public var triggers: [Trigger] = []
    /// How the host process ended (exec only).
    public var hostExit: String?
    /// Whether the sending thread ran at real-time priority.
    public var realtime = false
    /// CLOCK_REALTIME at the anchor: message i was due at this + its deadline offset.
    public var anchorWallNs: Int64 = 0
    /// The share of the plan's controllers sent here.
    public var shard = ReplayShard.whole
    /// Controllers in the whole plan (all shards).
    public var plannedControllers = 0
    /// With an agreed start instant: how much of the time needed to get ready it did not leave, ns (the first sends are late by up to this).
    public var startLateNs: Int64 = 0
    /// The wall clock's discipline as the kernel saw it at the start (nil where unsupported).
    public var clock: ClockDiscipline?

    public init() {}

    public var repliesMissing: Int { repliesPredicted - repliesMatched }
    /// Replies exactly as the gesture rule predicts.
    public var repliesAsPredicted: Bool { repliesMissing == 0 && repliesUnexpected == 0 }
}
