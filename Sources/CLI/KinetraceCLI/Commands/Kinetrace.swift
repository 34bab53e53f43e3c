import ArgumentParser
import Foundation
import KinetraceWire

/// The root command: `kinetrace SUBCOMMAND`.
package struct Kinetrace: ParsableCommand {
    package static let version = "0.1.0"

    package static let configuration = CommandConfiguration(
        commandName: "kinetrace",
        abstract: "Record, replay and check phone-as-motion-controller traffic.",
        discussion: """
            Kinetrace captures, replays and checks the traffic between phones used as motion \
            controllers and game hosts, recorded as versioned traces or pcaps. Every command \
            takes --protocol, the wire protocol: \(ProtocolRegistry.standard.protocols.map { "\($0.id) (\($0.summary))" }.joined(separator: "; ")). \
            Traces name their own protocol.

            Exit status, the same for every command:
              0    success
              1    a check failed: a conform case, replay --strict, a gestures
                   gate
              64   bad usage
              65   bad input data (a trace, capture, network or baseline that is
                   not valid)
              66   an input file that is missing or unreadable
              69   a host that is not there, refuses, cannot be started or died;
                   rsvg-convert missing for --plot-format png or pdf
              73   an output file that cannot be created
              74   an I/O error
              75   a run that timed out
              76   a host that never answered or broke the stdio framing
              77   a capture without permission
              130  interrupted by SIGINT, 143 by SIGTERM (128 + the signal's
                   number, as a shell reports it); an output file left
                   unfinished is removed
            """,
        version: version,
        subcommands: [Inspect.self, Convert.self, Merge.self, Host.self, Phone.self, Simulate.self, Capture.self, Replay.self, Conform.self, Latency.self, Gestures.self, Plot.self, NetworkCommand.self, Synth.self, ProtocolCommand.self])

    package init() {}

    /// Runs the command the arguments name. Every error is one line on standard error,
    /// `kinetrace: error: …`, ending with where that command's usage is (argument-parser's own
    /// report is three lines and, for an error found while running, the root's usage).
    package static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        var command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            fail(error, command: commandPath(arguments))
        }
        do {
            try command.run()
        } catch {
            fail(error, command: commandPath(arguments))
        }
    }

    private static func fail(_ error: any Error, command path: [String]) -> Never {
        let code = exitCode(for: error)
        // Help, the version and completions are answers, not errors; an ExitCode was explained already.
        if code == .success {
            print(fullMessage(for: error))
            Foundation.exit(code.rawValue)
        }
        if error is ExitCode { Foundation.exit(code.rawValue) }
        let message = message(for: error).split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
        printError("\(message) (see '\((["kinetrace"] + path).joined(separator: " ")) --help')")
        Foundation.exit(code.rawValue)
    }

    /// The subcommand names at the front of `arguments` (`["gestures", "eval"]`).
    static func commandPath(_ arguments: [String]) -> [String] {
        var path: [String] = []
        var level: [any ParsableCommand.Type] = configuration.subcommands
        for argument in arguments {
            guard let next = level.first(where: { $0._commandName == argument }) else { break }
            path.append(argument)
            level = next.configuration.subcommands
        }
        return path
    }
}
