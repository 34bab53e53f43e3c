#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
// Re-exported: a replay's users plan with the planner it runs (and the benchmarks build on either side of the split).
@_exported import KinetraceImpairment
import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging
import NIOConcurrencyHelpers

/// Sends a replay schedule to a host and matches its replies.
///
/// The calling thread sends, against absolute CLOCK_MONOTONIC deadlines
/// (sleep, then a short spin); a planner thread builds the messages ahead of
/// it (`PlannerThread`), and a third thread receives. Replies are matched to
/// samples by the stamp they echo, per controller.
package final class Replayer: @unchecked Sendable {  // mutable state is behind `lock`
    package struct Configuration: Sendable {
        package var target: LinkTarget
        package var input: ReplayInput
        /// How controllers' connections open (a secure host's trusted certificates).
        package var connectionOptions = ConnectionOptions()
        package var options = ReplayOptions()
        /// Writes everything sent, impaired and received as a trace.
        package var recordPath: String?
        /// Header notes for the record (e.g. the network used).
        package var recordExtra: [String: JSONValue] = [:]
        /// How long to wait for replies after the last message.
        package var settleMs: Int64 = 500
        /// Bounds the whole replay; nil: the planned duration + settle + 10 s (+10 %).
        package var timeoutNs: Int64?
        /// Spin this long before each deadline instead of sleeping.
        package var spinNs: Int64 = 200_000
        /// Try SCHED_FIFO for the sending thread (needs privilege; falls back quietly).
        package var realtime = false
        /// Called on the sending thread about four times a second.
        package var progress: (@Sendable (ReplayProgress) -> Void)?
        /// Start on this CLOCK_REALTIME instant (ns), the one every shard of a replay
        /// agreed on, instead of as soon as ready. It must leave room for getting ready.
        package var startAtWallNs: Int64?

        package init(target: LinkTarget, input: ReplayInput) {
            self.target = target
            self.input = input
        }
    }

    package private(set) var configuration: Configuration
    private let logger: Logger
    private let lock = NIOLock()
    private var report = ReplayReport()
    private var stopRequested = false
    private var receiving = true
    private var fatal: (ReplayReport.Outcome, String)?
    private var writer: (any TraceSink)?
    private var writeFailure: TraceError?
    /// Per controller: sample sender time → monotonic time of its first send.
    private var sentAt: [[UInt64: Int64]] = []
    /// Per controller: when each stamped frame left on the emulated path (monotonic ns), before
    /// the network's delay; pruned with `sentAt`.
    private var departedAt: [[UInt64: Int64]] = []
    /// Per controller: the `sentAt` size that triggers the next pruning.
    private var pruneAt: [Int] = []
    /// Per controller: predicted trigger's sender time → index into report.triggers.
    private var predicted: [[UInt64: Int]] = []
    private var heardFromHost = false
    private var anchorWallNs: Int64 = 0

    package init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// A byte stream: its chunks cut into the planned writes (unless the caller did), and no
    /// write may overtake an earlier one of its connection (TCP delivers bytes in order).
    private func prepareStream() throws(ReplayError) {
        configuration.options.impairments.allowReordering = false
        guard configuration.input.segmentation == nil else { return }
        do throws(WireError) {
            configuration.input = try configuration.input.segmented(configuration.options.segmentation, seed: configuration.options.seed)
        } catch {
            throw ReplayError(.badStream, "--segmentation record: the stream cannot be framed: byte \(error.offset): expected \(error.expected)")
        }
    }

    /// How a carrier that repairs delivery is named in a refusal; nil when the carrier repairs nothing.
    package static func repairingCarrier(_ target: LinkTarget, _ wireProtocol: any WireProtocol) -> String? {
        switch target {
        case .network(let network):
            return repairingCarrier(network.transport)
        case .exec:
            // The stdio adapter delivers a byte stream's records in order, as TCP would.
            return wireProtocol.transport == .byteStream ? "a byte-stream protocol travels on a reliable stream" : nil
        }
    }

    /// The same for a transport alone.
    package static func repairingCarrier(_ transport: any Transport) -> String? {
        transport.repairsDelivery ? "\(transport.scheme):// runs over TCP" : nil
    }

    /// Asks a running replay to stop (any thread).
    package func stop() { lock.withLock { stopRequested = true } }

    /// Runs the replay. Throws only when the record cannot be written or the
    /// options are unusable; a host that fails is reported in the outcome.
    package func run() throws(ReplayError) -> ReplayReport {
        if let problem = configuration.options.problem(repairingCarrier: Self.repairingCarrier(configuration.target, configuration.input.wireProtocol))
            ?? configuration.options.problem(planning: configuration.input) {
            throw ReplayError(.badOptions, problem)
        }
        if configuration.input.wireProtocol.transport == .byteStream {
            try prepareStream()
        }
        let c = configuration
        let planningStart = SystemClock.monotonicNs()
        var schedule = ReplaySchedule(input: c.input, options: c.options, anchorWallNs: 0)
        // The schedule is planned again once the anchor is known (payload stamps depend on it):
        // the anchor leaves room for that, or a big plan (600,000 messages) starts its sends late.
        let planningNs = SystemClock.monotonicNs() - planningStart
        let shard = c.options.shard
        // Sockets, tables and the report are the share's: local controller i is the plan's shard.global(i).
        let count = shard.controllers(of: schedule.controllerCount)
        guard schedule.controllerCount > 0, !schedule.messages.isEmpty else {
            throw ReplayError(.emptyInput, "nothing to replay: the input has no controller→host messages in the selected range"
                              + " (for a pcap, --port must name the host's port)")
        }
        // Before anything is opened: an agreed instant already (nearly) past cannot be kept.
        let marginNs = 50_000_000 + 2 * planningNs
        if let startAt = c.startAtWallNs {
            let aheadNs = startAt - SystemClock.realtimeNs()
            // A day at most, as `+SECONDS`: a mistyped year must not wait decades in silence.
            guard aheadNs <= Self.maximumStartAheadNs else {
                throw ReplayError(.startPassed, "the start instant \(RFC3339.string(fromNanoseconds: startAt)) is \(Self.seconds(aheadNs)) s away; at most a day (86400 s) ahead")
            }
            guard aheadNs >= marginNs else {
                throw ReplayError(.startPassed, aheadNs < 0
                    ? "the start instant \(RFC3339.string(fromNanoseconds: startAt)) passed \(Self.seconds(-aheadNs)) s ago"
                    : "the start instant \(RFC3339.string(fromNanoseconds: startAt)) is only \(Self.seconds(aheadNs)) s away; getting ready takes \(Self.seconds(marginNs)) s")
            }
        }
        report.target = c.target.description
        report.seed = c.options.seed
        report.shard = shard
        report.plannedControllers = schedule.controllerCount
        // Each controller's table made now, not on its first send, where ten thousand first sends fall in the first 100 ms.
        sentAt = (0..<count).map { _ in Dictionary(minimumCapacity: 16) }
        departedAt = sentAt
        pruneAt = Array(repeating: 4096, count: count)
        predicted = Array(repeating: [:], count: count)

        DescriptorLimit.raiseToHardLimit()
        let link: any ControllerLink
        do throws(SocketError) {
            link = try openLink(to: c.target.fitted(to: c.input.wireProtocol), options: c.connectionOptions)
            _ = try link.openControllers(count)
        } catch {
            report.outcome = .unreachable
            report.detail = error.description
            return report
        }
        report.controllers = (0..<count).map {
            ReplayReport.Controller(endpoint: link.endpoint(of: $0),
                                    source: c.input.controllers[schedule.sourceController[shard.global($0)]],
                                    offsetNs: schedule.offsetsNs[shard.global($0)], number: shard.global($0))
        }

        // Everything slow happens before the anchor: opening the record, starting
        // the receiver, locking memory. The anchor then leaves 50 ms of margin, plus
        // twice what planning took, for planning again.
        if let path = c.recordPath {
            do throws(TraceError) { writer = try TraceOutput.create(path: path, header: header(link: link, schedule: schedule)) }
            catch { throw ReplayError(.record, error.description, trace: error) }
        }
        let receiver = WorkerThread { [self] in receiveLoop(link) }
        report.realtime = c.realtime && Self.enterRealtime()
        Self.tightenTimerSlack()
        let anchorMono: Int64
        if let startAt = c.startAtWallNs {
            // The agreed instant on this machine's wall clock, carried over to the monotonic clock the sends keep.
            let (mono, wall) = (SystemClock.monotonicNs(), SystemClock.realtimeNs())
            anchorMono = mono + (startAt - wall)
            anchorWallNs = startAt
            report.startLateNs = Swift.max(0, marginNs - (startAt - wall))
        } else {
            anchorMono = SystemClock.monotonicNs() + marginNs
            anchorWallNs = SystemClock.realtimeNs() + marginNs
        }
        report.anchorWallNs = anchorWallNs
        report.clock = ClockDiscipline.current()
        schedule = ReplaySchedule(input: c.input, options: c.options, anchorWallNs: anchorWallNs)
        var start: [String: JSONValue] = [
            "target": .string(c.target.description), "controllers": .integer(Int64(count)),
            "seed": .integer(Int64(bitPattern: c.options.seed)),
            "segmentation": c.input.segmentation.map { .string($0.rawValue) } ?? .null,
            // Deadlines are anchor + the schedule's offsets: with the seed, every message's lateness can be recomputed.
            "anchor_wall_ns": .integer(anchorWallNs),
            "offsets_ns": .array((0..<count).map { .integer(schedule.offsetsNs[shard.global($0)]) }),
            "shard": .string(shard.description), "planned_controllers": .integer(Int64(schedule.controllerCount)),
            // Each local controller's number in the whole plan, so shards' records can be merged and compared.
            "controller_numbers": .array((0..<count).map { .integer(Int64(shard.global($0))) }),
            "controller_endpoints": .array((0..<count).map { .string(link.endpoint(of: $0).description) }),
        ]
        if let startAt = c.startAtWallNs { start["start_at_ns"] = .integer(startAt) }
        if let clock = report.clock {
            start["clock"] = .object(["synchronized": .bool(clock.synchronized), "offset_ns": .integer(clock.offsetNs),
                                      "max_error_ns": .integer(clock.maxErrorNs), "estimated_error_ns": .integer(clock.estimatedErrorNs)])
        }
        record(.event(EventRecord(timeNs: anchorWallNs, event: "replay_start", data: start)))
        lock.withLock {
            do throws(TraceError) { try writer?.flush() } catch { writeFailure = writeFailure ?? error }
        }

        let planned = schedule.plannedDurationNs
        // Fast timing has no planned duration: allow 50 µs a message on top.
        let approximateSends = Int64(schedule.messages.count) * Int64(schedule.passes)
            * Int64(Swift.max(1, schedule.controllerCount / Swift.max(1, c.input.controllers.count)))
        let fastAllowance = c.options.timing == .fast ? approximateSends * 50_000 : 0
        let timeoutNs = c.timeoutNs ?? (planned + fastAllowance + c.settleMs * 1_000_000 + 10_000_000_000 + planned / 10)
        let giveUpAt = anchorMono + timeoutNs
        var lastProgress: Int64 = 0
        var timedOut = false
        var previousDeadline = anchorMono

        // The whole plan is walked (its draws are the single process's); only the share is sent.
        let planner = PlannerThread(schedule: schedule, share: shard == .whole ? { $0 } : { Self.share($0, of: shard) })
        sending: while let step = planner.next() {
            switch step {
            case .impairment(let impairment):
                lock.withLock {
                    tally(impairment.decision)
                    if impairment.decision.lost { report.controllers[impairment.controller].lost += 1 }
                    var event = impairment.decision.event(timeNs: anchorWallNs + impairment.baseNs, index: impairment.sequence,
                                                          controller: link.endpoint(of: impairment.controller))
                    event.data["pass"] = .integer(Int64(impairment.pass))
                    event.data["source_index"] = .integer(Int64(impairment.sourceIndex))
                    unlockedRecord(.event(event))
                }
            case .send(let send):
                let deadline = anchorMono + send.deadlineNs
                let stop: Bool = lock.withLock {
                    report.scheduled += 1
                    report.controllers[send.controller].scheduled += 1
                    if let senderTimeMs = send.senderTimeMs, sentAt[send.controller][senderTimeMs] == nil {
                        sentAt[send.controller][senderTimeMs] = deadline
                        departedAt[send.controller][senderTimeMs] = anchorMono + send.departureNs
                        forgetOldSends(of: send.controller, now: deadline)
                    }
                    if send.predictedTrigger, let senderTimeMs = send.senderTimeMs {
                        report.repliesPredicted += 1
                        report.controllers[send.controller].repliesPredicted += 1
                        predicted[send.controller][senderTimeMs] = report.triggers.count
                        report.triggers.append(.init(controller: send.controller, senderTimeMs: senderTimeMs, predicted: true))
                    }
                    return stopRequested || fatal != nil
                }
                if stop { break sending }
                if deadline > giveUpAt {
                    DeadlineClock.sleep(untilMonotonicNs: giveUpAt)
                    timedOut = true
                    break sending
                }
                if c.options.timing == .original {
                    // Long gaps are slept in slices, so a stop or a dead host is noticed within 100 ms.
                    while deadline - SystemClock.monotonicNs() > 150_000_000 {
                        DeadlineClock.sleep(untilMonotonicNs: SystemClock.monotonicNs() + 100_000_000)
                        if lock.withLock({ stopRequested || fatal != nil }) { break sending }
                    }
                    // After a long idle gap an idle vCPU wakes slowly: spin longer, up to 2 % of the gap (2 ms at most).
                    let spin = c.spinNs == 0 ? 0 : Swift.max(c.spinNs, Swift.min(2_000_000, (deadline - previousDeadline) / 50))
                    DeadlineClock.wait(untilMonotonicNs: deadline, spinNs: spin)
                    previousDeadline = deadline
                }
                // Send and record under one lock, so the record never shows a reply before its frame.
                let sentMono: Int64 = lock.withLock {
                    let sentMono = SystemClock.monotonicNs()
                    let sentWall = SystemClock.realtimeNs()  // before the send: a reply can never predate its frame
                    let failure = link.send(send.payload, from: send.controller, deadlineMonotonicNs: giveUpAt)
                    if let failure {
                        noteSendFailure(failure, controller: send.controller)
                        return sentMono
                    }
                    report.sent += 1
                    report.controllers[send.controller].sent += 1
                    if c.options.timing == .original { report.lateness.record(ns: Swift.max(0, sentMono - deadline)) }
                    if let senderTimeMs = send.senderTimeMs, sentAt[send.controller][senderTimeMs] == deadline { sentAt[send.controller][senderTimeMs] = sentMono }
                    // Built only when recording: it copies the payload and looks the endpoint up.
                    if writer != nil { unlockedRecord(.message(MessageRecord(
                        timeNs: sentWall, direction: .controllerToHost, source: link.endpoint(of: send.controller),
                        destination: link.hostEndpoint, payload: send.payload))) }
                    return sentMono
                }
                if let progress = c.progress, sentMono - lastProgress > 250_000_000 {
                    lastProgress = sentMono
                    let snapshot = lock.withLock {
                        ReplayProgress(elapsedNs: sentMono - anchorMono, plannedNs: planned, sent: report.sent,
                                       replies: report.repliesMatched, predicted: report.repliesPredicted)
                    }
                    progress(snapshot)
                }
            }
        }

        planner.stop()  // at once: a sender that stopped early leaves the planner waiting for room

        // Late replies still count: wait for the outstanding ones (and for an exec
        // host to finish its output), within the settle time and the timeout.
        link.endInput()
        let settleEnd = Swift.min(SystemClock.monotonicNs() + c.settleMs * 1_000_000, giveUpAt)
        while SystemClock.monotonicNs() < settleEnd {
            let done = lock.withLock { fatal != nil || stopRequested || report.repliesMatched == report.repliesPredicted }
            if done && link.isDrained { break }
            usleep(2_000)
        }
        if !timedOut && SystemClock.monotonicNs() >= giveUpAt && lock.withLock({ report.repliesMatched < report.repliesPredicted }) {
            timedOut = true
        }
        // A host that sends extra replies gets a moment to show it.
        usleep(UInt32(Swift.min(c.settleMs, 50)) * 1000)
        lock.withLock { receiving = false }
        receiver.join()
        let hostExit = link.finish(graceMs: 1_000)
        lock.withLock { tallyControllerRoundTrips() }

        let failure: TraceError? = lock.withLock {
            report.hostExit = hostExit
            report.elapsedNs = SystemClock.monotonicNs() - anchorMono
            if let (outcome, detail) = fatal {
                report.outcome = outcome
                report.detail = detail
            } else if stopRequested {
                report.outcome = .interrupted
                report.detail = "stopped on request after \(report.sent) message(s)"
            } else if timedOut {
                report.outcome = .timedOut
                report.detail = "the \(Double(timeoutNs) / 1e9) s timeout ended the replay after \(report.sent) message(s)"
            } else if report.repliesPredicted > 0 && report.datagramsReceived == 0 {
                report.outcome = .silent
                report.detail = "the host never answered: \(report.repliesPredicted) reply(ies) predicted for \(report.sent) message(s) sent, none received"
            }
            unlockedRecord(.event(EventRecord(timeNs: SystemClock.realtimeNs(), event: "replay_end", data: [
                "outcome": .string(report.outcome.rawValue), "sent": .integer(Int64(report.sent)),
                "replies_predicted": .integer(Int64(report.repliesPredicted)), "replies_matched": .integer(Int64(report.repliesMatched)),
                "replies_unexpected": .integer(Int64(report.repliesUnexpected)),
            ])))
            do throws(TraceError) { try writer?.close() } catch { return writeFailure ?? error }
            return writeFailure
        }
        if let failure { throw ReplayError(.record, failure.description, trace: failure) }
        return lock.withLock { report }
    }

    /// How far ahead an agreed start instant may lie: a day.
    package static let maximumStartAheadNs: Int64 = 86_400_000_000_000

    /// The step with its controller renumbered within the share, or nil when it is another shard's.
    static func share(_ step: ReplaySchedule.Step, of shard: ReplayShard) -> ReplaySchedule.Step? {
        shard.local(step.controller).map { step.with(controller: $0) }
    }

    private static func seconds(_ ns: Int64) -> String {
        let text = String(Double(ns / 1_000_000) / 1000)
        return text
    }

    /// Keeps the per-frame send times of long replays bounded: a reply more
    /// than 30 s after its frame is unexpected anyway. Pruning only when a
    /// controller's table has doubled keeps the cost constant per send.
    private func forgetOldSends(of v: Int, now: Int64) {
        guard sentAt[v].count > pruneAt[v] else { return }
        let cutoff = now - 30_000_000_000
        sentAt[v] = sentAt[v].filter { $0.value >= cutoff }
        departedAt[v] = departedAt[v].filter { sentAt[v][$0.key] != nil }
        pruneAt[v] = Swift.max(4096, 2 * sentAt[v].count)
    }

    /// Each controller's round trips, from the matched replies' records: done once the
    /// sending is over, where ten thousand histograms cost no send its deadline.
    private func tallyControllerRoundTrips() {
        for trigger in report.triggers where trigger.predicted {
            if let rtt = trigger.roundTripNs { report.controllers[trigger.controller].roundTrips.record(ns: rtt) }
        }
    }

    // MARK: Receiving

    private func receiveLoop(_ link: any ControllerLink) {
        var lastFlush = SystemClock.monotonicNs()
        // With kernel arrival stamps a reply's time does not depend on when it is read, so
        // replies are read at most every millisecond: thousands of replies a second would
        // otherwise wake this thread thousands of times, each wake-up taking a core from
        // the sender or the host (p99 send lateness 0.4 ms at 100,000 frames/s).
        let batchNs: Int64 = link.stampsArrivals ? 1_000_000 : 0
        while lock.withLock({ receiving }) {
            let woke = SystemClock.monotonicNs()
            let realtimeAhead = SystemClock.realtimeNs() - woke
            // Read first, then take the lock once for all: the sender takes it twice per send,
            // and a reader preempted while holding it stalls the sender.
            var events: [(event: LinkEvent, wall: Int64)] = []
            link.receive(timeoutMs: 20) { event in
                let wall: Int64 = if case .datagram(_, _, let arrival) = event { arrival + realtimeAhead } else { SystemClock.realtimeNs() }
                events.append((event, wall))
            }
            if !events.isEmpty {
                lock.withLock { for (event, wall) in events { handle(event, link: link, wall: wall) } }
            }
            if !events.isEmpty && batchNs > 0 {
                DeadlineClock.sleep(untilMonotonicNs: woke + batchNs)
            }
            let now = SystemClock.monotonicNs()
            if now - lastFlush > 250_000_000 {
                lastFlush = now
                lock.withLock {
                    guard writeFailure == nil else { return }
                    do throws(TraceError) { try writer?.flush() } catch { writeFailure = error }
                }
            }
        }
    }

    private func handle(_ event: LinkEvent, link: any ControllerLink, wall: Int64) {
        switch event {
        case .datagram(let v, let payload, let mono):
            heardFromHost = true
            report.datagramsReceived += 1
            var rtt: Int64?
            let facts = configuration.input.wireProtocol.facts(payload)
            if facts.isValid, facts.direction == .hostToController, let echo = facts.echoTimeMs {
                if let index = predicted[v].removeValue(forKey: echo) {
                    if let sent = sentAt[v][echo] { rtt = mono - sent }
                    report.triggers[index].roundTripNs = rtt
                    report.repliesMatched += 1
                    report.controllers[v].repliesMatched += 1
                    // Per controller only after sending (`tallyControllerRoundTrips`): a controller's
                    // first reply would make its histogram here, under the sender's lock.
                    if let rtt { report.roundTrips.record(ns: rtt) }
                    if let departed = departedAt[v][echo] { report.pathRoundTrips.record(ns: Swift.max(0, mono - departed)) }
                } else {
                    if let sent = sentAt[v][echo] { rtt = mono - sent }
                    report.repliesUnexpected += 1
                    report.controllers[v].repliesUnexpected += 1
                    // A bounded sample as evidence: a hostile host must not grow the report without end.
                    if report.repliesUnexpected <= ReplayReport.unexpectedRepliesKept {
                        report.triggers.append(.init(controller: v, senderTimeMs: echo, predicted: false, roundTripNs: rtt))
                    }
                }
            } else {
                report.invalidReceived += 1
                report.controllers[v].invalidReceived += 1
            }
            let unasked = report.repliesUnexpected + report.invalidReceived
            if unasked > ReplayReport.unaskedReplyLimit(scheduled: report.scheduled) {
                setFatal(.flooded, "the host sent \(unasked) replies nobody asked for (\(report.repliesUnexpected) unexpected replies, "
                         + "\(report.invalidReceived) invalid), past the limit of 10,000 plus 10 per message scheduled")
            }
            unlockedRecord(.message(MessageRecord(timeNs: wall, direction: .hostToController, source: link.hostEndpoint,
                                                  destination: link.endpoint(of: v), payload: payload, rttNs: rtt)))
        case .observation(let v, let observation, _):
            heardFromHost = true
            report.observations += 1
            var data: [String: JSONValue] = ["controller": .string(link.endpoint(of: v).description),
                                             "decision": .string(observation.decision)]
            if let t = observation.sampleTimeMs { data["sender_time_ms"] = .integer(Int64(clamping: t)) }
            if !observation.values.isEmpty { data["values"] = .array(observation.values.map { .number($0) }) }
            unlockedRecord(.event(EventRecord(timeNs: wall, event: "observation", data: data)))
        case .error(let v, let code):
            noteSendFailure(code, controller: v)
        case .hostEnded(let why):
            if receivingOrSending { setFatal(.hostDied, why) }
        case .hostFinished:
            break
        case .protocolError(let why):
            setFatal(.protocolError, why)
        }
    }

    /// True until the replay has finished sending and settling (exec hosts exit after that, which is no failure).
    private var receivingOrSending: Bool { receiving }

    private func noteSendFailure(_ code: Int32, controller v: Int) {
        let reason = String(cString: strerror(code))
        report.sendErrors[reason, default: 0] += 1
        report.controllers[v].sendErrors += 1
        switch code {
        case ECONNREFUSED:
            setFatal(heardFromHost ? .hostDied : .unreachable,
                     heardFromHost ? "the host stopped listening: ICMP port unreachable after \(report.datagramsReceived) datagram(s) from it"
                                   : "the host refused: ICMP port unreachable (nothing listens on \(report.target))")
        case EPIPE, ECONNRESET:
            if case .network = configuration.target {
                setFatal(.hostDied, "the host \(code == EPIPE ? "closed" : "reset") the connection of controller \(v + 1) (\(report.controllers[v].endpoint))")
            } else {
                setFatal(.hostDied, "the host process stopped reading its input (it exited or closed standard input)")
            }
        case ETIMEDOUT:
            if case .network = configuration.target {
                setFatal(.timedOut, "the host stopped reading the stream of controller \(v + 1), and the timeout ran out waiting for it")
            } else {
                setFatal(.timedOut, "the host process stopped reading its input, and the timeout ran out waiting for it")
            }
        default:
            break
        }
    }

    private func setFatal(_ outcome: ReplayReport.Outcome, _ detail: String) {
        guard fatal == nil else { return }
        fatal = (outcome, detail)
        logger.warning("replay failed", metadata: ["outcome": "\(outcome.rawValue)", "detail": "\(detail)"])
        unlockedRecord(.event(EventRecord(timeNs: SystemClock.realtimeNs(), event: "replay_error",
                                          data: ["outcome": .string(outcome.rawValue), "detail": .string(detail)])))
    }

    private func tally(_ decision: ImpairmentDecision) {
        if decision.lost { report.impaired["lost", default: 0] += 1; return }
        if decision.delayNs != 0 { report.impaired["delayed", default: 0] += 1 }
        if decision.duplicates > 0 { report.impaired["duplicated", default: 0] += 1 }
        if decision.reordered { report.impaired["reordered", default: 0] += 1 }
        if !decision.flippedBits.isEmpty { report.impaired["corrupted", default: 0] += 1 }
        if decision.truncatedTo != nil { report.impaired["truncated", default: 0] += 1 }
    }

    // MARK: Recording

    private func header(link: any ControllerLink, schedule: ReplaySchedule) -> TraceHeader {
        let c = configuration
        var extra = c.recordExtra
        extra["seed"] = .integer(Int64(bitPattern: c.options.seed))
        extra["replay_of"] = .array(c.input.paths.map { .string($0) })
        if c.options.shard != .whole { extra["shard"] = .string(c.options.shard.description) }
        return TraceHeader(
            created: RFC3339.string(fromNanoseconds: SystemClock.realtimeNs()), tool: "kinetrace replay",
            wireProtocol: c.input.wireProtocol, capturePoint: .controller, clock: .realtime,
            notes: "replay of \(c.input.paths.joined(separator: ", ")) to \(c.target) as \(schedule.controllerCount) controller(s), seed \(c.options.seed)"
                + (c.options.shard == .whole ? "" : ", shard \(c.options.shard): \(c.options.shard.controllers(of: schedule.controllerCount)) of them"),
            extra: extra)
    }

    private func record(_ record: TraceRecord) { lock.withLock { unlockedRecord(record) } }

    private func unlockedRecord(_ record: TraceRecord) {
        guard let writer, writeFailure == nil else { return }
        do throws(TraceError) { try writer.write(record) } catch { writeFailure = error }
    }

    /// SCHED_FIFO for the calling thread and all memory locked, if the
    /// process may have them: no other process preempts the sender, and no
    /// page fault stalls it.
    private static func enterRealtime() -> Bool {
        #if os(Linux)
        var parameters = sched_param()
        parameters.sched_priority = 10
        guard pthread_setschedparam(pthread_self(), Int32(SCHED_FIFO), &parameters) == 0 else { return false }
        _ = mlockall(Int32(MCL_CURRENT | MCL_FUTURE))
        return true
        #else
        return false
        #endif
    }

    private static func tightenTimerSlack() { DeadlineClock.tightenTimerSlack() }
}

/// A snapshot for progress displays.
package struct ReplayProgress: Sendable {
    package var elapsedNs: Int64
    /// 0 for fast timing.
    package var plannedNs: Int64
    package var sent: Int
    package var replies: Int
    package var predicted: Int
}

/// Why a replay could not run at all.
package struct ReplayError: Error, CustomStringConvertible, Sendable {
    package struct Code: Hashable, Sendable {
        package let name: String
        package init(_ name: String) { self.name = name }
        package static let badOptions = Code("bad_options")
        package static let emptyInput = Code("empty_input")
        /// A byte stream that cannot be cut into the records `--segmentation record` asks for.
        package static let badStream = Code("bad_stream")
        /// The record file could not be written.
        package static let record = Code("record")
        /// The agreed start instant (`startAtWallNs`) has passed, is too close to get ready for, or is more than a day away.
        package static let startPassed = Code("start_passed")
    }

    package var code: Code
    package var message: String
    package var trace: TraceError?

    package init(_ code: Code, _ message: String, trace: TraceError? = nil) {
        self.code = code
        self.message = message
        self.trace = trace
    }

    package var description: String { message }
}
