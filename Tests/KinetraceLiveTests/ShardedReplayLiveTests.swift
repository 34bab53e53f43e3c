import Foundation
import KinetraceTestSupport
import Testing

/// Issue 17, item 3, end to end: three shards in three network namespaces (each a
/// "machine" with a veth link to the host's namespace), started by GNU parallel on
/// one agreed instant with `--shard auto/3`, their records merged by `kinetrace
/// merge`, and the merged record compared with a single-process replay of the same
/// seed: every controller's sends byte for byte and in order, and every impairment
/// decision (Tests/Scripts/sharded_replay_netns.sh, compare_shard_records.py).
@Suite(.serialized, .enabled(if: Requirement.root.runs, "network namespaces need root; with CI set this fails instead"))
struct ShardedReplayLiveTests {
    static let scripts = Fixture.packageRoot.appendingPathComponent("Tests/Scripts")

    init() throws {
        try Requirement.root.check()
        try Requirement.tools("ip", "parallel").check()
        try Requirement.python3.check()
    }

    @Test func threeNamespacesShardedAreTheSingleReplay() throws {
        let work = try Fixture.temporaryDirectory()
        defer { Fixture.remove(work) }
        let result = try run(URL(fileURLWithPath: "/bin/bash"),
                             [Self.scripts.appendingPathComponent("sharded_replay_netns.sh").path, try Fixture.binary.path,
                              Fixture.bundledTrace, work.path, "3", "17"], timeout: 300)
        let phases = (try? String(contentsOf: work.appendingPathComponent("phases.log"), encoding: .utf8)) ?? "(no phases.log)"
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\nphases:\n\(phases)")
        let summary = try #require(result.stdout.firstMatch(of: /identical: 9 controllers, (\d+) sends, (\d+) impairment decisions/),
                                   "\(result.stdout)\(result.stderr)")
        #expect(Int(summary.1)! > 200, "4 s of 9 controllers at 10 Hz, less the harsh network's losses")
        #expect(Int(summary.2)! > 0, "the harsh network impairs: the decisions were compared")
        for k in 1...3 {
            let report = try String(contentsOf: work.appendingPathComponent("shard\(k).json"), encoding: .utf8)
            #expect(report.contains("\"shard\":\"\(k)/3\""), "PARALLEL_SEQ made job \(k) shard \(k)/3")
        }

        // The comparison can fail: a single record missing one send, or with one payload changed, is caught.
        let single = try String(contentsOf: work.appendingPathComponent("single.jsonl"), encoding: .utf8)
        var lines = single.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let sendLine = try #require(lines.lastIndex { $0.contains("\"dir\":\"c2h\"") })
        let startAt = try String(contentsOf: work.appendingPathComponent("start-at"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let reports = (1...3).map { work.appendingPathComponent("shard\($0).json").path }
        func compare(_ text: String) throws -> RunResult {
            let path = work.appendingPathComponent("altered.jsonl")
            try text.write(to: path, atomically: true, encoding: .utf8)
            return try run(URL(fileURLWithPath: "/usr/bin/env"),
                           ["python3", Self.scripts.appendingPathComponent("compare_shard_records.py").path,
                            work.appendingPathComponent("merged.jsonl").path, path.path, startAt] + reports)
        }
        #expect(try compare(single).status == 0, "the unaltered record compares equal")
        let original = lines[sendLine]
        lines.remove(at: sendLine)
        let dropped = try compare(lines.joined(separator: "\n"))
        #expect(dropped.status != 0 && dropped.stderr.contains("controller"), "\(dropped.stderr)")
        lines.insert(original.replacingOccurrences(of: "\"payload\":\"", with: "\"payload\":\"ff"), at: sendLine)
        let changed = try compare(lines.joined(separator: "\n"))
        #expect(changed.status != 0 && changed.stderr.contains("first difference"), "\(changed.stderr)")
    }
}
