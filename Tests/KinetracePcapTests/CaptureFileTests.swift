import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// Capture files made by text2pcap (Wireshark's tool, not this module) for
/// every link type, hand-built big-endian files, and broken files.
@Suite struct CaptureFileTests {
    static let frame = MotionFrame(tMs: 1_767_225_600_071, ax: 0.01, ay: 0.75, az: -0.02).encoded()
    static let ack = HapticAck(echoTMs: 1_767_225_600_071).encoded()
    static let controller = Endpoint(host: "10.0.0.11", port: 50001)
    static let host = Endpoint(host: "10.0.0.1", port: 47110)
    static let controller6 = Endpoint(host: "2001:db8::11", port: 50001)
    static let host6 = Endpoint(host: "2001:db8::1", port: 47110)

    /// One session's packets as IP: a frame, a TCP segment, a datagram on another port, the ack.
    static func ipPackets(v6: Bool) -> [[UInt8]] {
        let (c, h) = v6 ? (PacketBytes.v6Controller, PacketBytes.v6Host) : (PacketBytes.v4Controller, PacketBytes.v4Host)
        func ip(_ source: [UInt8], _ destination: [UInt8], _ protocolNumber: UInt8, _ body: [UInt8]) -> [UInt8] {
            v6 ? PacketBytes.ipv6(source: source, destination: destination, nextHeader: protocolNumber, body: body)
               : PacketBytes.ipv4(source: source, destination: destination, protocolNumber: protocolNumber, body: body)
        }
        return [
            ip(c, h, 17, PacketBytes.udp(source: 50001, destination: 47110, payload: frame)),
            ip(c, h, 6, [UInt8](repeating: 0, count: 20)),
            ip(c, h, 17, PacketBytes.udp(source: 50001, destination: 53, payload: [1, 2, 3])),
            ip(h, c, 17, PacketBytes.udp(source: 47110, destination: 50001, payload: ack)),
        ]
    }

    static let times = ["1767225600.123456789", "1767225600.200000000", "1767225600.250000001", "1767225600.300000999"]
    static let timesNs: [Int64] = [1_767_225_600_123_456_789, 1_767_225_600_200_000_000, 1_767_225_600_250_000_001, 1_767_225_600_300_000_999]

    static func expected(v6: Bool, times: [Int64] = timesNs) -> [TraceRecord] {
        let (c, h) = v6 ? (controller6, host6) : (controller, host)
        return [
            .message(MessageRecord(timeNs: times[0], direction: .controllerToHost, source: c, destination: h, payload: frame)),
            .message(MessageRecord(timeNs: times[3], direction: .hostToController, source: h, destination: c, payload: ack)),
        ]
    }

    /// Writes packets as a hex dump with epoch timestamps and has text2pcap build the file.
    static func text2pcap(_ packets: [[UInt8]], linkType: Int, format: String, in dir: URL, name: String) throws -> String {
        var text = ""
        for (index, packet) in packets.enumerated() {
            text += "\(times[index]) 0000 " + packet.map { String(format: "%02x", $0) }.joined(separator: " ") + "\n"
        }
        let input = dir.appendingPathComponent("\(name).txt")
        try text.write(to: input, atomically: true, encoding: .utf8)
        let output = dir.appendingPathComponent(name).path
        try runTool("text2pcap", ["-q", "-F", format, "-t", "%s.%f", "-l", "\(linkType)", input.path, output])
        return output
    }

    func readAll(_ path: String, port: UInt16 = 47110) throws -> (PcapTraceReader, [TraceRecord]) {
        let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1(), port: port)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        return (reader, records)
    }

    struct LinkCase: CustomTestStringConvertible, Sendable {
        var linkType: Int
        /// What libpcap reports for it.
        var reported: LinkType
        var v6: Bool
        var frameBytes: @Sendable ([UInt8], Bool) -> [UInt8]
        var testDescription: String { "link type \(linkType)\(v6 ? " IPv6" : "")" }
    }

    static let linkCases: [LinkCase] = [
        LinkCase(linkType: 1, reported: .ethernet, v6: false) { PacketBytes.ethernet(etherType: $1 ? 0x86DD : 0x0800, body: $0) },
        LinkCase(linkType: 1, reported: .ethernet, v6: true) { PacketBytes.ethernet(etherType: $1 ? 0x86DD : 0x0800, body: $0) },
        LinkCase(linkType: 0, reported: .null, v6: false) { PacketBytes.le32($1 ? 30 : 2) + $0 },
        LinkCase(linkType: 0, reported: .null, v6: true) { PacketBytes.le32($1 ? 30 : 2) + $0 },
        LinkCase(linkType: 108, reported: .loop, v6: false) { PacketBytes.be32($1 ? 24 : 2) + $0 },
        LinkCase(linkType: 101, reported: .raw, v6: false) { ip, _ in ip },
        LinkCase(linkType: 101, reported: .raw, v6: true) { ip, _ in ip },
        LinkCase(linkType: 228, reported: .ipv4, v6: false) { ip, _ in ip },
        LinkCase(linkType: 229, reported: .ipv6, v6: true) { ip, _ in ip },
        LinkCase(linkType: 113, reported: .linuxSLL, v6: false) { PacketBytes.linuxSLL(protocolType: $1 ? 0x86DD : 0x0800, body: $0) },
        LinkCase(linkType: 113, reported: .linuxSLL, v6: true) { PacketBytes.linuxSLL(protocolType: $1 ? 0x86DD : 0x0800, body: $0) },
        LinkCase(linkType: 276, reported: .linuxSLL2, v6: false) { PacketBytes.linuxSLL2(protocolType: $1 ? 0x86DD : 0x0800, body: $0) },
        LinkCase(linkType: 276, reported: .linuxSLL2, v6: true) { PacketBytes.linuxSLL2(protocolType: $1 ? 0x86DD : 0x0800, body: $0) },
    ]

    @Test(arguments: linkCases)
    func everyLinkTypeInPcapAndPcapng(_ link: LinkCase) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let packets = Self.ipPackets(v6: link.v6).map { link.frameBytes($0, link.v6) }
        for format in ["nsecpcap", "pcapng"] {
            let path = try Self.text2pcap(packets, linkType: link.linkType, format: format, in: dir, name: "capture.\(format)")
            let (reader, records) = try readAll(path)
            #expect(records == Self.expected(v6: link.v6), "\(format)")
            #expect(reader.linkType == link.reported)
            #expect(reader.packetCount == 4)
            #expect(reader.recordCount == 2)
            #expect(reader.skipped[.notUDP] == 1)
            #expect(reader.skipped[.otherPort] == 1)
            #expect(reader.skipped.total == 2)
            #expect(reader.unknownRecordCount == 2)
            #expect(reader.truncation == nil)
            let formatText = format == "pcapng" ? "pcapng" : "pcap (nanosecond timestamps, little-endian)"
            #expect(reader.header.notes == "read from \(path): \(formatText), link type \(link.reported)")
            #expect(reader.header.capturePoint == .network)
            #expect(reader.header.clock == .pcap)
        }
    }

    @Test func microsecondPcapIsScaledToNanoseconds() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = try Self.text2pcap(Self.ipPackets(v6: false), linkType: 101, format: "pcap", in: dir, name: "micro.pcap")
        #expect(try CaptureFileFormat(fileAt: path) == .pcap(nanosecond: false, bigEndian: false))
        let (_, records) = try readAll(path)
        #expect(records == Self.expected(v6: false, times: [1_767_225_600_123_456_000, 0, 0, 1_767_225_600_300_000_000]))
        // tshark reads the same instants.
        let epochs = try tsharkFields(path, ["frame.time_epoch"]).map { nanoseconds(epochText: $0[0]) }
        #expect(epochs[0] == records[0].timeNs)
        #expect(epochs[3] == records[1].timeNs)
    }

    /// A classic pcap written by a big-endian host, built byte by byte.
    static func bigEndianPcap(nanosecond: Bool, packets: [(seconds: UInt32, fraction: UInt32, bytes: [UInt8])]) -> [UInt8] {
        var file = PacketBytes.be32(nanosecond ? 0xA1B2_3C4D : 0xA1B2_C3D4) + PacketBytes.be16(2) + PacketBytes.be16(4)
        file += PacketBytes.be32(0) + PacketBytes.be32(0) + PacketBytes.be32(65535) + PacketBytes.be32(1)
        for packet in packets {
            file += PacketBytes.be32(packet.seconds) + PacketBytes.be32(packet.fraction)
            file += PacketBytes.be32(UInt32(packet.bytes.count)) + PacketBytes.be32(UInt32(packet.bytes.count))
            file += packet.bytes
        }
        return file
    }

    @Test(arguments: [false, true])
    func bigEndianPcap(nanosecond: Bool) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let packets = Self.ipPackets(v6: false).map { PacketBytes.ethernet(etherType: 0x0800, body: $0) }
        let fractions: [UInt32] = nanosecond ? [123_456_789, 200_000_000, 250_000_001, 300_000_999] : [123_456, 200_000, 250_000, 300_000]
        let file = Self.bigEndianPcap(nanosecond: nanosecond, packets: packets.indices.map { (1_767_225_600, fractions[$0], packets[$0]) })
        let path = dir.appendingPathComponent("big-endian.pcap").path
        try Data(file).write(to: URL(fileURLWithPath: path))
        #expect(try CaptureFileFormat(fileAt: path) == .pcap(nanosecond: nanosecond, bigEndian: true))
        let (reader, records) = try readAll(path)
        let scale: Int64 = nanosecond ? 1 : 1000
        let times = fractions.map { 1_767_225_600_000_000_000 + Int64($0) * scale }
        #expect(records == Self.expected(v6: false, times: times))
        #expect(reader.header.notes.hasSuffix("pcap (\(nanosecond ? "nanosecond" : "microsecond") timestamps, big-endian), link type EN10MB"))
        // Wireshark agrees on the instants.
        let epochs = try tsharkFields(path, ["frame.time_epoch"]).map { nanoseconds(epochText: $0[0]) }
        #expect(epochs == times)
    }

    @Test func truncatedPcapReadsUpToTheLastWholePacket() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let packets = Self.ipPackets(v6: false).map { PacketBytes.ethernet(etherType: 0x0800, body: $0) }
        let path = try Self.text2pcap(packets, linkType: 1, format: "nsecpcap", in: dir, name: "whole.pcap")
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        let lastStart = 24 + packets.dropLast().reduce(0) { $0 + 16 + $1.count }
        #expect(whole.count == lastStart + 16 + packets[3].count)
        // Cut inside the last packet's data, then inside its record header.
        for keep in [lastStart + 16 + 10, lastStart + 7] {
            let cut = dir.appendingPathComponent("cut-\(keep).pcap").path
            try whole.prefix(keep).write(to: URL(fileURLWithPath: cut))
            let (reader, records) = try readAll(cut)
            #expect(records == [Self.expected(v6: false)[0]])
            #expect(reader.packetCount == 3)
            #expect(reader.truncation == TraceTruncation(line: 4, byteOffset: lastStart, droppedBytes: keep - lastStart, unit: "packet"))
        }
    }

    @Test func truncatedPcapngReadsUpToTheLastWholePacket() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let packets = Self.ipPackets(v6: true).map { PacketBytes.ethernet(etherType: 0x86DD, body: $0) }
        let path = try Self.text2pcap(packets, linkType: 1, format: "pcapng", in: dir, name: "whole.pcapng")
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // Walk the blocks (type, total length) to find where the last one starts.
        var offset = 0, lastBlock = 0
        while offset < whole.count {
            lastBlock = offset
            let length = Int(whole[offset + 4]) | Int(whole[offset + 5]) << 8 | Int(whole[offset + 6]) << 16 | Int(whole[offset + 7]) << 24
            offset += length
        }
        let cut = dir.appendingPathComponent("cut.pcapng").path
        try Data(whole.prefix(whole.count - 5)).write(to: URL(fileURLWithPath: cut))
        let (reader, records) = try readAll(cut)
        #expect(records == [Self.expected(v6: true)[0]])
        #expect(reader.truncation == TraceTruncation(line: 4, byteOffset: lastBlock, droppedBytes: whole.count - 5 - lastBlock, unit: "packet"))
    }

    @Test func corruptPacketIsAnErrorNamingThePacket() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let first = PacketBytes.ethernet(etherType: 0x0800, body: Self.ipPackets(v6: false)[0])
        var file = PacketBytes.le32(0xA1B2_3C4D) + [2, 0, 4, 0] + PacketBytes.le32(0) + PacketBytes.le32(0) + PacketBytes.le32(65535) + PacketBytes.le32(1)
        file += PacketBytes.le32(1_767_225_600) + PacketBytes.le32(5) + PacketBytes.le32(UInt32(first.count)) + PacketBytes.le32(UInt32(first.count)) + first
        file += PacketBytes.le32(1_767_225_601) + PacketBytes.le32(0) + PacketBytes.le32(0x00FF_FFFF) + PacketBytes.le32(0x00FF_FFFF) + [1, 2, 3]
        let path = dir.appendingPathComponent("corrupt.pcap").path
        try Data(file).write(to: URL(fileURLWithPath: path))
        let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1(), port: 47110)
        #expect(try reader.next() == .message(MessageRecord(timeNs: 1_767_225_600_000_000_005, direction: .controllerToHost,
                                                           source: Self.controller, destination: Self.host, payload: Self.frame)))
        let error = #expect(throws: TraceError.self) { try reader.next() }
        #expect(error?.code == .badRecord)
        #expect(error?.byteOffset == 24 + 16 + first.count)
        #expect(error?.line == nil)
        #expect(error?.message.hasPrefix("packet 2: invalid packet capture length 16777215") == true, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("\(path): byte \(24 + 16 + first.count): packet 2: ") == true)
    }

    @Test func brokenHeadersAndMissingFiles() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let short = dir.appendingPathComponent("short.pcap").path
        try Data(PacketBytes.le32(0xA1B2_C3D4) + [2, 0, 4, 0]).write(to: URL(fileURLWithPath: short))
        let error = #expect(throws: TraceError.self) { try TraceInput.open(path: short) }
        #expect(error?.code == .badHeader)
        #expect(error?.byteOffset == 0)
        #expect(error?.message.hasPrefix("not a readable pcap or pcapng file: ") == true)

        let missing = dir.appendingPathComponent("missing.pcap").path
        #expect(throws: TraceError.self) { try TraceInput.open(path: missing) }
        #expect((try? TraceInput.open(path: missing)) == nil)
        do {
            _ = try PcapTraceReader(path: missing, wireProtocol: MotionLinkV1())
            Issue.record("opened a missing file")
        } catch {
            #expect(error.code == .notFound)
            #expect(error.description == "\(missing): cannot open: No such file or directory")
        }

        let garbage = dir.appendingPathComponent("garbage.bin").path
        try Data([0x00, 0x01, 0x02, 0x03, 0x04]).write(to: URL(fileURLWithPath: garbage))
        let garbageError = #expect(throws: TraceError.self) { try TraceInput.open(path: garbage) }
        #expect(garbageError?.code == .badHeader)
        #expect(garbageError?.line == 1)
    }

    @Test func traceInputSniffsTheFormat() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = try Self.text2pcap(Self.ipPackets(v6: false), linkType: 101, format: "nsecpcap", in: dir, name: "a.pcap")
        let pcapng = try Self.text2pcap(Self.ipPackets(v6: false), linkType: 101, format: "pcapng", in: dir, name: "a.pcapng")
        let trace = dir.appendingPathComponent("a.jsonl").path
        let header = TraceHeader(created: "2026-01-01T00:00:00.000Z", tool: "test", capturePoint: .host, clock: .realtime)
        let writer = try TraceWriter(path: trace, header: header)
        for record in Self.expected(v6: false) { try writer.write(record) }
        try writer.close()

        #expect(try TraceInput.open(path: pcap) is PcapTraceReader)
        #expect(try TraceInput.open(path: pcapng) is PcapTraceReader)
        #expect(try TraceInput.open(path: trace) is TraceReader)
        #expect(try CaptureFileFormat(fileAt: pcapng) == .pcapng)
        #expect(try CaptureFileFormat(fileAt: trace) == .trace)
        for source in [try TraceInput.open(path: pcap), try TraceInput.open(path: pcapng), try TraceInput.open(path: trace)] {
            var records: [TraceRecord] = []
            while let record = try source.next() { records.append(record) }
            #expect(records == Self.expected(v6: false), "\(source.source)")
        }
        // Another port: the same packets, seen from the DNS side, give other records.
        let dns = try TraceInput.open(path: pcap, port: 53)
        #expect(try dns.next() == .message(MessageRecord(timeNs: Self.timesNs[2], direction: .controllerToHost,
                                                        source: Self.controller, destination: Endpoint(host: "10.0.0.1", port: 53), payload: [1, 2, 3])))
        #expect(try dns.next() == nil)
        #expect(dns.unknownRecordCount == 3)
    }

    /// The bundled real capture and the trace its capture wrote at the same time hold the same records.
    @Test func bundledLoopbackCaptureMatchesItsTrace() throws {
        let captures = Fixture.packageRoot.appendingPathComponent("captures")
        let pcap = try PcapTraceReader(path: captures.appendingPathComponent("loopback-session.pcap").path, wireProtocol: MotionLinkV1(), port: 41448)
        let trace = try TraceReader(path: captures.appendingPathComponent("loopback-session.jsonl").path)
        var fromPcap: [TraceRecord] = [], fromTrace: [TraceRecord] = []
        while let record = try pcap.next() { fromPcap.append(record) }
        while let record = try trace.next() { fromTrace.append(record) }
        #expect(fromPcap.count == 1860)
        #expect(pcap.skipped.total == 0)
        #expect(fromPcap == fromTrace)
    }

    @Test func magicNumbers() {
        #expect(CaptureFileFormat(magic: [0xD4, 0xC3, 0xB2, 0xA1]) == .pcap(nanosecond: false, bigEndian: false))
        #expect(CaptureFileFormat(magic: [0xA1, 0xB2, 0xC3, 0xD4]) == .pcap(nanosecond: false, bigEndian: true))
        #expect(CaptureFileFormat(magic: [0x4D, 0x3C, 0xB2, 0xA1]) == .pcap(nanosecond: true, bigEndian: false))
        #expect(CaptureFileFormat(magic: [0xA1, 0xB2, 0x3C, 0x4D]) == .pcap(nanosecond: true, bigEndian: true))
        #expect(CaptureFileFormat(magic: [0x0A, 0x0D, 0x0D, 0x0A]) == .pcapng)
        #expect(CaptureFileFormat(magic: Array(#"{"format""#.utf8)) == .trace)
        #expect(CaptureFileFormat(magic: [0xD4, 0xC3]) == .trace)
    }
}
