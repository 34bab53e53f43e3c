#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// Builds a nanosecond pcap (magic 0xA1B23C4D, little-endian, link type
/// EN10MB) from message records: each becomes one Ethernet + IPv4 or IPv6
/// + UDP packet with correct IPv4 header and UDP checksums, so Wireshark's
/// checksum validation passes. Pure: bytes out, no I/O (see `PcapWriter`).
///
/// For a byte-stream protocol (`transport: .tcp`) each record is a chunk of
/// a connection's stream and becomes one TCP segment, so the chunking
/// survives; a connection opens with a three-way handshake at its first
/// chunk and closes with the recorded `stream_end` (FIN or RST) or FINs at
/// `finish`, and a `stream_gap` skips the sequence numbers of the missing
/// bytes, so the reassembler reads back the same streams, gaps and ends.
///
/// Fixed, locally administered MAC addresses stand for the two sides, so a
/// converted trace is reproducible: the controller is 02:4b:54:00:00:01 and
/// the host 02:4b:54:00:00:02 ("KT" in the middle).
package struct PcapEncoder {
    package static let controllerMAC: [UInt8] = [0x02, 0x4B, 0x54, 0x00, 0x00, 0x01]
    package static let hostMAC: [UInt8] = [0x02, 0x4B, 0x54, 0x00, 0x00, 0x02]
    package static let snapLength: UInt32 = 262_144
    package static let hopLimit: UInt8 = 64

    /// Names the output in errors.
    package let source: String
    /// UDP datagrams (datagram protocols) or TCP segments (byte-stream protocols).
    package let transport: IPTransport
    /// Packets encoded so far; the next one's number is this plus one.
    package private(set) var packetCount = 0
    private var addressCache: [String: [UInt8]] = [:]

    package init(source: String, transport: IPTransport = .udp) {
        self.source = source
        self.transport = transport
    }

    /// The 24-byte file header.
    package static var fileHeader: [UInt8] {
        var out: [UInt8] = []
        out.appendLittleEndian(UInt32(0xA1B2_3C4D))
        out.appendLittleEndian(UInt16(2))  // version 2.4
        out.appendLittleEndian(UInt16(4))
        out.appendLittleEndian(UInt32(0))  // thiszone
        out.appendLittleEndian(UInt32(0))  // sigfigs
        out.appendLittleEndian(snapLength)
        out.appendLittleEndian(UInt32(LinkType.ethernet.rawValue))
        return out
    }

    /// Appends the packet records for `message`: one UDP datagram, or, for a
    /// TCP encoder, the segment(s) carrying the chunk (after a synthesised
    /// three-way handshake on a connection's first chunk).
    package mutating func append(_ message: MessageRecord, to out: inout [UInt8]) throws(TraceError) {
        let number = packetCount + 1
        func failure(_ why: String) -> TraceError {
            TraceError(.badRecord, source: self.source, message: "packet \(number) (t_ns \(message.timeNs)): \(why)")
        }
        guard message.timeNs >= 0, message.timeNs / 1_000_000_000 <= Int64(UInt32.max) else {
            throw failure("the time cannot be written to pcap, which holds 1970-01-01 to 2106-02-07")
        }
        guard let sourceAddress = address(message.source.host), let destinationAddress = address(message.destination.host) else {
            throw failure("\(message.source.host) or \(message.destination.host) is not an IPv4 or IPv6 address")
        }
        guard sourceAddress.count == destinationAddress.count else {
            throw failure("the source \(message.source) and destination \(message.destination) are of different IP versions")
        }
        let packet = Packet(timeNs: message.timeNs, fromController: message.direction == .controllerToHost,
                            source: sourceAddress, destination: destinationAddress,
                            sourcePort: message.source.port, destinationPort: message.destination.port)
        guard transport == .tcp else {
            guard 8 + message.payload.count + (sourceAddress.count == 16 ? 0 : 20) <= 65535 else {
                throw failure("a payload of \(message.payload.count) bytes does not fit in one UDP datagram")
            }
            return message.payload.withUnsafeBytes { appendPacket(packet, udpPayload: $0, to: &out) }
        }
        let key = connectionKey(message)
        if connections[key] == nil {
            guard connections.count < Self.maximumOpenConnections else {
                throw failure("more than \(Self.maximumOpenConnections) TCP connections open at once")
            }
            openConnection(key, packet, to: &out)
        }
        message.payload.withUnsafeBytes { payload in
            // A chunk longer than one IP packet holds goes out as several segments at the same time.
            var offset = 0
            repeat {
                let count = min(Self.maximumSegment, payload.count - offset)
                sendSegment(key, packet, flags: TCPFlags.ack | TCPFlags.push,
                            payload: UnsafeRawBufferPointer(rebasing: payload[offset..<offset + count]), to: &out)
                offset += count
            } while offset < payload.count
        }
    }

    /// A captured stream's event, so reading the pcap back finds the same stream: a gap
    /// skips the missing bytes' sequence numbers; an end sends that side's FIN, or a RST.
    /// Returns false for events that have no packet form here.
    package mutating func apply(_ event: StreamEvent, timeNs: Int64, to out: inout [UInt8]) throws(TraceError) -> Bool {
        guard transport == .tcp else { return false }
        guard timeNs >= 0, timeNs / 1_000_000_000 <= Int64(UInt32.max) else {
            throw TraceError(.badRecord, source: source, message: "a stream event at t_ns \(timeNs): the time cannot be written to pcap, which holds 1970-01-01 to 2106-02-07")
        }
        let forward = ConnectionKey(controller: event.source, host: event.destination)
        let backward = ConnectionKey(controller: event.destination, host: event.source)
        let (key, fromController) = connections[forward] != nil ? (forward, true) : (backward, false)
        guard var connection = connections[key] else { return false }
        switch event {
        case .start:
            return false
        case .gap(_, _, _, let missing):
            if fromController {
                connection.controllerNext &+= UInt32(truncatingIfNeeded: missing)
            } else {
                connection.hostNext &+= UInt32(truncatingIfNeeded: missing)
            }
            connections[key] = connection
            return true
        case .end(_, _, let how, _):
            var packet = connection.lastPacket.from(controller: fromController)
            packet.timeNs = timeNs
            let none = UnsafeRawBufferPointer(start: nil, count: 0)
            switch how {
            case .rst:
                sendSegment(key, packet, flags: TCPFlags.reset, payload: none, to: &out)
                connections[key] = nil
            case .fin:
                guard !(fromController ? connection.controllerClosed : connection.hostClosed) else { return false }
                sendSegment(key, packet, flags: TCPFlags.fin | TCPFlags.ack, payload: none, to: &out)
                if fromController { connections[key]?.controllerClosed = true } else { connections[key]?.hostClosed = true }
            case .captureEnd, .reused, .evicted:
                return false
            }
            return true
        }
    }

    /// Closes every open TCP connection with a FIN from each side not yet closed, at its last packet's time.
    package mutating func finish(to out: inout [UInt8]) {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        for key in connectionOrder {
            guard let connection = connections[key] else { continue }
            var packet = connection.lastPacket
            packet.timeNs = connection.lastTimeNs
            if !connection.controllerClosed {
                sendSegment(key, packet.from(controller: true), flags: TCPFlags.fin | TCPFlags.ack, payload: none, to: &out)
            }
            if !connection.hostClosed {
                sendSegment(key, packet.from(controller: false), flags: TCPFlags.fin | TCPFlags.ack, payload: none, to: &out)
            }
            sendSegment(key, packet.from(controller: true), flags: TCPFlags.ack, payload: none, to: &out)
            connections[key] = nil
        }
        connectionOrder.removeAll()
    }

    // MARK: TCP

    package static let maximumOpenConnections = 65_536
    static let maximumSegment = 65_000

    enum TCPFlags {
        static let fin: UInt8 = 0x01, syn: UInt8 = 0x02, reset: UInt8 = 0x04, push: UInt8 = 0x08, ack: UInt8 = 0x10
    }

    struct ConnectionKey: Hashable {
        var controller: Endpoint
        var host: Endpoint
    }

    struct Connection {
        /// Next sequence number each side sends.
        var controllerNext: UInt32
        var hostNext: UInt32
        var lastPacket: Packet
        var lastTimeNs: Int64
        var controllerClosed = false
        var hostClosed = false
    }

    /// One packet's addressing, oriented as sent.
    struct Packet {
        var timeNs: Int64
        var fromController: Bool
        var source: [UInt8]
        var destination: [UInt8]
        var sourcePort: UInt16
        var destinationPort: UInt16

        /// The same connection's packet in the direction asked for.
        func from(controller: Bool) -> Packet {
            guard controller != fromController else { return self }
            return Packet(timeNs: timeNs, fromController: controller, source: destination, destination: source,
                          sourcePort: destinationPort, destinationPort: sourcePort)
        }
    }

    private var connections: [ConnectionKey: Connection] = [:]
    private var connectionOrder: [ConnectionKey] = []

    private func connectionKey(_ message: MessageRecord) -> ConnectionKey {
        message.direction == .controllerToHost ? ConnectionKey(controller: message.source, host: message.destination)
            : ConnectionKey(controller: message.destination, host: message.source)
    }

    /// A three-way handshake at the first chunk's time, with initial sequence numbers
    /// drawn from the connection's number so a conversion is reproducible.
    private mutating func openConnection(_ key: ConnectionKey, _ packet: Packet, to out: inout [UInt8]) {
        let n = UInt32(truncatingIfNeeded: connectionOrder.count)
        let controllerISN = 0x4B54_0000 &+ n &* 0x0101_0000
        let hostISN = 0x8000_0000 &+ n &* 0x0202_0000
        connections[key] = Connection(controllerNext: controllerISN, hostNext: hostISN, lastPacket: packet, lastTimeNs: packet.timeNs)
        connectionOrder.append(key)
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        sendSegment(key, packet.from(controller: true), flags: TCPFlags.syn, payload: none, to: &out)
        sendSegment(key, packet.from(controller: false), flags: TCPFlags.syn | TCPFlags.ack, payload: none, to: &out)
        sendSegment(key, packet.from(controller: true), flags: TCPFlags.ack, payload: none, to: &out)
    }

    private mutating func sendSegment(_ key: ConnectionKey, _ packet: Packet, flags: UInt8, payload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var connection = connections[key]!
        let sequence = packet.fromController ? connection.controllerNext : connection.hostNext
        let acknowledgement = packet.fromController ? connection.hostNext : connection.controllerNext
        let consumed = UInt32(payload.count) &+ (flags & (TCPFlags.syn | TCPFlags.fin) != 0 ? 1 : 0)
        if packet.fromController { connection.controllerNext &+= consumed } else { connection.hostNext &+= consumed }
        connection.lastPacket = packet
        connection.lastTimeNs = packet.timeNs
        connections[key] = connection
        var header = [UInt8]()
        header.reserveCapacity(20)
        header.appendBigEndian(packet.sourcePort)
        header.appendBigEndian(packet.destinationPort)
        header.appendBigEndian(sequence)
        // The very first SYN acknowledges nothing.
        header.appendBigEndian(flags == TCPFlags.syn ? UInt32(0) : acknowledgement)
        header.append(5 << 4)  // data offset: 20 bytes, no options
        header.append(flags == TCPFlags.syn ? flags : flags | TCPFlags.ack)
        header.appendBigEndian(UInt16(65535))  // window
        header.appendBigEndian(UInt16(0))  // checksum, filled in below
        header.appendBigEndian(UInt16(0))  // urgent pointer
        appendPacket(packet, protocolNumber: 6, transportHeader: header, checksumOffset: 16, payload: payload, to: &out)
    }

    // MARK: Packets

    private mutating func appendPacket(_ packet: Packet, udpPayload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var header = [UInt8]()
        header.appendBigEndian(packet.sourcePort)
        header.appendBigEndian(packet.destinationPort)
        header.appendBigEndian(UInt16(8 + udpPayload.count))
        header.appendBigEndian(UInt16(0))  // checksum, filled in below
        appendPacket(packet, protocolNumber: 17, transportHeader: header, checksumOffset: 6, payload: udpPayload, to: &out)
    }

    /// One record: Ethernet, IPv4 or IPv6, the transport header and payload, with the
    /// IPv4 header checksum and the transport checksum (pseudo-header included) filled in.
    private mutating func appendPacket(_ packet: Packet, protocolNumber: UInt8, transportHeader: [UInt8], checksumOffset: Int,
                                       payload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let number = packetCount + 1
        let isIPv6 = packet.source.count == 16
        let transportLength = transportHeader.count + payload.count
        let ipHeaderLength = isIPv6 ? 40 : 20
        let frameLength = 14 + ipHeaderLength + transportLength

        out.reserveCapacity(out.count + 16 + frameLength)
        out.appendLittleEndian(UInt32(packet.timeNs / 1_000_000_000))
        out.appendLittleEndian(UInt32(packet.timeNs % 1_000_000_000))
        out.appendLittleEndian(UInt32(frameLength))
        out.appendLittleEndian(UInt32(frameLength))

        out += packet.fromController ? Self.hostMAC : Self.controllerMAC  // destination MAC first
        out += packet.fromController ? Self.controllerMAC : Self.hostMAC
        out.appendBigEndian(UInt16(isIPv6 ? 0x86DD : 0x0800))

        let ipStart = out.count
        if isIPv6 {
            out.appendBigEndian(UInt32(0x6000_0000))
            out.appendBigEndian(UInt16(transportLength))
            out.append(protocolNumber)
            out.append(Self.hopLimit)
        } else {
            out.append(0x45)
            out.append(0)
            out.appendBigEndian(UInt16(ipHeaderLength + transportLength))
            out.appendBigEndian(UInt16(truncatingIfNeeded: number))  // identification
            out.appendBigEndian(UInt16(0x4000))  // don't fragment
            out.append(Self.hopLimit)
            out.append(protocolNumber)
            out.appendBigEndian(UInt16(0))  // header checksum, filled in below
        }
        out += packet.source
        out += packet.destination

        let transportStart = out.count
        out += transportHeader
        out.append(contentsOf: payload)

        let addressLength = packet.source.count
        out.withUnsafeMutableBytes { raw in
            if !isIPv6 {
                let sum = InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: raw[ipStart..<ipStart + 20]))
                raw.storeBytes(of: (~InternetChecksum.fold(sum)).bigEndian, toByteOffset: ipStart + 10, as: UInt16.self)
            }
            // Pseudo-header: both addresses, the protocol and the transport length.
            var sum = InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: raw[transportStart - 2 * addressLength..<transportStart]))
            sum += UInt64(protocolNumber) + UInt64(transportLength)
            sum += InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: raw[transportStart..<transportStart + transportLength]))
            var checksum = ~InternetChecksum.fold(sum)
            if checksum == 0 && protocolNumber == 17 { checksum = 0xFFFF }  // zero means "no checksum" in UDP
            raw.storeBytes(of: checksum.bigEndian, toByteOffset: transportStart + checksumOffset, as: UInt16.self)
        }
        packetCount += 1
    }

    /// The address bytes (4 or 16) for an endpoint's host text, or nil.
    private mutating func address(_ host: String) -> [UInt8]? {
        if let cached = addressCache[host] { return cached }
        var bytes = [UInt8](repeating: 0, count: 16)
        let family = host.contains(":") ? AF_INET6 : AF_INET
        let ok = bytes.withUnsafeMutableBytes { inet_pton(family, host, $0.baseAddress) } == 1
        guard ok else { return nil }
        let address = family == AF_INET6 ? bytes : Array(bytes.prefix(4))
        if addressCache.count < 4096 { addressCache[host] = address }
        return address
    }
}

/// The one's-complement sum of RFC 1071, accumulated wide and folded at the end.
enum InternetChecksum {
    /// Sum of the big-endian 16-bit words (an odd last byte is padded with zero).
    static func sum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var sum: UInt64 = 0
        var i = 0
        while i + 1 < bytes.count {
            sum += UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt16.self)))
            i += 2
        }
        if i < bytes.count { sum += UInt64(bytes[i]) << 8 }
        return sum
    }

    static func fold(_ sum: UInt64) -> UInt16 {
        var sum = sum
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return UInt16(sum)
    }
}

/// Writes message records to a nanosecond pcap or pcapng file (see `PcapEncoder`).
/// In a pcap, labels and events have no form: they are counted, not written. In a
/// pcapng each becomes a comment (opt_comment) on the packet nearest in time, as its
/// trace record line, which `PcapTraceReader` turns back into the record.
package final class PcapWriter {
    package enum Container: Sendable { case pcap, pcapng }

    package let path: String
    package let container: Container
    /// Packets written so far.
    package var packetCount: Int { encoder.packetCount }
    /// Records that have no packet form, by kind.
    package private(set) var labelsNotWritten = 0
    package private(set) var eventsNotWritten = 0
    package private(set) var motionSamplesNotWritten = 0
    /// Labels and events written as pcapng comments.
    package private(set) var comments = 0

    private let file: BufferedFile
    private var encoder: PcapEncoder
    private let wireProtocol: (any WireProtocol)?
    private var placer = PcapngCommentPlacer()
    private var scratch: [UInt8] = [], blocks: [UInt8] = []
    /// A pcapng's section header waits for the first packet: with none, the comments go on it.
    private var pendingHeader: (description: String, written: Bool)
    private static let flushBytes = 64 << 10

    /// `wireProtocol` names the records' protocol in pcapng comments (a trace line needs it).
    package init(path: String, transport: IPTransport = .udp, container: Container = .pcap,
                wireProtocol: (any WireProtocol)? = nil, interfaceDescription: String = "kinetrace") throws(TraceError) {
        self.path = path
        self.container = container
        self.wireProtocol = wireProtocol
        do throws(FileError) { file = try BufferedFile(path: path, reserving: Self.flushBytes + 2048) }
        catch { throw TraceError(error) }
        encoder = PcapEncoder(source: path, transport: transport)
        pendingHeader = (interfaceDescription, container == .pcap)
        if container == .pcap { file.pending += PcapEncoder.fileHeader }
    }

    /// Sends the encoder's new records through the comment placer into the file.
    private func placePackets() {
        blocks.removeAll(keepingCapacity: true)
        placer.packets(scratch, to: &blocks)
        emit(blocks)
    }

    private func emit(_ blocks: [UInt8]) {
        guard !blocks.isEmpty else { return }
        if !pendingHeader.written {
            file.pending += PcapngBlock.sectionHeader(application: "kinetrace")
            file.pending += PcapngBlock.interfaceDescription(name: "kinetrace", description: pendingHeader.description)
            pendingHeader.written = true
        }
        file.pending += blocks
    }

    /// Writes a message as a packet, or in a pcapng a label or event as a comment; returns
    /// false (and counts it) for what has no form here.
    @discardableResult
    package func write(_ record: TraceRecord) throws(TraceError) -> Bool {
        switch record {
        case .message(let message):
            try write(message)
            return true
        case .label(let label):
            if comment(record, timeNs: label.timeNs) { return true }
            labelsNotWritten += 1
            return false
        case .event(let event):
            // A captured stream's gap or end becomes the same in the segments.
            if let streamEvent = StreamEvent(event) {
                if container == .pcap {
                    if try encoder.apply(streamEvent, timeNs: event.timeNs, to: &file.pending) { return true }
                } else {
                    scratch.removeAll(keepingCapacity: true)
                    let applied = try encoder.apply(streamEvent, timeNs: event.timeNs, to: &scratch)
                    placePackets()
                    if applied { return true }
                }
            }
            if comment(record, timeNs: event.timeNs) { return true }
            eventsNotWritten += 1
            return false
        case .motion:
            // Device-motion samples never crossed the wire.
            motionSamplesNotWritten += 1
            return false
        }
    }

    private func comment(_ record: TraceRecord, timeNs: Int64) -> Bool {
        guard container == .pcapng, let wireProtocol else { return false }
        let line = TraceEncoder.line(for: record, as: wireProtocol)
        let text = String(decoding: line.last == 0x0A ? line.dropLast() : line[...], as: UTF8.self)
        guard text.utf8.count <= PcapngBlock.longestOptionValue else { return false }
        placer.comment(text, timeNs: timeNs)
        comments += 1
        return true
    }

    package func write(_ message: MessageRecord) throws(TraceError) {
        precondition(!file.isClosed, "PcapWriter used after close()")
        switch container {
        case .pcap:
            try encoder.append(message, to: &file.pending)
        case .pcapng:
            scratch.removeAll(keepingCapacity: true)
            try encoder.append(message, to: &scratch)
            placePackets()
        }
        if file.pending.count >= Self.flushBytes { try flush() }
    }

    package func flush() throws(TraceError) {
        do throws(FileError) { try file.flush() } catch { throw TraceError(error) }
    }

    /// Closes open TCP connections, flushes and closes; further writes are a programming error.
    package func close() throws(TraceError) {
        switch container {
        case .pcap:
            encoder.finish(to: &file.pending)
        case .pcapng:
            scratch.removeAll(keepingCapacity: true)
            encoder.finish(to: &scratch)
            placePackets()
            blocks.removeAll(keepingCapacity: true)
            // With no packet at all the comments describe the whole file: they go on its section header.
            let unplaced = placer.finish(to: &blocks)
            if !pendingHeader.written {
                file.pending += PcapngBlock.sectionHeader(application: "kinetrace", comments: unplaced)
                file.pending += PcapngBlock.interfaceDescription(name: "kinetrace", description: pendingHeader.description)
                pendingHeader.written = true
            }
            file.pending += blocks
        }
        do throws(FileError) { try file.close() } catch { throw TraceError(error) }
    }
}

extension [UInt8] {
    @inline(__always)
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    @inline(__always)
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
