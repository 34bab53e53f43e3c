import Foundation
import Testing
@testable import KinetraceAnalysis
@testable import KinetraceGestures
import KinetraceSimulation
import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// Records held in memory, read as a trace.
final class RecordList: TraceRecordSource {
    let source: String
    let header: TraceHeader
    let wireProtocol: any WireProtocol
    private var records: [TraceRecord]
    private var position = 0
    var truncation: TraceTruncation? { nil }
    var unknownRecordCount: Int { 0 }

    init(_ records: [TraceRecord], _ wireProtocol: any WireProtocol, source: String = "test", capturePoint: CapturePoint = .host) {
        self.source = source
        self.records = records
        self.wireProtocol = wireProtocol
        header = TraceHeader(created: "", tool: "", protocolID: wireProtocol.id, capturePoint: capturePoint, clock: .realtime)
    }

    func next() throws(TraceError) -> TraceRecord? {
        guard position < records.count else { return nil }
        defer { position += 1 }
        return records[position]
    }
}

/// KeepCalm and the attitude stream have no sender clock and no replies:
/// hand-built traces whose summaries, intervals, joins and detections are known.
@Suite struct UnrepliedProtocolAnalysisTests {
    let host = Endpoint(host: "127.0.0.1", port: 47120)
    let phone = Endpoint(host: "127.0.0.1", port: 50001)
    let ms: Int64 = 1_000_000

    func keepCalm(y: Double, id: UInt64, atMs: Int64) -> TraceRecord {
        let bytes = KeepCalmMotion(id: MessageID(randomHigh: id, randomLow: id), x: 0, y: y, z: 0).encoded()
        return .message(MessageRecord(timeNs: atMs * ms, direction: .controllerToHost, source: phone, destination: host, payload: bytes))
    }

    func attitude(_ roll: Float32, _ pitch: Float32 = 0, atMs: Int64, from: Endpoint? = nil) -> TraceRecord {
        .message(MessageRecord(timeNs: atMs * ms, direction: .controllerToHost, source: from ?? phone, destination: host,
                               payload: AttitudeRecord(roll: roll, pitch: pitch, yaw: 0).encoded()))
    }

    // MARK: inspect

    @Test func keepCalmSummaryCountsLatchedJumpsDuplicatesAndCaptureIntervals() throws {
        let records: [TraceRecord] = [
            keepCalm(y: 0.9, id: 1, atMs: 1000),   // jump, latched until 1400
            keepCalm(y: 0.9, id: 2, atMs: 1100),   // latched
            keepCalm(y: 0.1, id: 3, atMs: 1300),
            keepCalm(y: 0.1, id: 3, atMs: 1310),   // the same id again: a duplicate
            .message(MessageRecord(timeNs: 1350 * ms, direction: .controllerToHost, source: phone, destination: host,
                                   payload: Array("{\"type\":".utf8))),
            keepCalm(y: 0.6, id: 4, atMs: 1400),   // the latch has ended: jump
        ]
        let summary = try TraceSummarizer.summarize(RecordList(records, KeepCalmJSON()))
        #expect(!summary.hasReplies)
        #expect(!summary.hasSenderClock)
        #expect(summary.decisions == ["jump": 2])
        #expect(summary.duplicateIDs == 1)
        #expect(summary.messages[.controllerToHost]?.valid == 5)
        #expect(summary.messages[.controllerToHost]?.invalidByReason == ["malformed": 1])
        let c = try #require(summary.controllers[phone])
        // Intervals 100, 200, 10 and 90 ms on the capture clock; none on a sender clock.
        #expect(c.captureIntervals.count == 4)
        #expect(c.captureIntervals.minMs == 10)
        #expect(c.captureIntervals.maxMs == 200)
        #expect(c.senderIntervals.count == 0)
        #expect(c.samplesPerSecond == 4 / 0.4)
        #expect(summary.attitudeRange == nil)
    }

    @Test func attitudeSummaryFramesChunksAndReportsGapsRangesAndAPartialEnd() throws {
        // Three records written as chunks of 5, 15 and 16 bytes (the last ends 4 bytes into a fourth record).
        let bytes = AttitudeRecord(roll: 0.5, pitch: -0.25, yaw: 1).encoded()
            + AttitudeRecord(roll: -1, pitch: 0.75, yaw: -2).encoded()
            + AttitudeRecord(roll: .nan, pitch: 0, yaw: 0).encoded()
            + [1, 2, 3, 4]
        func chunk(_ range: Range<Int>, atMs: Int64) -> TraceRecord {
            .message(MessageRecord(timeNs: atMs * ms, direction: .controllerToHost, source: phone, destination: host,
                                   payload: Array(bytes[range])))
        }
        var gap = MessageRecord(timeNs: 2000 * ms, direction: .controllerToHost, source: Endpoint(host: "127.0.0.1", port: 50002),
                                destination: host, payload: AttitudeRecord(roll: 3, pitch: 1.5, yaw: 3).encoded())
        gap.framingError = WireError(.streamGap, offset: 120, expected: "the bytes before this record")
        let source = FramingRecordSource(RecordList([chunk(0..<5, atMs: 1000), chunk(5..<20, atMs: 1010), chunk(20..<40, atMs: 1030)],
                                                    AttitudeStream()))
        var summarizer = TraceSummarizer(source: source.source, header: source.header, wireProtocol: AttitudeStream())
        while let record = try source.next() { summarizer.add(record) }
        // A record the capture's reassembly marked: after missing bytes, whatever it holds is not trusted.
        summarizer.add(.message(gap))
        summarizer.finish(source)
        let summary = summarizer.summary
        #expect(summary.transport == .byteStream)
        #expect(summary.decisions == ["attitude": 2])
        #expect(summary.messages[.controllerToHost]?.total == 4)
        #expect(summary.messages[.controllerToHost]?.invalidByReason == ["non_finite": 1, "stream_gap": 1])
        let range = try #require(summary.attitudeRange)
        #expect(range.min == Vector3(-1, -0.25, -2))
        #expect(range.max == Vector3(0.5, 0.75, 1))
        #expect(summary.unfinishedStreams == [FramingRecordSource.Unfinished(source: phone, destination: host, offset: 36, bytes: 4)])
        // The first record completes in the second chunk (1010 ms), the second in the third (1030 ms).
        #expect(summary.controllers[phone]?.captureIntervals.minMs == 20)
    }

    // MARK: latency

    @Test func arrivalIntervalsAndRFC3550JitterWithoutASenderClock() throws {
        var collector = LatencyCollector(header: RecordList([], KeepCalmJSON()).header, wireProtocol: KeepCalmJSON())
        for (n, atMs) in [0, 100, 220, 300].enumerated() { collector.add(keepCalm(y: 0, id: UInt64(n + 1), atMs: 5000 + Int64(atMs))) }
        let analysis = collector.analysis()
        let intervals = try #require(analysis.result(for: .arrivalInterval))
        #expect(intervals.samples.map(\.ms) == [100, 120, 80])
        let jitter = try #require(analysis.result(for: .interarrivalJitter))
        // D = 0, 20, −20 ms against the 100 ms period: J = 0, 1.25, 1.25 + (20 − 1.25)/16.
        #expect(jitter.samples.map(\.ms) == [0, 1.25, 1.25 + 18.75 / 16])
        #expect(jitter.finalValues == [1.25 + 18.75 / 16])
        let unavailable = Set(analysis.unavailable.map(\.measure))
        #expect(unavailable == [.oneWayRaw, .oneWayRelative, .replyEchoRaw, .replyEchoRelative, .replyRoundTrip, .replyTurnaround])
        #expect(analysis.unavailable.first { $0.measure == .oneWayRaw }!.reason.contains("no sender clock"))
        #expect(analysis.unavailable.first { $0.measure == .replyRoundTrip }!.reason.contains("no replies"))
    }

    @Test func oneMessageMeasuresNothing() {
        var collector = LatencyCollector(header: RecordList([], AttitudeStream()).header, wireProtocol: AttitudeStream())
        collector.add(attitude(0.1, atMs: 1000))
        let analysis = collector.analysis()
        #expect(analysis.measures.isEmpty)
        #expect(analysis.unavailable.contains { $0.measure == .arrivalInterval })
    }

    @Test func keepCalmJoinMatchesEachMessageByItsBytes() throws {
        let sent = (0..<5).map { keepCalm(y: 0, id: UInt64($0 + 1), atMs: 1000 + 100 * Int64($0)) }
        // The host saw them 3 ms later, the third never, and a duplicate of the first.
        var seen = sent.enumerated().filter { $0.offset != 2 }.map { n, record -> TraceRecord in
            guard case .message(var m) = record else { return record }
            m.timeNs += 3 * ms
            return .message(m)
        }
        seen.append(seen[0])
        let analysis = try LatencyJoin.join(controller: RecordList(sent, KeepCalmJSON()), host: RecordList(seen, KeepCalmJSON()))
        let oneWay = try #require(analysis.result(for: .joinedOneWay))
        #expect(oneWay.samples.map(\.ms) == [3, 3, 3, 3])
        #expect(analysis.unpairedReplies == 1)
        #expect(analysis.unavailable.first { $0.measure == .joinedReplyOneWay }?.reason.contains("no replies") == true)
    }

    @Test func attitudeJoinMatchesTheNthRecordOfEachConnection() throws {
        // Identical records (a phone held still) can only be told apart by position.
        let sent = (0..<4).map { attitude(0.25, atMs: 1000 + 17 * Int64($0)) }
        let received = (0..<4).map { attitude(0.25, atMs: 1000 + 17 * Int64($0) + 2 + Int64($0)) }
        let analysis = try LatencyJoin.join(controller: RecordList(sent, AttitudeStream()),
                                            host: RecordList(received, AttitudeStream()))
        #expect(try #require(analysis.result(for: .joinedOneWay)).samples.map(\.ms) == [2, 3, 4, 5])
        #expect(analysis.notes.first?.contains("by position") == true)

        // Behind a NAT the host sees another address: paired in order, and a differing record is left out and said.
        let natted = Endpoint(host: "192.0.2.7", port: 61000)
        var moved = (0..<4).map { attitude(0.25, atMs: 1005 + 17 * Int64($0), from: natted) }
        moved[1] = attitude(0.5, atMs: 1022, from: natted)
        let behindNAT = try LatencyJoin.join(controller: RecordList(sent, AttitudeStream()), host: RecordList(moved, AttitudeStream()))
        #expect(try #require(behindNAT.result(for: .joinedOneWay)).samples.map(\.ms) == [5, 5, 5])
        #expect(behindNAT.notes.contains { $0.contains("order of appearance") })
        #expect(behindNAT.notes.contains { $0.hasPrefix("ambiguous: 1 record(s) differ") })
    }

    // MARK: gestures

    @Test func keepCalmDetectorLatchesOnTheCombinedSumAtArrival() throws {
        let records: [TraceRecord] = [
            keepCalm(y: 0.9, id: 1, atMs: 1000), keepCalm(y: 0.9, id: 2, atMs: 1100), keepCalm(y: 0.9, id: 3, atMs: 1400),
            .label(LabelRecord(timeNs: 950 * ms, controller: phone, gesture: "jump", senderTimeMs: 950)),
        ]
        let trace = try GestureTrace.read(RecordList(records, KeepCalmJSON()))
        #expect(trace.sampleContents == [.ownVector])
        #expect(trace.samples[0].map(\.senderTimeMs) == [1000, 1100, 1400])
        let settings = try DetectorKind.thresholdLatch.settings([:])
        let found = GestureEvaluation.detect(.thresholdLatch, [settings], trace.samples[0])[0]
        #expect(found.map(\.senderTimeMs) == [1000, 1400])
        let score = try GestureEvaluation.evaluate(trace, settings: [settings], window: MatchWindow())[0].score
        #expect((score.truePositives, score.falsePositives, score.falseNegatives) == (1, 1, 0))
    }

    @Test func attitudeTiltDetectorFiresOnRollOrPitchOncePerSide() throws {
        let degree = Float32.pi / 180
        let rolls: [Float32] = [0, 5, 20, 25, 10, 2, -18, -30, -5, 20]
        let records = rolls.enumerated().map { attitude($0.element * degree, atMs: 1000 + 17 * Int64($0.offset)) }
        let trace = try GestureTrace.read(RecordList(records, AttitudeStream()))
        #expect(trace.sampleContents[0].isSuperset(of: [.attitude, .gravity]))
        let roll = try DetectorKind.attitudeTilt.settings([:])
        let found = GestureEvaluation.detect(.attitudeTilt, [roll], trace.samples[0])[0]
        #expect(found.map(\.gesture) == ["tilt_right", "tilt_left", "tilt_right"])
        #expect(found.map(\.senderTimeMs) == [1034, 1102, 1153])
        // Nothing on pitch: it stayed level.
        let pitch = try DetectorKind.attitudeTilt.settings(["axis": "pitch"])
        #expect(GestureEvaluation.detect(.attitudeTilt, [pitch], trace.samples[0])[0].isEmpty)
    }

    @Test func detectorsThatCannotReadTheProtocolAreRefused() throws {
        let attitudeTrace = try GestureTrace.read(RecordList([attitude(0, atMs: 1000)], AttitudeStream()))
        for kind in [DetectorKind.thresholdLatch, .threshold, .thresholdRefractory, .badgerJump] {
            #expect(throws: GestureError.self) { try GestureEvaluation.evaluate(attitudeTrace, settings: [try kind.settings([:])], window: MatchWindow()) }
        }
        let keepCalmTrace = try GestureTrace.read(RecordList([keepCalm(y: 0, id: 1, atMs: 1000)], KeepCalmJSON()))
        do {
            _ = try GestureEvaluation.evaluate(keepCalmTrace, settings: [try DetectorKind.attitudeTilt.settings([:])], window: MatchWindow())
            Issue.record("attitude-tilt ran on KeepCalm frames")
        } catch {
            #expect(error.code == .notApplicable)
            #expect(error.message == "test: attitude-tilt reads attitude, and 127.0.0.1:50001's samples (frames of keepcalm-json) carry only the protocol's own vector")
        }
        // badger-tilt reads gravity, which follows from an attitude.
        #expect(throws: Never.self) { try GestureEvaluation.evaluate(attitudeTrace, settings: [try DetectorKind.badgerTilt.settings([:])], window: MatchWindow()) }
    }

    @Test func attitudeAnglesAreCoreMotions() {
        func angles(_ q: (Double, Double, Double, Double)) -> (Double, Double, Double) {
            let a = AttitudeAngles.rollPitchYaw(w: q.0, x: q.1, y: q.2, z: q.3)
            return (a.roll, a.pitch, a.yaw)
        }
        let h = 0.5.squareRoot()
        #expect(angles((1, 0, 0, 0)) == (0, 0, 0))
        // Leaning back from upright in portrait: 70° about x is pitch 70°, roll 0.
        let lean = 70 * Double.pi / 180
        let upright = angles((cos(lean / 2), sin(lean / 2), 0, 0))
        #expect(abs(upright.1 - lean) < 1e-12 && abs(upright.0) < 1e-12)
        // A quarter turn about y drops the right edge: roll +π/2; about z: yaw +π/2.
        #expect(abs(angles((h, 0, h, 0)).0 - .pi / 2) < 1e-12)
        #expect(abs(angles((h, 0, 0, h)).2 - .pi / 2) < 1e-12)
        // Gravity from roll and pitch: face up reads (0, 0, −1); upright reads (0, −1, 0).
        let flat = AttitudeAngles.gravity(roll: 0, pitch: 0)
        #expect(flat == (0, -0.0, -1))
        let standing = AttitudeAngles.gravity(roll: 0, pitch: .pi / 2)
        #expect(abs(standing.y + 1) < 1e-12 && abs(standing.z) < 1e-12)
    }

    // MARK: synthesized sessions

    func synthesize(_ wireProtocol: any WireProtocol, persona: Persona, seed: UInt64) -> RecordList {
        var configuration = GestureSessionSynthesizer.Configuration()
        configuration.wireProtocol = wireProtocol
        configuration.persona = persona
        configuration.durationS = 60
        configuration.frameHz = wireProtocol.nominalRateHz
        configuration.motionHz = 60
        configuration.seed = seed
        var synthesizer = GestureSessionSynthesizer(configuration)
        var records: [TraceRecord] = []
        while let record = synthesizer.next() { records.append(record) }
        return RecordList(records, wireProtocol, source: "synth seed \(seed)", capturePoint: .synthetic)
    }

    @Test(arguments: [UInt64(3), 11])
    func steeringAttitudeStreamTiltsAreFoundOnPitch(seed: UInt64) throws {
        let trace = try GestureTrace.read(synthesize(AttitudeStream(), persona: .steering, seed: seed), source: .frames)
        #expect(trace.labels.contains { $0.gesture == "tilt_left" } && trace.labels.contains { $0.gesture == "tilt_right" })
        let settings = try DetectorKind.attitudeTilt.settings(["axis": "pitch"])
        let score = try GestureEvaluation.evaluate(trace, settings: [settings], window: MatchWindow())[0].score
        #expect(score.falseNegatives == 0, "seed \(seed)")
        #expect(score.falsePositives == 0, "seed \(seed)")
        // Records of one stream arrive in the order written.
        #expect(trace.samples[0].map(\.timeNs) == trace.samples[0].map(\.timeNs).sorted())
    }

    @Test(arguments: [UInt64(3), 11])
    func steadyKeepCalmJumpsAreFoundOnTheGamesFrames(seed: UInt64) throws {
        let trace = try GestureTrace.read(synthesize(KeepCalmJSON(), persona: .steady, seed: seed), source: .frames)
        #expect(trace.sampleKinds == [.frames])
        let score = try GestureEvaluation.evaluate(trace, settings: [try DetectorKind.thresholdLatch.settings([:])], window: MatchWindow())[0].score
        #expect(score.truePositives > 10, "seed \(seed)")
        #expect(score.recall == 1, "seed \(seed)")
    }
}
