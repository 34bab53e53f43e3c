import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// The host port of a capture read without `--port`: the port most valid
/// controller→host messages go to, the scan stopping early only when one
/// port leads beyond doubt (1,000 valid messages, no rival above 10).
@Suite struct PortInferenceTests {
    /// Valid frames to `port`, one controller per port, 100 ms apart from `startMs`.
    static func frames(to port: UInt16, count: Int, startMs: UInt64) -> [TraceRecord] {
        (0..<count).map { i in
            let tMs = startMs + UInt64(i) * 100
            return .message(MessageRecord(timeNs: Int64(tMs) * 1_000_000, direction: .controllerToHost,
                                          source: Endpoint(host: "10.0.0.\(port % 200 + 2)", port: 50_000),
                                          destination: Endpoint(host: "10.0.0.1", port: port),
                                          payload: MotionFrame(tMs: tMs, ax: 0, ay: 0.1, az: 0).encoded()))
        }
    }

    static func capture(_ records: [TraceRecord], in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("ports.pcap").path
        let writer = try PcapWriter(path: path)
        for record in records.sorted(by: { $0.timeNs < $1.timeNs }) { try writer.write(record) }
        try writer.close()
        return path
    }

    @Test func oneUncontestedPortSettlesTheScanEarly() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = try Self.capture(Self.frames(to: 41_000, count: 3_000, startMs: 1_000_000), in: dir)
        let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1())
        let inference = try #require(reader.portInference)
        #expect(reader.port == 41_000)
        #expect(inference.stoppedEarly && inference.packetsScanned == 1_000, "scanned \(inference.packetsScanned)")
        #expect(reader.readingNote?.contains("inferred from the first 1000 valid motionlink-v1 messages") == true,
                "\(reader.readingNote ?? "no note")")
        var messages = 0
        while case .message? = try reader.next() { messages += 1 }
        #expect(messages == 3_000, "the early stop only shortens the scan, never the reading")
    }

    /// A rival with more than 10 valid messages keeps the scan going, and the
    /// port with the most wins even when another reached 1,000 first.
    @Test func aRivalPortKeepsTheScanGoingAndTheMajorityWins() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let early = Self.frames(to: 41_000, count: 1_200, startMs: 1_000_000)
        let rival = Self.frames(to: 42_000, count: 2_500, startMs: 1_000_050)
        let path = try Self.capture(early + rival, in: dir)
        let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1())
        let inference = try #require(reader.portInference)
        #expect(!inference.stoppedEarly && inference.packetsScanned == 3_700, "scanned \(inference.packetsScanned)")
        #expect(reader.port == 42_000, "the majority port, not the first to reach 1,000")
        #expect(inference.validByPort == [41_000: 1_200, 42_000: 2_500])
        #expect(reader.readingNote?.contains("inferred from 2500 valid") == true, "\(reader.readingNote ?? "no note")")
    }
}
