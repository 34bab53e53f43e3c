/// One record of the stdio adapter framing (specs/stdio-adapter-v1.md): how
/// `kinetrace replay --exec` talks to a host that has no network front.
///
/// Layout: u32 length L (bytes that follow), u8 kind, u8 flags (0), u16
/// controller id, then L − 4 payload bytes. The framing's integers are
/// big-endian (network order), unlike MotionLink payloads, which it carries
/// untouched.
package struct StdioRecord: Hashable, Sendable {
    package struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// A datagram from a controller, written to the host's stdin.
        package static let controllerToHost = Kind(rawValue: 0x01)
        /// A datagram for a controller, written by the host to its stdout.
        package static let hostToController = Kind(rawValue: 0x02)
        /// A decision the host made about a controller, written to its stdout: the
        /// observation channel for decisions with no reply on the wire (SA-OBS-*).
        package static let observation = Kind(rawValue: 0x03)
        package var description: String { "0x" + String(rawValue, radix: 16) }
    }

    /// Bytes before the payload.
    package static let headerSize = 8
    /// L counts kind, flags and controller id, so it is at least 4.
    package static let minimumLength: UInt32 = 4
    package static let maximumPayload = 65_535

    package var kind: Kind
    package var controller: UInt16
    package var payload: [UInt8]

    package init(kind: Kind, controller: UInt16, payload: [UInt8]) {
        self.kind = kind
        self.controller = controller
        self.payload = payload
    }

    /// The record's bytes. Payloads longer than `maximumPayload` are a programming error.
    package func encoded() -> [UInt8] {
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

/// The stdio framing's record boundary: a big-endian u32 length, then that many bytes.
package struct StdioRecordBoundary: RecordBoundary, Sendable {
    package init() {}

    package func recordLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int? {
        // Judged as soon as its bytes are in: a bad length must not wait for a header that may never come.
        guard bytes.count >= 4 else { return nil }
        let length = UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
        guard length >= StdioRecord.minimumLength, length <= UInt32(StdioRecord.maximumPayload + 4) else {
            throw WireError(.invalidLength, offset: offset, expected: "a record length from 4 to 65539, found \(length)")
        }
        guard bytes.count >= 6 else { return nil }
        guard bytes[5] == 0 else {
            throw WireError(.outOfRange, offset: offset + 5, expected: "flags 0, found \(bytes[5])")
        }
        return 4 + Int(length)
    }
}

/// Splits a byte stream into stdio records as bytes arrive, in any chunking.
/// Errors carry the stream offset of the offending record.
package struct StdioRecordDecoder: Sendable {
    private var framer = StreamFramer(StdioRecordBoundary())

    package init() {}

    /// Stream offset of the next record.
    package var offset: Int { framer.offset }

    /// Bytes received that do not yet form a whole record.
    package var pendingBytes: Int { framer.pendingBytes }

    package mutating func append(_ bytes: some Sequence<UInt8>) {
        var array = Array(bytes)
        array.withUnsafeMutableBytes { framer.append(UnsafeRawBufferPointer($0)) }
    }

    /// The next complete record, nil when more bytes are needed.
    package mutating func next() throws(WireError) -> StdioRecord? {
        guard let framed = try framer.next() else { return nil }
        let b = framed.bytes
        return StdioRecord(kind: StdioRecord.Kind(rawValue: b[4]), controller: UInt16(b[6]) << 8 | UInt16(b[7]),
                           payload: Array(b[StdioRecord.headerSize...]))
    }
}
