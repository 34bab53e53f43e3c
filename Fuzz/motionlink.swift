// MotionLink v1: frame and ack decoding (Sources/Wire/KinetraceWire/MotionLinkV1).
// Checks: decoding never traps; a decoded message re-encodes to exactly the
// input bytes (every field is kept bit for bit); facts/describe/restamped agree
// with decode. The first byte picks a mode: odd means "repair the CRC first",
// so the fuzzer gets past the checksum to the field checks.
import KinetraceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMotionLink(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    var bytes = Array(UnsafeBufferPointer(start: data, count: size).dropFirst())
    if data![0] & 1 == 1, bytes.count == MotionFrame.size || bytes.count == HapticAck.size {
        let checked = bytes.count - 4
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<checked])) }
        for i in 0..<4 { bytes[checked + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
    }
    bytes.withUnsafeBytes { raw in
        let facts = MotionLinkV1.facts(raw)
        do throws(WireError) {
            let message = try MotionLinkV1.decode(raw)
            invariant(MotionLinkV1.encode(message) == bytes, "decode→encode changed the bytes")
            invariant(facts.error == nil, "facts report an error for bytes that decode")
            switch message {
            case .frame(let frame):
                invariant(bytes.count == MotionFrame.size && frame.firstNonFiniteField == nil, "a frame with a non-finite field decoded")
                invariant(facts.senderTimeMs == frame.tMs, "facts' time differs from the frame's")
                let restamped = MotionLinkV1.restamped(raw, timeMs: frame.tMs &+ 1) ?? []
                let again = restamped.withUnsafeBytes { try? MotionFrame.decode($0) }
                invariant(again?.tMs == frame.tMs &+ 1 && again?.ax.bitPattern == frame.ax.bitPattern,
                          "restamping a valid frame did not give the same frame with the new time")
            case .ack(let ack):
                invariant(bytes.count == HapticAck.size, "an ack of the wrong size decoded")
                invariant((0...1).contains(ack.intensity) && (0...1).contains(ack.sharpness), "an ack out of [0, 1] decoded")
                invariant(facts.echoTimeMs == ack.echoTMs, "facts' echo time differs from the ack's")
            }
        } catch {
            invariant(error.offset >= 0 && error.offset <= bytes.count, "error offset \(error.offset) outside \(bytes.count) bytes")
            invariant(facts.error == error, "facts' error \(String(describing: facts.error)) differs from decode's \(error)")
            invariant(MotionLinkV1.restamped(raw, timeMs: 1) == nil, "restamped accepted bytes that do not decode")
        }
        var visitor = CountingVisitor()
        MotionLinkV1.describe(raw, into: &visitor)
        invariant(visitor.kinds == 1, "describe named \(visitor.kinds) kinds")
    }
    return 0
}

/// Counts what `describe` reports (it must always name exactly one kind).
struct CountingVisitor: DecodedFieldVisitor {
    var kinds = 0, fields = 0
    mutating func kind(_ name: String) { kinds += 1 }
    mutating func field(_ name: String, _ value: UInt64) { fields += 1 }
    mutating func field(_ name: String, _ value: UInt32) { fields += 1 }
    mutating func field(_ name: String, _ value: Float32) { fields += 1 }
    mutating func field(_ name: String, _ value: Double) { fields += 1 }
    mutating func field(_ name: String, _ value: String) { fields += 1 }
}
