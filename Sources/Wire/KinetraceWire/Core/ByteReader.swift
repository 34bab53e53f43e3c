/// A little-endian reader over borrowed bytes, in the style of SwiftNIO's
/// `ByteBuffer`: `get…(at:)` leaves `readerIndex` alone, `read…()` advances
/// it, and both return nil rather than trap when the input is too short.
///
/// The reader borrows its bytes; use it only inside the `withUnsafeBytes`
/// scope that produced them.
@usableFromInline package struct ByteReader {
    @usableFromInline package let bytes: UnsafeRawBufferPointer
    @usableFromInline var _readerIndex: Int = 0
    /// Offset of the next byte `read…` consumes.
    @inlinable package var readerIndex: Int { _readerIndex }

    @inlinable package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Bytes left to read.
    @inlinable package var readableBytes: Int { bytes.count - readerIndex }

    @inlinable
    package func getInteger<T: FixedWidthInteger>(at offset: Int, as: T.Type = T.self) -> T? {
        guard offset >= 0, offset <= bytes.count - MemoryLayout<T>.size else { return nil }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    @inlinable
    package func getFloat32(at offset: Int) -> Float32? {
        getInteger(at: offset, as: UInt32.self).map(Float32.init(bitPattern:))
    }

    @inlinable
    package func getBytes(at offset: Int, length: Int) -> [UInt8]? {
        guard offset >= 0, length >= 0, offset <= bytes.count - length else { return nil }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]))
    }

    @inlinable
    package mutating func readInteger<T: FixedWidthInteger>(as: T.Type = T.self) -> T? {
        guard let value = getInteger(at: readerIndex, as: T.self) else { return nil }
        _readerIndex += MemoryLayout<T>.size
        return value
    }

    @inlinable
    package mutating func readFloat32() -> Float32? {
        guard let value = getFloat32(at: readerIndex) else { return nil }
        _readerIndex += 4
        return value
    }

    @inlinable
    package mutating func readBytes(length: Int) -> [UInt8]? {
        guard let value = getBytes(at: readerIndex, length: length) else { return nil }
        _readerIndex += length
        return value
    }

    @inlinable
    package mutating func moveReaderIndex(forwardBy count: Int) -> Bool {
        guard count >= 0, count <= readableBytes else { return false }
        _readerIndex += count
        return true
    }
}

/// The matching little-endian writer over a growable byte array.
@usableFromInline package struct ByteWriter {
    @usableFromInline var _bytes: [UInt8]
    @inlinable package var bytes: [UInt8] { _bytes }

    @inlinable package init(capacity: Int = 64) {
        _bytes = []
        _bytes.reserveCapacity(capacity)
    }

    @inlinable
    package mutating func writeInteger<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { _bytes.append(contentsOf: $0) }
    }

    @inlinable
    package mutating func writeFloat32(_ value: Float32) { writeInteger(value.bitPattern) }

    /// Appends the CRC-32 of everything written so far.
    @inlinable
    package mutating func writeChecksum() {
        let crc = _bytes.withUnsafeBytes { CRC32.checksum($0) }
        writeInteger(crc)
    }
}
