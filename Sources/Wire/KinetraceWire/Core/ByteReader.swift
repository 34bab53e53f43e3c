/// A little-endian reader over borrowed bytes, in the style of SwiftNIO's
/// `ByteBuffer`: `get…(at:)` leaves `readerIndex` alone, `read…()` advances
/// it, and both return nil rather than trap when the input is too short.
///
/// The reader borrows its bytes; use it only inside the `withUnsafeBytes`
/// scope that produced them.
public struct ByteReader {
    public let bytes: UnsafeRawBufferPointer
    @usableFromInline var _readerIndex: Int = 0
    /// Offset of the next byte `read…` consumes.
    @inlinable public var readerIndex: Int { _readerIndex }

    @inlinable public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Bytes left to read.
    @inlinable public var readableBytes: Int { bytes.count - readerIndex }

    @inlinable
    public func getInteger<T: FixedWidthInteger>(at offset: Int, as: T.Type = T.self) -> T? {
        guard offset >= 0, offset <= bytes.count - MemoryLayout<T>.size else { return nil }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    @inlinable
    public func getFloat32(at offset: Int) -> Float32? {
        getInteger(at: offset, as: UInt32.self).map(Float32.init(bitPattern:))
    }

    @inlinable
    public func getBytes(at offset: Int, length: Int) -> [UInt8]? {
        guard offset >= 0, length >= 0, offset <= bytes.count - length else { return nil }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]))
    }

    @inlinable
    public mutating func readInteger<T: FixedWidthInteger>(as: T.Type = T.self) -> T? {
        guard let value = getInteger(at: readerIndex, as: T.self) else { return nil }
        _readerIndex += MemoryLayout<T>.size
        return value
    }

    @inlinable
    public mutating func readFloat32() -> Float32? {
        guard let value = getFloat32(at: readerIndex) else { return nil }
        _readerIndex += 4
        return value
    }

    @inlinable
    public mutating func readBytes(length: Int) -> [UInt8]? {
        guard let value = getBytes(at: readerIndex, length: length) else { return nil }
        _readerIndex += length
        return value
    }

    @inlinable
    public mutating func moveReaderIndex(forwardBy count: Int) -> Bool {
        guard count >= 0, count <= readableBytes else { return false }
        _readerIndex += count
        return true
    }
}

/// The matching little-endian writer over a growable byte array.
public struct ByteWriter {
    @usableFromInline var _bytes: [UInt8]
    @inlinable public var bytes: [UInt8] { _bytes }

    @inlinable public init(capacity: Int = 64) {
        _bytes = []
        _bytes.reserveCapacity(capacity)
    }

    @inlinable
    public mutating func writeInteger<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { _bytes.append(contentsOf: $0) }
    }

    @inlinable
    public mutating func writeFloat32(_ value: Float32) { writeInteger(value.bitPattern) }

    /// Appends the CRC-32 of everything written so far.
    @inlinable
    public mutating func writeChecksum() {
        let crc = _bytes.withUnsafeBytes { CRC32.checksum($0) }
        writeInteger(crc)
    }
}
