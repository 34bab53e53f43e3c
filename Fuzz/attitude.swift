// attitude-stream (Sources/Wire/KinetraceWire/AttitudeStream): the byte-stream
// framer and the 12-byte record decoder. The first byte sets the append size.
// Checks: framed records are 12 bytes, contiguous from offset 0 and the bytes
// appended; what finish() returns is the short tail; a decoded record
// re-encodes to its bytes and lies within the spec's ranges; facts and
// describe agree with decode.
import KinetraceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAttitude(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let step = Int(data![0] % 32) + 1
    let bytes = Array(UnsafeBufferPointer(start: data! + 1, count: size - 1))
    var framer = AttitudeStream.makeFramer()
    var offset = 0
    var at = 0
    func check(_ message: FramedMessage) {
        invariant(message.offset == offset, "record at \(message.offset), expected \(offset)")
        invariant(Array(bytes[message.offset..<min(message.offset + message.bytes.count, bytes.count)]) == message.bytes,
                  "framed bytes differ from the input at \(message.offset)")
        offset += message.bytes.count
        message.bytes.withUnsafeBytes { raw in
            let facts = AttitudeStream.facts(raw)
            var visitor = CountingVisitor()
            AttitudeStream.describe(raw, into: &visitor)
            invariant(visitor.kinds == 1, "describe named \(visitor.kinds) kinds")
            do throws(WireError) {
                let record = try AttitudeStream.decode(raw)
                invariant(record.encoded() == message.bytes, "decode→encode changed the bytes")
                invariant(abs(record.roll) <= AttitudeRecord.piFloat32 && abs(record.pitch) <= AttitudeRecord.halfPiFloat32
                          && abs(record.yaw) <= AttitudeRecord.piFloat32, "a record out of range decoded: \(record)")
                invariant(facts.error == nil, "facts report an error for a record that decodes")
            } catch {
                invariant(facts.error == error, "facts' error differs from decode's")
                invariant(error.offset >= 0 && error.offset <= raw.count, "error offset outside the record")
            }
        }
    }
    while at < bytes.count {
        framer.append(Array(bytes[at..<min(at + step, bytes.count)]))
        at += step
        do throws(WireError) {
            while let message = try framer.next() {
                invariant(message.bytes.count == AttitudeRecord.size, "a framed record of \(message.bytes.count) bytes")
                check(message)
            }
        } catch {
            invariant(false, "the fixed-length framer threw: \(error)")
        }
    }
    if let tail = framer.finish() {
        invariant(tail.bytes.count < AttitudeRecord.size && tail.bytes.count > 0, "finish gave \(tail.bytes.count) bytes")
        check(tail)
    }
    invariant(offset == bytes.count, "framing covered \(offset) of \(bytes.count) bytes")
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
