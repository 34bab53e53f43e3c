import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// Trace → pcap, checked by tshark with checksum validation on, and the
/// round trips pcap → trace → pcap.
@Suite struct PcapWriterTests {
    static let frame = MotionFrame(tMs: 1_767_225_600_071, ax: 0.01, ay: 0.75, az: -0.02, wx: 0.5).encoded()
    static let ack = HapticAck(echoTMs: 1_767_225_600_071).encoded()

    static let messages: [MessageRecord] = [
        MessageRecord(timeNs: 1_767_225_600_140_490_966, direction: .controllerToHost,
                      source: Endpoint(host: "10.0.0.11", port: 50001), destination: Endpoint(host: "10.0.0.1", port: 47110), payload: frame),
        MessageRecord(timeNs: 1_767_225_600_150_000_001, direction: .hostToController,
                      source: Endpoint(host: "10.0.0.1", port: 47110), destination: Endpoint(host: "10.0.0.11", port: 50001), payload: ack),
        // Odd length: the UDP checksum pads the last byte.
        MessageRecord(timeNs: 1_767_225_600_160_000_000, direction: .controllerToHost,
                      source: Endpoint(host: "192.168.1.20", port: 65535), destination: Endpoint(host: "10.0.0.1", port: 47110), payload: [0xFF, 0xFE, 0x01]),
        MessageRecord(timeNs: 1_767_225_600_170_000_999, direction: .controllerToHost,
                      source: Endpoint(host: "2001:db8::11", port: 50002), destination: Endpoint(host: "2001:db8::1", port: 47110), payload: frame),
        MessageRecord(timeNs: 1_767_225_600_180_123_456, direction: .hostToController,
                      source: Endpoint(host: "2001:db8::1", port: 47110), destination: Endpoint(host: "2001:db8::11", port: 50002), payload: ack),
        MessageRecord(timeNs: 1_767_225_600_190_000_000, direction: .controllerToHost,
                      source: Endpoint(host: "::1", port: 40000), destination: Endpoint(host: "::1", port: 47110), payload: [0x7F]),
    ]

    static func write(_ records: [TraceRecord], to path: String) throws -> PcapWriter {
        let writer = try PcapWriter(path: path)
        for record in records { try writer.write(record) }
        try writer.close()
        return writer
    }

    @Test func fileHeaderIsNanosecondLittleEndianEthernet() {
        #expect(PcapEncoder.fileHeader == [0x4D, 0x3C, 0xB2, 0xA1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           0x00, 0x00, 0x04, 0x00, 1, 0, 0, 0])
    }

    @Test func tsharkValidatesEveryChecksum() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("out.pcap").path
        let label = TraceRecord.label(LabelRecord(timeNs: 1_767_225_600_155_000_000, controller: nil, gesture: "jump"))
        let event = TraceRecord.event(EventRecord(timeNs: 1_767_225_600_100_000_000, event: "seed"))
        var records = Self.messages.map(TraceRecord.message)
        records.insert(label, at: 2)
        records.insert(event, at: 0)
        let writer = try Self.write(records, to: path)
        #expect(writer.packetCount == 6)
        #expect(writer.labelsNotWritten == 1)
        #expect(writer.eventsNotWritten == 1)

        let rows = try tsharkFields(path, ["frame.time_epoch", "eth.src", "eth.dst", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst",
                                           "udp.srcport", "udp.dstport", "ip.checksum.status", "udp.checksum.status", "udp.payload",
                                           "_ws.expert"])
        try #require(rows.count == Self.messages.count)
        for (row, message) in zip(rows, Self.messages) {
            let v6 = message.source.isIPv6
            let controllerMAC = "02:4b:54:00:00:01", hostMAC = "02:4b:54:00:00:02"
            let fromController = message.direction == .controllerToHost
            #expect(nanoseconds(epochText: row[0]) == message.timeNs)
            #expect(row[1] == (fromController ? controllerMAC : hostMAC))
            #expect(row[2] == (fromController ? hostMAC : controllerMAC))
            #expect(row[v6 ? 5 : 3] == message.source.host)
            #expect(row[v6 ? 6 : 4] == message.destination.host)
            #expect(row[v6 ? 3 : 5] == "")
            #expect(row[7] == "\(message.source.port)")
            #expect(row[8] == "\(message.destination.port)")
            #expect(row[9] == (v6 ? "" : "1"), "IPv4 header checksum good")  // 1: good
            #expect(row[10] == "1", "UDP checksum good")
            #expect(row[11] == hex(message.payload))
            #expect(row[12] == "", "no expert info (malformed packets, bad checksums)")
        }
    }

    @Test func unwritableRecordsAreErrorsNamingThePacket() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("out.pcap").path
        let writer = try PcapWriter(path: path)
        try writer.write(Self.messages[0])
        var mixed = Self.messages[0]
        mixed.destination = Endpoint(host: "::1", port: 47110)
        let error = #expect(throws: TraceError.self) { try writer.write(mixed) }
        #expect(error?.code == .badRecord)
        #expect(error?.description == "\(path): packet 2 (t_ns 1767225600140490966): the source 10.0.0.11:50001 and destination [::1]:47110 are of different IP versions")
        var early = Self.messages[0]
        early.timeNs = -1
        #expect(throws: TraceError.self) { try writer.write(early) }
        var named = Self.messages[0]
        named.source = Endpoint(host: "controller.local", port: 1)
        #expect(throws: TraceError.self) { try writer.write(named) }
        try writer.close()
        #expect(writer.packetCount == 1)
    }

    /// pcap → trace (through the trace file format) → pcap keeps payloads, endpoints and nanosecond times.
    @Test func roundTripThroughATraceFile() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let first = dir.appendingPathComponent("first.pcap").path
        _ = try Self.write(Self.messages.map(TraceRecord.message), to: first)

        let trace = dir.appendingPathComponent("middle.jsonl").path
        let reader = try PcapTraceReader(path: first, wireProtocol: MotionLinkV1(), port: 47110)
        let traceWriter = try TraceWriter(path: trace, header: reader.header)
        while let record = try reader.next() { try traceWriter.write(record) }
        try traceWriter.close()

        let second = dir.appendingPathComponent("second.pcap").path
        let traceReader = try TraceReader(path: trace)
        #expect(traceReader.header.capturePoint == .network)
        #expect(traceReader.header.clock == .pcap)
        var records: [TraceRecord] = []
        while let record = try traceReader.next() { records.append(record) }
        #expect(records == Self.messages.map(TraceRecord.message))
        _ = try Self.write(records, to: second)
        // Same writer, same records: the files are identical byte for byte.
        #expect(try Data(contentsOf: URL(fileURLWithPath: first)) == Data(contentsOf: URL(fileURLWithPath: second)))
    }

    /// A tcpdump capture → records → our pcap: tshark sees the same times and payloads in both.
    @Test func roundTripOfATcpdumpCapture() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let original = dir.appendingPathComponent("tcpdump.pcap").path
        let (_, host) = try LiveCaptureTests.session(v6: false, file: original, extraArguments: ["--time-stamp-precision=nano"])
        let reader = try PcapTraceReader(path: original, wireProtocol: MotionLinkV1(), port: host.port)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records.count == 6)
        let converted = dir.appendingPathComponent("converted.pcap").path
        _ = try Self.write(records, to: converted)

        let fields = ["frame.time_epoch", "ip.src", "udp.srcport", "ip.dst", "udp.dstport", "udp.payload"]
        let before = try tsharkFields(original, fields)
        let after = try tsharkFields(converted, fields)
        #expect(before.count == 6)
        #expect(after == before)
        let again = try PcapTraceReader(path: converted, wireProtocol: MotionLinkV1(), port: host.port)
        var reread: [TraceRecord] = []
        while let record = try again.next() { reread.append(record) }
        #expect(reread == records)
    }
}
