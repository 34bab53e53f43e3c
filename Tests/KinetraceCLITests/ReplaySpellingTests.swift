import Foundation
import KinetraceTestSupport
import Testing

/// Issue 16, item 4: replay takes tcpreplay's spellings, each with tcpreplay's meaning:
/// -x/--multiplier, -t/--topspeed, --loop 0, -p/--pps, -L/--limit, --duration, -q, --stats.
@Suite struct ReplaySpellingTests {
    static let session = Fixture.packageRoot.appendingPathComponent("captures/synthetic-session.jsonl").path

    func plan(_ extra: [String]) throws -> (messages: Int, spanMs: Double, digest: String) {
        let result = try kinetrace(["replay", Self.session, "--dry-run"] + extra)
        #expect(result.status == 0, "\(extra): \(result.stderr)")
        let first = try #require(result.stdout.split(separator: "\n").first.map(String.init))
        let numbers = try #require(first.firstMatch(of: /plan: (\d+) message\(s\) .* over ([0-9.]+) ms/), "\(first)")
        let digest = try #require(result.stdout.firstMatch(of: /schedule digest: ([0-9a-f]+)/))
        return (Int(numbers.1)!, Double(numbers.2)!, String(digest.1))
    }

    /// The new spellings plan exactly what the old ones do.
    @Test func tcpreplaySpellingsAreTheOldOptions() throws {
        #expect(try plan(["-x", "2"]).digest == plan(["--speed", "2"]).digest)
        #expect(try plan(["--multiplier", "0.5"]).digest == plan(["--speed", "0.5"]).digest)
        #expect(try plan(["-t"]).digest == plan(["--timing", "fast"]).digest)
        #expect(try plan(["--topspeed"]).digest == plan(["--timing", "fast"]).digest)
        #expect(try plan(["-x", "2"]).digest != plan([]).digest, "the multiplier changes the plan")
    }

    /// -p ignores the recorded spacing: N messages at R a second span (N − 1)/R; -L cuts at N sends.
    @Test func fixedRateAndLimit() throws {
        let paced = try plan(["-p", "100", "-L", "50"])
        #expect(paced.messages == 50)
        #expect(abs(paced.spanMs - 490) < 0.01, "49 intervals of 10 ms: \(paced.spanMs)")
        let limited = try plan(["-L", "7"])
        #expect(limited.messages == 7)
    }

    /// --loop 0 plays until something stops it: here --duration, at 5 s of the 10 Hz × 3 session.
    @Test func loopZeroEndsAtTheDuration() throws {
        let endless = try plan(["--loop", "0", "--duration", "5"])
        #expect(endless.messages == 150, "3 controllers × 10 Hz × 5 s")
        #expect(endless.spanMs < 5_000)
        // The session spans 60 s, so without --loop 0 the duration alone cuts the first pass.
        #expect(try plan(["--duration", "5"]).messages == 150)
        #expect(try plan(["--loop", "0", "-L", "4000"]).messages == 4000, "past the 1,800-message session: it looped")
        // -l is tcpreplay's short --loop.
        #expect(try plan(["-l", "2"]).digest == plan(["--loop", "2"]).digest)
        #expect(try plan(["-l", "2"]).messages == 3600)
    }

    /// On the wire: -t -L 20 sends exactly 20; -q prints nothing; --stats prints lines while sending.
    @Test func onTheWire() throws {
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        defer { _ = try? host.stop() }
        let limited = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "-t", "-L", "20", "--format", "json"])
        #expect(limited.status == 0, "\(limited.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(limited.stdout.utf8)) as? [String: Any])
        let controllers = try #require(report["controllers"] as? [[String: Any]])
        #expect(controllers.compactMap { $0["sent"] as? Int }.reduce(0, +) == 20)

        let quiet = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "-p", "20", "--duration", "2.5", "--stats", "1", "-q"])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(quiet.stdout.isEmpty, "-q: \(quiet.stdout)")
        let stats = quiet.stderr.split(separator: "\n").filter { $0.hasPrefix("replay: ") && $0.contains(" sent (") }
        #expect(stats.count >= 2, "a line a second for 2.5 s: \(quiet.stderr)")
    }

    /// Combinations tcpreplay would not make sense of are usage errors.
    @Test(arguments: [
        (["-p", "10", "-t"], "-p sets a rate and -t sends at once"),
        (["-p", "10", "-x", "2"], "-x has nothing to scale"),
        (["-p", "0"], "-p must be a rate above 0"),
        (["--loop=-1"], "--loop must be at least 0"),
        (["-t", "--timing", "original"], "give one"),
        (["-L", "0"], "-L must be at least 1"),
        (["--duration", "0"], "--duration must be a positive number"),
        (["--stats", "0"], "--stats must be from 1 to 86400"),
        (["--loop", "0"], "bound it with --duration or -L"),
    ])
    func usageMistakes(_ extra: [String], _ message: String) throws {
        let result = try kinetrace(["replay", Self.session, "--dry-run"] + extra)
        #expect(result.status == 64, "\(extra): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
