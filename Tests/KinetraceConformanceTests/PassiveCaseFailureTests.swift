import KinetraceConformance
import KinetraceTrace
import KinetraceWire
import Testing

/// A MotionLink capture written by hand: every frame's t_ms and ay is chosen
/// here and every ack is written out, so the expected acks come from this
/// file, never from a gesture tracker or host model of the library's.
struct HandCapture {
    static let base: UInt64 = 1_767_225_600_000
    static let host = Endpoint(host: "10.0.0.1", port: 47110)
    static let a = Endpoint(host: "10.0.0.10", port: 50_000)
    static let b = Endpoint(host: "10.0.0.11", port: 50_001)

    private var datagrams: [(timeNs: Int64, direction: Direction, controller: Endpoint, payload: [UInt8])] = []

    /// A frame stamped `base + offsetMs`, captured at `atMs` after the start (its own stamp unless said).
    mutating func frame(_ controller: Endpoint, _ offsetMs: UInt64, ay: Float32, atMs: Double? = nil) {
        let at = atMs ?? Double(offsetMs)
        datagrams.append((Int64(at * 1e6) + (controller == Self.b ? 1_000 : 0), .controllerToHost, controller,
                          MotionFrame(tMs: Self.base + offsetMs, ay: ay).encoded()))
    }

    /// A reply to `controller`, `delayMs` after the frame stamped `base + echoMs` (an ack echoing it unless `bytes` say otherwise).
    mutating func ack(_ controller: Endpoint, echo echoMs: UInt64, delayMs: Double = 1, bytes: [UInt8]? = nil) {
        datagrams.append((Int64((Double(echoMs) + delayMs) * 1e6) + (controller == Self.b ? 1_000 : 0), .hostToController, controller,
                          bytes ?? HapticAck(echoTMs: Self.base + echoMs).encoded()))
    }

    mutating func removeReply(to controller: Endpoint, echo echoMs: UInt64) {
        let bytes = HapticAck(echoTMs: Self.base + echoMs).encoded()
        datagrams.removeAll { $0.direction == .hostToController && $0.controller == controller && $0.payload == bytes }
    }

    var observation: CaptureObservation {
        var o = CaptureObservation(source: "hand-written", wireProtocol: MotionLinkV1(), capturePoint: .host)
        // A stable sort: datagrams written at the same instant keep their order.
        for (n, d) in datagrams.enumerated().sorted(by: { ($0.element.timeNs, $0.offset) < ($1.element.timeNs, $1.offset) }).map(\.element).enumerated() {
            o.datagrams.append(.init(number: n + 1, timeNs: d.timeNs, direction: d.direction,
                                     source: d.direction == .controllerToHost ? d.controller : Self.host,
                                     destination: d.direction == .controllerToHost ? Self.host : d.controller, payload: d.payload))
        }
        return o
    }

    func run(_ id: String) -> CaseResult {
        let c = MotionLinkV1.conformanceSuite.passiveCases.first { $0.info.id == id }!
        return c.evaluate(PassiveContext(observation, SuiteParameters()))
    }

    /// Two controllers, 3 s at 10 Hz, under the default rule (τ = 0.5 g, R = 400 ms):
    ///
    ///   A: ay 0.9 at 500 (trigger), 700 (inside R), 900 (exactly R later: trigger), 0.5 at 1200 (at τ, not above),
    ///      the next float above 0.5 at 1300 (R after 900: trigger), 0.9 at 2000 (trigger), then a reordered 0.9
    ///      stamped 1950 arriving after 2000 (stale: ignored).
    ///   B: 0.9 at 1500 (trigger), −0.9 at 1600, 0.9 at 1800 (inside R), 0.9 at 2400 (trigger), and 2400's datagram
    ///      arriving twice (a duplicate: acked once).
    ///
    /// So the host owes acks to A for 500, 900, 1300, 2000 and to B for 1500, 2400: written out, not computed.
    static func rule(withAcks: Bool = true) -> HandCapture {
        var h = HandCapture()
        let aLevels: [UInt64: Float32] = [500: 0.9, 700: 0.9, 900: 0.9, 1200: 0.5, 1300: Float32(0.5).nextUp, 2000: 0.9]
        let bLevels: [UInt64: Float32] = [1500: 0.9, 1600: -0.9, 1800: 0.9, 2400: 0.9]
        for i in UInt64(0)..<30 {
            h.frame(a, i * 100, ay: aLevels[i * 100] ?? 0.1)
            h.frame(b, i * 100, ay: bLevels[i * 100] ?? 0.1)
        }
        h.frame(a, 1950, ay: 0.9, atMs: 2050)
        h.frame(b, 2400, ay: 0.9, atMs: 2410)
        if withAcks {
            for t in [500, 900, 1300, 2000] as [UInt64] { h.ack(a, echo: t) }
            for t in [1500, 2400] as [UInt64] { h.ack(b, echo: t) }
        }
        return h
    }

    /// One controller, 15 s at 10 Hz, ay 0.9 every 500 ms (each one R or more after the last: 30 triggers) and 0.1
    /// otherwise, each trigger acked `ackDelayMs` after its frame.
    static func timing(ackDelayMs: Double) -> HandCapture {
        var h = HandCapture()
        for i in UInt64(0)..<150 { h.frame(a, i * 100, ay: i % 5 == 0 ? 0.9 : 0.1) }
        for k in UInt64(0)..<30 { h.ack(a, echo: k * 500, delayMs: ackDelayMs) }
        return h
    }
}

func measured(_ result: CaseResult, _ name: String) -> Double? { result.measurements.first { $0.name == name }?.value }

/// Each MotionLink passive case shown to give its failing verdict (FAIL for a MUST, NON-STRICT for a SHOULD,
/// INFORMATIONAL for an observation) on a capture written by hand, and PASS on the same capture without the fault.
@Suite struct PassiveCaseFailureTests {
    @Test func theHandWrittenCapturePassesEveryAckCase() {
        let h = HandCapture.rule()
        for id in ["PC-FRAME-LAYOUT", "PC-ACK-LAYOUT", "PC-ACK-VALUES", "PC-ACK-RULE", "PC-ACK-DESTINATION", "PC-RATE-GAPS"] {
            #expect(h.run(id).verdict == .pass, "\(id): \(h.run(id).verdict) \(h.run(id).evidence)")
        }
        #expect(measured(h.run("PC-ACK-RULE"), "triggers") == 6)
    }

    @Test func aMissingAckFailsTheRuleCase() {
        var h = HandCapture.rule()
        h.removeReply(to: HandCapture.a, echo: 1300)  // the trigger just above τ
        let result = h.run("PC-ACK-RULE")
        #expect(result.verdict.name == "FAIL", "\(result.verdict)")
        #expect(measured(result, "missing") == 1 && measured(result, "unexpected") == 0)
        #expect(result.evidence.first?.contains("expected an ack echoing t_ms \(HandCapture.base + 1300), found none") == true, "\(result.evidence)")
    }

    /// Acks the rule does not owe: a frame at τ, one inside R, a stale reordered frame, and a duplicate's second ack.
    @Test(arguments: [("at τ", HandCapture.a, UInt64(1200), "unexpected"), ("inside R", HandCapture.a, UInt64(700), "unexpected"),
                      ("stale", HandCapture.a, UInt64(1950), "unexpected"), ("duplicate", HandCapture.b, UInt64(2400), "repeated")])
    func anAckTheRuleDoesNotOweFailsTheRuleCase(_ what: String, _ controller: Endpoint, _ echo: UInt64, _ counted: String) {
        var h = HandCapture.rule()
        h.ack(controller, echo: echo, delayMs: 20)
        let result = h.run("PC-ACK-RULE")
        #expect(result.verdict.name == "FAIL", "\(what): \(result.verdict)")
        #expect(measured(result, counted) == 1 && measured(result, "missing") == 0, "\(what): \(result.measurements)")
        #expect(h.run("PC-ACK-LAYOUT").verdict == .pass, "\(what): a well-formed ack")
    }

    @Test func anAckSentToAnotherControllerFailsTheDestinationCase() {
        var h = HandCapture.rule()
        h.removeReply(to: HandCapture.a, echo: 500)
        h.ack(HandCapture.b, echo: 500)  // B has no frame stamped 500 that triggers
        let result = h.run("PC-ACK-DESTINATION")
        #expect(result.verdict.name == "FAIL", "\(result.verdict)")
        #expect(measured(result, "misdirected") == 1)
        #expect(result.evidence.first?.contains("expected it to go to \(HandCapture.a)") == true, "\(result.evidence)")
    }

    /// Replies that are not valid HapticAcks, each written independently of the codec's encoder.
    @Test(arguments: ["big-endian", "19 bytes", "a frame", "intensity 1.5", "bad crc"])
    func aReplyThatIsNotAValidAckFailsTheLayoutCase(_ fault: String) {
        let echo = HandCapture.base + 2000
        var bytes: [UInt8]
        switch fault {
        case "big-endian":
            // The same fields most significant byte first; the CRC field too.
            let le = HapticAck(echoTMs: echo).encoded()
            bytes = Array(le[0..<8].reversed()) + Array(le[8..<12].reversed()) + Array(le[12..<16].reversed()) + Array(le[16..<20].reversed())
        case "19 bytes": bytes = Array(HapticAck(echoTMs: echo).encoded().prefix(19))
        case "a frame": bytes = MotionFrame(tMs: echo, ay: 0.9).encoded()
        case "intensity 1.5": bytes = HapticAck(echoTMs: echo, intensity: 1.5).encoded()
        default:
            bytes = HapticAck(echoTMs: echo).encoded()
            bytes[17] ^= 0x01
        }
        #expect(bytes != HapticAck(echoTMs: echo).encoded())
        var h = HandCapture.rule()
        h.removeReply(to: HandCapture.a, echo: 2000)
        h.ack(HandCapture.a, echo: 2000, bytes: bytes)
        let result = h.run("PC-ACK-LAYOUT")
        guard case .fail(let why) = result.verdict else { Issue.record("\(fault): \(result.verdict)"); return }
        #expect(why == "1 of 6 replies are not valid HapticAcks", "\(fault): \(why)")
        #expect(result.evidence.first?.contains("to \(HandCapture.a) (\(bytes.count) bytes): expected a valid HapticAck") == true,
                "\(fault): \(result.evidence)")
    }

    /// PC-ACK-VALUES is a SHOULD: other values than 1.0 / 1.0 are NON-STRICT, a failure under --strict.
    @Test func anAckWithOtherValuesIsNonStrict() {
        var h = HandCapture.rule()
        h.removeReply(to: HandCapture.b, echo: 1500)
        h.ack(HandCapture.b, echo: 1500, bytes: HapticAck(echoTMs: HandCapture.base + 1500, intensity: 0.5, sharpness: 0.25).encoded())
        let result = h.run("PC-ACK-VALUES")
        #expect(result.verdict == .nonStrict("1 of 6 acks use other values"), "\(result.verdict)")
        #expect(result.evidence.first?.contains("expected 1.0 / 1.0, found 0.5 / 0.25") == true, "\(result.evidence)")
        #expect(result.fails(strict: true) && !result.fails(strict: false))
        #expect(h.run("PC-ACK-LAYOUT").verdict == .pass && h.run("PC-ACK-RULE").verdict == .pass, "valid, and owed")
    }

    /// PC-RATE-GAPS is an observation: a gap over 300 ms is INFORMATIONAL, never a failure; 300 ms exactly is not a gap.
    @Test(arguments: [(5, true), (2, false)])
    func aGapOver300msIsReported(_ dropped: Int, _ reported: Bool) {
        var h = HandCapture()
        // A's frames 2100, 2200, … are lost: the gap runs from 2000 to the first frame after them.
        for i in UInt64(0)..<60 where !(21..<21 + UInt64(dropped)).contains(i) { h.frame(HandCapture.a, i * 100, ay: 0.1) }
        for i in UInt64(0)..<60 { h.frame(HandCapture.b, i * 100, ay: 0.1) }
        let result = h.run("PC-RATE-GAPS")
        if reported {
            #expect(result.verdict == .informational("1 gap(s) over 300 ms, about 5 frame(s) missing"), "\(result.verdict)")
            #expect(result.evidence == ["\(HandCapture.a): t_ms \(HandCapture.base + 2000) → \(HandCapture.base + 2600) (600 ms)"], "\(result.evidence)")
            #expect(!result.fails(strict: true))
        } else {
            #expect(result.verdict == .pass, "\(result.verdict)")
        }
    }

    /// The timing cases over 30 hand-written triggers: 60 ms fails the 50 ms MUST, 20 ms only misses the 10 ms SHOULD.
    @Test func ackDelaysOnAHandWrittenCapture() {
        let late = HandCapture.timing(ackDelayMs: 60)
        let deadline = late.run("PC-ACK-DEADLINE")
        #expect(deadline.verdict.name == "FAIL", "\(deadline.verdict)")
        #expect(measured(deadline, "samples") == 30 && measured(deadline, "p99").map { abs($0 - 60) < 0.001 } == true, "\(deadline.measurements)")
        #expect(late.run("PC-ACK-RULE").verdict == .pass, "late, but owed")

        let sluggish = HandCapture.timing(ackDelayMs: 20)
        #expect(sluggish.run("PC-ACK-DEADLINE").verdict == .pass)
        let prompt = sluggish.run("PC-ACK-PROMPT")
        #expect(prompt.verdict.name == "NON-STRICT", "\(prompt.verdict)")
        #expect(prompt.fails(strict: true))

        let prompt2 = HandCapture.timing(ackDelayMs: 2)
        #expect(prompt2.run("PC-ACK-DEADLINE").verdict == .pass && prompt2.run("PC-ACK-PROMPT").verdict == .pass)
    }
}
