/// The host's answer to a trigger, host to controller (ML-ACK-*). 20 bytes,
/// little-endian: `echo_t_ms` u64 · `intensity` f32 · `sharpness` f32 · CRC-32 of bytes 0..<16.
public struct HapticAck: Hashable, Sendable {
    public static let size = 20
    public static let checkedSize = 16

    /// The `t_ms` of the MotionFrame that triggered this ack.
    public var echoTMs: UInt64
    /// Haptic intensity and sharpness, each in [0, 1]; the paper uses 1.0 for both.
    public var intensity: Float32
    public var sharpness: Float32

    @inlinable
    public init(echoTMs: UInt64, intensity: Float32 = 1, sharpness: Float32 = 1) {
        self.echoTMs = echoTMs
        self.intensity = intensity
        self.sharpness = sharpness
    }

    /// Decodes and validates: length 20, matching CRC, intensity and sharpness in [0, 1].
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> HapticAck {
        guard bytes.count == size else {
            throw WireError(.invalidLength, offset: bytes.count, expected: "20 bytes")
        }
        let reader = ByteReader(bytes)
        let check = reader.getInteger(at: checkedSize, as: UInt32.self)!
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<checkedSize])) == check else {
            throw WireError(.checksumMismatch, offset: checkedSize, expected: "CRC-32 of bytes 0..<16")
        }
        let ack = HapticAck(
            echoTMs: reader.getInteger(at: 0, as: UInt64.self)!,
            intensity: reader.getFloat32(at: 8)!, sharpness: reader.getFloat32(at: 12)!)
        for (offset, name, value) in [(8, "intensity", ack.intensity), (12, "sharpness", ack.sharpness)] {
            guard value.isFinite else { throw WireError(.nonFinite, offset: offset, expected: "a finite \(name)") }
            guard value >= 0, value <= 1 else { throw WireError(.outOfRange, offset: offset, expected: "\(name) in [0, 1]") }
        }
        return ack
    }

    @inlinable
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.writeInteger(echoTMs)
        writer.writeFloat32(intensity)
        writer.writeFloat32(sharpness)
        writer.writeChecksum()
        return writer.bytes
    }
}
