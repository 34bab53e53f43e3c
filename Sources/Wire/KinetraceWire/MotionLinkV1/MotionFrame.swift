/// One IMU sample, controller to host (ML-FRAME-*). 36 bytes, little-endian:
/// `t_ms` u64 · `ax ay az` f32 (g) · `wx wy wz` f32 (rad/s) · CRC-32 of bytes 0..<32.
public struct MotionFrame: Hashable, Sendable {
    public static let size = 36
    /// Bytes covered by the CRC; the CRC itself sits right after them.
    public static let checkedSize = 32

    /// Sender wall clock, milliseconds since the UNIX epoch.
    public var tMs: UInt64
    /// User acceleration, g (gravity removed).
    public var ax: Float32, ay: Float32, az: Float32
    /// Rotation rate, rad/s.
    public var wx: Float32, wy: Float32, wz: Float32

    @inlinable
    public init(tMs: UInt64, ax: Float32 = 0, ay: Float32 = 0, az: Float32 = 0,
                wx: Float32 = 0, wy: Float32 = 0, wz: Float32 = 0) {
        self.tMs = tMs
        self.ax = ax; self.ay = ay; self.az = az
        self.wx = wx; self.wy = wy; self.wz = wz
    }

    /// The six float fields in wire order.
    @inlinable public var values: [Float32] { [ax, ay, az, wx, wy, wz] }
    /// Wire names of the six float fields, in wire order.
    public static let valueNames = ["ax", "ay", "az", "wx", "wy", "wz"]

    /// Decodes and validates (ML-VALID-1): length 36, matching CRC, all six floats finite.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> MotionFrame {
        guard bytes.count == size else {
            throw WireError(.invalidLength, offset: bytes.count, expected: "36 bytes")
        }
        // The hot path of every reader: plain loads at known offsets (the
        // length is checked above), rather than ByteReader's optionals.
        @inline(__always) func word(_ offset: Int) -> UInt32 {
            UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<checkedSize])) == word(checkedSize) else {
            throw WireError(.checksumMismatch, offset: checkedSize, expected: "CRC-32 of bytes 0..<32")
        }
        let bits = (word(8), word(12), word(16), word(20), word(24), word(28))
        // A float is NaN or infinite exactly when its exponent bits are all ones.
        let exponent: UInt32 = 0x7F80_0000
        let anyNonFinite = (bits.0 & exponent == exponent) || (bits.1 & exponent == exponent)
            || (bits.2 & exponent == exponent) || (bits.3 & exponent == exponent)
            || (bits.4 & exponent == exponent) || (bits.5 & exponent == exponent)
        let frame = MotionFrame(
            tMs: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
            ax: Float32(bitPattern: bits.0), ay: Float32(bitPattern: bits.1), az: Float32(bitPattern: bits.2),
            wx: Float32(bitPattern: bits.3), wy: Float32(bitPattern: bits.4), wz: Float32(bitPattern: bits.5))
        if anyNonFinite, let field = frame.firstNonFiniteField {
            throw WireError(.nonFinite, offset: 8 + 4 * field, expected: "a finite \(valueNames[field])")
        }
        return frame
    }

    /// Index (0...5) of the first NaN or infinite float field, if any.
    @inlinable
    public var firstNonFiniteField: Int? {
        if !ax.isFinite { return 0 }
        if !ay.isFinite { return 1 }
        if !az.isFinite { return 2 }
        if !wx.isFinite { return 3 }
        if !wy.isFinite { return 4 }
        if !wz.isFinite { return 5 }
        return nil
    }

    /// The 36 wire bytes, with a correct CRC.
    @inlinable
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.writeInteger(tMs)
        for value in [ax, ay, az, wx, wy, wz] { writer.writeFloat32(value) }
        writer.writeChecksum()
        return writer.bytes
    }
}

extension GestureTracker {
    /// Feeds one valid frame; invalid frames must not reach the tracker (ML-VALID-2).
    /// Without arrival times there is no resynchronisation (ML-STATE-4): the rule as ML-GESTURE-2 states it.
    @inlinable
    package mutating func accept(_ frame: MotionFrame, from controller: Controller) -> GestureVerdict {
        accept(senderTimeMs: frame.tMs, value: Double(frame.ay), from: controller)
    }
}
