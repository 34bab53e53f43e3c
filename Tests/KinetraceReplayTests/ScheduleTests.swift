import Testing
@testable import KinetraceImpairment
@testable import KinetraceReplay
import KinetraceSimulation
import KinetraceTrace
import KinetraceWire
import KinetraceSupport

/// A synthetic input: `controllers` phones at 10 Hz for `frames` frames each,
/// jumping (ay = 0.9) every `jumpEvery` frames, with ±`jitterNs` of capture jitter.
func makeInput(controllers: Int = 1, frames: Int = 100, jumpEvery: Int = 7, periodNs: Int64 = 100_000_000,
               jitterNs: Int64 = 0, seed: UInt64 = 3) -> ReplayInput {
    var rng = SeededGenerator(seed: seed)
    var messages: [ReplayInput.Message] = []
    for c in 0..<controllers {
        for i in 0..<frames {
            let jitter = jitterNs == 0 ? 0 : Int64(rng.unit() * Double(jitterNs))
            let frame = MotionFrame(tMs: 1_767_225_600_000 + UInt64(i) * UInt64(periodNs / 1_000_000),
                                    ay: i % jumpEvery == 3 ? 0.9 : 0.1)
            messages.append(.init(offsetNs: Int64(i) * periodNs + Int64(c) * 1_000_000 + jitter, controller: c,
                                  payload: frame.encoded(), file: 0, index: i * controllers + c))
        }
    }
    messages.sort { ($0.offsetNs, $0.index) < ($1.offsetNs, $1.index) }
    let first = messages.first?.offsetNs ?? 0  // as ReplayInput.load does: the first message is at 0
    for i in messages.indices { messages[i].offsetNs -= first }
    let endpoints = (0..<controllers).map { Endpoint(host: "10.0.0.\(10 + $0)", port: UInt16(50_000 + $0)) }
    return ReplayInput(wireProtocol: MotionLinkV1(), messages: messages, controllers: endpoints)
}

extension ReplaySchedule.Step {
    var send: ScheduledSend? { if case .send(let s) = self { return s } else { return nil } }
    var impairment: ImpairmentRecord? { if case .impairment(let r) = self { return r } else { return nil } }
}

func sends(_ steps: [ReplaySchedule.Step]) -> [ScheduledSend] { steps.compactMap(\.send) }

@Suite struct ScheduleTimingTests {
    @Test func originalTimingKeepsTheRecordedSpacingOverSpeed() {
        let input = makeInput(controllers: 2, frames: 50, jitterNs: 3_000_000)
        for speed in [1.0, 2.0, 0.5] {
            var options = ReplayOptions()
            options.speed = speed
            let out = sends(ReplaySchedule.steps(input: input, options: options))
            #expect(out.count == input.messages.count)
            for (send, message) in zip(out, input.messages) {
                #expect(send.sourceIndex == input.messages.firstIndex(of: message))
                #expect(send.deadlineNs == Int64(Double(message.offsetNs) / speed))
                #expect(send.payload == message.payload)  // pass 0, no fan-out: bytes untouched
            }
        }
    }

    @Test func startAndEndSelectAWindowAndReanchorIt() {
        let input = makeInput(frames: 100)
        var options = ReplayOptions()
        options.startNs = 2_000_000_000
        options.endNs = 5_000_000_000
        let out = sends(ReplaySchedule.steps(input: input, options: options))
        #expect(out.count == 30)
        #expect(out.first?.deadlineNs == 0)
        #expect(out.last?.deadlineNs == 2_900_000_000)
        #expect(out.first.flatMap(\.senderTimeMs) == 1_767_225_600_000 + 2_000)
    }

    @Test func loopsAreReanchoredAndShiftTimestampsSoTheyKeepRising() {
        let input = makeInput(frames: 20)
        var options = ReplayOptions()
        options.loops = 3
        let out = sends(ReplaySchedule.steps(input: input, options: options))
        #expect(out.count == 60)
        // A pass lasts the input's span plus one frame period: 1.9 s + 0.1 s.
        for (i, send) in out.enumerated() {
            #expect(send.pass == i / 20)
            #expect(send.deadlineNs == Int64(i / 20) * 2_000_000_000 + Int64(i % 20) * 100_000_000)
            #expect(send.senderTimeMs == 1_767_225_600_000 + UInt64(i) * 100)
            // Rewritten frames carry a correct checksum.
            guard case .success(.frame(let frame)) = MotionLinkV1.decodeResult(send.payload) else {
                Issue.record("a rewritten frame no longer decodes")
                continue
            }
            #expect(frame.tMs == send.senderTimeMs)
        }
        // Each pass triggers like the first: the host sees nothing stale.
        let triggersPerPass = (0..<3).map { p in out.filter { $0.pass == p && $0.predictedTrigger }.count }
        #expect(triggersPerPass[0] > 0 && Set(triggersPerPass).count == 1)
    }

    @Test func originalTimestampsRepeatAcrossLoopsAndTheHostWouldDropThem() {
        var options = ReplayOptions()
        options.loops = 2
        options.timestamps = .original
        let out = sends(ReplaySchedule.steps(input: makeInput(frames: 20), options: options))
        #expect(out[0].payload == out[20].payload)
        #expect(out.filter { $0.pass == 1 && $0.predictedTrigger }.isEmpty)
    }

    @Test func wallclockTimestampsFollowTheAnchor() {
        var options = ReplayOptions()
        options.timestamps = .wallclock
        let anchor: Int64 = 1_800_000_000_123_456_789
        let out = sends(ReplaySchedule.steps(input: makeInput(frames: 10), options: options, anchorWallNs: anchor))
        for send in out { #expect(send.senderTimeMs == UInt64((anchor + send.deadlineNs) / 1_000_000)) }
    }

    @Test func fastTimingKeepsOrderOneNanosecondApart() {
        var options = ReplayOptions()
        options.timing = .fast
        options.loops = 2
        let input = makeInput(controllers: 3, frames: 10, jitterNs: 5_000_000)
        let out = sends(ReplaySchedule.steps(input: input, options: options))
        #expect(out.map(\.deadlineNs) == (0..<60).map { Int64($0) })
        #expect(out.prefix(30).map(\.sourceIndex) == Array(0..<30))
    }

    @Test func fastTimingRefusesADelay() {
        var options = ReplayOptions()
        options.timing = .fast
        options.impairments.delay = .constant(ms: 5)
        #expect(options.problem?.contains("--timing fast") == true)
    }
}

@Suite struct FanOutTests {
    @Test func copiesGetSeededOffsetsBelowTheStagger() {
        let input = makeInput(controllers: 1, frames: 30)
        var options = ReplayOptions()
        options.controllers = 21
        options.staggerNs = 100_000_000
        let schedule = ReplaySchedule(input: input, options: options)
        #expect(schedule.controllerCount == 21)
        #expect(schedule.offsetsNs[0] == 0)
        #expect(schedule.offsetsNs.dropFirst().allSatisfy { $0 > 0 && $0 < 100_000_000 })
        #expect(Set(schedule.offsetsNs).count == 21)
        #expect(ReplaySchedule(input: input, options: options).offsetsNs == schedule.offsetsNs)
        options.seed = 2
        #expect(ReplaySchedule(input: input, options: options).offsetsNs != schedule.offsetsNs)

        let out = sends(Array(schedule))
        #expect(out.count == 21 * 30)
        for v in 0..<21 {
            let mine = out.filter { $0.controller == v }
            #expect(mine.count == 30)
            #expect(mine.first?.deadlineNs == schedule.offsetsNs[v])
            // Every copy triggers on the same frames as the original.
            #expect(mine.filter(\.predictedTrigger).count == out.filter { $0.controller == 0 && $0.predictedTrigger }.count)
        }
        #expect(zip(out, out.dropFirst()).allSatisfy { $0.deadlineNs <= $1.deadlineNs })
    }

    @Test func moreInputControllersThanCopiesMapRoundRobin() {
        var options = ReplayOptions()
        options.controllers = 5
        let schedule = ReplaySchedule(input: makeInput(controllers: 2, frames: 5), options: options)
        #expect(schedule.sourceController == [0, 1, 0, 1, 0])
        #expect(schedule.offsetsNs[0] == 0 && schedule.offsetsNs[1] == 0)
    }
}

@Suite struct ImpairedScheduleTests {
    static func harsh(seed: UInt64 = 9) -> ReplayOptions {
        var options = ReplayOptions()
        options.seed = seed
        options.controllers = 4
        options.impairments.delay = .pareto(scaleMs: 5, shape: 2)
        options.impairments.loss = .gilbertElliott(p: 0.05, r: 0.3, lossInBad: 0.7, lossInGood: 0.01)
        options.impairments.duplicate = 0.03
        options.impairments.reorder = 0.05
        options.impairments.corrupt = 0.02
        options.impairments.truncate = 0.02
        options.impairments.rate = [RateStep(fromNs: 0, bitsPerSecond: 1e6), RateStep(fromNs: 5_000_000_000, bitsPerSecond: 64_000)]
        return options
    }

    @Test func aSeedGivesTheSameScheduleBitForBit() {
        let input = makeInput(controllers: 2, frames: 100, jitterNs: 2_000_000)
        let a = ReplaySchedule.steps(input: input, options: Self.harsh())
        let b = ReplaySchedule.steps(input: input, options: Self.harsh())
        #expect(a == b)
        var da = ScheduleDigest(), db = ScheduleDigest()
        a.forEach { da.add($0) }
        b.forEach { db.add($0) }
        #expect(da == db)
        let c = ReplaySchedule.steps(input: input, options: Self.harsh(seed: 10))
        var dc = ScheduleDigest()
        c.forEach { dc.add($0) }
        #expect(dc != da)
        #expect(a.contains { $0.impairment != nil })
    }

    @Test func everyImpairmentIsRecordedAndAccountsForEverySend() {
        let input = makeInput(controllers: 1, frames: 200)
        let steps = ReplaySchedule.steps(input: input, options: Self.harsh())
        let out = sends(steps)
        let records = steps.compactMap(\.impairment)
        let lost = records.filter(\.decision.lost).count
        let duplicated = records.reduce(0) { $0 + $1.decision.duplicates }
        #expect(out.count == 4 * 200 - lost + duplicated)
        #expect(out.filter(\.isDuplicate).count == duplicated)
        // Deadlines never go backwards: the sender can follow them in order.
        #expect(zip(out, out.dropFirst()).allSatisfy { $0.deadlineNs <= $1.deadlineNs })
        // Corrupted and truncated payloads differ from the input's exactly as recorded.
        for record in records where !record.decision.lost && (record.decision.truncatedTo != nil || !record.decision.flippedBits.isEmpty) {
            let send = out.first { $0.sequence == record.sequence && !$0.isDuplicate }!
            #expect(send.payload.count == record.decision.truncatedTo ?? 36)
            #expect(send.senderTimeMs == nil || record.decision.flippedBits.isEmpty == false)
        }
    }

    @Test func aLostMessageIsNeverSent() {
        var options = ReplayOptions()
        options.impairments.loss = .bernoulli(p: 0.3)
        let steps = ReplaySchedule.steps(input: makeInput(frames: 300), options: options)
        let lostSequences = Set(steps.compactMap(\.impairment).filter(\.decision.lost).map(\.sequence))
        #expect(!lostSequences.isEmpty)
        #expect(sends(steps).allSatisfy { !lostSequences.contains($0.sequence) })
    }

    @Test func keptOrderNeverLetsAMessageOvertake() {
        var options = ReplayOptions()
        options.impairments.delay = .uniform(minMs: 0, maxMs: 400)  // four frame periods of jitter
        options.impairments.allowReordering = false
        let out = sends(ReplaySchedule.steps(input: makeInput(frames: 200), options: options))
        #expect(out.map(\.sequence) == out.map(\.sequence).sorted())
        options.impairments.allowReordering = true
        let jittered = sends(ReplaySchedule.steps(input: makeInput(frames: 200), options: options))
        #expect(jittered.map(\.sequence) != jittered.map(\.sequence).sorted())
    }

    @Test func aReorderedMessageGoesRightBehindTheNextOne() throws {
        var options = ReplayOptions()
        options.impairments.reorder = 0.2
        let steps = ReplaySchedule.steps(input: makeInput(frames: 100), options: options)
        let out = sends(steps)
        let held = steps.compactMap(\.impairment).filter(\.decision.reordered).map(\.sequence)
        #expect(!held.isEmpty)
        let lastHeld = held.max()!
        for sequence in held where sequence < lastHeld {
            // Some later message went out before it, and it still went out.
            let position = try #require(out.firstIndex { $0.sequence == sequence })
            #expect(out[..<position].contains { $0.sequence > sequence })
            #expect(out[position...].dropFirst().allSatisfy { $0.sequence > sequence })
        }
    }

    @Test func aRateLimitSpacesMessagesBySerialisationTime() {
        var options = ReplayOptions()
        options.timing = .fast
        options.impairments.rate = [RateStep(fromNs: 0, bitsPerSecond: 64_000)]
        let out = sends(ReplaySchedule.steps(input: makeInput(frames: 50), options: options))
        // (36 + 42) bytes × 8 / 64 kbit/s = 9.75 ms each, back to back.
        for (a, b) in zip(out, out.dropFirst()) { #expect(b.deadlineNs - a.deadlineNs == 9_750_000) }
    }

    @Test func predictionsFollowWhatTheHostWillActuallySee() {
        var options = ReplayOptions()
        options.impairments.loss = .bernoulli(p: 0.2)
        options.impairments.corrupt = 0.1
        let out = sends(ReplaySchedule.steps(input: makeInput(frames: 300, jumpEvery: 5), options: options))
        var tracker = GestureTracker<Int>()
        for send in out {
            guard case .success(.frame(let frame)) = MotionLinkV1.decodeResult(send.payload) else {
                #expect(!send.predictedTrigger)
                continue
            }
            #expect(send.predictedTrigger == (tracker.accept(frame, from: send.controller) == .trigger))
        }
    }
}

/// Over many messages, the schedule's realised loss and delay match their parameters.
@Suite struct ScheduleStatisticsTests {
    @Test func realisedLossAndJitterMatchTheirParameters() {
        let input = makeInput(controllers: 10, frames: 2_000)
        var options = ReplayOptions()
        options.seed = 77
        options.impairments.loss = .bernoulli(p: 0.05)
        options.impairments.delay = .normal(meanMs: 70.4, sdMs: 3.7)
        options.impairments.allowReordering = true
        let steps = ReplaySchedule.steps(input: input, options: options)
        let n = Double(input.messages.count)
        let lost = Double(steps.compactMap(\.impairment).filter(\.decision.lost).count)
        #expect(abs(lost / n - 0.05) < 5 * (0.05 * 0.95 / n).squareRoot())
        let delays = sends(steps).map { Double($0.deadlineNs - input.messages[$0.sourceIndex].offsetNs) / 1e6 }
        let mean = delays.reduce(0, +) / Double(delays.count)
        let sd = (delays.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(delays.count - 1)).squareRoot()
        #expect(abs(mean - 70.4) < 5 * 3.7 / Double(delays.count).squareRoot())
        #expect(abs(sd - 3.7) < 0.1)
    }

    @Test func gilbertElliottLossIsBurstyAtItsLongRunRate() {
        let input = makeInput(controllers: 1, frames: 50_000)
        var options = ReplayOptions()
        let model = LossModel.gilbertElliott(p: 0.02, r: 0.25, lossInBad: 0.6, lossInGood: 0.002)
        options.impairments.loss = model
        let records = ReplaySchedule.steps(input: input, options: options).compactMap(\.impairment).filter(\.decision.lost)
        let rate = Double(records.count) / 50_000
        #expect(abs(rate - model.expectedLossRate) < 0.006)
        // Bursts: a loss is far more likely right after a loss than on average.
        let lostSet = Set(records.map(\.sequence))
        let afterLoss = Double(lostSet.filter { lostSet.contains($0 + 1) }.count) / Double(lostSet.count)
        #expect(afterLoss > 3 * rate)
    }
}
