import Testing
import KinetraceConformance
import KinetraceTrace
import KinetraceWire

/// Builds captures with one fault each and checks each passive case's verdict.
struct CaptureBuilder {
    var observation = CaptureObservation(source: "test", wireProtocol: MotionLinkV1(), capturePoint: .host)
    let host = Endpoint(host: "10.0.0.1", port: 47110)

    mutating func add(_ timeNs: Int64, _ direction: Direction, _ controller: Endpoint, _ payload: [UInt8]) {
        let source = direction == .controllerToHost ? controller : host
        let destination = direction == .controllerToHost ? host : controller
        observation.datagrams.append(.init(number: observation.datagrams.count + 1, timeNs: timeNs, direction: direction,
                                           source: source, destination: destination, payload: payload))
    }

    /// `seconds` of 10 Hz frames from each controller (interval `periodMs`), a jump every 2 s,
    /// and the reference host's acks `ackDelayMs` later.
    static func session(controllers: Int = 2, seconds: Int = 15, periodMs: UInt64 = 100, ackDelayMs: Double = 1,
                        mutate: (inout MotionFrame, Int) -> Void = { _, _ in }) -> CaptureBuilder {
        var b = CaptureBuilder()
        var tracker = GestureTracker<Int>()
        let count = seconds * 1000 / Int(periodMs)
        for i in 0..<count {
            for c in 0..<controllers {
                var frame = MotionFrame(tMs: 1_767_225_600_000 + UInt64(i) * periodMs, ay: i % 20 == 5 ? 0.9 : 0.1)
                mutate(&frame, i)
                let at = Int64(i) * Int64(periodMs) * 1_000_000 + Int64(c) * 1_000
                let controller = Endpoint(host: "10.0.0.\(10 + c)", port: 50_000)
                b.add(at, .controllerToHost, controller, frame.encoded())
                if tracker.accept(frame, from: c) == .trigger {
                    b.add(at + Int64(ackDelayMs * 1e6), .hostToController, controller, HapticAck(echoTMs: frame.tMs).encoded())
                }
            }
        }
        b.observation.datagrams.sort { $0.timeNs < $1.timeNs }
        return b
    }

    func run(_ c: any PassiveCase, _ parameters: SuiteParameters = SuiteParameters()) -> CaseResult {
        c.evaluate(PassiveContext(observation, parameters))
    }
}

@Suite struct PassiveCaseTests {
    @Test func aCleanSessionPassesEveryCase() {
        let b = CaptureBuilder.session(seconds: 30)  // 30 triggers: enough samples for the timing cases
        for c in MotionLinkV1.conformanceSuite.passiveCases {
            #expect(b.run(c).verdict == .pass, "\(c.info.id): \(b.run(c).verdict)")
        }
    }

    @Test func invalidFramesFailTheLayoutCaseWithTheirNumbers() {
        var b = CaptureBuilder.session()
        b.observation.datagrams[7].payload[3] ^= 0x10
        let result = b.run(FrameLayoutCase())
        guard case .fail(let why) = result.verdict else { Issue.record("\(result.verdict)"); return }
        #expect(why.contains("crc_mismatch"))
        #expect(result.evidence.first?.hasPrefix("#8 at ") == true)
    }

    @Test func rateBandsTellMustFromShould() {
        let slow = CaptureBuilder.session(controllers: 1, periodMs: 112)
        #expect(slow.run(RateBandCase.must).verdict.name == "FAIL")
        let slightlySlow = CaptureBuilder.session(controllers: 1, periodMs: 104)
        #expect(slightlySlow.run(RateBandCase.must).verdict == .pass)
        #expect(slightlySlow.run(RateBandCase.should).verdict.name == "NON-STRICT")
        #expect(slightlySlow.run(RateBandCase.should).measurements.contains { $0.name == "mean_interval_max" && $0.value == 104 })
        let short = CaptureBuilder.session(seconds: 5)
        #expect(short.run(RateBandCase.must).verdict.name == "INCONCLUSIVE")
    }

    @Test func lossMakesTheRateInconclusiveNotFailed() {
        var b = CaptureBuilder.session(controllers: 1, seconds: 30)
        // Drop every 40th frame: every 10 s window holds a lost frame.
        b.observation.datagrams = CaptureObservation.Datagrams(b.observation.datagrams.enumerated().filter { $0.offset % 40 != 39 || $0.element.direction == .hostToController }.map(\.element))
        #expect(b.run(RateBandCase.must).verdict.name == "INCONCLUSIVE")
        #expect(b.run(GapCase()).verdict == .pass)  // 200 ms gaps are not over 300 ms
    }

    @Test func timestampsThatGoBackFail() {
        let b = CaptureBuilder.session(controllers: 1) { frame, i in if i == 50 { frame.tMs -= 500 } }
        let result = b.run(MonotonicTimestampCase())
        #expect(result.verdict.name == "FAIL")
        #expect(result.evidence.first?.contains("expected t_ms >") == true)
    }

    @Test func ackFaultsAreEachCaught() {
        // Missing: remove one ack.
        var missing = CaptureBuilder.session()
        let dropped = missing.observation.replies[2].number
        missing.observation.datagrams.removeAll { $0.number == dropped }
        #expect(missing.run(AckRuleCase()).verdict.name == "FAIL")
        #expect(missing.run(AckRuleCase()).measurements.contains { $0.name == "missing" && $0.value == 1 })

        // Repeated: send one ack twice.
        var repeated = CaptureBuilder.session()
        let reply = repeated.observation.replies[0]
        repeated.add(reply.timeNs + 1, .hostToController, reply.destination, reply.payload)
        #expect(repeated.run(AckRuleCase()).measurements.contains { $0.name == "repeated" && $0.value == 1 })

        // Unexpected: an ack for a frame that does not trigger.
        var unexpected = CaptureBuilder.session()
        unexpected.add(5_000_000_000, .hostToController, Endpoint(host: "10.0.0.10", port: 50_000),
                       HapticAck(echoTMs: 1_767_225_600_000 + 100).encoded())
        #expect(unexpected.run(AckRuleCase()).verdict.name == "FAIL")

        // Misdirected: controller 0's trigger acked to controller 1.
        var misdirected = CaptureBuilder.session()
        let first = misdirected.observation.replies[0]
        misdirected.add(first.timeNs + 1, .hostToController, Endpoint(host: "10.0.0.99", port: 1), first.payload)
        #expect(misdirected.run(AckDestinationCase()).verdict.name == "FAIL")
    }

    @Test func ackDeadlinesAreStatisticalAndPrintTheirNumbers() {
        let late = CaptureBuilder.session(seconds: 60, ackDelayMs: 60)
        let must = late.run(AckDeadlineCase.must)
        #expect(must.verdict.name == "FAIL")
        #expect(must.measurements.contains { $0.name == "p99" && abs($0.value - 60) < 0.001 })
        let sluggish = CaptureBuilder.session(seconds: 60, ackDelayMs: 20)
        #expect(sluggish.run(AckDeadlineCase.must).verdict == .pass)
        #expect(sluggish.run(AckDeadlineCase.should).verdict.name == "NON-STRICT")
        // Too few samples to judge.
        #expect(CaptureBuilder.session(seconds: 15).run(AckDeadlineCase.must).verdict.name == "INCONCLUSIVE")
        // A capture at the controller measures round trips, not ack delays.
        var atController = CaptureBuilder.session(seconds: 60)
        atController.observation.capturePoint = .controller
        #expect(atController.run(AckDeadlineCase.must).verdict.name == "INCONCLUSIVE")
    }

    @Test func oneDirectionOnlyLeavesTheAckCasesInconclusive() {
        var b = CaptureBuilder.session()
        b.observation.datagrams.removeAll { $0.direction == .hostToController }
        for c in [AckLayoutCase(), AckRuleCase(), AckDestinationCase()] as [any PassiveCase] {
            #expect(b.run(c).verdict.name == "INCONCLUSIVE")
        }
    }

    @Test func selectionAndStrictness() {
        let acks = ConformanceSuite.select(MotionLinkV1.conformanceSuite.passiveCases, include: ["PC-ACK-*"], exclude: ["*-PROMPT"])
        #expect(acks.map(\.info.id) == ["PC-ACK-LAYOUT", "PC-ACK-VALUES", "PC-ACK-RULE", "PC-ACK-DESTINATION", "PC-ACK-DEADLINE"])
        let report = ConformanceSuite.run(MotionLinkV1.conformanceSuite.passiveCases, of: MotionLinkV1.conformanceSuite, on: CaptureBuilder.session(seconds: 60, ackDelayMs: 20).observation,
                                          parameters: SuiteParameters())
        #expect(!report.failed(strict: false))
        #expect(report.failed(strict: true))
        #expect(Set(MotionLinkV1.conformanceSuite.passiveCases.map(\.info.id)).count == MotionLinkV1.conformanceSuite.passiveCases.count)
    }
}
