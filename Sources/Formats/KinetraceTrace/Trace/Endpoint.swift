#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A transport endpoint: an IP address (v4 or v6, as text) and a UDP port.
/// Written `127.0.0.1:47110` or `[::1]:47110`.
package struct Endpoint: Hashable, Sendable, Comparable, CustomStringConvertible {
    package var host: String
    package var port: UInt16

    package init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `a.b.c.d:port` or `[v6]:port`; nil when malformed.
    package init?(_ text: some StringProtocol) {
        var text = String(text)
        guard let parsed = text.withUTF8({ Endpoint(utf8: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = parsed
    }

    /// Parses the UTF-8 text of an endpoint.
    package init?(utf8: UnsafeRawBufferPointer) {
        let count = utf8.count
        guard count >= 3 else { return nil }
        let hostStart: Int, hostEnd: Int, portStart: Int
        if utf8[0] == UInt8(ascii: "[") {
            guard let close = utf8.firstIndex(of: UInt8(ascii: "]")), close + 1 < count,
                  utf8[close + 1] == UInt8(ascii: ":") else { return nil }
            hostStart = 1
            hostEnd = close
            portStart = close + 2
        } else {
            guard let colon = utf8.lastIndex(of: UInt8(ascii: ":")) else { return nil }
            for i in 0..<colon where utf8[i] == UInt8(ascii: ":") || utf8[i] == UInt8(ascii: "[") || utf8[i] == UInt8(ascii: "]") {
                return nil  // a bare IPv6 address must be bracketed
            }
            hostStart = 0
            hostEnd = colon
            portStart = colon + 1
        }
        guard hostEnd > hostStart, portStart < count, count - portStart <= 5 else { return nil }
        var port = 0
        for i in portStart..<count {
            let digit = Int(utf8[i]) - 0x30
            guard digit >= 0 && digit <= 9 else { return nil }
            port = port * 10 + digit
        }
        guard port <= 65535 else { return nil }
        self.host = String(decoding: UnsafeRawBufferPointer(rebasing: utf8[hostStart..<hostEnd]), as: UTF8.self)
        self.port = UInt16(port)
    }

    package var isIPv6: Bool {
        var host = host
        return host.withUTF8 { $0.contains(UInt8(ascii: ":")) }
    }

    package var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    package static func < (a: Endpoint, b: Endpoint) -> Bool {
        (a.host, a.port) < (b.host, b.port)
    }
}

/// Remembers recently parsed endpoints by their text, so a trace's few
/// hundred distinct endpoints are parsed once rather than on every line.
/// Direct-mapped on an FNV-1a hash of the text; texts of up to 48 bytes
/// are cached, longer ones (never valid in practice) are parsed each time.
/// 256 slots take about 20 KB: a merge of a thousand inputs asks for fewer.
struct EndpointCache {
    static let defaultSlotCount = 256
    private static let maxText = 48
    private let slotMask: Int
    private var lengths: [Int]
    private var texts: [UInt8]
    private var endpoints: [Endpoint]

    /// `slots` is rounded down to a power of two, from 1 to `maximum` (256 unless a reader of a
    /// stadium's thousands of controllers asks for more).
    init(slots: Int = defaultSlotCount, maximum: Int = defaultSlotCount) {
        var count = 1
        while count * 2 <= min(max(slots, 1), maximum) { count *= 2 }
        slotMask = count - 1
        lengths = [Int](repeating: -1, count: count)
        texts = [UInt8](repeating: 0, count: count * Self.maxText)
        endpoints = [Endpoint](repeating: Endpoint(host: "", port: 0), count: count)
    }

    mutating func endpoint(for utf8: UnsafeRawBufferPointer) -> Endpoint? {
        guard utf8.count <= Self.maxText else { return Endpoint(utf8: utf8) }
        var hash: UInt32 = 2_166_136_261
        for byte in utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let slot = Int(hash) & slotMask
        let hit = lengths[slot] == utf8.count && texts.withUnsafeBytes {
            memcmp($0.baseAddress! + slot * Self.maxText, utf8.baseAddress!, utf8.count) == 0
        }
        if hit { return endpoints[slot] }
        guard let endpoint = Endpoint(utf8: utf8) else { return nil }
        lengths[slot] = utf8.count
        texts.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: slot * Self.maxText).copyMemory(from: utf8.baseAddress!, byteCount: utf8.count) }
        endpoints[slot] = endpoint
        return endpoint
    }
}
