import Foundation
import KinetraceTestSupport
import Testing

/// Issue 27, items 6 and 7: every error is one line, `kinetrace: error: …`, with the usage of the
/// command that was run; a capture of another protocol's traffic names the protocol that fits;
/// summaries use only the words the protocol has.
@Suite struct OneLineErrorTests {
    /// (arguments, the command whose help the line points at, exit status)
    static let usageErrors: [([String], String, Int32)] = [
        (["conform", "--cases", "AC-NOPE*"], "kinetrace conform", 64),          // found while running
        (["replay", "--bogus", "x.jsonl"], "kinetrace replay", 64),             // an unknown option
        (["gestures", "eval", "--detector", "nope", "x"], "kinetrace gestures eval", 64),
        (["latency"], "kinetrace latency", 64),                                 // a missing argument
        (["inspect", "--sigmas", "x"], "kinetrace inspect", 64),
        (["no-such-command"], "kinetrace", 64),
        // A command's own check, reported by the command itself: one line, naming what was wrong.
        (["protocol", "show", "no-such-protocol"], "", 64),
    ]

    @Test(arguments: usageErrors)
    func aUsageErrorIsOneLineWithItsCommandsUsage(_ arguments: [String], _ command: String, _ status: Int32) throws {
        let result = try kinetrace(arguments)
        #expect(result.status == status, "\(arguments): \(result.stderr)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(lines.count == 1, "\(arguments): \(result.stderr)")
        #expect(lines.first?.hasPrefix("kinetrace: error: ") == true, "\(arguments): \(result.stderr)")
        #expect(!result.stderr.contains("Usage:") && !result.stderr.contains("Error:"))
        if !command.isEmpty {
            #expect(result.stderr.contains("(see '\(command) --help')"), "\(arguments): \(result.stderr)")
        }
        #expect(result.stdout.isEmpty)
    }

    /// Help, the version and completions are answers on standard output, exit 0, not errors.
    @Test func helpAndVersionAreNotErrors() throws {
        for arguments in [["--help"], ["--version"], ["replay", "--help"], ["help", "gestures", "eval"]] {
            let result = try kinetrace(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(!result.stdout.isEmpty && result.stderr.isEmpty, "\(arguments)")
        }
    }

    /// A KeepCalm capture read as the default protocol: the error names keepcalm-json and its port.
    @Test func aCaptureOfAnotherProtocolNamesTheOneThatFits() throws {
        let capture = Fixture.packageRoot.appendingPathComponent("captures/keepcalm-session.pcap").path
        let result = try kinetrace("inspect", capture)
        #expect(result.status == 65)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("give --protocol keepcalm-json --port 45693"), "\(result.stderr)")
        // And it reads once told.
        let told = try kinetrace("inspect", capture, "--protocol", "keepcalm-json", "--port", "45693")
        #expect(told.status == 0, "\(told.stderr)")

        let attitude = Fixture.packageRoot.appendingPathComponent("captures/attitude-session.pcap").path
        let stream = try kinetrace("inspect", attitude)
        #expect(stream.status == 65)
        #expect(stream.stderr.contains("give --protocol attitude-stream"), "\(stream.stderr)")
    }

    /// A KeepCalm host's summary: no stale frames (no sender clock) and no replies sent.
    @Test func aHostSummaryUsesTheProtocolsWords() throws {
        let host = try Background.kinetrace("host", "--protocol", "keepcalm-json", "--port", "0")
        defer { _ = try? host.stop(SIGKILL) }
        let listening = try host.waitForLine(startingWith: "listening on ")
        let port = try #require(listening.split(separator: ":").last.map(String.init))
        let session = Fixture.packageRoot.appendingPathComponent("captures/keepcalm-session.jsonl").path
        let replay = try kinetrace("replay", session, "--to", "127.0.0.1:\(port)", "--end", "2", "--speed", "4")
        #expect(replay.status == 0, "\(replay.stderr)")
        let ended = try host.stop()
        let summary = ended.stdout + ended.stderr
        let line = try #require(summary.split(separator: "\n").first { $0.hasPrefix("received ") }, "\(summary)")
        #expect(line.contains("decisions, no replies in keepcalm-json"), "\(line)")
        #expect(!line.contains("stale") && !line.contains("replies sent") && !line.contains("ack"), "\(line)")
    }
}
