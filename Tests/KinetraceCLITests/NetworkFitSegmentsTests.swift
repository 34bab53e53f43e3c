import Foundation
import KinetraceAnalysis
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing
@testable import KinetraceCLI
@testable import KinetraceImpairment
@testable import KinetraceReplay

/// Issue 28: rate steps, joined recordings and unstamped arrivals. The recordings come from the
/// replay's own planner (`ReplaySchedule`: loss, delay, duplication, reordering and the shared
/// link's queue, as a replay applies them), with pinned seeds: the sender's view is each
/// message's scheduled departure (and every lost one), the host's each delivery.
@Suite struct NetworkFitSegmentsTests {
    static let host = Endpoint(host: "127.0.0.1", port: 47110)
    static let startMs: Int64 = 1_767_225_600_000

    struct Planned {
        var sent: [MessageRecord] = []
        var received: [MessageRecord] = []
        var lost = 0
    }

    /// `controllers` senders at 10 Hz for `seconds`, controller c offset by c × `spacingMs`,
    /// through `impairments`. Stamps are the departure times, on the host's clock.
    static func planned(_ impairments: Impairments, seed: UInt64, controllers: Int = 4, seconds: Int = 180, spacingMs: Int64 = 25,
                        wireProtocol: any WireProtocol = MotionLinkV1()) -> Planned {
        var messages: [ReplayInput.Message] = []
        var index = 0
        var ids = SeededGenerator(seed: seed ^ 0x4B43)
        for i in 0..<(seconds * 10) {
            for c in 0..<controllers {
                let offsetMs = Int64(i) * 100 + Int64(c) * spacingMs
                let payload: [UInt8]
                if wireProtocol is KeepCalmJSON {
                    payload = KeepCalmMotion(id: MessageID(randomHigh: ids.next(), randomLow: ids.next()), x: 0, y: 0.01, z: 0).encoded()
                } else {
                    payload = MotionFrame(tMs: UInt64(startMs + offsetMs), ay: 0.01).encoded()
                }
                messages.append(ReplayInput.Message(offsetNs: offsetMs * 1_000_000, controller: c, payload: payload, index: index))
                index += 1
            }
        }
        let endpoints = (0..<controllers).map { Endpoint(host: "10.0.0.\($0 + 10)", port: UInt16(50_000 + $0)) }
        let input = ReplayInput(wireProtocol: wireProtocol, messages: messages, controllers: endpoints)
        var options = ReplayOptions()
        options.impairments = impairments
        options.seed = seed
        options.timestamps = .original
        let anchorNs = startMs * 1_000_000
        var planned = Planned()
        for step in ReplaySchedule(input: input, options: options) {
            switch step {
            case .send(let send):
                let source = endpoints[send.controller]
                if !send.isDuplicate {
                    planned.sent.append(MessageRecord(timeNs: anchorNs + send.departureNs, direction: .controllerToHost, source: source,
                                                      destination: host, payload: input.messages[send.sourceIndex].payload))
                }
                planned.received.append(MessageRecord(timeNs: anchorNs + send.deadlineNs, direction: .controllerToHost, source: source,
                                                      destination: host, payload: send.payload))
            case .impairment(let record) where record.decision.lost:
                planned.lost += 1
                planned.sent.append(MessageRecord(timeNs: anchorNs + record.baseNs, direction: .controllerToHost,
                                                  source: endpoints[record.controller], destination: host,
                                                  payload: input.messages[record.sourceIndex].payload))
            case .impairment:
                break
            }
        }
        planned.sent.sort { $0.timeNs < $1.timeNs }
        planned.received.sort { $0.timeNs < $1.timeNs }
        return planned
    }

    static let header = TraceHeader(created: "2026-11-26T00:00:00.000Z", tool: "NetworkFitSegmentsTests", capturePoint: .host, clock: .realtime)

    static func hostSide(_ planned: Planned) -> PathEvidence {
        var evidence = PathEvidence(header: header, wireProtocol: MotionLinkV1())!
        for record in planned.received { evidence.add(.message(record)) }
        return evidence
    }

    /// harsh's link shape on a quiet path: 10 Mbit/s, 64 kbit/s from 60 s, 10 Mbit/s from 120 s.
    static var rateStep: Impairments {
        var network = Impairments()
        network.delay = .normal(meanMs: 20, sdMs: 2)
        network.loss = .bernoulli(p: 0.02)
        network.rate = [RateStep(fromNs: 0, bitsPerSecond: 10_000_000), RateStep(fromNs: 60_000_000_000, bitsPerSecond: 64_000),
                        RateStep(fromNs: 120_000_000_000, bitsPerSecond: 10_000_000)]
        return network
    }

    /// The change points land on the steps, and the slow segment's rate is recovered within the
    /// interval the fit reports: 64 kbit/s is 9.75 ms for a 36-byte frame and its 42 header bytes.
    ///
    /// Spaced 25 ms apart the controllers' frames never queue, and the step's level is the
    /// rate's delay; sent together they queue behind each other, the level overstates it, and
    /// the rate comes from the queued frames' spacing instead.
    @Test(arguments: [(UInt64(1), Int64(25)), (2, 25), (3, 25), (4, 0), (5, 0), (6, 3)])
    func aRateStepIsFoundAndRecovered(seed: UInt64, spacingMs: Int64) throws {
        let fitted = try NetworkFitter.fit(Self.hostSide(Self.planned(Self.rateStep, seed: seed, spacingMs: spacingMs)), baseMs: nil,
                                           segments: .changePoints)
        let found = fitted.segments.changePointsS
        #expect(found.count == 2, "change points \(found)")
        if found.count == 2 {
            #expect(abs(found[0] - 60) < 1 && abs(found[1] - 120) < 1, "change points \(found)")
        }
        let steps = fitted.segments.rateSteps
        #expect(steps.count == 3, "\(steps)")
        let slow = try #require(fitted.segments.segments.first { $0.bitsPerS != nil })
        let interval = try #require(slow.bitsPerSInterval)
        #expect(interval.contains(64_000), "rate \(slow.bitsPerS ?? 0), interval \(interval)")
        #expect(abs((slow.bitsPerS ?? 0) - 64_000) / 64_000 < 0.05)
        #expect(!slow.saturated && slow.queued == (spacingMs < 10), "queued \(slow.queued)")
        // The delay written is the path's own, the step taken out: normal 20 ms, sd 2.
        guard spacingMs >= 10 else { return }
        guard case .family(.normal(let mean, let sd)) = fitted.delay.choice else {
            Issue.record("the delay without its step fits as \(fitted.delay.choice)")
            return
        }
        #expect(abs(mean - 20) < 0.3 && abs(sd - 2) < 0.3, "normal \(mean), \(sd)")
        #expect(fitted.loss.rateInterval.contains(0.02), "\(fitted.loss.rateInterval)")
    }

    /// Fixed segments give the same steps where they fall on them; without --segment the
    /// change points are reported and nothing is written for them.
    @Test func fixedSegmentsAndTheUnsplitFit() throws {
        let evidence = Self.hostSide(Self.planned(Self.rateStep, seed: 4))
        let fixed = try NetworkFitter.fit(evidence, baseMs: nil, segments: .every(seconds: 60))
        #expect(fixed.segments.segments.count == 3)
        let rates = fixed.segments.rateSteps.map(\.bitsPerS)
        #expect(rates.count == 3 && rates[0] == ConditionSegments.unlimitedBitsPerS && rates[2] == ConditionSegments.unlimitedBitsPerS, "\(rates)")
        #expect(fixed.segments.rateSteps.map(\.fromS) == [0, 60, 120], "\(fixed.segments.rateSteps)")
        let whole = try NetworkFitter.fit(evidence, baseMs: nil)
        #expect(whole.segments.rateSteps.isEmpty)
        #expect(whole.notes.contains { $0.contains("give --segment auto") }, "\(whole.notes)")
        // A path that does not change has no change point.
        var steady = Self.rateStep
        steady.rate = []
        let plain = try NetworkFitter.fit(Self.hostSide(Self.planned(steady, seed: 5)), baseMs: nil, segments: .changePoints)
        #expect(plain.segments.changePointsS.isEmpty && plain.segments.rateSteps.isEmpty, "\(plain.segments.changePointsS)")
    }

    /// The loop through a rate step: the fitted network, written and read back, replayed with
    /// another seed, gives a recording `network compare` finds alike, step included.
    /// Sent together (spacing 0), the frames queue in the slow segment, and the replay rebuilds that queue.
    @Test(arguments: [Int64(25), 0])
    func theLoopClosesThroughARateStep(spacingMs: Int64) throws {
        let event = try NetworkFitter.fit(Self.hostSide(Self.planned(Self.rateStep, seed: 6, spacingMs: spacingMs)), baseMs: nil,
                                          segments: .changePoints)
        var network = ReplayNetwork(name: "fitted", description: "d", provenance: "p")
        network.impairments = NetworkFit.impairments(event)
        #expect(network.impairments.rate.count == 3)
        let replayed = try ReplayNetwork.parse(Array(network.document.jsonText.utf8), source: "fitted").impairments
        let lab = try NetworkFitter.fit(Self.hostSide(Self.planned(replayed, seed: 106, spacingMs: spacingMs)), baseMs: nil,
                                        segments: .changePoints)
        let comparison = try #require(PathComparison.compare(event, lab))
        #expect(comparison.agrees, "KS \(comparison.delay.distance), loss \(comparison.a.lossInterval) / \(comparison.b.lossInterval)")
        // Without the step the replay would not reproduce the event.
        var stepless = replayed
        stepless.rate = []
        let flat = try NetworkFitter.fit(Self.hostSide(Self.planned(stepless, seed: 107, spacingMs: spacingMs)), baseMs: nil)
        let mismatch = try #require(PathComparison.compare(event, flat))
        #expect(!mismatch.delayAgrees, "KS \(mismatch.delay.distance)")
    }

    /// A link slower than its load queues: the rate is the throughput the recording shows.
    @Test func aSaturatedLinkIsMeasuredByItsThroughput() throws {
        var network = Impairments()
        network.delay = .constant(ms: 20)
        // 4 controllers at 10 Hz offer 24.96 kbit/s; from 60 s the link carries 20 kbit/s.
        network.rate = [RateStep(fromNs: 0, bitsPerSecond: 10_000_000), RateStep(fromNs: 60_000_000_000, bitsPerSecond: 20_000)]
        let fitted = try NetworkFitter.fit(Self.hostSide(Self.planned(network, seed: 8, seconds: 90)), baseMs: nil, segments: .every(seconds: 60))
        let slow = try #require(fitted.segments.segments.last)
        #expect(slow.saturated)
        // Deliveries end when the senders stop (the queue drains after): within 20 % of the link's rate.
        #expect(abs((slow.bitsPerS ?? 0) - 20_000) / 20_000 < 0.2, "\(slow.bitsPerS ?? 0)")
        #expect(fitted.notes.contains { $0.contains("slower than its load") })
    }

    /// Joined: the sender's view and the host's give the true delay and the exact loss.
    @Test(arguments: [UInt64(21), 22])
    func aJoinGivesTrueDelayAndExactLoss(seed: UInt64) throws {
        var network = Impairments()
        network.loss = .gilbertElliott(p: 0.015, r: 0.2, lossInBad: 1, lossInGood: 0)
        network.delay = .pareto(scaleMs: 30, shape: 2.5)
        network.allowReordering = true
        network.duplicate = 0.01
        let planned = Self.planned(network, seed: seed, seconds: 120)
        var joined = JoinedEvidence(wireProtocol: MotionLinkV1())
        for record in planned.sent { joined.addSent(.message(record)) }
        for record in planned.received { joined.addReceived(.message(record)) }
        let fitted = try NetworkFitter.fit(joined.pathSet, baseMs: nil)
        #expect(fitted.evidence == .joined && fitted.clocksComparable)
        // Exact: every loss the planner decided, no more.
        #expect(fitted.loss.lost == planned.lost && fitted.loss.messages == planned.sent.count)
        #expect(fitted.loss.choice == .gilbert)
        guard case .family(.pareto(let scale, let shape)) = fitted.delay.choice else {
            Issue.record("a Pareto delay joined fits as \(fitted.delay.choice)")
            return
        }
        #expect(abs(scale - 30) < 0.1 && abs(shape - 2.5) / 2.5 < 0.1, "Pareto \(scale), \(shape)")
        #expect(abs(fitted.duplicateRate - 0.01) < 0.004 && fitted.reordered > 0)
        #expect(fitted.unmatched == 0)
    }

    /// A join of two different sessions matches nothing: refused, naming why.
    @Test func aJoinThatMatchesNothingIsRefused() throws {
        let first = Self.planned(Impairments(), seed: 1, seconds: 20)
        let second = Self.planned(Impairments(), seed: 2, seconds: 20)
        var joined = JoinedEvidence(wireProtocol: MotionLinkV1())
        for record in first.sent { joined.addSent(.message(record)) }
        // Another session: the same senders, a day later, so no frame's bytes are in both.
        for record in second.received {
            let later = MotionFrame(tMs: UInt64(record.timeNs / 1_000_000 + 86_400_000), ay: 0.01).encoded()
            joined.addReceived(.message(MessageRecord(timeNs: record.timeNs, direction: .controllerToHost, source: record.source,
                                                      destination: record.destination, payload: later)))
        }
        #expect {
            _ = try NetworkFitter.fit(joined.pathSet, baseMs: nil)
        } throws: { error in
            (error as? NetworkFitError)?.description.contains("the join matches nothing") == true
        }
    }

    /// Unstamped arrivals (KeepCalm): gap loss against the nominal rate recovers a Bernoulli
    /// rate, the lateness is the path's jitter placed at --base-ms, and without a base, refused.
    @Test func unstampedArrivalsGiveJitterAndGapLoss() throws {
        var network = Impairments()
        network.loss = .bernoulli(p: 0.03)
        network.delay = .uniform(minMs: 10, maxMs: 30)
        let planned = Self.planned(network, seed: 31, controllers: 3, seconds: 300, wireProtocol: KeepCalmJSON())
        var evidence = try #require(ArrivalEvidence(wireProtocol: KeepCalmJSON()))
        for record in planned.received { evidence.add(.message(record)) }
        #expect(throws: NetworkFitError.self) { _ = try NetworkFitter.fit(evidence.pathSet, baseMs: nil) }
        let fitted = try NetworkFitter.fit(evidence.pathSet, baseMs: 10)
        #expect(fitted.evidence == .arrivals && !fitted.ordersKnown)
        // A gap of k periods is k − 1 losses; losses next to a late message can hide, so the rate comes out a little low.
        #expect(fitted.loss.rateInterval.upperBound > 0.025 && fitted.loss.rate < 0.035, "loss \(fitted.loss.rate), \(fitted.loss.rateInterval)")
        // The lateness of a uniform 10–30 ms delay, placed so its floor is 10 ms: spread within 10–30 ms.
        let sorted = fitted.delaysMs.sorted()
        let p01 = sorted[sorted.count / 100], p99 = sorted[sorted.count * 99 / 100]
        #expect(abs(p01 - 10.2) < 1.5 && abs(p99 - 29.8) < 1.5, "p1 \(p01), p99 \(p99)")
        #expect(fitted.minimumEvidence.contains { $0.figure.hasPrefix("duplicates") && $0.met == false })
    }

    /// Hostile recordings: stamps and arrival times anywhere in what a trace holds, out of order,
    /// repeated, far apart, controllers by the hundred. Each is fitted every way: a fit or a
    /// one-line refusal, never a trap, for every pinned seed.
    @Test func hostileRecordingsFitOrAreRefused() {
        var rng = SeededGenerator(seed: 99)
        func draw(_ n: Int) -> Int { Int(rng.unit() * Double(n)) }
        var fits = 0, refusals = 0
        for round in 0..<150 {
            let count = [0, 1, 49, 50, 120, 400][draw(6)]
            let controllers = 1 + draw(round % 3 == 0 ? 300 : 4)
            var records: [MessageRecord] = []
            var t = Int64(draw(1_000)) * 1_000_000
            for _ in 0..<count {
                switch draw(5) {
                case 0: t += Int64(draw(100_000)) * 1_000_000_000  // a long gap
                case 1: t = max(0, t - Int64(draw(1_000)) * 1_000_000)  // backwards
                default: t += Int64(draw(200)) * 1_000_000
                }
                t = min(t, (1 << 62) - 1)
                let stamp: UInt64 = [UInt64(t / 1_000_000), UInt64(draw(1 << 30)), UInt64(Int64.max / 1_000_000), 0][draw(4)]
                let c = draw(controllers)
                records.append(MessageRecord(timeNs: t, direction: .controllerToHost, source: Endpoint(host: "10.1.\(c / 250).\(c % 250)", port: 9),
                                             destination: Self.host, payload: MotionFrame(tMs: stamp, ay: 0.01).encoded()))
            }
            var stamped = PathEvidence(header: Self.header, wireProtocol: MotionLinkV1())!
            var arrivals = ArrivalEvidence(wireProtocol: MotionLinkV1())!
            var joined = JoinedEvidence(wireProtocol: MotionLinkV1())
            for record in records {
                stamped.add(.message(record))
                arrivals.add(.message(record))
                joined.addSent(.message(record))
            }
            for record in records.shuffled(using: &rng) where draw(4) != 0 { joined.addReceived(.message(record)) }
            let policies: [SegmentPolicy] = [.whole, .changePoints, .every(seconds: 10)]
            for set in [stamped.pathSet, arrivals.pathSet, joined.pathSet] {
                for base in [nil, 20.0] {
                    do {
                        let fitted = try NetworkFitter.fit(set, baseMs: base, segments: policies[draw(3)])
                        #expect(fitted.delaysMs.allSatisfy(\.isFinite) && fitted.received >= DelayFit.minimumSamples)
                        // Whatever is fitted must be a network the format accepts.
                        #expect(NetworkFit.impairments(fitted).problem == nil, "round \(round)")
                        fits += 1
                    } catch {
                        refusals += 1
                        #expect(!error.description.isEmpty && !error.description.contains("\n"))
                    }
                }
            }
        }
        // Both outcomes were exercised.
        #expect(fits >= 20 && refusals >= 100, "\(fits) fits, \(refusals) refusals")
    }
}
