/// A link-layer header type as libpcap reports it (`pcap_datalink`, a DLT_
/// value). For the types read here it equals the file's LINKTYPE_ value,
/// except raw IP: files say LINKTYPE_RAW (101), libpcap says DLT_RAW (12).
package struct LinkType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package var rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }
    package init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// BSD loopback: a 4-byte address family in the capturing host's byte order.
    package static let null = LinkType(0)
    /// Ethernet II (and 802.1Q-tagged frames).
    package static let ethernet = LinkType(1)
    /// Raw IPv4 or IPv6, as DLT_RAW on every platform but OpenBSD.
    package static let raw = LinkType(12)
    /// Raw IPv4 or IPv6, as the file header's LINKTYPE_RAW.
    package static let linktypeRaw = LinkType(101)
    /// OpenBSD loopback: like `null`, but the family is big-endian.
    package static let loop = LinkType(108)
    /// Linux "any" device cooked header, version 1 (16 bytes).
    package static let linuxSLL = LinkType(113)
    /// Raw IPv4 only.
    package static let ipv4 = LinkType(228)
    /// Raw IPv6 only.
    package static let ipv6 = LinkType(229)
    /// Linux cooked header, version 2 (20 bytes).
    package static let linuxSLL2 = LinkType(276)

    /// The link types `PacketDecoder` understands.
    package static let supported: [LinkType] = [.null, .ethernet, .raw, .linktypeRaw, .loop, .linuxSLL, .ipv4, .ipv6, .linuxSLL2]

    /// libpcap's DLT name for the supported types (`EN10MB`), else `DLT n`.
    package var description: String {
        switch self {
        case .null: return "NULL"
        case .ethernet: return "EN10MB"
        case .raw, .linktypeRaw: return "RAW"
        case .loop: return "LOOP"
        case .linuxSLL: return "LINUX_SLL"
        case .ipv4: return "IPV4"
        case .ipv6: return "IPV6"
        case .linuxSLL2: return "LINUX_SLL2"
        default: return "DLT \(rawValue)"
        }
    }
}
