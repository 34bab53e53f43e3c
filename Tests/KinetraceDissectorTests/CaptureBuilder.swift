import Foundation

/// Builds Ethernet + IPv4/IPv6 + UDP packets by hand and turns them into a
/// capture with text2pcap, so these tests depend on neither Kinetrace's own
/// pcap writer nor anything else under test besides the dissector.
struct Datagram: Sendable {
    enum Family: Sendable { case v4, v6 }

    var family: Family = .v4
    /// Picks the addresses: the controller's as source, or the host's.
    var fromController: Bool
    var sourcePort: UInt16
    var destinationPort: UInt16
    var payload: [UInt8]

    static let controllerV4: [UInt8] = [192, 0, 2, 10]
    static let hostV4: [UInt8] = [192, 0, 2, 1]
    static let controllerV6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x0a]
    static let hostV6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x01]

    /// Controller to host, the direction of MotionFrames.
    static func toHost(_ payload: [UInt8], family: Family = .v4, port: UInt16 = 47110) -> Datagram {
        Datagram(family: family, fromController: true, sourcePort: 50000, destinationPort: port, payload: payload)
    }

    /// Host to controller, the direction of HapticAcks.
    static func toController(_ payload: [UInt8], family: Family = .v4, port: UInt16 = 47110) -> Datagram {
        Datagram(family: family, fromController: false, sourcePort: port, destinationPort: 50000, payload: payload)
    }

    /// The whole Ethernet frame.
    func ethernetFrame() -> [UInt8] {
        let (source, destination): ([UInt8], [UInt8]) = switch family {
        case .v4: fromController ? (Self.controllerV4, Self.hostV4) : (Self.hostV4, Self.controllerV4)
        case .v6: fromController ? (Self.controllerV6, Self.hostV6) : (Self.hostV6, Self.controllerV6)
        }
        let udpLength = 8 + payload.count
        var udp = be16(sourcePort) + be16(destinationPort) + be16(UInt16(udpLength)) + [0, 0] + payload
        let pseudoHeader: [UInt8] = switch family {
        case .v4: source + destination + [0, 17] + be16(UInt16(udpLength))
        case .v6: source + destination + be32(UInt32(udpLength)) + [0, 0, 0, 17]
        }
        var checksum = internetChecksum(pseudoHeader + udp)
        if checksum == 0 { checksum = 0xFFFF }  // 0 means "no checksum" on the wire
        udp.replaceSubrange(6..<8, with: be16(checksum))

        let mac: [UInt8] = fromController ? [0x02, 0, 0, 0, 0, 0x01] + [0x02, 0, 0, 0, 0, 0x0a]
                                          : [0x02, 0, 0, 0, 0, 0x0a] + [0x02, 0, 0, 0, 0, 0x01]
        switch family {
        case .v4:
            var ip: [UInt8] = [0x45, 0] + be16(UInt16(20 + udpLength)) + [0, 0, 0x40, 0, 64, 17, 0, 0]
                + source + destination
            ip.replaceSubrange(10..<12, with: be16(internetChecksum(ip)))
            return mac + [0x08, 0x00] + ip + udp
        case .v6:
            let ip: [UInt8] = [0x60, 0, 0, 0] + be16(UInt16(udpLength)) + [17, 64] + source + destination
            return mac + [0x86, 0xDD] + ip + udp
        }
    }
}

/// RFC 1071 ones' complement sum.
func internetChecksum(_ bytes: [UInt8]) -> UInt16 {
    var sum: UInt32 = 0
    var index = 0
    while index + 1 < bytes.count {
        sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
        index += 2
    }
    if index < bytes.count { sum += UInt32(bytes[index]) << 8 }
    while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
    return ~UInt16(sum)
}

func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
func be32(_ value: UInt32) -> [UInt8] { be16(UInt16(value >> 16)) + be16(UInt16(value & 0xFFFF)) }

/// text2pcap's input: each packet as hex lines with offsets, packets apart by a blank line.
func text2pcapInput(_ datagrams: [Datagram]) -> String {
    var lines: [String] = []
    for datagram in datagrams {
        let bytes = datagram.ethernetFrame()
        for start in stride(from: 0, to: bytes.count, by: 16) {
            let chunk = bytes[start..<min(start + 16, bytes.count)]
            let offset = String(start, radix: 16)
            lines.append(String(repeating: "0", count: 6 - offset.count) + offset + "  "
                         + chunk.map { byteHex($0) }.joined(separator: " "))
        }
        lines.append("")
    }
    return lines.joined(separator: "\n") + "\n"
}

func byteHex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// How tshark prints a `base.HEX` uint32.
func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}

/// Spec vectors are written as hex groups; spaces are ignored.
func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}
