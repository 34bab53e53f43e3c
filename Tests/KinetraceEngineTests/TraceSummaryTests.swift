import Testing
@testable import KinetraceAnalysis
import KinetraceTrace
import KinetraceWire

/// Hand-built traces whose summary is known exactly.
@Suite struct TraceSummaryTests {
    let host = Endpoint(host: "127.0.0.1", port: 47110)
    let a = Endpoint(host: "127.0.0.1", port: 50001)
    let b = Endpoint(host: "::1", port: 50002)

    func frame(_ from: Endpoint, tMs: UInt64, ay: Float32 = 0, atNs: Int64? = nil) -> TraceRecord {
        .message(MessageRecord(timeNs: atNs ?? Int64(tMs) * 1_000_000 + 5_000_000, direction: .controllerToHost,
                               source: from, destination: host, payload: MotionFrame(tMs: tMs, ay: ay).encoded()))
    }

    func ack(_ to: Endpoint, echo: UInt64, atNs: Int64) -> TraceRecord {
        .message(MessageRecord(timeNs: atNs, direction: .hostToController, source: host, destination: to,
                               payload: HapticAck(echoTMs: echo).encoded()))
    }

    func summarize(_ records: [TraceRecord], rule: GestureRule = .default) -> TraceSummary {
        var s = TraceSummarizer(source: "test", header: TraceHeader(created: "", tool: "", capturePoint: .host, clock: .realtime), wireProtocol: MotionLinkV1(), rule: rule)
        for r in records { s.add(r) }
        return s.summary
    }

    @Test func countsTriggersAcksAndMismatches() {
        var corrupt = MotionFrame(tMs: 1300, ay: 2).encoded()
        corrupt[3] ^= 0x10
        let records: [TraceRecord] = [
            frame(a, tMs: 1000),
            frame(a, tMs: 1100, ay: 0.9),                 // trigger
            ack(a, echo: 1100, atNs: 1_105_400_000),      // matched, 0.4 ms after the frame
            frame(a, tMs: 1200, ay: 0.9),                 // refractory
            .message(MessageRecord(timeNs: 1_305_000_000, direction: .controllerToHost, source: a, destination: host, payload: corrupt)),
            frame(a, tMs: 1200, ay: 0.9),                 // stale duplicate
            frame(a, tMs: 1600, ay: 0.9),                 // trigger (500 ms after 1100), never acked
            ack(a, echo: 1200, atNs: 1_700_000_000),      // unexpected
            frame(b, tMs: 1000, ay: 0.6),                 // trigger on another controller
            ack(b, echo: 1000, atNs: 1_007_000_000),
            .message(MessageRecord(timeNs: 1_800_000_000, direction: .controllerToHost, source: b, destination: host, payload: [1, 2, 3])),
            .message(MessageRecord(timeNs: 1_900_000_000, direction: .controllerToHost, source: b, destination: host,
                                   payload: HapticAck(echoTMs: 1).encoded())),  // an ack sent to the host
        ]
        let s = summarize(records)
        #expect(s.triggers == 3)
        #expect(s.replies == 3)
        #expect(s.matchedReplies == 2)
        #expect(s.unexpectedReplies == 1)
        #expect(s.missingReplies == 1)
        #expect(s.staleFrames == 1)
        #expect(s.messages[.controllerToHost]?.total == 9)
        #expect(s.messages[.controllerToHost]?.valid == 6)
        #expect(s.messages[.controllerToHost]?.invalidByReason == ["crc_mismatch": 1, "invalid_length": 1, "wrong_direction": 1])
        #expect(s.controllers[a]?.triggers == 2)
        #expect(s.controllers[b]?.matchedReplies == 1)
        #expect(s.replyDelay.count == 2)
        #expect(s.replyDelay.minMs == 0.4)
        #expect(s.replyDelay.maxMs == 2.0)
    }

    @Test func intervalsAndGapsUseTheSenderClock() {
        // 100 ms cadence with one 400 ms hole (3 frames lost), arrival jittered.
        var records: [TraceRecord] = []
        var t: UInt64 = 10_000
        for i in 0..<20 {
            if i == 10 { t += 300 }
            records.append(frame(a, tMs: t, atNs: Int64(t) * 1_000_000 + Int64(i % 3) * 1_000_000))
            t += 100
        }
        let s = summarize(records)
        let c = s.controllers[a]!
        #expect(c.gaps == 1)
        #expect(c.framesMissing == 3)
        #expect(s.senderIntervals.count == 19)
        #expect(s.senderIntervals.maxMs == 400)
        #expect(s.senderIntervals.minMs == 100)
        #expect(s.senderIntervals.percentileMs(50) == 100)
        #expect(abs(s.senderIntervals.meanMs! - (18 * 100 + 400) / 19.0) < 1e-9)
        #expect(s.captureIntervals.minMs == 98)
        #expect(s.durationNs == (Int64(t - 100) - 10_000) * 1_000_000 + 1_000_000)
    }

    @Test func ruleParametersChangeTheOutcome() {
        let records = (0..<10).map { frame(a, tMs: 1000 + UInt64($0) * 100, ay: 0.7) }
        #expect(summarize(records).triggers == 3)  // 1000, 1400, 1800
        #expect(summarize(records, rule: GestureRule(threshold: 0.5, refractoryMs: 100)).triggers == 10)
        // Exact comparison: Float32(0.7) is 0.699999988…, which is not > 0.7.
        #expect(summarize(records, rule: GestureRule(threshold: 0.7, refractoryMs: 400)).triggers == 0)
        #expect(summarize(records, rule: GestureRule(threshold: 0.69, refractoryMs: 400)).triggers == 3)
        #expect(summarize(records, rule: GestureRule(threshold: 0.8, refractoryMs: 400)).triggers == 0)
    }

    @Test func labelsAndEventsAreCounted() {
        let s = summarize([
            .label(LabelRecord(timeNs: 1, controller: a, gesture: "jump")),
            .label(LabelRecord(timeNs: 2, controller: nil, gesture: "duck")),
            .label(LabelRecord(timeNs: 3, controller: a, gesture: "jump")),
            .event(EventRecord(timeNs: 4, event: "drop")),
        ])
        #expect(s.labels == ["jump": 2, "duck": 1])
        #expect(s.events == ["drop": 1])
        #expect(s.firstTimeNs == 1)
        #expect(s.lastTimeNs == 4)
    }
}
