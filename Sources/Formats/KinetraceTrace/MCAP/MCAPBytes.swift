/// The parts of the MCAP container (https://mcap.dev/spec) a trace uses:
/// record opcodes, the magic, and little-endian reading and writing.
enum MCAP {
    /// `0x89 M C A P 0 \r \n`: major version 0.
    static let magic: [UInt8] = [0x89, 0x4D, 0x43, 0x41, 0x50, 0x30, 0x0D, 0x0A]

    enum Opcode: UInt8 {
        case header = 0x01, footer = 0x02, schema = 0x03, channel = 0x04, message = 0x05, chunk = 0x06
        case messageIndex = 0x07, chunkIndex = 0x08, attachment = 0x09, attachmentIndex = 0x0A
        case statistics = 0x0B, metadata = 0x0C, metadataIndex = 0x0D, summaryOffset = 0x0E, dataEnd = 0x0F
    }

    /// The MCAP header's profile: these files are kinetrace traces.
    static let profile = "kinetrace"
    /// The metadata record holding the trace header (its JSON Lines text), written before any chunk.
    static let headerMetadataName = "kinetrace-trace-header"
    static let headerMetadataKey = "header"
    /// A footer record: opcode, length, then summary_start, summary_offset_start, summary_crc.
    static let footerRecordBytes = 1 + 8 + 20
}

/// Appends MCAP's little-endian primitives to a byte array.
struct MCAPOutput {
    var bytes: [UInt8] = []

    @inline(__always) mutating func u8(_ v: UInt8) { bytes.append(v) }
    @inline(__always) mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    @inline(__always) mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    @inline(__always) mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    @inline(__always) mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    @inline(__always) mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    @inline(__always) mutating func f32(_ v: Float32) { u32(v.bitPattern) }
    @inline(__always) mutating func f64(_ v: Double) { u64(v.bitPattern) }

    /// A string or byte array: u32 length, then the bytes.
    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { u32(UInt32($0.count)); bytes.append(contentsOf: $0) }
    }

    mutating func lengthPrefixed(_ raw: UnsafeRawBufferPointer) {
        u32(UInt32(raw.count))
        bytes.append(contentsOf: raw)
    }

    /// Opens a record; `close(record:)` fills in its length.
    mutating func open(_ opcode: MCAP.Opcode) -> Int {
        bytes.append(opcode.rawValue)
        let at = bytes.count
        u64(0)
        return at
    }

    mutating func close(record at: Int) { patch64(at, UInt64(bytes.count - at - 8)) }

    /// Opens a u32 byte-length prefix (a map or an array); `close(prefix:)` fills it in.
    mutating func openPrefix() -> Int {
        let at = bytes.count
        u32(0)
        return at
    }

    mutating func close(prefix at: Int) {
        let length = UInt32(bytes.count - at - 4).littleEndian
        withUnsafeBytes(of: length) { raw in for i in 0..<4 { bytes[at + i] = raw[i] } }
    }

    mutating func patch64(_ at: Int, _ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { raw in for i in 0..<8 { bytes[at + i] = raw[i] } }
    }
}

/// Reads MCAP's little-endian primitives from a buffer. Every read returns nil
/// when the buffer ends first, and leaves the position where it was.
struct MCAPInput {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    @inline(__always) private mutating func fixed<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { return nil }
        let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        offset &+= size
        return value
    }

    @inline(__always) mutating func u8() -> UInt8? { fixed(UInt8.self) }
    @inline(__always) mutating func u16() -> UInt16? { fixed(UInt16.self) }
    @inline(__always) mutating func u32() -> UInt32? { fixed(UInt32.self) }
    @inline(__always) mutating func u64() -> UInt64? { fixed(UInt64.self) }
    @inline(__always) mutating func i64() -> Int64? { fixed(Int64.self) }
    @inline(__always) mutating func f64() -> Double? { fixed(UInt64.self).map(Double.init(bitPattern:)) }

    /// A bool byte: nil unless 0 or 1.
    @inline(__always) mutating func bool() -> Bool? {
        guard let byte = u8(), byte <= 1 else { return nil }
        return byte == 1
    }

    /// `count` bytes, not copied.
    @inline(__always) mutating func slice(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, remaining >= count else { return nil }
        let out = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        offset += count
        return out
    }

    /// A u32-length-prefixed run of bytes (a string, a byte array, a map).
    @inline(__always) mutating func prefixed() -> UnsafeRawBufferPointer? {
        let start = offset
        guard let count = u32(), let out = slice(Int(count)) else { offset = start; return nil }
        return out
    }

    /// A u32-length-prefixed UTF-8 string; nil when short or not UTF-8.
    mutating func string() -> String? {
        let start = offset
        guard let raw = prefixed() else { return nil }
        let text = String(decoding: raw, as: UTF8.self)
        // Decoding replaces bad UTF-8; the text is only what the file said if it re-encodes to the same bytes.
        guard text.utf8.elementsEqual(raw) else { offset = start; return nil }
        return text
    }

    /// A `Map<String, String>`; nil when short or malformed.
    mutating func stringMap() -> [String: String]? {
        let start = offset
        guard let raw = prefixed() else { return nil }
        var inner = MCAPInput(raw)
        var out: [String: String] = [:]
        while inner.remaining > 0 {
            guard let key = inner.string(), let value = inner.string() else { offset = start; return nil }
            out[key] = value
        }
        return out
    }
}
