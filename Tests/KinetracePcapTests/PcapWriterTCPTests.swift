import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// Trace → pcap for a byte-stream protocol: chunks become TCP segments of
/// handshaken, closed connections, judged by tshark (checksums, TCP
/// analysis, its own stream reassembly).
@Suite struct PcapWriterTCPTests {
    static let host = Endpoint(host: "10.0.0.1", port: 47130)

    static func chunk(_ ns: Int64, from controller: Endpoint, _ bytes: [UInt8]) -> TraceRecord {
        .message(MessageRecord(timeNs: 1_767_225_600_000_000_000 + ns, direction: .controllerToHost, source: controller,
                               destination: host, payload: bytes))
    }

    /// Two connections, interleaved, with chunks that split and coalesce records, one chunk bigger than one IP packet.
    static func records() -> (records: [TraceRecord], streams: [Endpoint: [UInt8]]) {
        let a = Endpoint(host: "10.0.0.10", port: 50000), b = Endpoint(host: "10.0.0.11", port: 50001)
        let streamA = (0..<6000).flatMap { AttitudeRecord(roll: Float32($0) / 6000, pitch: 0.5, yaw: -1).encoded() }
        let streamB = (0..<10).flatMap { AttitudeRecord(roll: -0.5, pitch: Float32($0) / 10, yaw: 2).encoded() }
        var records: [TraceRecord] = []
        var atA = 0, atB = 0, ns: Int64 = 0
        for size in [5, 19, 12, 1, 11, 70_000] {
            records.append(chunk(ns, from: a, Array(streamA[atA..<atA + size])))
            atA += size
            ns += 1_000_000
            let sizeB = min(12 + size % 7, streamB.count - atB)
            if sizeB > 0 {
                records.append(chunk(ns, from: b, Array(streamB[atB..<atB + sizeB])))
                atB += sizeB
            }
        }
        records.append(chunk(ns, from: a, Array(streamA[atA...])))
        records.append(chunk(ns + 1, from: b, Array(streamB[atB...])))
        return (records, [a: streamA, b: streamB])
    }

    @Test func tsharkSeesCleanConnectionsCarryingTheStreams() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("stream.pcap").path
        let (records, streams) = Self.records()
        let writer = try PcapWriter(path: path, transport: .tcp)
        for record in records { try writer.write(record) }
        try writer.close()

        let rows = try runTool("tshark", ["-r", path, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE", "-T", "fields",
                                          "-E", "separator=|", "-e", "tcp.stream", "-e", "tcp.flags.str", "-e", "ip.checksum.status",
                                          "-e", "tcp.checksum.status", "-e", "tcp.analysis.flags", "-e", "tcp.len"])
            .stdout.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == writer.packetCount)
        for row in rows {
            #expect(row[2] == "1" && row[3] == "1", "checksums must validate: \(row)")
            #expect(row[4].isEmpty, "no retransmission, gap or out-of-order segment: \(row)")
        }
        // Per connection: SYN, SYN-ACK, ACK, the data, then FIN from each side and the last ACK.
        for stream in ["0", "1"] {
            let flags = rows.filter { $0[0] == stream }.map { $0[1].filter { $0 != "·" } }
            #expect(flags.prefix(3) == ["S", "AS", "A"], "\(flags.prefix(3))")
            #expect(flags.suffix(3) == ["AF", "AF", "A"], "\(flags.suffix(3))")
        }
        // The 70,000-byte chunk is longer than one IP packet holds: two segments.
        #expect(rows.contains { Int($0[5]) == 65_000 })

        // tshark's own reassembly of each connection gives back its stream exactly.
        for (index, controller) in [Endpoint(host: "10.0.0.10", port: 50000), Endpoint(host: "10.0.0.11", port: 50001)].enumerated() {
            let follow = try runTool("tshark", ["-r", path, "-q", "-z", "follow,tcp,raw,\(index)"]).stdout
            let data = follow.split(separator: "\n").filter { line in
                !line.isEmpty && line.allSatisfy(\.isHexDigit)
            }.joined()
            #expect(data == hex(streams[controller]!), "connection \(index)")
        }
    }

    @Test func aStreamEventOutsidePcapTimeIsAnErrorNotATrap() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let writer = try PcapWriter(path: dir.appendingPathComponent("late.pcap").path, transport: .tcp)
        let controller = Endpoint(host: "10.0.0.10", port: 50000)
        try writer.write(Self.chunk(0, from: controller, [1, 2, 3]))
        for timeNs in [Int64.max, -1] {
            let end = StreamEvent.end(source: controller, destination: Self.host, how: .fin, offset: 3).record(timeNs: timeNs)
            #expect(throws: TraceError.self) { try writer.write(.event(end)) }
        }
    }

    @Test func udpStaysTheDefault() throws {
        var encoder = PcapEncoder(source: "memory")
        var out: [UInt8] = []
        try encoder.append(MessageRecord(timeNs: 0, direction: .controllerToHost, source: Endpoint(host: "10.0.0.10", port: 1),
                                         destination: Self.host, payload: [1, 2, 3]), to: &out)
        #expect(out[16 + 14 + 9] == 17, "IPv4 protocol UDP")
        encoder.finish(to: &out)
        #expect(encoder.packetCount == 1, "a UDP encoder has no connections to close")
    }
}

/// Capture → trace → pcap → trace: a stream with a hole and a reset, and a
/// clean one, come back with the same chunks, gap and ends.
@Suite struct PcapWriterStreamRoundTripTests {
    @Test func gapsAndEndsSurviveConversionToPcapAndBack() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let original = dir.appendingPathComponent("original.pcap").path
        let converted = dir.appendingPathComponent("converted.pcap").path
        let records = attitudeRecords(20, seed: 5)
        let stream = records.flatMap { $0 }
        let script = TCPCaptureScript()
        let holed = TCPCaptureScript.Connection.v4(controllerPort: 50001, isn: 0xFFFF_FF00)
        let clean = TCPCaptureScript.Connection.v4(controllerPort: 50002, isn: 7)
        script.handshake(holed)
        script.handshake(clean)
        script.data(holed, at: 0, Array(stream[0..<30]))
        script.data(clean, at: 0, Array(stream[0..<100]))
        script.data(holed, at: 50, Array(stream[50..<140]))  // bytes 30..<50 never captured
        script.data(clean, at: 100, Array(stream[100...]))
        script.segment(holed, sequence: holed.controllerISN &+ 141, flags: TCPCaptureScript.rst)
        script.close(clean, at: stream.count)
        script.write(to: original)

        let first = try ReadBack(path: original)
        #expect(first.events.contains { if case .gap(_, _, 30, 20) = $0 { return true } else { return false } })
        let writer = try PcapWriter(path: converted, transport: .tcp)
        let reader = try PcapTraceReader(path: original, wireProtocol: AttitudeStream(), port: AttitudeStream.defaultPort,
                                         reassembler: TCPReassembler())
        while let record = try reader.next() { try writer.write(record) }
        try writer.close()

        let second = try ReadBack(path: converted)
        #expect(second.chunks.map { Array($0.payload) } == first.chunks.map { Array($0.payload) })
        #expect(second.chunks.map(\.timeNs) == first.chunks.map(\.timeNs))
        #expect(second.events.filter { if case .start = $0 { return false } else { return true } }
                == first.events.filter { if case .start = $0 { return false } else { return true } })
        #expect(second.valid == first.valid)
        #expect(second.flagged.map { Array($0.payload) } == first.flagged.map { Array($0.payload) })
        #expect(!second.flagged.isEmpty, "records after the hole are flagged in both")
    }
}
