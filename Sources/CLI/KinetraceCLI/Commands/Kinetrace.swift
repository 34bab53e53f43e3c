import ArgumentParser

/// The root command: `kinetrace SUBCOMMAND`.
public struct Kinetrace: ParsableCommand {
    public static let version = "0.1.0"

    public static let configuration = CommandConfiguration(
        commandName: "kinetrace",
        abstract: "Record, replay and check phone-as-motion-controller traffic (MotionLink v1).",
        discussion: """
            Kinetrace captures, replays and checks MotionLink v1 traffic: 36-byte \
            MotionFrames from a phone and 20-byte HapticAcks from a game host, over UDP, \
            recorded as versioned traces or pcaps.

            Exit status: 0 on success, 1 for a replay whose acks differ from the prediction \
            (--strict), 64 for bad usage, 65 for bad input data, 66 for an input file that is \
            missing or unreadable, 69 for an unavailable network service or a host that died, \
            73 for an output file that cannot be created, 74 for an I/O error, 75 for a run \
            that timed out, 76 for a host that never answered or broke the stdio framing, 77 \
            for a capture without permission, 130 when interrupted.
            """,
        version: version,
        subcommands: [Inspect.self, Convert.self, Host.self, Simulate.self, Capture.self, Replay.self, Conform.self, Latency.self, Gestures.self, Synth.self])

    public init() {}
}
