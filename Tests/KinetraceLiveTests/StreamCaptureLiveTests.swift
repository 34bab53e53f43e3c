import Foundation
import KinetracePcap
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace capture --protocol attitude-stream` on loopback: TCP captured,
/// reassembled live into a trace of chunks and stream events that frames into
/// exactly the records a TCP_NODELAY sender wrote in seeded random-sized writes.
@Suite(.serialized, .enabled(if: Requirement.root.runs, "live capture needs root or CAP_NET_RAW; with CI set this fails instead"))
struct StreamCaptureLiveTests {
    init() throws { try Requirement.root.check() }

    static func records(_ count: Int, seed: UInt64) -> [[UInt8]] {
        var rng = SeededGenerator(seed: seed)
        return (0..<count).map { _ in
            AttitudeRecord(roll: Float32.random(in: -3...3, using: &rng), pitch: Float32.random(in: -1.5...1.5, using: &rng),
                           yaw: Float32.random(in: -3...3, using: &rng)).encoded()
        }
    }

    static func readAll(_ source: any TraceRecordSource) throws -> [TraceRecord] {
        var out: [TraceRecord] = []
        while let record = try source.next() { out.append(record) }
        return out
    }

    @Test func capturesAndReassemblesATCPStream() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = dir.appendingPathComponent("stream.pcap").path
        let trace = dir.appendingPathComponent("stream.jsonl").path
        let pair = try LoopbackTCPPair()
        let capture = try Background.kinetrace("capture", "-i", "lo", "--protocol", "attitude-stream", "--port", "\(pair.port)",
                                               "--pcap", pcap, "--trace", trace, "--format", "json")
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let seed: UInt64 = 31
        let records = Self.records(300, seed: seed)
        let stream = records.flatMap { $0 }
        try pair.connect()
        var rng = SeededGenerator(seed: seed + 1)
        var offset = 0
        while offset < stream.count {
            let size = min(Int.random(in: 1...50, using: &rng), stream.count - offset)
            try pair.write(Array(stream[offset..<offset + size]))
            offset += size
        }
        #expect(try pair.finish() == stream)
        let result = try capture.stop(SIGINT)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect(report["kernel_dropped"] as? Int == 0)
        let events = try #require(report["stream_events"] as? [String: Int])
        #expect(events["stream_start"] == 2 && events["stream_end"] == 2 && events["stream_gap"] == nil, "\(events)")

        // The trace frames into exactly the records sent, none flagged.
        let framed = try Self.readAll(try TraceInput.open(path: trace))
        let messages = framed.compactMap { record -> MessageRecord? in if case .message(let m) = record { m } else { nil } }
        #expect(messages.map { Array($0.payload) } == records)
        #expect(messages.allSatisfy { $0.framingError == nil && $0.direction == .controllerToHost })
        // The trace holds what the capture reader makes of the pcap: the same chunks and events.
        let fromTrace = try Self.readAll(try TraceInput.open(path: trace, framed: false))
        let fromPcap = try Self.readAll(try TraceInput.open(path: pcap, wireProtocol: AttitudeStream(), port: pair.port, framed: false))
        #expect(fromTrace == fromPcap)
        let starts = fromTrace.compactMap { record -> StreamEvent? in
            if case .event(let e) = record, let event = StreamEvent(e), case .start = event { return event }
            return nil
        }
        #expect(starts.count == 2 && starts.allSatisfy { if case .start(_, _, true) = $0 { true } else { false } })
    }
}
