#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceTrace
import KinetraceWire

/// Why a captured packet produced no message record.
package enum PacketSkipReason: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// An IPv4 fragment (MF set or a non-zero offset) or an IPv6 packet with a fragment header.
    case fragment
    /// IP, but the transport is not UDP (TCP, ICMP, …), for a datagram protocol.
    case notUDP = "not_udp"
    /// IP, but the transport is not TCP, for a byte-stream protocol.
    case notTCP = "not_tcp"
    /// The link layer carries something other than IPv4 or IPv6 (ARP, LLC, …).
    case notIP = "not_ip"
    /// The capture ends inside a header or the UDP payload (a short snaplen), or a length field is impossible.
    case truncated
    /// The capture's link type is not one `PacketDecoder` reads.
    case unsupportedLinkType = "unsupported_link_type"
    /// UDP or TCP whose ports are not the host's (set by `PcapTraceReader`, never by the decoder).
    case otherPort = "other_port"

    package var description: String { rawValue }
}

/// The IP transport a protocol's traffic rides on.
package enum IPTransport: UInt8, Hashable, Sendable, CustomStringConvertible {
    case tcp = 6
    case udp = 17

    package init(_ kind: TransportKind) { self = kind == .datagram ? .udp : .tcp }
    package var description: String { self == .udp ? "UDP" : "TCP" }
}

/// Where a UDP datagram or TCP segment lies inside a captured packet:
/// offsets into the packet bytes, so finding it copies nothing.
package struct TransportLocation: Hashable, Sendable {
    package enum Family: Hashable, Sendable { case ipv4, ipv6 }
    package var family: Family
    package var transport: IPTransport = .udp
    /// Offsets of the 4-byte (IPv4) or 16-byte (IPv6) addresses.
    package var sourceAddressOffset: Int
    package var destinationAddressOffset: Int
    package var sourcePort: UInt16
    package var destinationPort: UInt16
    package var payloadOffset: Int
    package var payloadCount: Int
    /// TCP only: the segment's sequence number and flags (FIN 0x01, SYN 0x02, RST 0x04, …).
    package var sequence: UInt32 = 0
    package var flags: UInt8 = 0

    package init(family: Family, sourceAddressOffset: Int, destinationAddressOffset: Int,
                sourcePort: UInt16, destinationPort: UInt16, payloadOffset: Int, payloadCount: Int) {
        self.family = family
        self.sourceAddressOffset = sourceAddressOffset
        self.destinationAddressOffset = destinationAddressOffset
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.payloadOffset = payloadOffset
        self.payloadCount = payloadCount
    }
}

/// A UDP datagram found in a captured packet.
package struct UDPDatagram: Hashable, Sendable {
    package var source: Endpoint
    package var destination: Endpoint
    package var payload: [UInt8]

    package init(source: Endpoint, destination: Endpoint, payload: [UInt8]) {
        self.source = source
        self.destination = destination
        self.payload = payload
    }
}

/// What a captured packet holds, as far as a datagram protocol is concerned.
package enum DecodedPacket: Hashable, Sendable {
    case udp(UDPDatagram)
    case skipped(PacketSkipReason)
}

/// Finds the UDP datagram or TCP segment in a captured packet: link layer,
/// IPv4 or IPv6 (walking hop-by-hop, routing and destination-options
/// headers), then UDP or TCP.
/// Pure: bytes in, answer out; libpcap only supplies the bytes.
///
/// Checksums are not verified: captures taken on the sending host see
/// packets before checksum offload fills them in.
package struct PacketDecoder {
    private var addresses = AddressTextCache()
    private var pairs = EndpointPairCache()

    package init() {}

    /// Decodes a packet captured on a link of type `linkType`.
    package mutating func decode(_ packet: UnsafeRawBufferPointer, linkType: LinkType) -> DecodedPacket {
        switch Self.locate(in: packet, linkType: linkType, transport: .udp) {
        case .skipped(let reason): return .skipped(reason)
        case .found(let location):
            let (source, destination) = endpoints(of: location, in: packet)
            let payload = [UInt8](UnsafeRawBufferPointer(rebasing: packet[location.payloadOffset..<location.payloadOffset + location.payloadCount]))
            return .udp(UDPDatagram(source: source, destination: destination, payload: payload))
        }
    }

    package mutating func decode(_ packet: [UInt8], linkType: LinkType) -> DecodedPacket {
        packet.withUnsafeBytes { decode($0, linkType: linkType) }
    }

    /// The source and destination endpoints of a located datagram, with
    /// address text cached so a capture's few hosts are formatted once.
    package mutating func endpoints(of location: TransportLocation, in packet: UnsafeRawBufferPointer) -> (source: Endpoint, destination: Endpoint) {
        let sourceHost: String, destinationHost: String
        switch location.family {
        case .ipv4:
            // A capture holds few distinct 4-tuples: look the whole pair up first.
            let addresses4 = UInt64(packet.loadUnaligned(fromByteOffset: location.sourceAddressOffset, as: UInt32.self))
                | UInt64(packet.loadUnaligned(fromByteOffset: location.destinationAddressOffset, as: UInt32.self)) << 32
            let ports = UInt32(location.sourcePort) | UInt32(location.destinationPort) << 16
            if let pair = pairs.lookup(addresses4, ports) { return pair }
            sourceHost = addresses.ipv4(packet.loadUnaligned(fromByteOffset: location.sourceAddressOffset, as: UInt32.self))
            destinationHost = addresses.ipv4(packet.loadUnaligned(fromByteOffset: location.destinationAddressOffset, as: UInt32.self))
        case .ipv6:
            sourceHost = addresses.ipv6(packet, at: location.sourceAddressOffset)
            destinationHost = addresses.ipv6(packet, at: location.destinationAddressOffset)
        }
        let pair = (Endpoint(host: sourceHost, port: location.sourcePort),
                    Endpoint(host: destinationHost, port: location.destinationPort))
        if location.family == .ipv4 {
            let addresses4 = UInt64(packet.loadUnaligned(fromByteOffset: location.sourceAddressOffset, as: UInt32.self))
                | UInt64(packet.loadUnaligned(fromByteOffset: location.destinationAddressOffset, as: UInt32.self)) << 32
            pairs.store(addresses4, UInt32(location.sourcePort) | UInt32(location.destinationPort) << 16, pair)
        }
        return pair
    }

    package enum Location: Hashable, Sendable {
        case found(TransportLocation)
        case skipped(PacketSkipReason)
    }

    /// Finds the UDP datagram or TCP segment without copying or allocating.
    package static func locate(in packet: UnsafeRawBufferPointer, linkType: LinkType, transport: IPTransport) -> Location {
        locate(in: packet, link: LinkLayer(linkType), transport: transport)
    }

    /// A link type resolved once per capture, so the per-packet path switches on a plain enum.
    enum LinkLayer {
        case ethernet, bsdNull, bsdLoop, rawIP, ipv4, ipv6, linuxSLL, linuxSLL2, unsupported

        init(_ linkType: LinkType) {
            switch linkType {
            case .ethernet: self = .ethernet
            case .null: self = .bsdNull
            case .loop: self = .bsdLoop
            case .raw, .linktypeRaw: self = .rawIP
            case .ipv4: self = .ipv4
            case .ipv6: self = .ipv6
            case .linuxSLL: self = .linuxSLL
            case .linuxSLL2: self = .linuxSLL2
            default: self = .unsupported
            }
        }
    }

    static func locate(in packet: UnsafeRawBufferPointer, link: LinkLayer, transport: IPTransport) -> Location {
        let ipOffset: Int
        let version: Int?  // nil: read it from the IP header
        switch link {
        case .ethernet:
            guard packet.count >= 14 else { return .skipped(.truncated) }
            var offset = 12
            var etherType = packet.bigEndianUInt16(at: offset)
            // 802.1Q and 802.1ad tags, possibly stacked.
            while etherType == 0x8100 || etherType == 0x88A8 || etherType == 0x9100 {
                offset += 4
                guard packet.count >= offset + 2 else { return .skipped(.truncated) }
                etherType = packet.bigEndianUInt16(at: offset)
            }
            guard let v = ipVersion(etherType: etherType) else { return .skipped(.notIP) }
            ipOffset = offset + 2
            version = v
        case .bsdNull, .bsdLoop:
            guard packet.count >= 4 else { return .skipped(.truncated) }
            var family = packet.loadUnaligned(as: UInt32.self)
            if link == .bsdLoop {
                family = UInt32(bigEndian: family)
            } else if family & 0xFFFF == 0 {
                family = family.byteSwapped  // written by a big-endian host
            }
            switch family {
            case 2: version = 4
            case 10, 24, 28, 30: version = 6  // AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD, Darwin
            default: return .skipped(.notIP)
            }
            ipOffset = 4
        case .rawIP:
            ipOffset = 0
            version = nil
        case .ipv4:
            ipOffset = 0
            version = 4
        case .ipv6:
            ipOffset = 0
            version = 6
        case .linuxSLL:
            guard packet.count >= 16 else { return .skipped(.truncated) }
            guard let v = ipVersion(etherType: packet.bigEndianUInt16(at: 14)) else { return .skipped(.notIP) }
            ipOffset = 16
            version = v
        case .linuxSLL2:
            guard packet.count >= 20 else { return .skipped(.truncated) }
            guard let v = ipVersion(etherType: packet.bigEndianUInt16(at: 0)) else { return .skipped(.notIP) }
            ipOffset = 20
            version = v
        case .unsupported:
            return .skipped(.unsupportedLinkType)
        }
        guard packet.count > ipOffset else { return .skipped(.truncated) }
        let actualVersion = Int(packet[ipOffset] >> 4)
        if let version, version != actualVersion { return .skipped(.notIP) }
        switch actualVersion {
        case 4: return locateInIPv4(packet, at: ipOffset, transport: transport)
        case 6: return locateInIPv6(packet, at: ipOffset, transport: transport)
        default: return .skipped(.notIP)
        }
    }

    private static func ipVersion(etherType: UInt16) -> Int? {
        switch etherType {
        case 0x0800: return 4
        case 0x86DD: return 6
        default: return nil
        }
    }

    private static func locateInIPv4(_ packet: UnsafeRawBufferPointer, at ip: Int, transport: IPTransport) -> Location {
        guard packet.count >= ip + 20 else { return .skipped(.truncated) }
        let headerLength = Int(packet[ip] & 0x0F) * 4
        let totalLength = Int(packet.bigEndianUInt16(at: ip + 2))
        guard headerLength >= 20, totalLength >= headerLength else { return .skipped(.truncated) }
        let flagsAndOffset = packet.bigEndianUInt16(at: ip + 6)
        if flagsAndOffset & 0x3FFF != 0 { return .skipped(.fragment) }  // MF set or offset non-zero
        guard packet[ip + 9] == transport.rawValue else { return .skipped(transport == .udp ? .notUDP : .notTCP) }
        // Ethernet pads short frames: the IP length, not the capture, says where the packet ends.
        return locate(transport, packet, at: ip + headerLength, end: min(packet.count, ip + totalLength),
                      family: .ipv4, sourceAddress: ip + 12, destinationAddress: ip + 16)
    }

    private static func locateInIPv6(_ packet: UnsafeRawBufferPointer, at ip: Int, transport: IPTransport) -> Location {
        guard packet.count >= ip + 40 else { return .skipped(.truncated) }
        let payloadLength = Int(packet.bigEndianUInt16(at: ip + 4))
        // A zero payload length means a jumbogram; take the capture's end then.
        let end = payloadLength == 0 ? packet.count : min(packet.count, ip + 40 + payloadLength)
        var nextHeader = packet[ip + 6]
        var offset = ip + 40
        while true {
            switch nextHeader {
            case transport.rawValue:
                return locate(transport, packet, at: offset, end: end, family: .ipv6, sourceAddress: ip + 8, destinationAddress: ip + 24)
            case 0, 43, 60:  // hop-by-hop, routing, destination options: length in 8-byte units after the first 8
                guard end >= offset + 2 else { return .skipped(.truncated) }
                nextHeader = packet[offset]
                offset += (Int(packet[offset + 1]) + 1) * 8
            case 44:
                return .skipped(.fragment)
            default:
                return .skipped(transport == .udp ? .notUDP : .notTCP)
            }
        }
    }

    @inline(__always)
    private static func locate(_ transport: IPTransport, _ packet: UnsafeRawBufferPointer, at offset: Int, end: Int,
                               family: TransportLocation.Family, sourceAddress: Int, destinationAddress: Int) -> Location {
        switch transport {
        case .udp: return locateUDP(packet, at: offset, end: end, family: family, sourceAddress: sourceAddress, destinationAddress: destinationAddress)
        case .tcp: return locateTCP(packet, at: offset, end: end, family: family, sourceAddress: sourceAddress, destinationAddress: destinationAddress)
        }
    }

    private static func locateTCP(_ packet: UnsafeRawBufferPointer, at tcp: Int, end: Int, family: TransportLocation.Family,
                                  sourceAddress: Int, destinationAddress: Int) -> Location {
        guard end >= tcp + 20 else { return .skipped(.truncated) }
        let headerLength = Int(packet[tcp + 12] >> 4) * 4
        guard headerLength >= 20, tcp + headerLength <= end else { return .skipped(.truncated) }
        var location = TransportLocation(
            family: family, sourceAddressOffset: sourceAddress, destinationAddressOffset: destinationAddress,
            sourcePort: packet.bigEndianUInt16(at: tcp), destinationPort: packet.bigEndianUInt16(at: tcp + 2),
            payloadOffset: tcp + headerLength, payloadCount: end - tcp - headerLength)
        location.transport = .tcp
        location.sequence = UInt32(bigEndian: packet.loadUnaligned(fromByteOffset: tcp + 4, as: UInt32.self))
        location.flags = packet[tcp + 13]
        return .found(location)
    }

    private static func locateUDP(_ packet: UnsafeRawBufferPointer, at udp: Int, end: Int, family: TransportLocation.Family,
                                  sourceAddress: Int, destinationAddress: Int) -> Location {
        guard end >= udp + 8 else { return .skipped(.truncated) }
        let length = Int(packet.bigEndianUInt16(at: udp + 4))
        guard length >= 8, udp + length <= end else { return .skipped(.truncated) }
        return .found(TransportLocation(family: family, sourceAddressOffset: sourceAddress, destinationAddressOffset: destinationAddress,
                                  sourcePort: packet.bigEndianUInt16(at: udp), destinationPort: packet.bigEndianUInt16(at: udp + 2),
                                  payloadOffset: udp + 8, payloadCount: length - 8))
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always)
    func bigEndianUInt16(at offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
}

/// Formats IP addresses with inet_ntop (RFC 5952 text for IPv6) and keeps
/// the answers in open-addressed tables, so a capture's few hundred hosts
/// are formatted once each. A full table is emptied and starts over.
struct AddressTextCache {
    private static let capacity = 1024  // a power of two
    private static let maxCount = capacity * 3 / 4
    private var v4Keys = [UInt32](repeating: 0, count: capacity)
    private var v4Texts = [String?](repeating: nil, count: capacity)
    private var v4Count = 0
    private var v6High = [UInt64](repeating: 0, count: capacity)
    private var v6Low = [UInt64](repeating: 0, count: capacity)
    private var v6Texts = [String?](repeating: nil, count: capacity)
    private var v6Count = 0

    /// `address` as it lies in memory (network byte order).
    mutating func ipv4(_ address: UInt32) -> String {
        var slot = Int(truncatingIfNeeded: (UInt64(address) &* 0x9E37_79B9_7F4A_7C15) >> 54)
        while let text = v4Texts[slot] {
            if v4Keys[slot] == address { return text }
            slot = (slot + 1) & (Self.capacity - 1)
        }
        let text = withUnsafeBytes(of: address) { Self.format(AF_INET, $0) }
        if v4Count == Self.maxCount {
            v4Texts = [String?](repeating: nil, count: Self.capacity)
            v4Count = 0
            return text
        }
        v4Keys[slot] = address
        v4Texts[slot] = text
        v4Count += 1
        return text
    }

    mutating func ipv6(_ packet: UnsafeRawBufferPointer, at offset: Int) -> String {
        let high = packet.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        let low = packet.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
        var slot = Int(truncatingIfNeeded: ((high ^ (low &* 0xC2B2_AE3D_27D4_EB4F)) &* 0x9E37_79B9_7F4A_7C15) >> 54)
        while let text = v6Texts[slot] {
            if v6High[slot] == high && v6Low[slot] == low { return text }
            slot = (slot + 1) & (Self.capacity - 1)
        }
        let text = Self.format(AF_INET6, UnsafeRawBufferPointer(rebasing: packet[offset..<offset + 16]))
        if v6Count == Self.maxCount {
            v6Texts = [String?](repeating: nil, count: Self.capacity)
            v6Count = 0
            return text
        }
        v6High[slot] = high
        v6Low[slot] = low
        v6Texts[slot] = text
        v6Count += 1
        return text
    }

    private static func format(_ family: Int32, _ address: UnsafeRawBufferPointer) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            guard inet_ntop(family, address.baseAddress, buffer.baseAddress, 64) != nil else { return "?" }
            return String(cString: buffer.baseAddress!)
        }
    }
}

/// IPv4 endpoint pairs by address pair and port pair: direct-mapped, 256
/// slots; a miss just costs the two address lookups it saves on a hit.
struct EndpointPairCache {
    private var addresses = [UInt64](repeating: 0, count: 256)
    private var ports = [UInt32](repeating: 0, count: 256)
    private var pairs = [(Endpoint, Endpoint)?](repeating: nil, count: 256)

    private static func slot(_ a: UInt64, _ p: UInt32) -> Int {
        Int(truncatingIfNeeded: ((a ^ UInt64(p) &* 0xC2B2_AE3D_27D4_EB4F) &* 0x9E37_79B9_7F4A_7C15) >> 56)
    }

    func lookup(_ a: UInt64, _ p: UInt32) -> (Endpoint, Endpoint)? {
        let slot = Self.slot(a, p)
        guard addresses[slot] == a, ports[slot] == p else { return nil }
        return pairs[slot]
    }

    mutating func store(_ a: UInt64, _ p: UInt32, _ pair: (Endpoint, Endpoint)) {
        let slot = Self.slot(a, p)
        addresses[slot] = a
        ports[slot] = p
        pairs[slot] = pair
    }
}
