import ArgumentParser

/// The root command: `kinetrace SUBCOMMAND`.
public struct Kinetrace: ParsableCommand {
    public static let version = "0.1.0"

    public static let configuration = CommandConfiguration(
        commandName: "kinetrace",
        abstract: "Record, replay and check phone-as-motion-controller traffic (MotionLink v1).",
        discussion: """
            Kinetrace reads and writes versioned traces of MotionLink v1 traffic: 36-byte \
            MotionFrames from a phone and 20-byte HapticAcks from a game host, over UDP.

            Exit status: 0 on success, 64 for bad usage, 65 for bad input data, 66 for an \
            input file that is missing or unreadable, 69 for an unavailable network service, \
            73 for an output file that cannot be created, 74 for an I/O error, 77 for a \
            capture without permission.
            """,
        version: version,
        subcommands: [Inspect.self, Convert.self, Host.self, Simulate.self, Capture.self, Replay.self, Synth.self])

    public init() {}
}
