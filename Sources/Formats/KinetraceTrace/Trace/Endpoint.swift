/// A transport endpoint: an IP address (v4 or v6, as text) and a UDP port.
/// Written `127.0.0.1:47110` or `[::1]:47110`.
public struct Endpoint: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `a.b.c.d:port` or `[v6]:port`; nil when malformed.
    public init?(_ text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        let hostPart: ArraySlice<UInt8>
        let portPart: ArraySlice<UInt8>
        if utf8.first == UInt8(ascii: "[") {
            guard let close = utf8.firstIndex(of: UInt8(ascii: "]")),
                  close + 1 < utf8.count, utf8[close + 1] == UInt8(ascii: ":") else { return nil }
            hostPart = utf8[1..<close]
            portPart = utf8[(close + 2)...]
        } else {
            guard let colon = utf8.lastIndex(of: UInt8(ascii: ":")),
                  !utf8[..<colon].contains(UInt8(ascii: ":")) else { return nil }
            hostPart = utf8[..<colon]
            portPart = utf8[(colon + 1)...]
        }
        guard !hostPart.isEmpty, !portPart.isEmpty, portPart.count <= 5,
              portPart.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let port = UInt16(String(decoding: portPart, as: UTF8.self)) else { return nil }
        self.host = String(decoding: hostPart, as: UTF8.self)
        self.port = port
    }

    public var isIPv6: Bool { host.contains(":") }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public static func < (a: Endpoint, b: Endpoint) -> Bool {
        (a.host, a.port) < (b.host, b.port)
    }
}
