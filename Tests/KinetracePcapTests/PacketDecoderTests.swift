import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// PacketDecoder on bytes built by hand: every link type, IP options and
/// extension headers, and every reason to skip.
@Suite struct PacketDecoderTests {
    static let frame = MotionFrame(tMs: 1_767_225_600_071, ax: 0.01, ay: 0.75, az: -0.02).encoded()
    static let v4Datagram = PacketBytes.ipv4(body: PacketBytes.udp(source: 50001, destination: 47110, payload: frame))
    static let v6Datagram = PacketBytes.ipv6(body: PacketBytes.udp(source: 50001, destination: 47110, payload: frame))
    static let v4Expected = DecodedPacket.udp(UDPDatagram(
        source: Endpoint(host: "10.0.0.11", port: 50001), destination: Endpoint(host: "10.0.0.1", port: 47110), payload: frame))
    static let v6Expected = DecodedPacket.udp(UDPDatagram(
        source: Endpoint(host: "2001:db8::11", port: 50001), destination: Endpoint(host: "2001:db8::1", port: 47110), payload: frame))

    func decode(_ packet: [UInt8], _ linkType: LinkType) -> DecodedPacket {
        var decoder = PacketDecoder()
        return decoder.decode(packet, linkType: linkType)
    }

    @Test func ethernetIPv4AndIPv6() {
        #expect(decode(PacketBytes.ethernet(etherType: 0x0800, body: Self.v4Datagram), .ethernet) == Self.v4Expected)
        #expect(decode(PacketBytes.ethernet(etherType: 0x86DD, body: Self.v6Datagram), .ethernet) == Self.v6Expected)
    }

    @Test func ethernetWithVLANTagAndPadding() {
        let tagged = PacketBytes.ethernet(etherType: 0x0800, body: Self.v4Datagram, vlan: 42)
        #expect(decode(tagged, .ethernet) == Self.v4Expected)
        // A 20-byte ack padded to Ethernet's minimum: the IP length, not the capture, ends the datagram.
        let ack = HapticAck(echoTMs: 1_767_225_600_071).encoded()
        let padded = PacketBytes.ethernet(etherType: 0x0800, body: PacketBytes.ipv4(
            source: PacketBytes.v4Host, destination: PacketBytes.v4Controller,
            body: PacketBytes.udp(source: 47110, destination: 50001, payload: ack))) + [UInt8](repeating: 0xEE, count: 6)
        #expect(decode(padded, .ethernet) == .udp(UDPDatagram(
            source: Endpoint(host: "10.0.0.1", port: 47110), destination: Endpoint(host: "10.0.0.11", port: 50001), payload: ack)))
    }

    @Test func bsdNullInBothByteOrdersAndLoop() {
        #expect(decode(PacketBytes.le32(2) + Self.v4Datagram, .null) == Self.v4Expected)
        #expect(decode(PacketBytes.be32(2) + Self.v4Datagram, .null) == Self.v4Expected)
        for family: UInt32 in [10, 24, 28, 30] {
            #expect(decode(PacketBytes.le32(family) + Self.v6Datagram, .null) == Self.v6Expected, "AF_INET6 = \(family)")
        }
        #expect(decode(PacketBytes.be32(2) + Self.v4Datagram, .loop) == Self.v4Expected)
        #expect(decode(PacketBytes.be32(24) + Self.v6Datagram, .loop) == Self.v6Expected)
        #expect(decode(PacketBytes.le32(7) + Self.v4Datagram, .null) == .skipped(.notIP))
    }

    @Test func rawIPLinkTypes() {
        for linkType in [LinkType.raw, .linktypeRaw] {
            #expect(decode(Self.v4Datagram, linkType) == Self.v4Expected)
            #expect(decode(Self.v6Datagram, linkType) == Self.v6Expected)
        }
        #expect(decode(Self.v4Datagram, .ipv4) == Self.v4Expected)
        #expect(decode(Self.v6Datagram, .ipv6) == Self.v6Expected)
        #expect(decode(Self.v6Datagram, .ipv4) == .skipped(.notIP))
        #expect(decode([0x50] + Self.v4Datagram.dropFirst(), .raw) == .skipped(.notIP))
    }

    @Test func linuxCookedV1AndV2() {
        #expect(decode(PacketBytes.linuxSLL(protocolType: 0x0800, body: Self.v4Datagram), .linuxSLL) == Self.v4Expected)
        #expect(decode(PacketBytes.linuxSLL(protocolType: 0x86DD, body: Self.v6Datagram), .linuxSLL) == Self.v6Expected)
        #expect(decode(PacketBytes.linuxSLL2(protocolType: 0x0800, body: Self.v4Datagram), .linuxSLL2) == Self.v4Expected)
        #expect(decode(PacketBytes.linuxSLL2(protocolType: 0x86DD, body: Self.v6Datagram), .linuxSLL2) == Self.v6Expected)
        #expect(decode(PacketBytes.linuxSLL2(protocolType: 0x0806, body: [UInt8](repeating: 0, count: 28)), .linuxSLL2) == .skipped(.notIP))
    }

    @Test func ipv4WithOptions() {
        // IHL 7: a record-route option (3, 7, 4, then one empty slot) and an end-of-list pad.
        let options: [UInt8] = [7, 7, 4, 0, 0, 0, 0, 0]
        let packet = PacketBytes.ipv4(options: options, body: PacketBytes.udp(source: 50001, destination: 47110, payload: Self.frame))
        #expect(packet[0] == 0x47)
        #expect(decode(packet, .raw) == Self.v4Expected)
        let location = PacketDecoder.locate(in: packet.withUnsafeBytes { UnsafeRawBufferPointer($0) }, linkType: .raw, transport: .udp)
        #expect(location == .found(TransportLocation(family: .ipv4, sourceAddressOffset: 12, destinationAddressOffset: 16,
                                               sourcePort: 50001, destinationPort: 47110, payloadOffset: 36, payloadCount: 36)))
    }

    @Test func ipv6ExtensionHeadersAreWalked() {
        let udp = PacketBytes.udp(source: 50001, destination: 47110, payload: Self.frame)
        let packet = PacketBytes.ipv6(extensions: [(0, PacketBytes.paddingOptions), (43, PacketBytes.routing), (60, PacketBytes.paddingOptions)],
                                      body: udp)
        #expect(packet[6] == 0)
        #expect(decode(packet, .ipv6) == Self.v6Expected)
        let location = packet.withUnsafeBytes { PacketDecoder.locate(in: $0, linkType: .ipv6, transport: .udp) }
        #expect(location == .found(TransportLocation(family: .ipv6, sourceAddressOffset: 8, destinationAddressOffset: 24,
                                               sourcePort: 50001, destinationPort: 47110, payloadOffset: 40 + 8 + 24 + 8 + 8, payloadCount: 36)))
    }

    @Test func fragmentsAreSkipped() {
        let udp = PacketBytes.udp(source: 50001, destination: 47110, payload: Self.frame)
        #expect(decode(PacketBytes.ipv4(flagsAndOffset: 0x2000, body: udp), .raw) == .skipped(.fragment))  // MF, offset 0
        #expect(decode(PacketBytes.ipv4(flagsAndOffset: 0x0003, body: udp), .raw) == .skipped(.fragment))  // last, offset 24
        #expect(decode(PacketBytes.ipv4(flagsAndOffset: 0x0000, body: udp), .raw) == Self.v4Expected)       // DF clear, whole
        let first = PacketBytes.ipv6(extensions: [(44, PacketBytes.fragmentHeader(offset: 0, more: true))], body: udp)
        let later = PacketBytes.ipv6(extensions: [(0, PacketBytes.paddingOptions), (44, PacketBytes.fragmentHeader(offset: 185, more: false))],
                                     body: Array(Self.frame[0..<8]))
        #expect(decode(first, .ipv6) == .skipped(.fragment))
        #expect(decode(later, .ipv6) == .skipped(.fragment))
    }

    @Test func nonUDPIsSkipped() {
        let tcp = PacketBytes.ipv4(protocolNumber: 6, body: [UInt8](repeating: 0, count: 20))
        let icmp = PacketBytes.ipv4(protocolNumber: 1, body: [8, 0, 0, 0, 0, 1, 0, 1])
        let icmpv6 = PacketBytes.ipv6(nextHeader: 58, body: [128, 0, 0, 0, 0, 1, 0, 1])
        let noNext = PacketBytes.ipv6(nextHeader: 59, extensions: [(60, PacketBytes.paddingOptions)], body: [])
        #expect(decode(PacketBytes.ethernet(etherType: 0x0800, body: tcp), .ethernet) == .skipped(.notUDP))
        #expect(decode(icmp, .ipv4) == .skipped(.notUDP))
        #expect(decode(icmpv6, .raw) == .skipped(.notUDP))
        #expect(decode(noNext, .raw) == .skipped(.notUDP))
        #expect(decode(PacketBytes.ethernet(etherType: 0x0806, body: [UInt8](repeating: 0, count: 28)), .ethernet) == .skipped(.notIP))
    }

    @Test func truncatedPacketsAreSkipped() {
        let ethernet = PacketBytes.ethernet(etherType: 0x0800, body: Self.v4Datagram)
        // Cut inside the Ethernet header, the IP header, the UDP header, and the payload (a short snaplen).
        for cut in [10, 14 + 12, 14 + 20 + 4, ethernet.count - 1] {
            #expect(decode(Array(ethernet.prefix(cut)), .ethernet) == .skipped(.truncated), "cut at \(cut)")
        }
        #expect(decode(Array(Self.v6Datagram.prefix(39)), .ipv6) == .skipped(.truncated))
        let extensionCut = PacketBytes.ipv6(extensions: [(0, PacketBytes.paddingOptions)], body: [])
        #expect(decode(Array(extensionCut.prefix(41)), .ipv6) == .skipped(.truncated))
        // A UDP length shorter than its own header is impossible.
        let badLength = PacketBytes.ipv4(body: PacketBytes.udp(source: 1, destination: 47110, payload: [1, 2], length: 4))
        #expect(decode(badLength, .raw) == .skipped(.truncated))
        #expect(decode([], .linuxSLL) == .skipped(.truncated))
        #expect(decode([0x02, 0, 0], .null) == .skipped(.truncated))
    }

    @Test func unsupportedLinkType() {
        #expect(decode(Self.v4Datagram, LinkType(105)) == .skipped(.unsupportedLinkType))  // 802.11
        #expect(LinkType(105).description == "DLT 105")
        #expect(LinkType.linuxSLL2.description == "LINUX_SLL2")
    }

    @Test func ipv6AddressesAreCompressed() {
        let loopback = [UInt8](repeating: 0, count: 15) + [1]
        let mapped = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 192, 0, 2, 1]
        let packet = PacketBytes.ipv6(source: loopback, destination: mapped,
                                      body: PacketBytes.udp(source: 47110, destination: 9, payload: [0xAB]))
        #expect(decode(packet, .raw) == .udp(UDPDatagram(
            source: Endpoint(host: "::1", port: 47110), destination: Endpoint(host: "::ffff:192.0.2.1", port: 9), payload: [0xAB])))
        #expect(Endpoint(host: "::1", port: 47110).description == "[::1]:47110")
    }

    @Test func emptyPayload() {
        let packet = PacketBytes.ipv4(body: PacketBytes.udp(source: 50001, destination: 47110, payload: []))
        #expect(decode(packet, .ipv4) == .udp(UDPDatagram(
            source: Endpoint(host: "10.0.0.11", port: 50001), destination: Endpoint(host: "10.0.0.1", port: 47110), payload: [])))
    }
}
