import ArgumentParser
import Foundation
import KinetraceTestSupport
import Testing
@testable import KinetraceCLI

/// Locks the help text: a change to it must be a deliberate change to the
/// golden files. Regenerate with KINETRACE_UPDATE_GOLDEN=1 swift test.
@Suite struct HelpGoldenTests {
    static let commands: [(String, ParsableCommand.Type)] = [
        ("kinetrace", Kinetrace.self), ("inspect", Inspect.self), ("synth", Synth.self),
        ("host", Host.self), ("phone", Phone.self), ("simulate", Simulate.self), ("capture", Capture.self), ("convert", Convert.self), ("merge", Merge.self),
        ("replay", Replay.self), ("conform", Conform.self), ("latency", Latency.self),
        ("gestures", Gestures.self), ("gestures-eval", GesturesEval.self), ("gestures-list", GesturesList.self),
        ("plot", Plot.self), ("plot-timeline", PlotTimeline.self),
        ("network", NetworkCommand.self), ("network-fit", NetworkFit.self), ("network-compare", NetworkCompare.self),
        ("protocol", ProtocolCommand.self), ("protocol-show", ProtocolShow.self), ("protocol-vectors", ProtocolVectors.self),
        ("protocol-dissector", ProtocolDissector.self),
    ]

    @Test(arguments: commands.map(\.0))
    func helpMatchesGolden(_ name: String) throws {
        let command = Self.commands.first { $0.0 == name }!.1
        let help = Kinetrace.helpMessage(for: command, columns: 100) + "\n"
        let golden = Fixture.packageRoot.appendingPathComponent("Tests/KinetraceCLITests/Golden/\(name)-help.txt")
        if ProcessInfo.processInfo.environment["KINETRACE_UPDATE_GOLDEN"] == "1" {
            try help.write(to: golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: golden, encoding: .utf8)
        #expect(help == expected, "help for \(name) changed; if intended, regenerate the golden file")
    }

    @Test func helpIsReachableFromTheBinaryAndExitsZero() throws {
        let result = try kinetrace("inspect", "--help")
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: kinetrace inspect <file>"))
        let version = try kinetrace("--version")
        #expect(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == Kinetrace.version)
    }
}
