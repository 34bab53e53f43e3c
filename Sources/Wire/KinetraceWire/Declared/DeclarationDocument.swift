import KinetraceJSON

/// A JSON value of a declaration file with where it starts, so every error
/// can name a line and column. Members keep their order (the canonical form
/// sorts them) and a repeated name is refused where it is read.
indirect enum DeclarationNode: Sendable {
    case object([(name: String, nameOffset: Int, value: DeclarationNode)], offset: Int)
    case array([DeclarationNode], offset: Int)
    case string(String, offset: Int)
    /// The number's token text, kept so integers above 2^53 stay exact.
    case number(String, offset: Int)
    case bool(Bool, offset: Int)
    case null(offset: Int)

    var offset: Int {
        switch self {
        case .object(_, let o), .array(_, let o), .string(_, let o), .number(_, let o), .bool(_, let o), .null(let o): return o
        }
    }

    var typeName: String {
        switch self {
        case .object: return "an object"
        case .array: return "an array"
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .null: return "null"
        }
    }
}

/// Reads a declaration's JSON text into `DeclarationNode`s within fixed bounds
/// (PD-FILE-*): a hostile file costs at most its size in memory and a bounded stack.
struct DeclarationDocumentReader {
    static let maximumBytes = 256 * 1024
    static let maximumDepth = 16
    static let maximumStringBytes = 4096

    /// A syntax error at a byte offset.
    struct Failure: Error {
        var offset: Int
        var message: String
    }

    static func read(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> DeclarationNode {
        guard bytes.count <= maximumBytes else {
            throw Failure(offset: 0, message: "a declaration of at most \(maximumBytes) bytes, this one has \(bytes.count)")
        }
        if let bad = UTF8Validation.firstInvalidOffset(bytes) { throw Failure(offset: bad, message: "well-formed UTF-8") }
        var scanner = JSONScanner(bytes)
        do throws(JSONScanner.SyntaxError) {
            guard scanner.peek() != nil else { throw JSONScanner.SyntaxError(offset: 0, message: "a JSON object, found an empty file") }
            let node = try value(&scanner, depth: 0)
            try scanner.expectEnd()
            return node
        } catch {
            throw Failure(offset: error.offset, message: error.message)
        }
    }

    private static func value(_ scanner: inout JSONScanner, depth: Int) throws(JSONScanner.SyntaxError) -> DeclarationNode {
        guard depth < maximumDepth else {
            throw JSONScanner.SyntaxError(offset: scanner.index, message: "nesting at most \(maximumDepth) deep")
        }
        guard let byte = scanner.peek() else { throw JSONScanner.SyntaxError(offset: scanner.index, message: "a value, found end of file") }
        let at = scanner.index
        switch byte {
        case UInt8(ascii: "{"):
            try scanner.beginObject()
            var members: [(name: String, nameOffset: Int, value: DeclarationNode)] = []
            var first = true
            while true {
                guard let key = try scanner.nextKey(first: &first) else { break }
                // Where the name's opening quote is (an escaped name is decoded elsewhere: the closest known point).
                let nameAt = key.escaped || key.raw.baseAddress == nil ? scanner.index : (key.raw.baseAddress! - scanner.bytes.baseAddress!) - 1
                let name = key.string
                guard name.utf8.count <= maximumStringBytes else {
                    throw JSONScanner.SyntaxError(offset: nameAt, message: "a member name of at most \(maximumStringBytes) bytes")
                }
                guard !members.contains(where: { $0.name == name }) else {
                    throw JSONScanner.SyntaxError(offset: nameAt, message: "each member name once, \"\(name)\" is repeated")
                }
                members.append((name, nameAt, try value(&scanner, depth: depth + 1)))
            }
            return .object(members, offset: at)
        case UInt8(ascii: "["):
            scanner.index += 1
            var elements: [DeclarationNode] = []
            if scanner.peek() == UInt8(ascii: "]") {
                scanner.index += 1
                return .array([], offset: at)
            }
            while true {
                elements.append(try value(&scanner, depth: depth + 1))
                guard let next = scanner.peek() else { throw JSONScanner.SyntaxError(offset: scanner.index, message: "',' or ']', found end of file") }
                scanner.index += 1
                if next == UInt8(ascii: "]") { break }
                guard next == UInt8(ascii: ",") else { throw JSONScanner.SyntaxError(offset: scanner.index - 1, message: "',' or ']'") }
            }
            return .array(elements, offset: at)
        case UInt8(ascii: "\""):
            let token = try scanner.readStringToken()
            guard token.raw.count <= maximumStringBytes else {
                throw JSONScanner.SyntaxError(offset: at, message: "a string of at most \(maximumStringBytes) bytes")
            }
            return .string(token.string, offset: at)
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return .bool(try scanner.readBool("a value"), offset: at)
        case UInt8(ascii: "n"):
            guard scanner.consume("null") else { throw JSONScanner.SyntaxError(offset: at, message: "a value") }
            return .null(offset: at)
        default:
            let token = try scanner.readNumberToken()
            guard token.end - token.start <= 64 else { throw JSONScanner.SyntaxError(offset: at, message: "a number of at most 64 characters") }
            return .number(String(decoding: UnsafeRawBufferPointer(rebasing: scanner.bytes[token.start..<token.end]), as: UTF8.self), offset: at)
        }
    }

    /// 1-based line and column (in bytes) of `offset`.
    static func position(of offset: Int, in bytes: UnsafeRawBufferPointer) -> (line: Int, column: Int) {
        var line = 1, lineStart = 0
        let end = min(max(offset, 0), bytes.count)
        for i in 0..<end where bytes[i] == 0x0A {
            line += 1
            lineStart = i + 1
        }
        return (line, end - lineStart + 1)
    }
}

/// Writes the canonical form (PD-CANON-1): members sorted by name, no insignificant
/// whitespace, numbers as written but normalised, strings with only the escapes JSON needs.
enum CanonicalJSON {
    static func text(_ node: DeclarationNode) -> String {
        var out = JSONOutput()
        write(node, &out)
        return out.text
    }

    private static func write(_ node: DeclarationNode, _ out: inout JSONOutput) {
        switch node {
        case .object(let members, _):
            out.raw("{")
            for (i, member) in members.sorted(by: { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }).enumerated() {
                if i > 0 { out.raw(",") }
                out.string(member.name)
                out.raw(":")
                write(member.value, &out)
            }
            out.raw("}")
        case .array(let elements, _):
            out.raw("[")
            for (i, element) in elements.enumerated() {
                if i > 0 { out.raw(",") }
                write(element, &out)
            }
            out.raw("]")
        case .string(let s, _): out.string(s)
        case .number(let text, _): out.raw(canonicalNumber(text))
        case .bool(let b, _): out.raw(b ? "true" : "false")
        case .null: out.raw("null")
        }
    }

    /// PD-CANON-2: an integer token within −2^63…2^64−1 as its digits; any other number as
    /// ECMAScript's Number::toString writes its nearest binary64 (RFC 8785 §3.2.2.3).
    static func canonicalNumber(_ text: String) -> String {
        if let integer = Int64(text) { return String(integer) }
        if let unsigned = UInt64(text) { return String(unsigned) }
        return ecmaScript(Double(text) ?? 0)
    }

    /// Number::toString of ECMA-262 (§6.1.6.1.20) for a finite double, from the shortest
    /// round-trip digits Swift's `description` gives.
    static func ecmaScript(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == 0 { return "0" }
        let sign = value < 0 ? "-" : ""
        // Swift writes "1.5e-06", "1e+20", "0.001", "123.25": read off its digits and exponent.
        let text = value.magnitude.description
        var mantissa = Substring(text), exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(String(text[text.index(after: e)...].filter { $0 != "+" })) ?? 0
        }
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        let integerPart = String(parts[0]), fraction = parts.count > 1 ? String(parts[1]) : ""
        var digits = integerPart + fraction
        // n: where the decimal point goes, counted from the start of `digits`.
        var n = integerPart.count + exponent
        while digits.hasPrefix("0") && digits.count > 1 { digits.removeFirst(); n -= 1 }
        while digits.hasSuffix("0") && digits.count > 1 { digits.removeLast() }
        let k = digits.count
        if k <= n && n <= 21 { return sign + digits + String(repeating: "0", count: n - k) }
        if 0 < n && n <= 21 { return sign + digits.prefix(n) + "." + digits.dropFirst(n) }
        if -6 < n && n <= 0 { return sign + "0." + String(repeating: "0", count: -n) + digits }
        let e = n - 1
        let exponentText = (e < 0 ? "-" : "+") + String(abs(e))
        return sign + (k == 1 ? digits : digits.prefix(1) + "." + digits.dropFirst()) + "e" + exponentText
    }
}
