/// One record of the stdio adapter framing (specs/stdio-adapter-v1.md): how
/// `kinetrace replay --exec` talks to a host that has no network front.
///
/// Layout: u32 length L (bytes that follow), u8 kind, u8 flags (0), u16
/// controller id, then L − 4 payload bytes. The framing's integers are
/// big-endian (network order), unlike MotionLink payloads, which it carries
/// untouched.
public struct StdioRecord: Hashable, Sendable {
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// A datagram from a controller, written to the host's stdin.
        public static let controllerToHost = Kind(rawValue: 0x01)
        /// A datagram for a controller, written by the host to its stdout.
        public static let hostToController = Kind(rawValue: 0x02)
        public var description: String { "0x" + String(rawValue, radix: 16) }
    }

    /// Bytes before the payload.
    public static let headerSize = 8
    /// L counts kind, flags and controller id, so it is at least 4.
    public static let minimumLength: UInt32 = 4
    public static let maximumPayload = 65_535

    public var kind: Kind
    public var controller: UInt16
    public var payload: [UInt8]

    public init(kind: Kind, controller: UInt16, payload: [UInt8]) {
        self.kind = kind
        self.controller = controller
        self.payload = payload
    }

    /// The record's bytes. Payloads longer than `maximumPayload` are a programming error.
    public func encoded() -> [UInt8] {
        precondition(payload.count <= Self.maximumPayload, "a stdio record carries at most 65535 payload bytes")
        var out: [UInt8] = []
        out.reserveCapacity(Self.headerSize + payload.count)
        let length = UInt32(payload.count + 4)
        out.append(contentsOf: [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
        out.append(kind.rawValue)
        out.append(0)
        out.append(contentsOf: [UInt8(controller >> 8), UInt8(controller & 0xFF)])
        out.append(contentsOf: payload)
        return out
    }
}

/// Splits a byte stream into stdio records as bytes arrive, in any chunking.
/// Errors carry the stream offset of the offending record.
public struct StdioRecordDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    /// Stream offset of `buffer[start]`.
    public private(set) var offset = 0

    public init() {}

    /// Bytes received that do not yet form a whole record.
    public var pendingBytes: Int { buffer.count - start }

    public mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// The next complete record, nil when more bytes are needed.
    public mutating func next() throws(WireError) -> StdioRecord? {
        guard buffer.count - start >= StdioRecord.headerSize else { return nil }
        let length = buffer[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard length >= StdioRecord.minimumLength, length <= UInt32(StdioRecord.maximumPayload + 4) else {
            throw WireError(.invalidLength, offset: offset, expected: "a record length from 4 to 65539, found \(length)")
        }
        guard buffer[start + 5] == 0 else {
            throw WireError(.outOfRange, offset: offset + 5, expected: "flags 0, found \(buffer[start + 5])")
        }
        let total = 4 + Int(length)
        guard buffer.count - start >= total else { return nil }
        let record = StdioRecord(
            kind: StdioRecord.Kind(rawValue: buffer[start + 4]),
            controller: UInt16(buffer[start + 6]) << 8 | UInt16(buffer[start + 7]),
            payload: Array(buffer[start + StdioRecord.headerSize..<start + total]))
        start += total
        offset += total
        if start > 65_536 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return record
    }
}
