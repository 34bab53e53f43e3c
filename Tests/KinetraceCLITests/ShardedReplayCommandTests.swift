import Foundation
import KinetraceTestSupport
import Testing

/// `replay --shard K/N` and `--start-at` as a user meets them: dry runs that add
/// up, and one-line refusals with exit 64. The live, several-namespace run is
/// `ShardedReplayLiveTests`.
@Suite struct ShardedReplayCommandTests {
    static let session = Fixture.packageRoot.appendingPathComponent("captures/synthetic-session.jsonl").path

    func dryRun(_ extra: [String], environment: [String: String] = [:]) throws -> [String: Any] {
        let result = try kinetrace(["replay", Self.session, "--dry-run", "--format", "json", "--end", "20", "--controllers", "10",
                                    "--network", "harsh", "--seed", "42"] + extra)
        #expect(result.status == 0, "\(extra): \(result.stderr)")
        return try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// Every shard plans the whole replay (same schedule digest as one process), sends only
    /// its share, and the shares' sends and digests add up to the whole's.
    @Test func threeShardsAddUpToOneProcess() throws {
        let single = try dryRun([])
        let whole = try dryRun(["--shard", "1/1"])
        #expect(whole["schedule_digest"] as? String == single["schedule_digest"] as? String)
        #expect(whole["sends"] as? Int == single["sends"] as? Int)
        #expect(single["shard"] == nil, "a plain dry run's report is unchanged")
        var sends = 0, predicted = 0, controllers = 0
        var shareSum: UInt64 = 0
        for k in 1...3 {
            let plan = try dryRun(["--shard", "\(k)/3"])
            #expect(plan["schedule_digest"] as? String == single["schedule_digest"] as? String, "shard \(k)/3 plans the whole replay")
            #expect(plan["shard"] as? String == "\(k)/3")
            sends += try #require(plan["sends"] as? Int)
            predicted += try #require(plan["replies_predicted"] as? Int)
            controllers += try #require(plan["shard_controllers"] as? Int)
            let share = try #require(plan["share_digest"] as? String)
            shareSum &+= try #require(UInt64(share, radix: 16))
        }
        #expect(sends == single["sends"] as? Int)
        #expect(predicted == single["replies_predicted"] as? Int)
        #expect(controllers == 10)
        #expect(String(shareSum, radix: 16).leftPadded(16) == whole["share_digest"] as? String)
    }

    /// auto takes GNU parallel's job number, as a job started by `parallel` would.
    @Test func autoReadsTheEnvironment() throws {
        let result = try runWithEnvironment(["PARALLEL_SEQ": "2"], ["replay", Self.session, "--dry-run", "--format", "json", "--shard", "auto/3"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"shard\":\"2/3\""), "\(result.stdout)")
    }

    @Test(arguments: [
        (["--shard", "4/3"], "from 1 to 3"),
        (["--shard", "auto"], "JOB_COMPLETION_INDEX"),
        (["--shard", "3/3", "--controllers", "2"], "holds none"),
        (["--start-at", "tomorrow"], "RFC 3339"),
        (["--start-at", "+1e9"], "RFC 3339"),
        (["--start-at", "+1", "--dry-run"], "nothing to start"),
        (["--start-at", "2100-01-01T00:00:00Z"], "at most a day"),
    ])
    func refusedInOneLine(_ extra: [String], _ reason: String) throws {
        var arguments = ["replay", Self.session, "--to", "127.0.0.1:9"] + extra
        if extra.contains("--dry-run") { arguments.removeAll { $0 == "--to" || $0 == "127.0.0.1:9" } }
        let result = try runWithEnvironment([:], arguments)
        #expect(result.status == 64, "\(extra): \(result.stderr)")
        #expect(result.stderr.contains(reason), "\(extra): \(result.stderr)")
    }

    /// Never green on nothing. --start and --end cut the input as it is read, so the replay's controllers
    /// are those with a message in the range: a shard left with none of them is refused before anything
    /// is sent (exit 64, naming how many shards the range can fill), live or dry.
    @Test func aShardWithNothingToSendIsNotGreen() throws {
        let empty = try kinetrace(["replay", Self.session, "--dry-run", "--end", "0.005", "--shard", "3/3"])
        #expect(empty.status == 64, "\(empty.stderr)")
        #expect(empty.stderr.contains("shard 3/3 holds none of the replay's 1 controller(s)"), "\(empty.stderr)")
        let other = try kinetrace(["replay", Self.session, "--dry-run", "--end", "0.005", "--shard", "1/3"])
        #expect(other.status == 0, "the shard holding the one message plans it: \(other.stderr)")
        #expect(other.stdout.contains("plan: 1 message(s)"), "\(other.stdout)")
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try KinetraceTestSupport.port(in: try host.waitForLine(startingWith: "listening on"))
        let live = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "--end", "0.005", "--shard", "3/3"])
        _ = try host.stop()
        #expect(live.status == 64 && live.stderr.contains("holds none of the replay's"), "\(live.stderr)")
    }

    /// An agreed instant that has passed cannot be kept: refused before anything is sent.
    @Test func aStartInstantInThePastIsRefused() throws {
        let host = TestSocket()
        let port = host.bindLoopback()
        let result = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "--start-at", "2020-01-01T00:00:00Z"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("passed"), "\(result.stderr)")
        #expect(host.receive(within: 0.2) == nil, "nothing was sent")
    }

    /// A shard started on an instant reports it, and its record says which controllers of the plan it sent.
    @Test func aShardStartsOnTheInstantAndRecordsItsShare() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try KinetraceTestSupport.port(in: try host.waitForLine(startingWith: "listening on"))
        let record = directory.appendingPathComponent("shard.jsonl").path
        // 4 s ahead: room for loading and planning on a loaded CI machine (a shard not ready in time refuses, exit 64).
        let startNs = (Int64(Date().timeIntervalSince1970 * 1000) + 4000) * 1_000_000
        let instant = rfc3339(startNs)
        let result = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "--end", "1", "--controllers", "5",
                                    "--shard", "2/2", "--start-at", instant, "--record", record, "--format", "json"])
        _ = try host.stop()
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["shard"] as? String == "2/2")
        #expect(report["planned_controllers"] as? Int == 5)
        #expect(report["anchor_wall_ns"] as? Int64 == startNs || (report["anchor_wall_ns"] as? Int).map(Int64.init) == startNs)
        let numbers = (report["controllers"] as? [[String: Any]])?.compactMap { $0["number"] as? Int }
        #expect(numbers == [1, 3])
        let text = try String(contentsOfFile: record, encoding: .utf8)
        let start = try #require(text.split(separator: "\n").first { $0.contains("\"replay_start\"") })
        #expect(start.contains("\"controller_numbers\":[1,3]"), "\(start)")
        #expect(start.contains("\"start_at_ns\":\(startNs)"), "\(start)")
        #expect(start.contains("\"shard\":\"2/2\""))
        #if os(Linux)
        #expect(start.contains("\"clock\":{"), "the kernel's clock discipline is recorded: \(start)")
        #endif
    }

    func rfc3339(_ ns: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ns) / 1e9))
    }

    /// Runs kinetrace through env(1): `set` added to its environment, the shard variables removed otherwise.
    func runWithEnvironment(_ set: [String: String], _ arguments: [String]) throws -> RunResult {
        let unset = ["PARALLEL_SEQ", "JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"].flatMap { ["-u", $0] }
        let assignments = set.map { "\($0.key)=\($0.value)" }
        return try run(URL(fileURLWithPath: "/usr/bin/env"), unset + assignments + [try Fixture.binary.path] + arguments)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: Swift.max(0, width - count)) + self }
}
