import Foundation
import KinetraceConformance
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// KeepCalm captures built message by message: 10 Hz from each controller by capture time.
struct KeepCalmCapture {
    var observation = CaptureObservation(source: "test", wireProtocol: KeepCalmJSON(), capturePoint: .host)
    let host = Endpoint(host: "10.0.0.1", port: 47120)

    mutating func add(_ timeNs: Int64, _ controller: Endpoint, _ payload: [UInt8]) {
        observation.datagrams.append(.init(number: observation.datagrams.count + 1, timeNs: timeNs, direction: .controllerToHost,
                                           source: controller, destination: host, payload: payload))
    }

    /// `seconds` of messages every `periodMs` (capture time) from each controller, a spike every 2 s; ids seeded.
    static func session(controllers: Int = 2, seconds: Int = 15, periodMs: Double = 100, seed: UInt64 = 7) -> KeepCalmCapture {
        var b = KeepCalmCapture()
        var rng = SeededGenerator(seed: seed)
        let count = Int((Double(seconds) * 1000 / periodMs).rounded())
        for i in 0..<count {
            for c in 0..<controllers {
                let message = KeepCalmMotion(id: MessageID(randomHigh: rng.next(), randomLow: rng.next()), x: 0.1, y: i % 20 == 5 ? 0.9 : 0.05, z: -0.2)
                b.add(1_767_225_600_000_000_000 + Int64(Double(i) * periodMs * 1e6) + Int64(c) * 1_000, Endpoint(host: "10.0.0.\(10 + c)", port: 50_000),
                      message.encoded())
            }
        }
        return b
    }

    func run(_ c: any PassiveCase) -> CaseResult { c.evaluate(PassiveContext(observation, SuiteParameters())) }
}

func passiveCase(_ suite: ProtocolSuite, _ id: String) -> any PassiveCase { suite.passiveCases.first { $0.info.id == id }! }

@Suite struct KeepCalmPassiveCaseTests {
    let suite = KeepCalmJSON.conformanceSuite

    @Test func aCleanSessionPassesEveryCase() {
        let b = KeepCalmCapture.session()
        for c in suite.passiveCases { #expect(b.run(c).verdict == .pass, "\(c.info.id): \(b.run(c).verdict)") }
    }

    @Test func aBrokenEnvelopeAPayloadMemberOrALowercaseIDFailsTheMessageCase() {
        let broken = [#"{"type":"MotionDatum","payload":{"id":"0A2B3C4D-0000-4000-8000-000000000001","type":"Combined","x":0,"y":0,"z":0}}"#,
                      #"{"type":"MotionData","payload":{"id":"0A2B3C4D-0000-4000-8000-000000000002","type":"Combined","x":0,"z":0}}"#,
                      #"{"type":"MotionData","payload":{"id":"0a2b3c4d-0000-4000-8000-000000000003","type":"Combined","x":0,"y":0,"z":0}}"#]
        for text in broken {
            var b = KeepCalmCapture.session()
            b.observation.datagrams[9].payload = Array(text.utf8)
            let result = b.run(KeepCalmMessageCase())
            guard case .fail(let why) = result.verdict else { Issue.record("\(text): \(result.verdict)"); continue }
            #expect(why.contains("1 of 300") && why.contains("malformed"), "\(why)")
            #expect(result.evidence.first?.hasPrefix("#10 at ") == true, "\(result.evidence)")
            #expect(b.run(KeepCalmValueCase()).verdict == .pass)
        }
    }

    @Test func oversizedAndEmptyDatagramsFailTheMessageCase() {
        var b = KeepCalmCapture.session()
        b.observation.datagrams[3].payload = []
        b.observation.datagrams[4].payload = Array(repeating: UInt8(ascii: " "), count: 4097)
        guard case .fail(let why) = b.run(KeepCalmMessageCase()).verdict else { Issue.record("passed"); return }
        #expect(why.contains("2 invalid_length"), "\(why)")
    }

    @Test func nonFiniteAndOutOfRangeValuesFailTheValueCase() {
        for y in [#""NaN""#, #""Infinity""#, "1e309", "100.5", "-250"] {
            var b = KeepCalmCapture.session()
            b.observation.datagrams[12].payload = Array(#"{"type":"MotionData","payload":{"id":"0A2B3C4D-0000-4000-8000-00000000000A","type":"Combined","x":0,"y":\#(y),"z":0}}"#.utf8)
            let result = b.run(KeepCalmValueCase())
            guard case .fail = result.verdict else { Issue.record("y = \(y): \(result.verdict)"); continue }
            #expect(result.evidence.first?.hasPrefix("#13 at ") == true)
            #expect(b.run(KeepCalmMessageCase()).verdict == .pass, "a value error is the value case's, not the schema's")
        }
    }

    @Test func aReusedIDFailsAndARepeatedDatagramIsOnlyReported() {
        var reused = KeepCalmCapture.session()
        let first = try! KeepCalmJSON.decode(reused.observation.datagrams[0].payload)
        reused.observation.datagrams[20].payload = KeepCalmMotion(id: first.id, x: 1, y: 2, z: 3).encoded()
        #expect({ if case .fail = reused.run(KeepCalmUniqueIDCase()).verdict { return true } else { return false } }())
        var repeated = KeepCalmCapture.session()
        repeated.observation.datagrams[20].payload = repeated.observation.datagrams[0].payload
        #expect({ if case .informational = repeated.run(KeepCalmUniqueIDCase()).verdict { return true } else { return false } }())
    }

    @Test func theRateBandsAreMotionLinksByCaptureTime() {
        // 90 ms: outside 100 ± 10 (MUST); 97 ms: inside it, outside ± 2 (SHOULD); 101 ms: inside both.
        let band = passiveCase(suite, "PC-KC-RATE-BAND"), nominal = passiveCase(suite, "PC-KC-RATE-NOMINAL")
        let fast = KeepCalmCapture.session(periodMs: 89)
        #expect({ if case .fail = fast.run(band).verdict { return true } else { return false } }(), "\(fast.run(band).verdict)")
        let slightly = KeepCalmCapture.session(periodMs: 97)
        #expect(slightly.run(band).verdict == .pass)
        #expect({ if case .nonStrict = slightly.run(nominal).verdict { return true } else { return false } }(), "\(slightly.run(nominal).verdict)")
        let fine = KeepCalmCapture.session(periodMs: 101)
        #expect(fine.run(nominal).verdict == .pass)
        let short = KeepCalmCapture.session(seconds: 5)
        #expect({ if case .inconclusive = short.run(band).verdict { return true } else { return false } }())
    }

    @Test func lostMessagesAreGapsAndLeaveTheirWindowsOutOfTheRate() {
        var b = KeepCalmCapture.session(controllers: 1, seconds: 30)
        b.observation.datagrams.removeSubrange(100..<104)  // 0.5 s missing from the only controller
        guard case .informational(let why) = b.run(passiveCase(suite, "PC-KC-RATE-GAPS")).verdict else { Issue.record("no gap"); return }
        #expect(why.contains("1 gap(s)") && why.contains("about 4 message(s) missing"), "\(why)")
        let rate = b.run(passiveCase(suite, "PC-KC-RATE-BAND"))
        #expect(rate.verdict == .pass)
        #expect(rate.measurements.contains { $0.name == "windows_with_loss" && $0.value > 0 })
    }

    @Test func anEmptyCaptureJudgesNothing() {
        let empty = KeepCalmCapture(observation: CaptureObservation(source: "empty", wireProtocol: KeepCalmJSON(), capturePoint: .host))
        for c in suite.passiveCases where c.info.level != .observation {
            #expect({ if case .inconclusive = empty.run(c).verdict { return true } else { return false } }(), "\(c.info.id)")
        }
        let report = ConformanceSuite.run(suite.passiveCases, of: suite, on: empty.observation, parameters: SuiteParameters())
        #expect(report.failed(strict: false), "a run that judged nothing must not pass")
    }
}

/// Attitude captures as traces of stream chunks, read back the way `conform --capture` reads them.
struct AttitudeTrace {
    static let controller = Endpoint(host: "10.0.0.11", port: 50001)
    static let host = Endpoint(host: "10.0.0.1", port: 47130)
    var records: [TraceRecord] = []

    /// `seconds` of records every `periodMs`, one write (chunk) each unless `perChunk` says how many go together.
    static func session(seconds: Double = 12, periodMs: Double = 1000.0 / 60, perChunk: Int = 1, seed: UInt64 = 3,
                        mutate: (inout AttitudeRecord, Int) -> Void = { _, _ in }) -> AttitudeTrace {
        var t = AttitudeTrace()
        var rng = SeededGenerator(seed: seed)
        let count = Int((seconds * 1000 / periodMs).rounded())
        var pending: [UInt8] = []
        for i in 0..<count {
            var record = AttitudeRecord(roll: Float32(rng.unit() * 6 - 3), pitch: Float32(rng.unit() * 3 - 1.5), yaw: Float32(rng.unit() * 6 - 3))
            mutate(&record, i)
            pending += record.encoded()
            if (i + 1) % perChunk == 0 || i == count - 1 {
                t.chunk(Int64(Double(i) * periodMs * 1e6), pending)
                pending = []
            }
        }
        return t
    }

    mutating func chunk(_ offsetNs: Int64, _ bytes: [UInt8]) {
        records.append(.message(MessageRecord(timeNs: 1_767_225_600_000_000_000 + offsetNs, direction: .controllerToHost,
                                              source: Self.controller, destination: Self.host, payload: bytes)))
    }

    /// Written to a trace file and read back framed, as `conform --capture` does.
    func observation() throws -> CaptureObservation {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("attitude.jsonl").path
        let header = TraceHeader(created: "2026-11-24T00:00:00.000Z", tool: "kinetrace-tests 0.0.1", protocolID: AttitudeStream.id,
                                 capturePoint: .host, clock: .realtime, notes: "attitude test", extra: [:])
        let writer = try TraceWriter(path: path, header: header)
        for record in records { try writer.write(record) }
        try writer.close()
        return try CaptureObservation.read(FramingRecordSource(try TraceReader(path: path)))
    }
}

@Suite struct AttitudePassiveCaseTests {
    let suite = AttitudeStream.conformanceSuite

    func run(_ id: String, _ observation: CaptureObservation) -> CaseResult {
        passiveCase(suite, id).evaluate(PassiveContext(observation, SuiteParameters()))
    }

    @Test func aCleanStreamPassesEveryCaseWhateverItsChunks() throws {
        for perChunk in [1, 3, 60] {
            let observation = try AttitudeTrace.session(perChunk: perChunk).observation()
            #expect(observation.frames.count == 720)
            for c in suite.passiveCases { #expect(run(c.info.id, observation).verdict == .pass, "\(perChunk) per chunk, \(c.info.id): \(run(c.info.id, observation).verdict)") }
        }
    }

    @Test func nonFiniteAndOutOfRangeRecordsFailTheValueCase() throws {
        let observation = try AttitudeTrace.session { record, i in
            if i == 10 { record.roll = .nan }
            if i == 20 { record.yaw = -.infinity }
            if i == 30 { record.pitch = 1.6 }   // past π/2
            if i == 40 { record.roll = 3.2 }    // past π
        }.observation()
        let result = run("PC-AS-VALUES", observation)
        guard case .fail(let why) = result.verdict else { Issue.record("\(result.verdict)"); return }
        #expect(why.hasPrefix("4 of 720"), "\(why)")
        #expect(result.measurements.contains { $0.name == "non_finite" && $0.value == 2 })
        #expect(result.evidence.first?.hasPrefix("#11 at ") == true, "\(result.evidence)")
    }

    @Test func aStreamEndingInsideARecordFailsTheLengthCase() throws {
        var trace = AttitudeTrace.session()
        trace.chunk(12_100_000_000, Array(AttitudeRecord(roll: 0, pitch: 0, yaw: 0).encoded().prefix(5)))
        let observation = try trace.observation()
        #expect(observation.unfinished.count == 1)
        let result = run("PC-AS-STREAM-LENGTH", observation)
        guard case .fail(let why) = result.verdict else { Issue.record("\(result.verdict)"); return }
        #expect(why.contains("1 stream(s) end inside a record"))
        #expect(result.evidence.first?.contains("found 8645 (5 byte(s) into the record at offset 8640)") == true, "\(result.evidence)")
        #expect(run("PC-AS-VALUES", observation).verdict == .pass, "the whole records before it are fine")
    }

    @Test func recordsAfterAGapFailTheGapCaseAndAreLeftOutOfTheOthers() throws {
        var observation = try AttitudeTrace.session().observation()
        for i in 300..<observation.datagrams.count {
            observation.datagrams[i].framingError = WireError(.streamGap, offset: 3600, expected: "the stream's bytes from 3600 on (40 missing)")
            observation.datagrams[i].payload = [0xFF, 0xFF, 0xFF, 0xFF] + Array(repeating: 0, count: 8)  // garbage once framing is lost
        }
        let gap = run("PC-AS-STREAM-GAPS", observation)
        guard case .fail(let why) = gap.verdict else { Issue.record("\(gap.verdict)"); return }
        #expect(why.contains("420 record(s) after the gap"), "\(why)")
        #expect(gap.evidence.first?.hasPrefix("#301 at ") == true)
        let values = run("PC-AS-VALUES", observation)
        #expect(values.verdict == .pass, "records after the gap are not judged as values")
        #expect(values.measurements.contains { $0.name == "after_a_gap" && $0.value == 420 })
        #expect(run("PC-AS-STREAM-LENGTH", observation).verdict == .inconclusive("every stream lost bytes in the capture, so where its records end is unknown"))
    }

    @Test func theRateIsJudgedAt60Hz() throws {
        let slow = try AttitudeTrace.session(periodMs: 20).observation()  // 50 Hz: outside 16.67 ± 10 %
        #expect({ if case .fail = run("PC-AS-RATE-BAND", slow).verdict { return true } else { return false } }())
        let near = try AttitudeTrace.session(periodMs: 17.2).observation()  // 58.1 Hz: in the band, outside ± 2 %
        #expect(run("PC-AS-RATE-BAND", near).verdict == .pass)
        #expect({ if case .nonStrict = run("PC-AS-RATE-NOMINAL", near).verdict { return true } else { return false } }())
        let coalesced = try AttitudeTrace.session(perChunk: 6).observation()  // six records a segment: still 60 Hz on average
        #expect(run("PC-AS-RATE-NOMINAL", coalesced).verdict == .pass)
    }
}
