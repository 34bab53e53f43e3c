import Foundation
import KinetraceTestSupport
import Testing

/// Issue 15, finding 4, the conform and gestures half: a host that floods replies, or answers
/// every frame with 64 KiB, is judged from a bounded sample (Tests/FaultyHosts/reply_flood_host.py).
/// Peak memory is measured by Benchmarks/flood/rss.sh, not asserted here.
@Suite(.enabled(if: Fixture.hasPython, "needs python3 for the hostile hosts"))
struct ReplyFloodTests {
    func floodHost(_ mode: String) throws -> (Background, UInt16) {
        let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/reply_flood_host.py").path
        let host = try Background(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--mode", mode])
        return (host, try port(in: try host.waitForLine(startingWith: "listening on")))
    }

    func cases(_ stdout: String) throws -> [String: [String: Any]] {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], "\(stdout)")
        let cases = try #require(report["cases"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: cases.map { ($0["id"] as! String, $0) })
    }

    @Test func conformStopsAtAFloodAndFailsTheCaseItHit() throws {
        let (host, port) = try floodHost("flood")
        defer { _ = try? host.stop(SIGKILL) }
        let result = try kinetrace(["conform", "--host", "127.0.0.1:\(port)", "--format", "json",
                                    "--cases", "AC-TRIGGER-*", "--cases", "AC-ACK-FORMAT"], timeout: 60)
        #expect(result.status == 1)
        let byID = try cases(result.stdout)
        let first = try #require(byID["AC-TRIGGER-THRESHOLD"])
        #expect(first["verdict"] as? String == "FAIL")
        #expect((first["detail"] as? String ?? "").contains("flooded"), "\(first)")
        for id in ["AC-TRIGGER-REFRACTORY", "AC-TRIGGER-STALE", "AC-TRIGGER-DUPLICATE", "AC-ACK-FORMAT"] {
            #expect(byID[id]?["verdict"] as? String == "ERROR", "\(id) is not run after the flood")
        }
    }

    /// Over the stdio adapter, acks for a controller no case uses (id 0, written nonstop by
    /// Tests/FaultyHosts/ack_flood_host.py) count toward the flood limit too: before, they were
    /// dropped one by one and every case ran its full time, 70 s in all, for want of its own acks.
    @Test func conformCountsAFloodToAnotherControllerOverExec() throws {
        let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/ack_flood_host.py").path
        let result = try kinetrace(["conform", "--exec", "python3 '\(script)'", "--format", "json",
                                    "--cases", "AC-TRIGGER-*"], timeout: 60)
        #expect(result.status == 1)
        let byID = try cases(result.stdout)
        let failed = byID.values.filter { ($0["verdict"] as? String) == "FAIL" }
        #expect(failed.count == 1 && (failed.first?["detail"] as? String ?? "").contains("flooded"), "\(byID)")
        #expect(byID.values.filter { ($0["verdict"] as? String) == "ERROR" }.count == 3, "the cases after the flood are not run")
    }

    @Test func conformJudgesA64KiBReplyByItsLength() throws {
        let (host, port) = try floodHost("big")
        defer { _ = try? host.stop(SIGKILL) }
        let result = try kinetrace(["conform", "--host", "127.0.0.1:\(port)", "--format", "json", "--cases", "AC-ACK-FORMAT",
                                    "--cases", "AC-ACK-UNSOLICITED"], timeout: 60)
        #expect(result.status == 1)
        let byID = try cases(result.stdout)
        let format = try #require(byID["AC-ACK-FORMAT"])
        #expect(format["verdict"] as? String == "FAIL")
        #expect((format["detail"] as? String ?? "").contains("65507 bytes"), "\(format)")
        #expect(byID["AC-ACK-UNSOLICITED"]?["verdict"] as? String == "FAIL")
    }

    /// Nine unasked acks per frame stay under the flood limit: the replay runs to the end,
    /// counts them, and --strict fails it.
    @Test func unaskedRepliesUnderTheLimitFailAStrictReplay() throws {
        let (host, port) = try floodHost("many")
        defer { _ = try? host.stop(SIGKILL) }
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let trace = directory.appendingPathComponent("session.jsonl").path
        #expect(try kinetrace(["synth", "--out", trace, "--controllers", "2", "--duration", "3", "--seed", "4"]).status == 0)
        let lenient = try kinetrace(["replay", trace, "--to", "127.0.0.1:\(port)", "--timing", "fast", "--format", "json"], timeout: 60)
        #expect(lenient.status == 0, "\(lenient.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(lenient.stdout.utf8)) as? [String: Any], "\(lenient.stdout)")
        let acks = try #require(report["replies"] as? [String: Any], "\(report.keys.sorted())")
        let unexpected = try #require(acks["unexpected"] as? Int, "\(acks)")
        #expect(unexpected > 0, "the nine-per-frame acks are counted as unexpected")
        let strict = try kinetrace(["replay", trace, "--to", "127.0.0.1:\(port)", "--timing", "fast", "--strict"], timeout: 60)
        #expect(strict.status == 1, "\(strict.stderr)")
    }

    @Test func gesturesLiveStopsAtAFloodWithStatus76() throws {
        let (host, port) = try floodHost("flood")
        defer { _ = try? host.stop(SIGKILL) }
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let trace = directory.appendingPathComponent("labelled.jsonl").path
        #expect(try kinetrace(["synth", "--out", trace, "--controllers", "2", "--duration", "20", "--seed", "3"]).status == 0)
        let result = try kinetrace(["gestures", "eval", "--live", "127.0.0.1:\(port)", trace], timeout: 60)
        #expect(result.status == 76, "\(result.stderr)")
        #expect(result.stderr.contains("flooded"), "\(result.stderr)")
    }
}
