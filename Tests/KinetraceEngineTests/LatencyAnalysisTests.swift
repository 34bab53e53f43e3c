import Testing
@testable import KinetraceAnalysis
import KinetraceTrace
import KinetraceWire

/// Hand-built traces whose latencies are known exactly.
@Suite struct LatencyAnalysisTests {
    let host = Endpoint(host: "127.0.0.1", port: 47110)
    let a = Endpoint(host: "127.0.0.1", port: 50001)
    let b = Endpoint(host: "127.0.0.1", port: 50002)

    func frame(_ from: Endpoint, tMs: UInt64, latencyNs: Int64) -> TraceRecord {
        .message(MessageRecord(timeNs: Int64(tMs) * 1_000_000 + latencyNs, direction: .controllerToHost,
                               source: from, destination: host, payload: MotionFrame(tMs: tMs).encoded()))
    }

    func ack(_ to: Endpoint, echo: UInt64, atNs: Int64, rttNs: Int64? = nil) -> TraceRecord {
        .message(MessageRecord(timeNs: atNs, direction: .hostToController, source: host, destination: to,
                               payload: HapticAck(echoTMs: echo).encoded(), rttNs: rttNs))
    }

    func analyse(_ records: [TraceRecord], at point: CapturePoint = .host, options: LatencyOptions = .init()) -> LatencyAnalysis {
        var collector = LatencyCollector(header: TraceHeader(created: "", tool: "", capturePoint: point, clock: .realtime), wireProtocol: MotionLinkV1())
        for record in records { collector.add(record) }
        return collector.analysis(options: options)
    }

    @Test func rawOneWayIsReceiveMinusStamp() throws {
        // a: 70, 71, 72, 73 ms; b's clock runs 1 s behind the host's: 1070, 1074 ms.
        let records = [frame(a, tMs: 1000, latencyNs: 70_000_000), frame(b, tMs: 1000, latencyNs: 1_070_000_000),
                       frame(a, tMs: 1100, latencyNs: 71_000_000), frame(a, tMs: 1200, latencyNs: 72_000_000),
                       frame(b, tMs: 1100, latencyNs: 1_074_000_000), frame(a, tMs: 1300, latencyNs: 73_000_000)]
        let result = try #require(analyse(records).result(for: .oneWayRaw))
        #expect(result.samples.map(\.ms) == [70, 1070, 71, 72, 1074, 73])
        #expect(result.samples.map(\.controller) == [0, 1, 0, 0, 1, 0])
        #expect(result.samples.map(\.ordinal) == [1, 1, 2, 3, 2, 4])
        let a = try #require(result.perController[0]?.table)
        #expect(a.countBefore == 4 && a.countAfter == 4)
        #expect(a.meanMs == 71.5 && a.minMs == 70 && a.maxMs == 73)
        #expect(abs(a.p95Ms - 72.85) < 1e-12)            // 70 + 0.95·3 ranks → between 72 and 73
        #expect(abs(a.sdMs - (5.0 / 3).squareRoot()) < 1e-12)
    }

    @Test func relativeSubtractsEachControllersMedian() throws {
        let records = [frame(a, tMs: 1000, latencyNs: 70_000_000), frame(b, tMs: 1000, latencyNs: 1_070_000_000),
                       frame(a, tMs: 1100, latencyNs: 71_000_000), frame(a, tMs: 1200, latencyNs: 75_000_000),
                       frame(b, tMs: 1100, latencyNs: 1_074_000_000)]
        let perController = try #require(analyse(records).result(for: .oneWayRelative))
        // a's median 71; b's median (1070 + 1074) / 2 = 1072: the clock offset cancels.
        #expect(perController.medians == [71, 1072])
        #expect(perController.samples.map(\.ms) == [-1, -2, 0, 4, 2])
        let dataset = try #require(analyse(records, options: .init(medianScope: .dataset, baseMs: 70)).result(for: .oneWayRelative))
        #expect(dataset.medians == [75, 75])
        #expect(dataset.samples.map(\.ms) == [65, 1065, 66, 70, 1069])
        #expect(dataset.baseMs == 70)
    }

    @Test func threeSigmaRemovalDropsTheOutlier() throws {
        // Twenty samples at 70 ± 1 ms and one at 200 ms.
        var records = (0..<20).map { i in frame(a, tMs: 1000 + 100 * UInt64(i), latencyNs: Int64(69_000_000 + (i % 3) * 1_000_000)) }
        records.append(frame(a, tMs: 3000, latencyNs: 200_000_000))
        let stats = try #require(analyse(records).result(for: .oneWayRaw)?.all)
        let table = try #require(stats.table)
        #expect(table.countBefore == 21 && table.countAfter == 20)
        #expect(table.maxMs == 71)
        // The percentiles are of every sample, the outlier included.
        #expect(stats.histogram.count == 21)
        let p999 = try #require(stats.percentiles.last)
        #expect(p999.percentile == 99.9 && abs(p999.ms - 200) <= stats.histogram.resolutionMs(near: 200))
        // σ 0 keeps everything.
        #expect(analyse(records, options: .init(sigmas: 0)).result(for: .oneWayRaw)?.all.table?.countAfter == 21)
    }

    @Test func hostTraceGivesTurnaroundAndEchoButNoRoundTrip() throws {
        let records = [frame(a, tMs: 1000, latencyNs: 70_000_000),
                       ack(a, echo: 1000, atNs: 1_070_400_000),      // 0.4 ms after the frame arrived
                       frame(a, tMs: 1100, latencyNs: 70_000_000),
                       frame(a, tMs: 1100, latencyNs: 90_000_000),   // a duplicate: the first sighting counts
                       ack(a, echo: 1100, atNs: 1_170_600_000),
                       ack(a, echo: 4242, atNs: 1_200_000_000)]      // echoes no frame
        let analysis = analyse(records)
        #expect(analysis.result(for: .replyTurnaround)?.samples.map(\.ms) == [0.4, 0.6])
        #expect(analysis.result(for: .replyEchoRaw)?.samples.map(\.ms) == [70.4, 70.6, -4242 + 1200])
        #expect(analysis.unpairedReplies == 1)
        #expect(analysis.result(for: .replyRoundTrip) == nil)
        let missing = try #require(analysis.unavailable.first { $0.measure == .replyRoundTrip })
        #expect(missing.reason.contains("controller") && missing.reason.contains("\"host\""))
    }

    @Test func controllerTraceGivesRoundTripsFromTheRecorderOrByPairing() throws {
        let sent = [frame(a, tMs: 1000, latencyNs: 10_000), frame(b, tMs: 1000, latencyNs: 20_000)]
        let measured = analyse(sent + [ack(a, echo: 1000, atNs: 1_001_000_000, rttNs: 987_654)], at: .controller)
        #expect(measured.result(for: .replyRoundTrip)?.samples.map(\.ms) == [0.987654])
        let paired = analyse(sent + [ack(b, echo: 1000, atNs: 1_002_020_000)], at: .controller)
        #expect(paired.result(for: .replyRoundTrip)?.samples.map(\.ms) == [2])
        #expect(paired.result(for: .replyTurnaround) == nil && !paired.unavailable.contains { $0.measure == .replyTurnaround })
    }

    /// A controller's frames are remembered for pairing for 60 s of capture time, in bounded memory.
    @Test func acksPairOnlyWithinTheWindow() throws {
        // 5,000 frames at 100 Hz: 50 s; then frames until 70 s, so the first ones fall out of the window.
        var records = (0..<7000).map { i in frame(a, tMs: 1_000_000 + 10 * UInt64(i), latencyNs: 1_000_000) }
        records.append(ack(a, echo: 1_000_000, atNs: 1_070_000_000_000))           // the very first frame: forgotten
        records.append(ack(a, echo: 1_069_990, atNs: 1_070_000_000_000))           // the newest: paired, 9 ms later
        let analysis = analyse(records)
        #expect(analysis.unpairedReplies == 1)
        #expect(analysis.result(for: .replyTurnaround)?.samples.map(\.ms) == [9])
    }

    /// Two recordings of one session, the host behind a NAT (other addresses): frames and acks
    /// are found in both by their bytes, and each direction's one-way latency is exact.
    @Test func joinMeasuresEachDirectionPerMessage() throws {
        let header = { (point: CapturePoint) in TraceHeader(created: "", tool: "", capturePoint: point, clock: .realtime) }
        let natA = Endpoint(host: "203.0.113.7", port: 61001)
        let f1 = MotionFrame(tMs: 1000, ay: 0.9).encoded(), f2 = MotionFrame(tMs: 1100, ay: 0.1).encoded()
        let ack = HapticAck(echoTMs: 1000).encoded()
        let controllerSide: [TraceRecord] = [
            .message(MessageRecord(timeNs: 1_000_000_000, direction: .controllerToHost, source: a, destination: host, payload: f1)),
            .message(MessageRecord(timeNs: 1_100_000_000, direction: .controllerToHost, source: a, destination: host, payload: f2)),
            .message(MessageRecord(timeNs: 1_004_000_000, direction: .hostToController, source: host, destination: a, payload: ack)),
        ]
        let hostSide: [TraceRecord] = [
            .message(MessageRecord(timeNs: 1_001_500_000, direction: .controllerToHost, source: natA, destination: host, payload: f1)),
            .message(MessageRecord(timeNs: 1_001_700_000, direction: .hostToController, source: host, destination: natA, payload: ack)),
            .message(MessageRecord(timeNs: 1_102_000_000, direction: .controllerToHost, source: natA, destination: host, payload: f2)),
        ]
        let joined = try LatencyJoin.join(
            controller: try TraceReader(bytes: TraceEncoder.document(header: header(.controller), records: controllerSide)),
            host: try TraceReader(bytes: TraceEncoder.document(header: header(.host), records: hostSide)))
        #expect(joined.controllers == [a])
        #expect(joined.result(for: .joinedOneWay)?.samples.map(\.ms) == [1.5, 2])
        #expect(joined.result(for: .joinedReplyOneWay)?.samples.map(\.ms) == [2.3])
        #expect(joined.unpairedReplies == 0)
    }

    @Test func invalidMessagesAreLeftOut() throws {
        var corrupt = MotionFrame(tMs: 1000).encoded()
        corrupt[9] ^= 1
        let records = [TraceRecord.message(MessageRecord(timeNs: 1_070_000_000, direction: .controllerToHost, source: a,
                                                         destination: host, payload: corrupt)),
                       frame(a, tMs: 1100, latencyNs: 70_000_000)]
        let analysis = analyse(records)
        #expect(analysis.invalidMessages == 1)
        #expect(analysis.result(for: .oneWayRaw)?.samples.count == 1)
    }

    @Test func emptyTraceHasNothingToMeasure() {
        let analysis = analyse([])
        #expect(analysis.measures.isEmpty)
        #expect(Set(analysis.unavailable.map(\.measure)) == [.oneWayRaw, .oneWayRelative, .replyEchoRaw, .replyEchoRelative, .replyRoundTrip, .replyTurnaround])
    }

    @Test func framesWithUnusableStampsAreCountedNotMeasured() {
        let analysis = analyse([frame(a, tMs: 1000, latencyNs: 70_000_000),
                                .message(MessageRecord(timeNs: 1_000_000_000, direction: .controllerToHost, source: a, destination: host,
                                                       payload: MotionFrame(tMs: .max).encoded()))])
        #expect(analysis.unusableStamps == 1)
        #expect(analysis.result(for: .oneWayRaw)?.samples.count == 1)
    }

    @Test func stampsThatWouldOverflowAreSkipped() {
        #expect(LatencyCollector.sinceStamp(1_000_000_000, .max) == nil)
        #expect(LatencyCollector.sinceStamp(.min, 1) == nil)
        #expect(LatencyCollector.sinceStamp(1_070_000_001, 1000) == 70.000001)
    }

    @Test func percentilesAreWithinHalfABucketOfTheNearestRank() throws {
        // 10,000 values from −5 to +4.999 ms: relative latencies are negative as often as positive.
        let values = (0..<10_000).map { Double($0) / 1000 - 5 }
        let stats = SeriesStatistics(values, sigmas: 3)
        for (p, ms) in stats.percentiles {
            let rank = Int((p / 100 * Double(values.count)).rounded(.up)) - 1
            let nearest = values[max(0, rank)]
            #expect(abs(ms - nearest) <= stats.histogram.resolutionMs(near: nearest) + 1e-9, "p\(p): \(ms) vs \(nearest)")
        }
        #expect(stats.histogram.clampedBelow == 0)
    }
}
