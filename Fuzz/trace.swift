// The trace reader (Sources/Formats/KinetraceTrace): header, lines, and both
// record parsers. `TraceDecoder.record` tries the canonical fast path
// (`canonicalMessage`: a line exactly as TraceEncoder writes a message) and
// falls back to the general parser (`generalRecord`: any valid JSON).
// The input is read as a whole trace through `TraceReader(bytes:)`, which
// reaches both; then every line after the first is given to each path on its
// own, so the fast path is exercised even where the reader stops early.
// Checks:
// - wherever the fast path accepts a line, the general parser accepts it too
//   and reads the same message (the fast path may only decline, never differ);
// - every record the reader returns re-encodes to a line that reads back as the
//   same record, and the header re-encodes to one that reads back the same;
// - errors and truncations name a line and offset inside the input.
@testable import KinetraceTrace
import KinetraceJSON
import KinetraceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTrace(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    var wireProtocol: any WireProtocol = MotionLinkV1()
    do throws(TraceError) {
        let reader = try TraceReader(bytes: bytes)
        wireProtocol = reader.wireProtocol
        checkHeader(reader.header)
        var decoder = TraceDecoder(wireProtocol)
        while let record = try reader.next() {
            checkRoundTrip(record, wireProtocol, &decoder)
        }
        if let cut = reader.truncation {
            invariant(cut.byteOffset >= 0 && cut.byteOffset + cut.droppedBytes <= bytes.count, "truncation \(cut) outside the input")
        }
    } catch {
        invariant((error.line ?? 1) >= 1, "error on line \(String(describing: error.line))")
        invariant((0...bytes.count).contains(error.byteOffset ?? 0), "error offset outside \(bytes.count) bytes: \(error)")
    }
    // Each line on its own through both paths.
    var lineStart = bytes.firstIndex(of: 0x0A).map { $0 + 1 } ?? bytes.count
    // One decoder per path for the whole input, as the reader keeps one (its endpoint cache carries over).
    var fastDecoder = TraceDecoder(wireProtocol), generalDecoder = TraceDecoder(wireProtocol)
    bytes.withUnsafeBytes { raw in
        while lineStart < raw.count {
            let lineEnd = raw[lineStart...].firstIndex(of: 0x0A) ?? raw.count
            let line = UnsafeRawBufferPointer(rebasing: raw[lineStart..<lineEnd])
            if let fast = fastDecoder.canonicalMessage(line) {
                do throws(TraceDecoder.Failure) {
                    let general = try generalDecoder.generalRecord(line)
                    invariant(general == .message(fast), "fast path read \(fast), general parser \(String(describing: general))")
                } catch {
                    invariant(false, "fast path accepted a line the general parser rejects (\(error.message)): \(String(decoding: line, as: UTF8.self))")
                }
            }
            lineStart = lineEnd + 1
        }
    }
    return 0
}

func checkHeader(_ header: TraceHeader) {
    guard header.extra.values.allSatisfy(allFinite) else { return }
    let line = TraceEncoder.line(for: header)
    do throws(TraceError) {
        let again = try TraceReader(bytes: line).header
        var expected = header
        expected.minor = again.minor  // the writer always writes the minor version
        invariant(again.extra == expected.extra && again.protocolID == expected.protocolID && again.created == expected.created
                  && again.tool == expected.tool && again.notes == expected.notes && again.capturePoint == expected.capturePoint
                  && again.clock == expected.clock, "the header changed through encode→read")
    } catch {
        invariant(false, "a header that read does not read back after encoding: \(error)")
    }
}

func checkRoundTrip(_ record: TraceRecord, _ wireProtocol: any WireProtocol, _ decoder: inout TraceDecoder) {
    if case .event(let event) = record, !event.data.values.allSatisfy(allFinite) { return }
    var line = TraceEncoder.line(for: record, as: wireProtocol)
    invariant(line.last == 0x0A, "an encoded record does not end its line")
    line.removeLast()
    let again = line.withUnsafeBytes { raw in
        do throws(TraceDecoder.Failure) { return try decoder.record(raw) } catch {
            invariant(false, "an encoded record does not read back (\(error.message)): \(String(decoding: line, as: UTF8.self))")
            return nil
        }
    }
    invariant(again == record, "encode→decode changed \(record) into \(String(describing: again))")
}

func allFinite(_ value: JSONValue) -> Bool {
    switch value {
    case .number(let d): return d.isFinite
    case .array(let items): return items.allSatisfy(allFinite)
    case .object(let members): return members.values.allSatisfy(allFinite)
    default: return true
    }
}
