/// Hand-built packets for the tests, written from the RFCs independently of
/// the module's encoder. Checksums are left zero: the decoder ignores them.
enum PacketBytes {
    static let v4Controller: [UInt8] = [10, 0, 0, 11]
    static let v4Host: [UInt8] = [10, 0, 0, 1]
    /// 2001:db8::11 and 2001:db8::1
    static let v6Controller: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x11]
    static let v6Host: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x01]

    static func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: UInt32) -> [UInt8] { be32(v).reversed() }

    static func udp(source: UInt16, destination: UInt16, payload: [UInt8], length: Int? = nil) -> [UInt8] {
        be16(Int(source)) + be16(Int(destination)) + be16(length ?? 8 + payload.count) + [0, 0] + payload
    }

    static func ipv4(source: [UInt8] = v4Controller, destination: [UInt8] = v4Host, protocolNumber: UInt8 = 17,
                     options: [UInt8] = [], flagsAndOffset: Int = 0x4000, body: [UInt8], totalLength: Int? = nil) -> [UInt8] {
        precondition(options.count % 4 == 0)
        let headerLength = 20 + options.count
        return [0x40 | UInt8(headerLength / 4), 0] + be16(totalLength ?? headerLength + body.count)
            + [0x12, 0x34] + be16(flagsAndOffset) + [64, protocolNumber, 0, 0] + source + destination + options + body
    }

    /// `extensions`: (next-header value that names it, its bytes), in order.
    static func ipv6(source: [UInt8] = v6Controller, destination: [UInt8] = v6Host, nextHeader: UInt8 = 17,
                     extensions: [(UInt8, [UInt8])] = [], body: [UInt8]) -> [UInt8] {
        var chain: [UInt8] = []
        var first = nextHeader
        // Each extension header's first byte names the header after it.
        for (index, ext) in extensions.enumerated().reversed() {
            var header = ext.1
            header[0] = index == extensions.count - 1 ? nextHeader : extensions[index + 1].0
            chain = header + chain
        }
        if let firstExtension = extensions.first { first = firstExtension.0 }
        let payload = chain + body
        return [0x60, 0, 0, 0] + be16(payload.count) + [first, 64] + source + destination + payload
    }

    /// An 8-byte hop-by-hop or destination-options header holding a PadN option.
    static let paddingOptions: [UInt8] = [0, 0, 1, 4, 0, 0, 0, 0]
    /// A 24-byte type-0 routing header with one address, segments left 0.
    static let routing: [UInt8] = [0, 2, 0, 0, 0, 0, 0, 0] + v6Host
    static func fragmentHeader(offset: Int, more: Bool) -> [UInt8] {
        [0, 0] + be16(offset << 3 | (more ? 1 : 0)) + [0, 0, 0, 7]
    }

    static func ethernet(etherType: Int, body: [UInt8], vlan: Int? = nil) -> [UInt8] {
        let macs: [UInt8] = [0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01]
        let tag = vlan.map { be16(0x8100) + be16($0) } ?? []
        return macs + tag + be16(etherType) + body
    }

    static func linuxSLL(protocolType: Int, body: [UInt8]) -> [UInt8] {
        // packet type (host), ARPHRD_ETHER, address length 6, address padded to 8, protocol
        be16(0) + be16(1) + be16(6) + [0x02, 0, 0, 0, 0, 0x01, 0, 0] + be16(protocolType) + body
    }

    static func linuxSLL2(protocolType: Int, body: [UInt8]) -> [UInt8] {
        // protocol, reserved, interface index, ARPHRD_ETHER, packet type, address length, address
        be16(protocolType) + [0, 0] + be32(1) + be16(1) + [0, 6] + [0x02, 0, 0, 0, 0, 0x01, 0, 0] + body
    }
}
