import Foundation
import KinetraceTestSupport
import Testing

/// Issue 15, findings 2 and 3: times, durations and rates read from a trace,
/// a network file or a flag are range-checked where they enter. Each of
/// these trapped (SIGILL) before; now each is a one-line error with the
/// data (65) or usage (64) status, naming the place.
@Suite struct HostileValueTests {
    static let session = Fixture.bundledTrace

    /// The bundled session with the t_ns of its first two records after the header replaced.
    static func trace(in dir: URL, first: String, second: String) throws -> String {
        var lines = try String(contentsOfFile: session, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, value) in [(1, first), (2, second)] {
            lines[index] = lines[index].replacingOccurrences(of: #""t_ns":[0-9]+"#, with: "\"t_ns\":\(value)", options: .regularExpression)
        }
        let path = dir.appendingPathComponent("t\(first)_\(second).jsonl").path
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static let readers: [[String]] = [["inspect"], ["latency"], ["conform", "--capture"], ["replay", "--dry-run"],
                                      ["gestures", "eval", "--detector", "threshold"]]

    @Test(arguments: [("-9223372036854775808", "1767225600000000000"), ("0", "9223372036854775807"), ("1767225600000000000", "-1")])
    func extremeTraceTimesAreDataErrorsNamingTheLine(_ times: (String, String)) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = try Self.trace(in: dir, first: times.0, second: times.1)
        for command in Self.readers {
            let result = try kinetrace(command + [path])
            #expect(result.status == 65 && !result.signalled, "\(command) \(times): \(result.status) \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("line ") && result.stderr.contains("t_ns"),
                    "\(command): \(result.stderr)")
        }
    }

    /// Times inside the range but a century apart: readers cope, and replay refuses to plan a century.
    @Test func aCenturyLongTraceIsReadAndNotReplayed() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = try Self.trace(in: dir, first: "0", second: "4611686018427387903")
        for command in [["inspect"], ["conform", "--capture"], ["latency"]] {
            let result = try kinetrace(command + [path])
            #expect(!result.signalled && [0, 1].contains(result.status), "\(command): \(result.status) \(result.stderr)")
        }
        let replay = try kinetrace(["replay", "--dry-run", path])
        #expect(replay.status == 64, "\(replay.stderr)")
        #expect(replay.stderr.contains("the replay would take") && replay.stderr.contains("at most 30 days"), "\(replay.stderr)")
    }

    @Test(arguments: [["--stagger-ms", "1e13"], ["--stagger-ms", "3600001"], ["--start", "1e300"], ["--start", "0", "--end", "1e300"],
                      ["--timeout", "1e300"], ["--rate", "1kbit@1e300"], ["--rate", "0.000001bit"], ["--delay", "1e300"],
                      ["--delay", "uniform:0:1e12"], ["--loop", "1000000000000"]])
    func absurdFlagsAreUsageErrors(_ flags: [String]) throws {
        let result = try kinetrace(["replay", "--dry-run", Self.session] + flags)
        #expect(result.status == 64 && !result.signalled, "\(flags): \(result.status) \(result.stderr)")
        #expect(!result.stderr.isEmpty)
    }

    @Test(arguments: [#""stagger_ms": 1e13"#, #""stagger_ms": 1e12"#, #""delay": {"distribution": "constant", "ms": 1e300}"#,
                      #""rate": [{"from_s": 0, "bits_per_s": 1000}, {"from_s": 1e300, "bits_per_s": 10}]"#,
                      #""rate": [{"from_s": 0, "bits_per_s": 1e-300}]"#])
    func absurdNetworkValuesAreDataErrorsNamingTheMember(_ member: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("n.json").path
        try #"{"kinetrace_network": 1, "name": "n", "description": "d", "provenance": "p", "#.appending(member + "}")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try kinetrace(["replay", "--dry-run", Self.session, "--network", path])
        #expect(result.status == 65 && !result.signalled, "\(member): \(result.status) \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(path), "\(result.stderr)")
    }

    /// A heavy-tailed delay draws values beyond any clock now and then: they are cut at an hour, never trap.
    @Test func aHeavyTailedDelayNeverTraps() throws {
        let result = try kinetrace(["replay", "--dry-run", Self.session, "--delay", "pareto:1:0.01", "--seed", "3"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
