import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace merge` of `replay --shard` records checks them as one set: the same N,
/// seed and network, each shard once, none missing (unless --allow-missing-shards), so a
/// merge of two shards of three cannot pass for the whole replay.
@Suite struct MergeShardSetTests {
    typealias M = MergeCommandTests

    /// A shard record's header, as `replay --shard` writes it (its extra members flattened into the header).
    static func shardHeader(_ shard: String, seed: Int = 7, network: String = "harsh") -> String {
        M.header(extra: #","shard":"\#(shard)","seed":\#(seed),"network":"\#(network)","replay_of":["/data/\#(shard.first!).jsonl"]"#)
    }

    func merge(_ dir: URL, _ inputs: [(name: String, header: String)], _ extra: [String] = []) throws -> RunResult {
        let paths = try inputs.enumerated().map { i, input in
            try M.write(dir, input.name, header: input.header, [M.event(M.base + Int64(i) * M.ms, "e\(i)")])
        }
        return try kinetrace(["merge"] + paths + ["-w", dir.appendingPathComponent("out.jsonl").path] + extra)
    }

    @Test func aWholeSetMerges() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        // Different input paths on each machine are no reason to refuse.
        let result = try merge(dir, [("a.jsonl", Self.shardHeader("2/3")), ("b.jsonl", Self.shardHeader("1/3")), ("c.jsonl", Self.shardHeader("3/3"))])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test(arguments: [
        ([("1/3", 7, "harsh"), ("3/3", 7, "harsh")], "missing 2/3"),
        ([("1/2", 7, "harsh"), ("1/2", 7, "harsh")], "given twice"),
        ([("1/2", 7, "harsh"), ("2/3", 7, "harsh")], "share N"),
        ([("1/2", 7, "harsh"), ("2/2", 8, "harsh")], "differ in seed"),
        ([("1/2", 7, "harsh"), ("2/2", 7, "lab-5ghz")], "differ in network"),
        ([("1/2", 7, "harsh"), ("x/y", 7, "harsh")], "is not K/N"),
    ])
    func aBrokenSetIsRefused(_ shards: [(String, Int, String)], _ reason: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let inputs = shards.enumerated().map { i, s in ("s\(i).jsonl", Self.shardHeader(s.0, seed: s.1, network: s.2)) }
        let result = try merge(dir, inputs)
        #expect(result.status == 65, "\(shards): \(result.stderr)")
        #expect(result.stderr.contains(reason), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.jsonl").path), "nothing written")
    }

    @Test func aShardBesideAPlainRecordIsRefused() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let result = try merge(dir, [("s.jsonl", Self.shardHeader("1/2")), ("plain.jsonl", M.header())])
        #expect(result.status == 65 && result.stderr.contains("is not"), "\(result.stderr)")
    }

    @Test func missingShardsCanBeAllowedAndAreNamed() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let result = try merge(dir, [("s1.jsonl", Self.shardHeader("1/4")), ("s4.jsonl", Self.shardHeader("4/4"))], ["--allow-missing-shards"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("merging 2 of 4 shards: missing 2/4, 3/4"), "\(result.stderr)")
    }
}
