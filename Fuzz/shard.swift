// `replay --shard` (Sources/Engines/KinetraceReplay/ReplayShard.swift): the shard text and
// the environment it reads for `auto`. The input's first line is the text, each later line
// NAME=VALUE. Checks: a parsed shard is in range (1 ≤ N ≤ 65,536, 0 ≤ K < N); an explicit
// K/N is exactly what it says; a Slurm task's share is its place in the stepped array and
// agrees with every count given; an error is one non-empty line; parsing is deterministic.
import KinetraceImpairment

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzShard(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: size > 0 ? data : nil, count: size), as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let shardText = lines.first ?? ""
    var environment: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let equals = line.firstIndex(of: "=") else { continue }
        environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    let result = ReplayShard.parse(shardText, environment: environment)
    switch result {
    case .success(let shard):
        invariant((1...ReplayShard.maximumCount).contains(shard.count), "a shard count of \(shard.count) parsed")
        invariant((0..<shard.count).contains(shard.index), "shard index \(shard.index) of \(shard.count) parsed")
        let parts = shardText.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2, let n = Int(parts[1]) {
            invariant(shard.count == n, "\(shardText) gave \(shard.count) shards")
            if let k = Int(parts[0]) { invariant(shard.index == k - 1, "\(shardText) gave share \(shard.index + 1)") }
        }
        // The parser trims spaces around a number, as a shell's variables may carry them.
        func number(_ name: String) -> Int? {
            environment[name].flatMap { Int($0.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed().map(String.init).joined()) }
        }
        if parts.first == "auto", environment["JOB_COMPLETION_INDEX"] == nil, let id = number("SLURM_ARRAY_TASK_ID") {
            let low = number("SLURM_ARRAY_TASK_MIN") ?? 0
            let step = number("SLURM_ARRAY_TASK_STEP") ?? 1
            invariant(id - low == shard.index * step, "task \(id) from \(low) by \(step) became share \(shard.index + 1)")
            if let count = number("SLURM_ARRAY_TASK_COUNT") {
                invariant(count == shard.count, "SLURM_ARRAY_TASK_COUNT=\(count) but \(shard.count) shards")
            }
        }
    case .failure(let error):
        invariant(!error.description.isEmpty, "an error without a message")
        invariant(!error.description.contains("\n"), "an error of more than one line: \(error.description)")
    }
    invariant(ReplayShard.parse(shardText, environment: environment) == result, "parsing the same input twice differed")
    return 0
}
