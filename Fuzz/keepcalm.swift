// KeepCalm JSON (Sources/Wire/KinetraceWire/KeepCalmJSON) and the JSON
// scanner, value parser and number parser under it (Sources/Support/KinetraceJSON).
// Checks:
// - a decoded message re-encodes to its canonical form, which decodes to the
//   same message, and the input it came from is valid JSON to the general parser;
// - values are finite and within ±100 (KC-VALUE-2); error offsets lie in the input;
// - UTF8Validation agrees with the standard library on the input, and KeepCalm
//   accepts nothing that is not UTF-8 (KC-MSG-6);
// - a document the value parser accepts prints (jsonText) to one that parses to
//   the same value (where every number in it is finite);
// - at every byte that starts a number token, the fast decimal→Double path
//   gives exactly the standard library's answer, and readInt64/readUInt64 agree
//   with the token's value.
import KinetraceJSON
import KinetraceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeepCalm(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    bytes.withUnsafeBytes { raw in
        let isUTF8 = String(validating: bytes, as: UTF8.self) != nil
        invariant(UTF8Validation.isValid(raw) == isUTF8, "UTF8Validation says \(!isUTF8) where the standard library says \(isUTF8)")
        do throws(WireError) {
            let motion = try KeepCalmJSON.decode(raw)
            invariant(isUTF8, "KeepCalm accepted bytes that are not UTF-8")
            for value in [motion.x, motion.y, motion.z] {
                invariant(value.isFinite && abs(value) <= KeepCalmMotion.maximumMagnitude, "value \(value) decoded")
            }
            let canonical = motion.encoded()
            let again = canonical.withUnsafeBytes { try? KeepCalmJSON.decode($0) }
            invariant(again == motion, "encode→decode changed \(motion)")
            if case .failure(let error) = JSONValue.parse(bytes) {
                invariant(false, "KeepCalm accepted what the JSON parser rejects: \(error)")
            }
        } catch {
            invariant(error.offset >= 0 && error.offset <= raw.count, "error offset \(error.offset) outside \(raw.count) bytes")
        }
        checkNumbers(raw)
    }
    if case .success(let value) = JSONValue.parse(bytes), allFinite(value) {
        let text = Array(value.jsonText.utf8)
        guard case .success(let again) = JSONValue.parse(text) else {
            invariant(false, "jsonText of a parsed value does not parse: \(value.jsonText)")
            return 0
        }
        invariant(again == value, "parse→jsonText→parse changed the value: \(value.jsonText)")
    }
    return 0
}

func allFinite(_ value: JSONValue) -> Bool {
    switch value {
    case .number(let d): return d.isFinite
    case .array(let items): return items.allSatisfy(allFinite)
    case .object(let members): return members.values.allSatisfy(allFinite)
    default: return true
    }
}

/// Every place a number token could start: the fast path against the standard library.
func checkNumbers(_ raw: UnsafeRawBufferPointer) {
    var start = 0
    var tokens = 0
    while start < raw.count, tokens < 64 {
        let byte = raw[start]
        guard byte == UInt8(ascii: "-") || JSONScanner.isASCIIDigit(byte) else { start += 1; continue }
        var scanner = JSONScanner(raw)
        scanner.index = start
        guard let token = try? scanner.readNumberToken() else { start += 1; continue }
        tokens += 1
        invariant(token.start == start && token.end > token.start && token.end <= raw.count, "token \(token) outside the input")
        let slice = UnsafeRawBufferPointer(rebasing: raw[token.start..<token.end])
        let text = String(decoding: slice, as: UTF8.self)
        let expected = Double(text) ?? .nan
        invariant(sameBits(JSONNumber.double(slice), expected), "\(text): JSONNumber gives \(JSONNumber.double(slice)), Double(String) \(expected)")
        if let fast = JSONNumber.fastDouble(slice) {
            invariant(sameBits(fast, expected), "\(text): fast path gives \(fast), Double(String) \(expected)")
        }
        scanner.index = start
        if let i = try? scanner.readInt64("n") {
            invariant(token.isInteger && Int64(text) == i || !token.isInteger && Double(i) == expected,
                      "\(text): readInt64 gives \(i)")
        } else if token.isInteger, !text.hasPrefix("-") {
            scanner.index = start
            let u = try? scanner.readUInt64("n")
            invariant(u == UInt64(text), "\(text): readUInt64 gives \(String(describing: u))")
        }
        start = token.end
    }
}
