import KinetraceTestSupport
import PropertyBased
import Testing
@testable import KinetraceImpairment
@testable import KinetraceReplay
import KinetraceTrace

/// `replay --shard K/N`: which controllers a share holds, how `auto` reads its
/// environment, and that N shares send exactly what one process would.
@Suite struct ShardTests {
    @Test func sharesAreDisjointCoverEveryControllerAndNumberBack() {
        for count in [1, 2, 3, 7, 64] {
            for total in [1, 2, 3, 10, 100, 1001] {
                var owners = [Int](repeating: 0, count: total)
                var held = 0
                for index in 0..<count {
                    let shard = ReplayShard(index: index, count: count)
                    let n = shard.controllers(of: total)
                    held += n
                    for local in 0..<n {
                        let v = shard.global(local)
                        #expect(v < total, "shard \(shard) of \(total): local \(local) is \(v)")
                        guard v < total else { continue }
                        owners[v] += 1
                        #expect(shard.local(v) == local)
                    }
                }
                #expect(held == total, "N=\(count), \(total) controllers")
                #expect(owners.allSatisfy { $0 == 1 }, "N=\(count), \(total) controllers: each in exactly one share")
            }
        }
    }

    @Test func sharesAreWrittenOneBased() throws {
        let shard = try ReplayShard.parse("2/3", environment: [:]).get()
        #expect(shard == ReplayShard(index: 1, count: 3))
        #expect(shard.description == "2/3")
        #expect(try ReplayShard.parse("1/1", environment: [:]).get() == .whole)
    }

    @Test(arguments: ["0/3", "4/3", "1/0", "-1/3", "1/65537", "x/2", "1/2/3", "2", "", "/", "auto/0", "1.5/3", "1/ 3"])
    func badSharesAreRefusedWithAReason(_ text: String) {
        guard case .failure(let error) = ReplayShard.parse(text, environment: ["PARALLEL_SEQ": "1"]) else {
            Issue.record("\"\(text)\" was accepted")
            return
        }
        #expect(!error.description.isEmpty && !error.description.contains("\n"))
    }

    @Test func autoReadsKubernetesSlurmAndGNUParallel() throws {
        // Kubernetes numbers completions from 0 and says nothing of N.
        #expect(try ReplayShard.parse("auto/4", environment: ["JOB_COMPLETION_INDEX": "0"]).get() == ReplayShard(index: 0, count: 4))
        #expect(try ReplayShard.parse("auto/4", environment: ["JOB_COMPLETION_INDEX": "3"]).get() == ReplayShard(index: 3, count: 4))
        guard case .failure(let noCount) = ReplayShard.parse("auto", environment: ["JOB_COMPLETION_INDEX": "1"]) else {
            Issue.record("auto without N from Kubernetes was accepted")
            return
        }
        #expect(noCount.description.contains("auto/N"))
        guard case .failure(let tooFar) = ReplayShard.parse("auto/4", environment: ["JOB_COMPLETION_INDEX": "4"]) else {
            Issue.record("index 4 of 4 was accepted")
            return
        }
        #expect(tooFar.description.contains("JOB_COMPLETION_INDEX"))
        // Slurm: an array 5-8 is four tasks; task 7 is the third share.
        let slurm = ["SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_COUNT": "4"]
        #expect(try ReplayShard.parse("auto", environment: slurm).get() == ReplayShard(index: 2, count: 4))
        #expect(try ReplayShard.parse("auto/4", environment: slurm).get() == ReplayShard(index: 2, count: 4))
        // Issue 24, finding 15: --array=0-4:2 is tasks 0, 2 and 4, shares 1 to 3 of 3.
        for (task, share) in [("0", 0), ("2", 1), ("4", 2)] {
            let stepped = ["SLURM_ARRAY_TASK_ID": task, "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "4",
                           "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "3"]
            #expect(try ReplayShard.parse("auto", environment: stepped).get() == ReplayShard(index: share, count: 3))
        }
        // Refused, one line each: an explicit N against Slurm's count, a task off the step, a count the range does not give.
        for (text, bad, named) in [
            ("auto/5", ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"], "disagrees with SLURM_ARRAY_TASK_COUNT=3"),
            ("auto/8", slurm, "disagrees"),
            ("auto", ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "3"], "SLURM_ARRAY_TASK_STEP=2"),
            ("auto", ["SLURM_ARRAY_TASK_ID": "8", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_COUNT": "3"], "not the number of tasks"),
            ("auto", ["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_STEP": "0", "SLURM_ARRAY_TASK_COUNT": "3"], "SLURM_ARRAY_TASK_STEP=0"),
        ] {
            guard case .failure(let error) = ReplayShard.parse(text, environment: bad) else {
                Issue.record("\(text) with \(bad) was accepted")
                continue
            }
            #expect(error.description.contains(named) && !error.description.contains("\n"), "\(error)")
        }
        // GNU parallel numbers its jobs from 1.
        #expect(try ReplayShard.parse("auto/3", environment: ["PARALLEL_SEQ": "3"]).get() == ReplayShard(index: 2, count: 3))
        // Kubernetes first, then Slurm, then GNU parallel.
        #expect(try ReplayShard.parse("auto/9", environment: ["JOB_COMPLETION_INDEX": "1", "PARALLEL_SEQ": "5"]).get().index == 1)
        for bad in [["JOB_COMPLETION_INDEX": "x"], ["PARALLEL_SEQ": "0"], ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "3"],
                    ["JOB_COMPLETION_INDEX": "99999999999999999999"], [:]] {
            guard case .failure(let error) = ReplayShard.parse("auto/4", environment: bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
            #expect(!error.description.contains("\n"))
        }
        // A bad count is named, with or without an explicit N.
        #expect(throws: ShardError.self) { try ReplayShard.parse("auto/4", environment: ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "0"]).get() }
        guard case .failure(let badCount) = ReplayShard.parse("auto", environment: ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "0"]) else {
            Issue.record("SLURM_ARRAY_TASK_COUNT=0 was accepted")
            return
        }
        #expect(badCount.description.contains("SLURM_ARRAY_TASK_COUNT"))
    }

    /// The property the shards stand on: walking the whole plan and keeping one share's
    /// steps, for every share, gives back the whole plan's steps, each exactly once and in
    /// the same order, with the single process's deadlines, bytes and impairment draws.
    @Test func theSharesTogetherAreTheSingleReplayStepForStep() async {
        await seededPropertyCheck(count: 12, draw: { rng in
            (seed: rng.next() % 1000, count: Int(rng.next() % 5) + 1, controllers: Int(rng.next() % 9) + 1, loops: Int(rng.next() % 2) + 1)
        }) { draw in
            let input = makeInput(controllers: 3, frames: 60, jitterNs: 2_000_000, seed: draw.seed)
            var options = ImpairedScheduleTests.harsh(seed: draw.seed)
            options.controllers = draw.controllers
            options.loops = draw.loops
            let whole = ReplaySchedule.steps(input: input, options: options)
            var wholeShare = ShareDigest()
            whole.forEach { wholeShare.add($0) }
            var shareValues: [UInt64] = []
            var kept: [[ReplaySchedule.Step]] = []
            for index in 0..<draw.count {
                let shard = ReplayShard(index: index, count: draw.count)
                var sharded = options
                sharded.shard = shard
                var digest = ScheduleDigest()
                var share = ShareDigest()
                var mine: [ReplaySchedule.Step] = []
                for step in ReplaySchedule(input: input, options: sharded) {
                    digest.add(step)
                    guard let local = Replayer.share(step, of: shard) else { continue }
                    share.add(step)
                    mine.append(local.with(controller: shard.global(local.controller)))
                }
                #expect(digest == Self.digest(whole), "every shard plans the whole replay")
                shareValues.append(share.value)
                kept.append(mine)
            }
            #expect(ShareDigest.sum(shareValues) == wholeShare.value)
            // Put the shares back together in plan order: each step of the whole plan is the next one of exactly one share.
            var cursors = [Int](repeating: 0, count: draw.count)
            for step in whole {
                let owner = step.controller % draw.count
                let next = cursors[owner] < kept[owner].count ? kept[owner][cursors[owner]] : nil
                #expect(next == step, "step \(step) missing from share \(owner + 1)")
                cursors[owner] += 1
            }
            #expect(zip(cursors, kept).allSatisfy { $0 == $1.count }, "no share has steps the whole plan lacks")
        }
    }

    @Test func aShareDigestTellsSwappedControllersApart() {
        var send = ScheduledSend(deadlineNs: 5, controller: 0, payload: [1, 2, 3], sequence: 0, pass: 0, sourceIndex: 0,
                                 isDuplicate: false, senderTimeMs: nil, predictedTrigger: false)
        var a = ShareDigest(), b = ShareDigest()
        a.add(.send(send))
        send.controller = 1
        send.payload = [4]
        a.add(.send(send))
        b.add(.send(send))
        send.controller = 0
        send.payload = [1, 2, 3]
        b.add(.send(send))
        #expect(a.value == b.value, "order across controllers does not matter")
        var c = ShareDigest()
        send.controller = 1
        c.add(.send(send))  // controller 1 now sends [1, 2, 3]
        send.controller = 0
        send.payload = [4]
        c.add(.send(send))
        #expect(c.value != a.value, "which controller sent what does")
    }

    @Test func aShardWithNoControllersIsRefused() {
        let input = makeInput(controllers: 2, frames: 10)
        var options = ReplayOptions()
        options.shard = ReplayShard(index: 2, count: 3)
        #expect(options.problem(planning: input)?.contains("holds none") == true)
        options.controllers = 3
        #expect(options.problem(planning: input) == nil)
    }

    static func digest(_ steps: [ReplaySchedule.Step]) -> ScheduleDigest {
        var digest = ScheduleDigest()
        steps.forEach { digest.add($0) }
        return digest
    }
}

@Suite struct RFC3339ParsingTests {
    @Test func readsWhatTheWriterWrites() async {
        await seededPropertyCheck(count: 200, draw: { rng in Int64(rng.next() % UInt64(TraceRecord.timeRangeNs.upperBound / 1_000_000)) * 1_000_000 }) { ns in
            #expect(RFC3339.nanoseconds(from: RFC3339.string(fromNanoseconds: ns)) == ns)
        }
    }

    @Test func offsetsFractionsAndSpellings() {
        let base: Int64 = 1_795_636_800_000_000_000  // 2026-11-25T20:00:00Z
        #expect(RFC3339.nanoseconds(from: "2026-11-25T20:00:00Z") == base)
        #expect(RFC3339.nanoseconds(from: "2026-11-25t20:00:00z") == base)
        #expect(RFC3339.nanoseconds(from: "2026-11-25 21:00:00+01:00") == base)
        #expect(RFC3339.nanoseconds(from: "2026-11-25T15:30:00-04:30") == base)
        #expect(RFC3339.nanoseconds(from: "2026-11-25T20:00:00.5Z") == base + 500_000_000)
        #expect(RFC3339.nanoseconds(from: "2026-11-25T20:00:00.123456789Z") == base + 123_456_789)
        #expect(RFC3339.nanoseconds(from: "2026-11-25T20:00:00.1234567891Z") == base + 123_456_789)  // past ns: cut
        #expect(RFC3339.nanoseconds(from: "2024-02-29T00:00:00Z") != nil)
    }

    @Test(arguments: ["", "2026-11-25", "2026-11-25T20:00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
                      "2026-11-25T24:00:00Z", "2026-11-25T20:60:00Z", "2026-11-25T20:00:60Z", "2026-11-25T20:00:00.Z",
                      "1969-12-31T23:59:59Z", "2117-01-01T00:00:00Z", "1970-01-01T00:30:00+01:00", "2026-11-25T20:00:00+1:00",
                      "2026-11-25T20:00:00Zjunk", "２026-11-25T20:00:00Z", "2026-11-25T20:00:00+24:00"])
    func refusesWhatIsNotAnInstantItCanHold(_ text: String) {
        #expect(RFC3339.nanoseconds(from: text) == nil, "\(text)")
    }
}
