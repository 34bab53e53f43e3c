import Foundation
import KinetracePcap
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

// MARK: Test reassemblers

/// What a reassembler was handed, kept by reference so the test sees it after the reader copied the reassembler.
final class SegmentLog: @unchecked Sendable {
    var segments: [TCPSegment] = []
    var finished = 0
}

/// In order, no questions asked: ignores sequence numbers, passes payloads through, drops empty segments.
struct PassThroughReassembler: StreamReassembler {
    let log: SegmentLog
    mutating func add(_ segment: TCPSegment) -> [StreamChunk] {
        log.segments.append(segment)
        guard !segment.payload.isEmpty else { return [] }
        return [StreamChunk(timeNs: segment.timeNs, direction: segment.direction, source: segment.source,
                            destination: segment.destination, bytes: segment.payload)]
    }
    mutating func finish() -> [StreamChunk] {
        log.finished += 1
        return []
    }
}

/// Gives nothing until the capture ends, then everything: `finish`'s chunks must be recorded too.
struct HoldingReassembler: StreamReassembler {
    var held: [StreamChunk] = []
    mutating func add(_ segment: TCPSegment) -> [StreamChunk] {
        if !segment.payload.isEmpty {
            held.append(StreamChunk(timeNs: segment.timeNs, direction: segment.direction, source: segment.source,
                                    destination: segment.destination, bytes: segment.payload))
        }
        return []
    }
    mutating func finish() -> [StreamChunk] {
        defer { held = [] }
        return held
    }
}

// MARK: Tests

/// A byte-stream protocol read from captures: TCP segments found by the packet
/// decoder, handed to a `StreamReassembler`, recorded as stream chunks, and
/// framed into messages. The capture is written byte by byte here (pcap with
/// nanosecond timestamps, Ethernet), independently of the module's writer;
/// record contents come from `SeededGenerator(seed: 2024)`.
@Suite struct StreamCaptureTests {
    static let hostPort: UInt16 = 47200
    static let controllerA = Endpoint(host: "10.0.0.11", port: 50001)
    static let hostA = Endpoint(host: "10.0.0.1", port: 47200)
    static let controllerB = Endpoint(host: "2001:db8::11", port: 50002)
    static let hostB = Endpoint(host: "2001:db8::1", port: 47200)
    static let t0: Int64 = 1_767_225_600_000_000_000

    // MARK: Packet bytes

    static func tcp(source: UInt16, destination: UInt16, sequence: UInt32, flags: UInt8, options: [UInt8] = [],
                    payload: [UInt8] = [], dataOffsetWords: Int? = nil) -> [UInt8] {
        precondition(options.count % 4 == 0)
        let words = dataOffsetWords ?? (20 + options.count) / 4
        return PacketBytes.be16(Int(source)) + PacketBytes.be16(Int(destination)) + PacketBytes.be32(sequence)
            + PacketBytes.be32(0x0102_0304) + [UInt8(words << 4), flags] + PacketBytes.be16(65535) + [0, 0, 0, 0]
            + options + payload
    }

    static func ether4(_ source: [UInt8], _ destination: [UInt8], protocolNumber: UInt8 = 6, _ body: [UInt8]) -> [UInt8] {
        PacketBytes.ethernet(etherType: 0x0800, body: PacketBytes.ipv4(source: source, destination: destination,
                                                                       protocolNumber: protocolNumber, body: body))
    }

    static func ether6(_ source: [UInt8], _ destination: [UInt8], nextHeader: UInt8 = 6, _ body: [UInt8]) -> [UInt8] {
        PacketBytes.ethernet(etherType: 0x86DD, body: PacketBytes.ipv6(source: source, destination: destination,
                                                                       nextHeader: nextHeader, body: body))
    }

    /// NOP, NOP, timestamps: what Linux puts on every segment.
    static let timestampOptions: [UInt8] = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]

    /// A little-endian pcap with nanosecond timestamps.
    static func pcapFile(_ packets: [(timeNs: Int64, bytes: [UInt8])], linkType: UInt32 = 1) -> [UInt8] {
        var out = PacketBytes.le32(0xA1B2_3C4D) + [2, 0, 4, 0] + [0, 0, 0, 0] + [0, 0, 0, 0] + PacketBytes.le32(262_144) + PacketBytes.le32(linkType)
        for packet in packets {
            out += PacketBytes.le32(UInt32(packet.timeNs / 1_000_000_000)) + PacketBytes.le32(UInt32(packet.timeNs % 1_000_000_000))
            out += PacketBytes.le32(UInt32(packet.bytes.count)) + PacketBytes.le32(UInt32(packet.bytes.count))
            out += packet.bytes
        }
        return out
    }

    // MARK: The session

    /// Two connections to the host's port (A over IPv4, B over IPv6) plus noise.
    struct Session {
        var packets: [(timeNs: Int64, bytes: [UInt8])] = []
        /// The TCP segments to or from the host's port, as the reassembler must see them.
        var segments: [TCPSegment] = []
        var streamA: [UInt8] = []
        var streamB: [UInt8] = []
        var replyA: [UInt8] = []
    }

    static let session: Session = {
        var rng = SeededGenerator(seed: 2024)
        func record(_ i: Int) -> [UInt8] {
            ToyStream.encode(.init(tMs: 1_767_225_600_000 + UInt64(20 * i), value: UInt32.random(in: 0...UInt32.max, using: &rng)))
        }
        var s = Session()
        s.streamA = (0..<3).flatMap { record($0) } + [0xAA, 0xBB, 0xCC, 0xDD]  // 40 bytes: ends 4 bytes into a record
        s.streamB = (3..<7).flatMap { record($0) }  // 48 bytes
        s.replyA = [5, 4, 3, 2, 1]
        let c4 = PacketBytes.v4Controller, h4 = PacketBytes.v4Host, c6 = PacketBytes.v6Controller, h6 = PacketBytes.v6Host
        var t = t0
        func add(_ bytes: [UInt8]) {
            t += 1_000_003
            s.packets.append((t, bytes))
        }
        func segment(_ v6: Bool, toHost: Bool, sequence: UInt32, flags: UInt8, options: [UInt8] = [], payload: [UInt8] = [], padding: Int = 0) {
            let (controller, host) = v6 ? (controllerB, hostB) : (controllerA, hostA)
            let (source, destination) = toHost ? (controller, host) : (host, controller)
            let body = tcp(source: source.port, destination: destination.port, sequence: sequence, flags: flags, options: options, payload: payload)
            let bytes = v6 ? (toHost ? ether6(c6, h6, body) : ether6(h6, c6, body)) : (toHost ? ether4(c4, h4, body) : ether4(h4, c4, body))
            add(bytes + [UInt8](repeating: 0xEE, count: padding))
            s.segments.append(TCPSegment(timeNs: t, direction: toHost ? .controllerToHost : .hostToController, source: source,
                                      destination: destination, sequence: sequence, flags: flags, payload: payload))
        }
        let a = s.streamA, b = s.streamB
        segment(false, toHost: true, sequence: 1000, flags: 0x02)                                  // A: SYN
        segment(false, toHost: false, sequence: 5000, flags: 0x12)                                 // A: SYN-ACK
        segment(true, toHost: true, sequence: 7000, flags: 0x02)                                   // B: SYN
        segment(false, toHost: true, sequence: 1001, flags: 0x18, options: timestampOptions, payload: Array(a[0..<17]))
        add(ether4(c4, h4, protocolNumber: 17, PacketBytes.udp(source: 50001, destination: hostPort, payload: [1, 2, 3])))  // UDP to the port
        segment(true, toHost: true, sequence: 7001, flags: 0x18, payload: Array(b[0..<30]))
        add(ether4(c4, h4, tcp(source: 50003, destination: 80, sequence: 1, flags: 0x18, payload: [9, 9, 9])))  // TCP, other port
        segment(false, toHost: false, sequence: 5001, flags: 0x18, payload: s.replyA)              // A: the host's direction
        add(ether4(c4, h4, protocolNumber: 1, [8, 0, 0, 0, 0, 1, 0, 1]))                           // ICMP echo
        segment(false, toHost: true, sequence: 1018, flags: 0x18, options: timestampOptions, payload: Array(a[17..<36]))
        segment(true, toHost: true, sequence: 7031, flags: 0x10)                                   // B: a bare ACK
        add(PacketBytes.ethernet(etherType: 0x0806, body: [UInt8](repeating: 0, count: 28)))       // ARP
        segment(true, toHost: true, sequence: 7031, flags: 0x19, payload: Array(b[30...]))         // B: last bytes with FIN
        add(ether6(c6, h6, tcp(source: 50009, destination: 443, sequence: 1, flags: 0x18, payload: [7])))  // TCP over IPv6, other port
        segment(false, toHost: true, sequence: 1037, flags: 0x18, payload: Array(a[36...]), padding: 6)  // padded to Ethernet's minimum
        return s
    }()

    /// The chunk records a pass-through reassembler makes of the session.
    static var expectedChunks: [TraceRecord] {
        session.segments.filter { !$0.payload.isEmpty }.map {
            .message(MessageRecord(timeNs: $0.timeNs, direction: $0.direction, source: $0.source, destination: $0.destination, payload: $0.payload))
        }
    }

    static func writeSession(in dir: URL) -> String {
        let path = dir.appendingPathComponent("stream.pcap").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(pcapFile(session.packets)))
        return path
    }

    static func readEverything(_ source: any TraceRecordSource) throws(TraceError) -> [TraceRecord] {
        var out: [TraceRecord] = []
        while let record = try source.next() { out.append(record) }
        return out
    }

    // MARK: Reading captures

    @Test func segmentsToTheHostPortBecomeChunkRecords() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = Self.writeSession(in: dir)
        // The same packets as pcapng, converted by Wireshark's editcap.
        let pcapng = dir.appendingPathComponent("stream.pcapng").path
        try runTool("editcap", ["-F", "pcapng", pcap, pcapng])
        for path in [pcap, pcapng] {
            let log = SegmentLog()
            let reader = try PcapTraceReader(path: path, wireProtocol: ToyStream(), port: Self.hostPort,
                                             reassembler: PassThroughReassembler(log: log))
            #expect(reader.wireProtocol.id == ToyStream.id)
            #expect(reader.header.protocolID == ToyStream.id)
            #expect(reader.linkType == .ethernet)
            let records = try Self.readEverything(reader)
            #expect(records == Self.expectedChunks, "\(path)")
            #expect(reader.packetCount == Self.session.packets.count)
            #expect(reader.recordCount == Self.expectedChunks.count)
            #expect(reader.skipped[.notTCP] == 2, "the UDP datagram and the ICMP echo")
            #expect(reader.skipped[.otherPort] == 2)
            #expect(reader.skipped[.notIP] == 1, "the ARP frame")
            #expect(reader.skipped.total == 5)
            #expect(reader.truncation == nil)
            // The reassembler saw every segment of both connections, empty ones included, as captured.
            #expect(log.segments == Self.session.segments, "\(path)")
            #expect(log.finished == 1)
            #expect(try reader.next() == nil)
            #expect(log.finished == 1, "finish is called once")
        }
    }

    @Test func chunksTheReassemblerGivesAtTheEndAreRecorded() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let reader = try PcapTraceReader(path: Self.writeSession(in: dir), wireProtocol: ToyStream(), port: Self.hostPort,
                                         reassembler: HoldingReassembler())
        #expect(try Self.readEverything(reader) == Self.expectedChunks)
        #expect(reader.recordCount == Self.expectedChunks.count)
    }

    @Test func framingACaptureGivesWholeRecords() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let reader = try PcapTraceReader(path: Self.writeSession(in: dir), wireProtocol: ToyStream(), port: Self.hostPort,
                                         reassembler: PassThroughReassembler(log: SegmentLog()))
        let framing = FramingRecordSource(reader)
        let messages = try Self.readEverything(framing)
        let s = Self.session
        // Segment times: A's 17-byte segment is packet 4, B's 30 bytes packet 6, A's 19 bytes packet 10, B's FIN packet 13.
        func time(_ packet: Int) -> Int64 { s.packets[packet - 1].timeNs }
        func a(_ i: Int, _ packet: Int) -> TraceRecord {
            .message(MessageRecord(timeNs: time(packet), direction: .controllerToHost, source: Self.controllerA,
                                   destination: Self.hostA, payload: Array(s.streamA[12 * i..<12 * i + 12])))
        }
        func b(_ i: Int, _ packet: Int) -> TraceRecord {
            .message(MessageRecord(timeNs: time(packet), direction: .controllerToHost, source: Self.controllerB,
                                   destination: Self.hostB, payload: Array(s.streamB[12 * i..<12 * i + 12])))
        }
        #expect(messages == [a(0, 4), b(0, 6), b(1, 6), a(1, 10), a(2, 10), b(2, 13), b(3, 13)])
        for case .message(let m) in messages { #expect(m.facts(ToyStream()).isValid) }
        #expect(framing.unfinished.map { "\($0.source)>\($0.destination)@\($0.offset)+\($0.bytes)" } == [
            "\(Self.controllerA)>\(Self.hostA)@36+4",
            "\(Self.hostA)>\(Self.controllerA)@0+5",
        ])
    }

    @Test func withoutAReassemblerTheReaderReassemblesTCP() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = Self.writeSession(in: dir)
        let reader = try PcapTraceReader(path: path, wireProtocol: ToyStream(), port: Self.hostPort)
        let records = try Self.readEverything(reader)
        // The session's segments are in order, so the chunks are the pass-through ones, between stream events.
        #expect(records.filter { if case .message = $0 { true } else { false } } == Self.expectedChunks)
        let events = records.compactMap { record -> StreamEvent? in
            if case .event(let e) = record { return StreamEvent(e) }
            return nil
        }
        #expect(events == [
            .start(source: Self.controllerA, destination: Self.hostA, handshake: true),
            .start(source: Self.hostA, destination: Self.controllerA, handshake: true),
            .start(source: Self.controllerB, destination: Self.hostB, handshake: true),
            .end(source: Self.controllerB, destination: Self.hostB, how: .fin, offset: 48),
            .end(source: Self.controllerA, destination: Self.hostA, how: .captureEnd, offset: 40),
            .end(source: Self.hostA, destination: Self.controllerA, how: .captureEnd, offset: 5),
        ])
        #expect(reader.reassemblyCounts?.segmentsIgnored == 0)
        // TraceInput frames it.
        let framed = try TraceInput.open(path: path, wireProtocol: ToyStream(), port: Self.hostPort)
        #expect(try Self.readEverything(framed).filter { if case .message = $0 { true } else { false } }.count == 7)
        // Read as a datagram protocol, the same capture holds only the one UDP datagram to the port.
        let udp = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1(), port: Self.hostPort)
        let datagrams = try Self.readEverything(udp)
        #expect(datagrams.count == 1)
        if case .message(let m) = datagrams.first { #expect(Array(m.payload) == [1, 2, 3]) }
        #expect(udp.skipped[.notUDP] == Self.session.segments.count + 2 + 1, "every TCP segment and the ICMP echo")
        #expect(udp.skipped[.notIP] == 1)
    }

    /// The hand-built packets are what Wireshark thinks they are.
    @Test func tsharkReadsTheSegmentsAsBuilt() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let rows = try runTool("tshark", ["-r", Self.writeSession(in: dir), "-Y", "tcp.port == 47200", "-T", "fields", "-E", "separator=|",
                                          "-e", "tcp.srcport", "-e", "tcp.seq_raw", "-e", "tcp.flags", "-e", "tcp.len"])
            .stdout.split(separator: "\n").map(String.init)
        let expected = Self.session.segments.map {
            "\($0.source.port)|\($0.sequence)|0x\(String(format: "%04x", $0.flags))|\($0.payload.count)"
        }
        #expect(rows == expected)
    }

    // MARK: Traces of a byte-stream protocol through TraceInput

    @Test func traceInputFramesByteStreamTraces() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let registry = ProtocolRegistry([MotionLinkV1(), ToyStream()])
        let path = dir.appendingPathComponent("toy.jsonl").path
        let header = TraceHeader(created: "2026-11-23T08:00:00.000Z", tool: "tests", protocolID: ToyStream.id, capturePoint: .host, clock: .realtime)
        let writer = try TraceWriter(path: path, header: header, registry: registry)
        for chunk in Self.expectedChunks { try writer.write(chunk) }
        try writer.close()

        let framed = try TraceInput.open(path: path, registry: registry)
        #expect(framed is FramingRecordSource)
        #expect(try Self.readEverything(framed).count == 7)
        let raw = try TraceInput.open(path: path, registry: registry, framed: false)
        #expect(raw is TraceReader)
        #expect(try Self.readEverything(raw) == Self.expectedChunks)
        let named = try TraceInput.open(path: path, wireProtocol: ToyStream(), registry: registry)
        #expect(named is FramingRecordSource)

        do {
            _ = try TraceInput.open(path: path, wireProtocol: MotionLinkV1(), registry: registry)
            Issue.record("a toy-stream-v1 trace opened as motionlink-v1")
        } catch {
            #expect(error.code == .protocolMismatch)
        }
        do {
            _ = try TraceInput.open(path: path)
            Issue.record("the standard registry opened a toy-stream-v1 trace")
        } catch {
            #expect(error.code == .unknownProtocol)
            #expect(error.line == 1)
        }
    }

    // MARK: PacketDecoder on TCP

    static func locate(_ packet: [UInt8], _ linkType: LinkType, _ transport: IPTransport = .tcp) -> PacketDecoder.Location {
        packet.withUnsafeBytes { PacketDecoder.locate(in: $0, linkType: linkType, transport: transport) }
    }

    @Test func locatesATCPSegmentOverIPv4() throws {
        let payload = Array(0..<12) as [UInt8]
        let segment = Self.tcp(source: 50001, destination: 47200, sequence: 0xDEAD_BEEF, flags: 0x18, options: Self.timestampOptions, payload: payload)
        let packet = Self.ether4(PacketBytes.v4Controller, PacketBytes.v4Host, segment)
        guard case .found(let location) = Self.locate(packet, .ethernet) else {
            Issue.record("not found: \(Self.locate(packet, .ethernet))")
            return
        }
        #expect(location.transport == .tcp)
        #expect(location.family == .ipv4)
        #expect(location.sourcePort == 50001 && location.destinationPort == 47200)
        #expect(location.sequence == 0xDEAD_BEEF)
        #expect(location.flags == 0x18)
        #expect(location.sourceAddressOffset == 14 + 12 && location.destinationAddressOffset == 14 + 16)
        #expect(location.payloadOffset == 14 + 20 + 32)
        #expect(location.payloadCount == 12)
        #expect(Array(packet[location.payloadOffset..<location.payloadOffset + location.payloadCount]) == payload)

        // Ethernet padding after a short segment is not payload: the IP length ends it.
        let short = Self.ether4(PacketBytes.v4Host, PacketBytes.v4Controller,
                                Self.tcp(source: 47200, destination: 50001, sequence: 7, flags: 0x11, payload: [1, 2]))
            + [UInt8](repeating: 0xEE, count: 4)
        guard case .found(let padded) = Self.locate(short, .ethernet) else {
            Issue.record("padded segment not found")
            return
        }
        #expect(padded.payloadOffset == 54 && padded.payloadCount == 2)
        #expect(padded.flags == 0x11 && padded.sequence == 7)

        // A bare ACK: found, with no payload.
        guard case .found(let bare) = Self.locate(PacketBytes.ipv4(protocolNumber: 6, body: Self.tcp(source: 1, destination: 2, sequence: 0, flags: 0x10)), .raw) else {
            Issue.record("bare ACK not found")
            return
        }
        #expect(bare.payloadOffset == 40 && bare.payloadCount == 0)
    }

    @Test func locatesATCPSegmentOverIPv6AndPastExtensionHeaders() {
        let segment = Self.tcp(source: 50002, destination: 47200, sequence: 0x8000_0001, flags: 0x02, payload: [0xAB])
        let chains: [[(UInt8, [UInt8])]] = [
            [], [(0, PacketBytes.paddingOptions)], [(0, PacketBytes.paddingOptions), (60, PacketBytes.paddingOptions)],
        ]
        for extensions in chains {
            let packet = PacketBytes.ipv6(nextHeader: 6, extensions: extensions, body: segment)
            guard case .found(let location) = Self.locate(packet, .raw) else {
                Issue.record("not found with \(extensions.count) extension headers: \(Self.locate(packet, .raw))")
                continue
            }
            #expect(location.family == .ipv6 && location.transport == .tcp)
            #expect(location.sourcePort == 50002 && location.destinationPort == 47200)
            #expect(location.sequence == 0x8000_0001 && location.flags == 0x02)
            #expect(location.sourceAddressOffset == 8 && location.destinationAddressOffset == 24)
            #expect(location.payloadOffset == 40 + 8 * extensions.count + 20)
            #expect(location.payloadCount == 1)
        }
    }

    @Test func truncatedTCPHeadersAreSkipped() {
        let segment = Self.tcp(source: 50001, destination: 47200, sequence: 1, flags: 0x18, options: Self.timestampOptions, payload: [1, 2, 3])
        let whole = PacketBytes.ipv4(protocolNumber: 6, body: segment)
        #expect(Self.locate(whole, .raw) != .skipped(.truncated))
        // The capture ends inside the fixed header, or inside the options.
        for cut in [20, 21, 39, 40 + 11] {
            #expect(Self.locate(Array(whole.prefix(cut)), .raw) == .skipped(.truncated), "cut at \(cut)")
        }
        // The IP length ends the packet inside the TCP header, though more was captured.
        let shortIP = PacketBytes.ipv4(protocolNumber: 6, body: segment, totalLength: 20 + 19)
        #expect(Self.locate(shortIP, .raw) == .skipped(.truncated))
        // A data offset below 5 words, or past the segment's end.
        for words in [0, 4] {
            let bad = PacketBytes.ipv4(protocolNumber: 6, body: Self.tcp(source: 1, destination: 2, sequence: 0, flags: 0x18, payload: [1, 2, 3, 4], dataOffsetWords: words))
            #expect(Self.locate(bad, .raw) == .skipped(.truncated), "data offset \(words)")
        }
        let long = PacketBytes.ipv4(protocolNumber: 6, body: Self.tcp(source: 1, destination: 2, sequence: 0, flags: 0x18, payload: [1, 2, 3, 4], dataOffsetWords: 15))
        #expect(Self.locate(long, .raw) == .skipped(.truncated))
        // The same over IPv6 and under Ethernet.
        let v6 = PacketBytes.ipv6(nextHeader: 6, body: Array(segment.prefix(19)))
        #expect(Self.locate(v6, .raw) == .skipped(.truncated))
        let ether = Self.ether4(PacketBytes.v4Controller, PacketBytes.v4Host, segment)
        #expect(Self.locate(Array(ether.prefix(14 + 20 + 10)), .ethernet) == .skipped(.truncated))
    }

    @Test func otherTransportsAreNotTCP() {
        let datagram = PacketBytes.ipv4(body: PacketBytes.udp(source: 50001, destination: 47200, payload: [1]))
        #expect(Self.locate(datagram, .raw) == .skipped(.notTCP))
        #expect(Self.locate(PacketBytes.ipv6(body: PacketBytes.udp(source: 50001, destination: 47200, payload: [1])), .raw) == .skipped(.notTCP))
        #expect(Self.locate(PacketBytes.ipv4(protocolNumber: 1, body: [8, 0, 0, 0]), .raw) == .skipped(.notTCP))
        let segment = PacketBytes.ipv4(protocolNumber: 6, body: Self.tcp(source: 1, destination: 2, sequence: 0, flags: 0x18, payload: [1]))
        #expect(Self.locate(segment, .raw, .udp) == .skipped(.notUDP))
        // A fragment is a fragment, whatever it carries.
        let fragment = PacketBytes.ipv4(protocolNumber: 6, flagsAndOffset: 0x2000, body: Self.tcp(source: 1, destination: 2, sequence: 0, flags: 0x18))
        #expect(Self.locate(fragment, .raw) == .skipped(.fragment))
    }
}
