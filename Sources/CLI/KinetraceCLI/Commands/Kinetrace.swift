import ArgumentParser
import KinetraceWire

/// The root command: `kinetrace SUBCOMMAND`.
public struct Kinetrace: ParsableCommand {
    public static let version = "0.1.0"

    public static let configuration = CommandConfiguration(
        commandName: "kinetrace",
        abstract: "Record, replay and check phone-as-motion-controller traffic.",
        discussion: """
            Kinetrace captures, replays and checks the traffic between phones used as motion \
            controllers and game hosts, recorded as versioned traces or pcaps. Every command \
            takes --protocol, the wire protocol: \(ProtocolRegistry.standard.protocols.map { "\($0.id) (\($0.summary))" }.joined(separator: "; ")). \
            Traces name their own protocol.

            Exit status, the same for every command:
              0    success
              1    a check failed: a conform case, replay --strict, a gestures gate
              64   bad usage
              65   bad input data (a trace, capture, network or baseline that is not valid)
              66   an input file that is missing or unreadable
              69   a host that is not there, refuses, cannot be started or died; rsvg-convert
                   missing for --plot-format png or pdf
              73   an output file that cannot be created
              74   an I/O error
              75   a run that timed out
              76   a host that never answered or broke the stdio framing
              77   a capture without permission
              130  interrupted by SIGINT, 143 by SIGTERM (128 + the signal's number, as a
                   shell reports it); an output file left unfinished is removed
            """,
        version: version,
        subcommands: [Inspect.self, Convert.self, Merge.self, Host.self, Simulate.self, Capture.self, Replay.self, Conform.self, Latency.self, Gestures.self, Synth.self, ProtocolCommand.self])

    public init() {}
}
