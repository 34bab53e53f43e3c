import KinetraceConformance
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// Issue 15, finding 8: `conform --capture` keeps a capture in columns, not a value per
/// message, and keeps only a bounded sample of what a hostile capture repeats.
@Suite struct CaptureStorageTests {
    static let host = Endpoint(host: "10.0.0.1", port: 47110)

    static func datagram(_ n: Int, _ rng: inout SeededGenerator) -> CaptureObservation.Datagram {
        let toward = Bool.random(using: &rng)
        let controller = Endpoint(host: "10.0.\(Int.random(in: 0...2, using: &rng)).9", port: UInt16.random(in: 50_000...50_003, using: &rng))
        let payload = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        return .init(number: n, timeNs: Int64.random(in: 0...1_000_000_000, using: &rng), direction: toward ? .controllerToHost : .hostToController,
                     source: toward ? controller : host, destination: toward ? host : controller, payload: payload,
                     framingError: n % 17 == 0 ? WireError(.streamGap, offset: 0, expected: "no gap") : nil)
    }

    static func same(_ a: CaptureObservation.Datagram, _ b: CaptureObservation.Datagram) -> Bool {
        a.number == b.number && a.timeNs == b.timeNs && a.direction == b.direction && a.source == b.source
            && a.destination == b.destination && a.payload == b.payload && a.framingError?.code == b.framingError?.code
    }

    /// The columns behave as the array of values they replace, edit for edit (seed 8).
    @Test func theColumnsEditAsAnArrayWould() {
        var rng = SeededGenerator(seed: 8)
        var columns = CaptureObservation.Datagrams()
        var array: [CaptureObservation.Datagram] = []
        for step in 0..<3_000 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                let d = Self.datagram(step, &rng)
                columns.append(d); array.append(d)
            case 6 where !array.isEmpty:
                let i = Int.random(in: 0..<array.count, using: &rng), d = Self.datagram(step, &rng)
                columns[i] = d; array[i] = d
            case 7 where !array.isEmpty:
                let i = Int.random(in: 0..<array.count, using: &rng)
                columns[i].payload.append(UInt8(step & 0xFF)); array[i].payload.append(UInt8(step & 0xFF))
            case 8 where array.count > 4:
                let i = Int.random(in: 0..<array.count - 3, using: &rng)
                columns.removeSubrange(i..<i + 3); array.removeSubrange(i..<i + 3)
            default:
                columns.removeAll { $0.timeNs % 5 == 0 }; array.removeAll { $0.timeNs % 5 == 0 }
            }
            #expect(columns.count == array.count, "step \(step)")
        }
        #expect(array.count > 100, "the walk kept a sizeable capture")
        #expect(zip(columns, array).allSatisfy { Self.same($0, $1) })
        columns.sort { $0.timeNs < $1.timeNs }; array.sort { $0.timeNs < $1.timeNs }
        #expect(zip(columns, array).allSatisfy { Self.same($0, $1) })
    }

    /// A host that answers one trigger 200,000 times and sends 300,000 acks nobody owes: counted
    /// in full, kept as a bounded sample or a count (before, every one was kept as a value).
    @Test func aRepeatingHostsAcksAreCountedNotAllKept() {
        var observation = CaptureObservation(source: "hostile", wireProtocol: MotionLinkV1(), capturePoint: .host)
        let phone = Endpoint(host: "10.0.0.2", port: 50_000)
        var n = 0
        func add(_ at: Int64, _ direction: Direction, _ payload: [UInt8]) {
            n += 1
            observation.datagrams.append(.init(number: n, timeNs: at, direction: direction, source: direction == .controllerToHost ? phone : Self.host,
                                               destination: direction == .controllerToHost ? Self.host : phone, payload: payload))
        }
        add(0, .controllerToHost, MotionFrame(tMs: 1_000, ay: 0.9).encoded())  // the one trigger
        let repeated = HapticAck(echoTMs: 1_000).encoded(), unowed = HapticAck(echoTMs: 7).encoded()
        for i in 0..<200_000 { add(1_000 + Int64(i), .hostToController, repeated) }
        for i in 0..<300_000 { add(1_000_000 + Int64(i), .hostToController, unowed) }
        let report = ConformanceSuite.run(MotionLinkV1.conformanceSuite.passiveCases.filter { $0.info.id == "PC-ACK-RULE" },
                                          of: MotionLinkV1.conformanceSuite, on: observation, parameters: SuiteParameters())
        let context = PassiveContext(observation, SuiteParameters())
        #expect(context.replies.triggers.count == 1)
        #expect(context.replies.triggers[0].replyCount == 200_000)
        #expect(context.replies.unexpectedCount == 300_000)
        #expect(context.replies.unexpected.count <= ReplyMatching.evidenceKept)
        let rule = try! #require(report.results.first)
        #expect(rule.verdict.name == "FAIL")
        #expect(rule.measurements.contains { $0.name == "unexpected" && $0.value == 300_000 }, "\(rule.measurements)")
        #expect(rule.evidence.contains { $0.contains("found 200000") }, "\(rule.evidence)")
        #expect(rule.evidence.contains { $0.contains("… and 299995 more") }, "\(rule.evidence)")
    }

    /// `conform --capture`'s one pass over a trace file: the same verdicts as judging the
    /// capture in memory, every count in full, and evidence cut to a sample.
    @Test func onePassOverAFileJudgesAsTheCaptureInMemory() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("hostile.jsonl").path
        let header = TraceHeader(created: "2026-11-24T00:00:00.000Z", tool: "kinetrace-tests 0.0.1", protocolID: MotionLinkV1.id,
                                 capturePoint: .host, clock: .realtime, notes: "streaming test", extra: [:])
        let writer = try TraceWriter(path: path, header: header)
        let phones = (0..<4).map { Endpoint(host: "10.0.0.\(2 + $0)", port: 50_000) }
        var t: Int64 = 1_767_225_600_000_000_000
        // 12,000 frames from four phones at 10 Hz each, every third one corrupt, triggers every 2 s; a valid ack to each trigger.
        for i in 0..<12_000 {
            let phone = phones[i % 4]
            t += 25_000_000
            var frame = MotionFrame(tMs: UInt64(1_000 + (i / 4) * 100), ay: (i / 4) % 20 == 0 ? 0.9 : 0.1).encoded()
            if i % 3 == 1 { frame[10] ^= 0x40 }
            try writer.write(.message(MessageRecord(timeNs: t, direction: .controllerToHost, source: phone, destination: Self.host, payload: Payload(frame))))
            if (i / 4) % 20 == 0, i % 3 != 1 {
                try writer.write(.message(MessageRecord(timeNs: t + 1_000_000, direction: .hostToController, source: Self.host, destination: phone,
                                                        payload: Payload(HapticAck(echoTMs: UInt64(1_000 + (i / 4) * 100)).encoded()))))
            }
        }
        try writer.close()
        let suite = MotionLinkV1.conformanceSuite
        let (streamed, summary) = try ConformanceSuite.run(suite.passiveCases, of: suite, reading: try TraceReader(path: path), parameters: SuiteParameters())
        let inMemory = ConformanceSuite.run(suite.passiveCases, of: suite, on: try CaptureObservation.read(try TraceReader(path: path)), parameters: SuiteParameters())
        #expect(summary.messages > 12_000 && summary.frames == 12_000)
        #expect(streamed.results.count == suite.passiveCases.count)
        for (a, b) in zip(streamed.results, inMemory.results) {
            #expect(a.info.id == b.info.id && a.verdict.name == b.verdict.name, "\(a.info.id): \(a.verdict.name) vs \(b.verdict.name)")
            #expect(a.measurements.map(\.value) == b.measurements.map(\.value), "\(a.info.id)")
            #expect(a.evidence == b.evidence, "\(a.info.id)")
        }
        let layout = try #require(streamed.results.first { $0.info.id == "PC-FRAME-LAYOUT" })
        #expect(layout.verdict.name == "FAIL")
        #expect(layout.measurements.contains { $0.name == "invalid" && $0.value == 4_000 }, "\(layout.measurements)")
        #expect(layout.evidence.count == evidenceLimit + 1 && layout.evidence.last == "… and 3995 more", "\(layout.evidence)")
    }
}

