/// CRC-32/ISO-HDLC (zlib's `crc32`): reflected polynomial 0xEDB88320,
/// init and xorout 0xFFFFFFFF. Check value of "123456789" is 0xCBF43926.
///
/// Slicing-by-16: sixteen 256-entry tables let the loop consume sixteen
/// bytes per step, so a frame's 32 checked bytes take two dependent steps
/// instead of 32; that is what keeps frame validation fast.
@usableFromInline package enum CRC32 {
    /// The CRC of `bytes`.
    @inlinable
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, bytes)
    }

    /// The CRC of `bytes`.
    @inlinable
    package static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var array = Array(bytes)
        return array.withUnsafeMutableBytes { update(0, UnsafeRawBufferPointer($0)) }
    }

    /// Continues a CRC over more bytes: `update(checksum(a), b) == checksum(a + b)`.
    @inlinable
    package static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        let table = crc32SlicingTables
        var c = ~crc
        var index = 0
        let count = bytes.count
        @inline(__always) func word(_ offset: Int) -> UInt32 {
            UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }
        @inline(__always) func lookup(_ t: Int, _ w: UInt32) -> UInt32 {
            table[t &* 256 &+ Int(w & 0xFF)] ^ table[(t &- 1) &* 256 &+ Int((w >> 8) & 0xFF)]
                ^ table[(t &- 2) &* 256 &+ Int((w >> 16) & 0xFF)] ^ table[(t &- 3) &* 256 &+ Int(w >> 24)]
        }
        while count &- index >= 16 {
            let w0 = word(index) ^ c, w1 = word(index &+ 4), w2 = word(index &+ 8), w3 = word(index &+ 12)
            c = (lookup(15, w0) ^ lookup(11, w1)) ^ (lookup(7, w2) ^ lookup(3, w3))
            index &+= 16
        }
        while index < count {
            c = table[Int((c ^ UInt32(bytes[index])) & 0xFF)] ^ (c >> 8)
            index &+= 1
        }
        return ~c
    }
}

/// The slicing tables, built once and never freed (16 KiB).
@usableFromInline
nonisolated(unsafe) let crc32SlicingTables: UnsafeMutablePointer<UInt32> = makeCRC32SlicingTables()

private func makeCRC32SlicingTables() -> UnsafeMutablePointer<UInt32> {
    let base = UnsafeMutablePointer<UInt32>.allocate(capacity: 16 * 256)
    for n in 0..<256 {
        var c = UInt32(n)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        base[n] = c
    }
    // Table k advances a byte through k further zero bytes.
    for n in 0..<256 {
        var c = base[n]
        for slice in 1..<16 {
            c = base[Int(c & 0xFF)] ^ (c >> 8)
            base[slice * 256 + n] = c
        }
    }
    return base
}
