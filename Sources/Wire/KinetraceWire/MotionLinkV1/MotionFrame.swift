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

    /// Decodes and validates (ML-FRAME-1..4): length 36, matching CRC, all six floats finite.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> MotionFrame {
        guard bytes.count == size else {
            throw WireError(.invalidLength, offset: bytes.count, expected: "36 bytes")
        }
        let reader = ByteReader(bytes)
        // Lengths are checked above, so the optionals below are never nil.
        let check = reader.getInteger(at: checkedSize, as: UInt32.self)!
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<checkedSize])) == check else {
            throw WireError(.checksumMismatch, offset: checkedSize, expected: "CRC-32 of bytes 0..<32")
        }
        let frame = MotionFrame(
            tMs: reader.getInteger(at: 0, as: UInt64.self)!,
            ax: reader.getFloat32(at: 8)!, ay: reader.getFloat32(at: 12)!, az: reader.getFloat32(at: 16)!,
            wx: reader.getFloat32(at: 20)!, wy: reader.getFloat32(at: 24)!, wz: reader.getFloat32(at: 28)!)
        if let field = frame.firstNonFiniteField {
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
