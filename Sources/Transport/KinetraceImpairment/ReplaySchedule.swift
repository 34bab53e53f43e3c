import HeapModule
import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// How to replay: timing, fan-out, timestamps and impairments.
package struct ReplayOptions: Hashable, Sendable {
    package enum Timing: String, Hashable, Sendable, CaseIterable {
        /// Message i at anchor + (t_i − t_0) / speed.
        case original
        /// Back to back, order kept.
        case fast
    }

    /// What happens to the sender stamp of valid samples, for protocols that
    /// stamp them (other payloads are sent as recorded).
    package enum Timestamps: String, Hashable, Sendable, CaseIterable {
        /// Shifted by each loop pass's span and each fanned-out copy's offset,
        /// so every controller's timestamps keep rising (a protocol's sender clock strictly increases) and a host
        /// does not drop later passes as stale; unchanged otherwise.
        case shift
        /// Exactly as recorded, even when that repeats them.
        case original
        /// The wall clock at the scheduled send time, as a live phone would stamp them.
        case wallclock
    }

    package var timing = Timing.original
    package var speed: Double = 1
    /// Passes over the input, each re-anchored where the last one ended; 0 for
    /// "until stopped" (tcpreplay's --loop 0): as many as fit the longest plan.
    package var loops = 1
    /// A fixed rate, messages per second, that replaces the recorded spacing (tcpreplay's
    /// --pps): every controller's messages in recorded order, 1/rate apart. nil: as recorded.
    package var packetsPerSecond: Double?
    /// Stop after this many sends (tcpreplay's --limit). nil: no limit.
    package var sendLimit: Int?
    /// Stop sending at this offset from the anchor (tcpreplay's --duration). nil: no limit.
    package var durationLimitNs: Int64?
    /// Only messages at or after this offset from the input's start.
    package var startNs: Int64 = 0
    /// Only messages before this offset, when set.
    package var endNs: Int64?
    /// Controllers to replay as; more than the input has fans it out
    /// (virtual controller v replays input controller v mod K). nil: one per input controller.
    package var controllers: Int?
    /// Fanned-out copies start at a seeded offset in [0, stagger).
    package var staggerNs: Int64 = 100_000_000
    package var timestamps = Timestamps.shift
    package var impairments = Impairments()
    /// A byte-stream protocol's writes (`ReplayInput.segmented`); datagrams ignore it.
    package var segmentation: Segmentation = .recorded
    /// Seeds every random choice: impairments and fan-out offsets.
    package var seed: UInt64 = 1
    /// The rule the host model predicts the replies with.
    package var rule = GestureRule.default
    /// The share of the controllers this process sends (the schedule itself is always the whole plan).
    package var shard = ReplayShard.whole

    package init() {}

    /// The longest stagger: an hour (a stadium's players do not trickle in over days).
    package static let maximumStaggerNs = ReplayNetwork.maximumStaggerNs
    /// The longest replay planned, loops and speed included: 30 days. It keeps every deadline,
    /// shift and stamp the schedule computes far inside Int64.
    package static let maximumDurationNs: Int64 = 30 * 86_400_000_000_000
    /// The most sends a plan may hold: 30 days at 50 µs each.
    package static let maximumSends: Int64 = maximumDurationNs / 50_000

    /// How long one pass takes at these options, ns: the frame-time span at --speed, or the
    /// sends at the fixed rate; 0 for fast timing.
    func passDurationNs(passSpanNs: Double, sendsPerPass: Double) -> Double {
        if timing == .fast { return 0 }
        if let packetsPerSecond { return sendsPerPass / packetsPerSecond * 1e9 }
        return passSpanNs / speed
    }

    /// The passes made: `loops`, or for 0 as many as fit `maximumDurationNs` and `maximumSends` (at least 1).
    func passes(passSpanNs: Double, sendsPerPass: Double) -> Int {
        guard loops == 0 else { return loops }
        let byTime = passDurationNs(passSpanNs: passSpanNs, sendsPerPass: sendsPerPass)
        let fitTime = byTime > 0 ? Double(Self.maximumDurationNs) * 0.99 / byTime : Double(Int32.max)
        let fitSends = Double(Self.maximumSends) / Swift.max(1, sendsPerPass)
        return Int(Swift.max(1, Swift.min(fitTime, fitSends, Double(Int32.max)).rounded(.down)))
    }

    /// Why these options cannot replay `input`, when they cannot: the plan would run past
    /// `maximumDurationNs` (a hostile or mistaken trace can span a century).
    package func problem(planning input: ReplayInput) -> String? {
        let selectedSpan = Double(Swift.min(input.spanNs, endNs ?? .max)) - Double(startNs)
        let passNs = Swift.max(0, selectedSpan) + Double(input.medianPeriodNs ?? 100_000_000)
        let total = controllers ?? input.controllers.count
        if total > 0 && shard.controllers(of: total) == 0 {
            return "shard \(shard) holds none of the replay's \(total) controller(s): use at most \(total) shard(s), or more --controllers"
        }
        let copies = Swift.max(1, total / Swift.max(1, input.controllers.count))
        let sendsPerPass = Double(input.messages.count) * Double(copies)
        let loops = passes(passSpanNs: passNs, sendsPerPass: sendsPerPass)
        let totalNs = timing == .fast ? 0
            : passDurationNs(passSpanNs: passNs, sendsPerPass: sendsPerPass) * Double(loops) + Double(staggerNs) / speed
        // Fast timing plans no duration, so count sends (at the replayer's 50 µs allowance each):
        // a huge --loop would otherwise overflow the replayer's deadline arithmetic.
        let sends = sendsPerPass * Double(loops)
        guard sends <= Double(Self.maximumSends) else {
            return "the replay would send \(sends) messages (\(input.messages.count) × \(loops) loop(s) × \(copies)); "
                + "at most \(Self.maximumSends) (30 days at 50 µs each): lower --loop or --controllers"
        }
        // A rate limit queues: at its slowest step, every byte sent must still leave within 30 days.
        if let slowest = impairments.rate.map(\.bitsPerSecond).min() {
            let bytes = Double(input.messages.reduce(0) { $0 + $1.payload.count + RateStep.overheadBytes }) * Double(loops) * Double(copies)
            let queueNs = bytes * 8 / slowest * 1e9
            guard queueNs <= Double(Self.maximumDurationNs) else {
                return "at \(slowest) bit/s the rate limit would take \((queueNs / 86_400e9 * 10).rounded() / 10) days to send \(bytes) bytes; "
                    + "at most 30 days: raise the --rate (or the network's rate steps), or send less"
            }
        }
        guard totalNs <= Double(Self.maximumDurationNs) else {
            let days = (totalNs / 86_400e9 * 10).rounded() / 10
            return "the replay would take \(days) days (the input spans \(Double(input.spanNs) / 1e9) s, \(loops) loop(s) at speed \(speed)); "
                + "at most 30 days: choose a part with --start/--end, or raise --speed"
        }
        return nil
    }

    /// The first unusable option, described.
    package var problem: String? {
        if !(speed.isFinite && speed > 0) { return "the speed must be a positive number" }
        if loops < 0 { return "the loop count must be at least 0 (0: until stopped)" }
        if let packetsPerSecond, !(packetsPerSecond.isFinite && packetsPerSecond > 0 && packetsPerSecond <= 10_000_000) {
            return "the packet rate must be a number above 0, at most 10000000 per second"
        }
        if packetsPerSecond != nil && timing == .fast { return "--pps sets a rate and --topspeed sends at once: give one" }
        if let sendLimit, sendLimit < 1 { return "the send limit must be at least 1" }
        if let durationLimitNs, durationLimitNs <= 0 { return "the duration limit must be above 0" }
        if startNs < 0 { return "the start offset must be at least 0" }
        if let endNs, endNs <= startNs { return "the end offset must be after the start offset" }
        if let controllers, !(1...65_536).contains(controllers) { return "the controller count must be from 1 to 65536" }
        if !(0...Self.maximumStaggerNs).contains(staggerNs) { return "the stagger must be from 0 to \(Self.maximumStaggerNs / 1_000_000) ms (an hour)" }
        if timing == .fast && impairments.delay != .none {
            return "--timing fast sends as soon as it can, so a delay has nothing to delay; use --timing original"
        }
        return impairments.problem
    }
}

/// A message as it will leave: when, on which controller's socket, which bytes.
package struct ScheduledSend: Hashable, Sendable {
    /// From the replay's anchor, ns.
    package var deadlineNs: Int64
    /// From the replay's anchor, ns: when the message left its controller on the emulated path,
    /// before the network's delay (`deadlineNs` is after it).
    package var departureNs: Int64 = 0
    /// Virtual controller (socket) index.
    package var controller: Int
    package var payload: [UInt8]
    /// The message's number in decision order (shared by its duplicate).
    package var sequence: Int
    package var pass: Int
    /// Index into the input's messages.
    package var sourceIndex: Int
    package var isDuplicate: Bool
    /// The sender stamp the host sees, when the payload is a valid stamped sample.
    package var senderTimeMs: UInt64?
    /// Whether the protocol's host model says this message, arriving in this order, is owed a reply.
    package var predictedTrigger: Bool
    /// Whether the host model decides on it at all (a decision with no reply shows on the observation channel).
    package var predictedDecision = false
}

/// An impairment decision that changed something, for the record.
package struct ImpairmentRecord: Hashable, Sendable {
    package var sequence: Int
    package var controller: Int
    package var pass: Int
    package var sourceIndex: Int
    /// When the message was due before impairment, ns from the anchor.
    package var baseNs: Int64
    package var decision: ImpairmentDecision
}

/// The replay plan, produced lazily in deadline order: pure and
/// deterministic, so the same input, options, seed and anchor give the
/// same steps, byte for byte.
package struct ReplaySchedule: Sequence, IteratorProtocol {
    package enum Step: Hashable, Sendable {
        case send(ScheduledSend)
        case impairment(ImpairmentRecord)

        /// The virtual controller the step belongs to.
        package var controller: Int {
            switch self {
            case .send(let send): send.controller
            case .impairment(let record): record.controller
            }
        }

        /// The same step, on controller `v` (a shard numbers its controllers its own way).
        package func with(controller v: Int) -> Step {
            switch self {
            case .send(var send): send.controller = v; return .send(send)
            case .impairment(var record): record.controller = v; return .impairment(record)
            }
        }
    }

    package let options: ReplayOptions
    /// Input controller replayed by each virtual controller.
    package let sourceController: [Int]
    /// Each virtual controller's start offset (frame time, before speed), ns.
    package let offsetsNs: [Int64]
    /// One pass in frame time: the selected span plus one frame period, ns.
    package let passSpanNs: Int64
    /// The selected input messages.
    package let messages: [ReplayInput.Message]

    /// Passes over the input this schedule makes (`ReplayOptions.loops`, resolved for 0).
    package let passes: Int
    /// The interval between sends at a fixed rate (--pps), ns; nil: as recorded.
    private let fixedIntervalNs: Double?
    private var sends = 0

    private let anchorWallNs: Int64
    private let virtuals: [[Int]]
    private var pass = 0
    private var order: [(baseNs: Int64, controller: Int, message: Int)] = []
    private var cursor = 0
    private var sequence = 0
    private var pushes = 0
    private var finished = false
    private var outbox: [Step] = []
    private var outboxCursor = 0
    private var impairer: Impairer
    private var inFlight = Heap<Pending>()
    private var held: [Int: [Pending]] = [:]
    private var fifoDeadline: [Int64]
    private var link: LinkQueue
    private var lastEmittedNs: Int64 = .min
    private let wireProtocol: any WireProtocol
    private var hostModel: any HostModel
    private var lastWallSenderTimeMs: [UInt64]

    package var controllerCount: Int { sourceController.count }

    /// - Parameter anchorWallNs: the wall clock at the anchor, for `Timestamps.wallclock`.
    package init(input: ReplayInput, options: ReplayOptions, anchorWallNs: Int64 = 0) {
        self.options = options
        self.anchorWallNs = anchorWallNs
        let selected = input.messages.filter { message in
            message.offsetNs >= options.startNs && (options.endNs.map { message.offsetNs < $0 } ?? true)
        }
        let first = selected.first?.offsetNs ?? 0
        messages = selected.map { var m = $0; m.offsetNs -= first; return m }
        let inputControllers = Swift.max(input.controllers.count, 1)
        let count = options.controllers ?? input.controllers.count
        sourceController = (0..<count).map { $0 % inputControllers }
        var stagger = SeededGenerator(seed: options.seed).derived(0x5354_4147)  // "STAG": apart from the impairment stream
        offsetsNs = (0..<count).map { v in
            let draw = stagger.unit()
            return v < inputControllers ? 0 : Int64(draw * Double(options.staggerNs))
        }
        var virtuals = [[Int]](repeating: [], count: inputControllers)
        for (v, source) in sourceController.enumerated() { virtuals[source].append(v) }
        self.virtuals = virtuals
        let span = (messages.last?.offsetNs ?? 0) + (input.medianPeriodNs ?? 100_000_000)
        passSpanNs = span
        let sendsPerPass = Double(messages.count) * Double(Swift.max(1, count / inputControllers))
        passes = options.passes(passSpanNs: Double(span), sendsPerPass: sendsPerPass)
        fixedIntervalNs = options.packetsPerSecond.map { 1e9 / $0 }
        impairer = Impairer(options.impairments, seed: options.seed)
        fifoDeadline = Array(repeating: .min, count: count)
        link = LinkQueue(options.impairments.rate)
        wireProtocol = input.wireProtocol
        hostModel = input.wireProtocol.makeHostModel(rule: options.rule)
        lastWallSenderTimeMs = Array(repeating: 0, count: count)
        buildPass()
    }

    /// Every step at once (tests, dry runs).
    package static func steps(input: ReplayInput, options: ReplayOptions, anchorWallNs: Int64 = 0) -> [Step] {
        Array(ReplaySchedule(input: input, options: options, anchorWallNs: anchorWallNs))
    }

    /// When the last pass's last message is due before impairment, ns from the anchor.
    package var plannedDurationNs: Int64 {
        guard options.timing == .original else { return 0 }
        let sendsPerPass = Double(messages.count) * Double(Swift.max(1, controllerCount / Swift.max(1, virtuals.count)))
        let planned = Int64(options.passDurationNs(passSpanNs: Double(passSpanNs), sendsPerPass: sendsPerPass) * Double(passes))
        return Swift.min(planned, options.durationLimitNs ?? .max)
    }

    package mutating func next() -> Step? {
        guard let step = nextPlanned() else { return nil }
        // --limit and --duration cut the plan where they fall; steps leave in deadline order.
        if case .send(let send) = step {
            if let limit = options.sendLimit, sends >= limit { return cut() }
            if let limit = options.durationLimitNs, send.deadlineNs >= limit { return cut() }
            sends += 1
        }
        return step
    }

    private mutating func cut() -> Step? {
        outbox.removeAll()
        outboxCursor = 0
        order.removeAll()
        cursor = 0
        pass = passes
        finished = true
        held.removeAll()
        inFlight = Heap()
        return nil
    }

    private mutating func nextPlanned() -> Step? {
        while true {
            if outboxCursor < outbox.count {
                defer {
                    outboxCursor += 1
                    if outboxCursor == outbox.count { outbox.removeAll(keepingCapacity: true); outboxCursor = 0 }
                }
                return outbox[outboxCursor]
            }
            if cursor < order.count {
                let item = order[cursor]
                cursor += 1
                // Nothing decided later can be due before this message's base time.
                release(upTo: item.baseNs)
                decide(item)
            } else if pass + 1 < passes {
                pass += 1
                buildPass()
            } else if !finished {
                finished = true
                for key in held.keys.sorted() { held[key]!.forEach { push($0) } }
                held.removeAll()
                release(upTo: .max)
            } else {
                return nil
            }
        }
    }

    private mutating func buildPass() {
        order.removeAll(keepingCapacity: true)
        cursor = 0
        let passStart = Int64(pass) * passSpanNs
        for (index, message) in messages.enumerated() {
            for v in virtuals[message.controller] {
                let frameTime = passStart + message.offsetNs + offsetsNs[v]
                order.append((Int64(Double(frameTime) / options.speed), v, index))
            }
        }
        order.sort { ($0.baseNs, $0.controller, $0.message) < ($1.baseNs, $1.controller, $1.message) }
        if options.timing == .fast {
            // 1 ns apart, in order: sent as fast as the socket takes them.
            let offset = Int64(pass) * Int64(order.count)
            for i in order.indices { order[i].baseNs = offset + Int64(i) }
        } else if let fixedIntervalNs {
            // In recorded order at a fixed rate; the Double keeps a fractional interval from drifting.
            let offset = Double(pass) * Double(order.count)
            for i in order.indices { order[i].baseNs = Int64(((offset + Double(i)) * fixedIntervalNs).rounded()) }
        }
    }

    private mutating func decide(_ item: (baseNs: Int64, controller: Int, message: Int)) {
        let message = messages[item.message]
        let v = item.controller
        let payload = retimed(message.payload, controller: v, baseNs: item.baseNs)
        let decision = impairer.decide(length: payload.count, link: v)
        let number = sequence
        sequence += 1
        if !decision.isClean {
            outbox.append(.impairment(ImpairmentRecord(sequence: number, controller: v, pass: pass, sourceIndex: item.message,
                                                       baseNs: item.baseNs, decision: decision)))
        }
        guard !decision.lost else { return }
        var deadline = item.baseNs + decision.delayNs
        if !options.impairments.allowReordering {
            deadline = Swift.max(deadline, fifoDeadline[v])
            fifoDeadline[v] = deadline
        }
        let bytes = decision.apply(to: payload)
        var send = ScheduledSend(deadlineNs: deadline, controller: v, payload: bytes, sequence: number, pass: pass,
                                 sourceIndex: item.message, isDuplicate: false, senderTimeMs: nil, predictedTrigger: false)
        send.departureNs = item.baseNs
        var copies = [pending(send)]
        for _ in 0..<decision.duplicates {
            var copy = send
            copy.isDuplicate = true
            copies.append(pending(copy))
        }
        if decision.reordered {
            // Held back: it leaves right behind the controller's next message that is not held.
            held[v, default: []].append(copies[0])
            copies.dropFirst().forEach { push($0) }
            return
        }
        copies.forEach { push($0) }
        for var previous in held.removeValue(forKey: v) ?? [] {
            previous.send.deadlineNs = Swift.max(previous.send.deadlineNs, deadline)
            previous.order = nextOrder()
            push(previous)
        }
    }

    /// Applies the timestamp policy to a valid stamped sample; other payloads pass as they are.
    private mutating func retimed(_ payload: [UInt8], controller v: Int, baseNs: Int64) -> [UInt8] {
        switch options.timestamps {
        case .original:
            return payload
        case .shift:
            let shiftNs = Int64(pass) * passSpanNs + offsetsNs[v]
            guard shiftNs > 0, let senderTimeMs = stamp(of: payload) else { return payload }
            return wireProtocol.restamped(payload, timeMs: senderTimeMs &+ UInt64((shiftNs + 999_999) / 1_000_000)) ?? payload
        case .wallclock:
            guard stamp(of: payload) != nil else { return payload }
            let wallMs = UInt64(Swift.max(0, anchorWallNs + baseNs) / 1_000_000)
            let senderTimeMs = Swift.max(wallMs, lastWallSenderTimeMs[v] + 1)
            guard let restamped = wireProtocol.restamped(payload, timeMs: senderTimeMs) else { return payload }
            lastWallSenderTimeMs[v] = senderTimeMs
            return restamped
        }
    }

    /// The sender stamp of a valid controller→host sample.
    private func stamp(of payload: [UInt8]) -> UInt64? {
        let facts = payload.withUnsafeBytes { wireProtocol.facts($0) }
        return facts.isValid && facts.direction == .controllerToHost ? facts.senderTimeMs : nil
    }

    private mutating func release(upTo limitNs: Int64) {
        while let top = inFlight.min, top.send.deadlineNs <= limitNs {
            var send = inFlight.removeMin().send
            let ready = Swift.max(send.deadlineNs, lastEmittedNs)
            send.deadlineNs = options.impairments.rate.isEmpty ? ready : link.departure(readyNs: ready, length: send.payload.count)
            lastEmittedNs = send.deadlineNs
            let facts = send.payload.withUnsafeBytes { wireProtocol.facts($0) }
            if facts.isValid && facts.direction == .controllerToHost { send.senderTimeMs = facts.senderTimeMs }
            let verdict = hostModel.accept(facts, from: send.controller, receivedNs: send.deadlineNs)
            send.predictedTrigger = verdict.decision?.owesReply == true
            send.predictedDecision = verdict.decision != nil
            outbox.append(.send(send))
        }
    }

    private mutating func nextOrder() -> Int {
        pushes += 1
        return pushes
    }

    private mutating func pending(_ send: ScheduledSend) -> Pending { Pending(send: send, order: nextOrder()) }

    private mutating func push(_ item: Pending) { inFlight.insert(item) }

    private struct Pending: Comparable {
        var send: ScheduledSend
        var order: Int
        static func < (a: Pending, b: Pending) -> Bool { (a.send.deadlineNs, a.order) < (b.send.deadlineNs, b.order) }
        static func == (a: Pending, b: Pending) -> Bool { a.send.deadlineNs == b.send.deadlineNs && a.order == b.order }
    }
}

/// A 64-bit FNV-1a fingerprint of a schedule's steps: equal fingerprints
/// mean the same sends, at the same deadlines, with the same bytes and the
/// same impairment decisions.
package struct ScheduleDigest: Hashable, Sendable, CustomStringConvertible {
    package private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    package init() {}

    package mutating func add(_ step: ReplaySchedule.Step) {
        switch step {
        case .send(let s):
            add(1); add(s.deadlineNs); add(Int64(s.controller)); add(Int64(s.sequence)); add(Int64(s.pass))
            add(Int64(s.sourceIndex)); add(s.isDuplicate ? 1 : 0); add(s.predictedTrigger ? 1 : 0)
            add(Int64(s.payload.count)); s.payload.forEach { byte($0) }
        case .impairment(let r):
            let d = r.decision
            add(2); add(Int64(r.sequence)); add(Int64(r.controller)); add(r.baseNs); add(d.lost ? 1 : 0); add(d.delayNs)
            add(Int64(d.duplicates)); add(d.reordered ? 1 : 0); d.flippedBits.forEach { add(Int64($0)) }
            add(Int64(d.truncatedTo ?? -1))
        }
    }

    private mutating func add(_ word: Int64) {
        withUnsafeBytes(of: word.littleEndian) { $0.forEach { byte($0) } }
    }

    private mutating func byte(_ b: UInt8) {
        value = (value ^ UInt64(b)) &* 0x0000_0100_0000_01B3
    }

    package var description: String { Self.hex(value) }

    /// 16 hex digits, zero-padded: how digests are printed.
    package static func hex(_ value: UInt64) -> String {
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
