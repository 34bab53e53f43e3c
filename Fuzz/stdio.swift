// The stdio adapter's record decoder (Sources/Wire/KinetraceWire/StdioAdapter)
// and the observation payloads it carries.
// The first byte sets how the rest is cut into appends (as reads from a pipe
// would cut it). Checks: every record re-encodes to exactly the bytes it was
// framed from, records tile the input from offset 0 without overlap, consumed
// plus pending bytes never exceed what was appended, cutting the input
// differently gives the same records and error, and a decoded observation
// re-encodes to text that decodes to the same observation.
import KinetraceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStdio(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let step = Int(data![0] % 16) + 1
    let bytes = Array(UnsafeBufferPointer(start: data! + 1, count: size - 1))
    let cut = decodeAll(bytes, step: step)
    let whole = decodeAll(bytes, step: max(bytes.count, 1))
    invariant(cut.records == whole.records, "cutting the input into \(step)-byte reads changed the records")
    invariant(cut.error == whole.error, "cutting the input changed the error: \(String(describing: cut.error)) vs \(String(describing: whole.error))")
    var offset = 0
    for record in cut.records {
        let encoded = record.encoded()
        invariant(Array(bytes[offset..<min(offset + encoded.count, bytes.count)]) == encoded,
                  "record at \(offset) does not re-encode to its bytes")
        offset += encoded.count
        if record.kind == .observation {
            do throws(WireError) {
                let observation = try Observation.decode(record.payload)
                invariant(observation.values.allSatisfy(\.isFinite), "an observation with a non-finite value decoded")
                let again = try? Observation.decode(observation.encoded())
                invariant(again == observation, "observation did not survive encode→decode: \(observation)")
            } catch {
                invariant(error.offset >= 0 && error.offset <= record.payload.count, "observation error offset \(error.offset) outside the payload")
            }
        }
    }
    invariant(offset == cut.consumed, "records cover \(offset) bytes, the decoder says \(cut.consumed)")
    invariant(cut.consumed + cut.pending <= bytes.count, "consumed \(cut.consumed) + pending \(cut.pending) > \(bytes.count) appended")
    if cut.error == nil { invariant(cut.consumed + cut.pending == bytes.count, "bytes lost without an error") }
    return 0
}

struct Decoded {
    var records: [StdioRecord] = []
    var error: WireError?
    var consumed = 0
    var pending = 0
}

func decodeAll(_ bytes: [UInt8], step: Int) -> Decoded {
    var decoder = StdioRecordDecoder()
    var out = Decoded()
    var at = 0
    reading: while at < bytes.count {
        decoder.append(bytes[at..<min(at + step, bytes.count)])
        at += step
        do throws(WireError) {
            while let record = try decoder.next() { out.records.append(record) }
        } catch {
            invariant(error.offset >= 0 && error.offset <= bytes.count, "error offset \(error.offset) outside the input")
            out.error = error
            break reading
        }
    }
    out.consumed = decoder.offset
    out.pending = decoder.pendingBytes
    return out
}
