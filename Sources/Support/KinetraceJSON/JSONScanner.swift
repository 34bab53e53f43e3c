#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pull parser over one JSON text held in borrowed bytes. It accepts all of
/// RFC 8259 (any member order, whitespace, escapes, surrogate pairs) but lets
/// the caller skip values it does not need without building them, which is
/// what makes trace reading fast. It does not check that string bytes are
/// well-formed UTF-8 (`UTF8Validation` does, for readers that must); it
/// does reject a `\u` escape of an unpaired surrogate.
package struct JSONScanner {
    package let bytes: UnsafeRawBufferPointer
    package var index = 0

    /// Nesting deeper than this is rejected rather than risking the stack.
    package static let maxDepth = 256

    @inlinable package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Whether `byte` is an ASCII digit.
    @inlinable @inline(__always)
    package static func isASCIIDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    package struct SyntaxError: Error, Sendable {
        package var offset: Int
        package var message: String
        @inlinable package init(offset: Int, message: String) {
            self.offset = offset
            self.message = message
        }
    }

    @usableFromInline func fail(_ message: String, at offset: Int? = nil) -> SyntaxError {
        SyntaxError(offset: offset ?? index, message: message)
    }

    @inline(__always)
    @inlinable package mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index &+= 1
            default: return
            }
        }
    }

    @inline(__always)
    @inlinable package mutating func peek() -> UInt8? {
        skipWhitespace()
        return index < bytes.count ? bytes[index] : nil
    }

    @usableFromInline func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "end of line" }
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16)
    }

    @inline(__always)
    @inlinable package mutating func expect(_ byte: UInt8, _ what: @autoclosure () -> String) throws(SyntaxError) {
        if index < bytes.count && bytes[index] == byte { index &+= 1; return }  // compact JSON: no whitespace
        let found = peek()
        guard found == byte else { throw fail("expected \(what()), found \(describe(found))") }
        index &+= 1
    }

    /// Checks that nothing but whitespace follows the value.
    @inlinable package mutating func expectEnd() throws(SyntaxError) {
        if let found = peek() { throw fail("expected end of line after the JSON value, found \(describe(found))") }
    }

    // MARK: Objects

    @inlinable package mutating func beginObject() throws(SyntaxError) { try expect(UInt8(ascii: "{"), "'{'") }

    /// The next member's key, or nil at the closing brace. Keys without
    /// escapes come back as a slice of the input; others are decoded.
    @inline(__always)
    @inlinable package mutating func nextKey(first: inout Bool) throws(SyntaxError) -> JSONKey? {
        let found = peek()
        if found == UInt8(ascii: "}") { index &+= 1; return nil }
        if !first {
            guard found == UInt8(ascii: ",") else { throw fail("expected ',' or '}' in object, found \(describe(found))") }
            index &+= 1
            guard peek() == UInt8(ascii: "\"") else { throw fail("expected a member name after ','") }
        } else if found != UInt8(ascii: "\"") {
            throw fail("expected a member name or '}', found \(describe(found))")
        }
        first = false
        let key = try readStringToken()
        try expect(UInt8(ascii: ":"), "':' after member name")
        return key
    }

    /// The fast path for members in a known order: when the next bytes are
    /// exactly `"name":` (after the ',' unless `first`), consume them and
    /// return the key; otherwise consume nothing and return nil, and the
    /// caller falls back to `nextKey`. Only exact bytes of a valid member
    /// name match, so this accepts nothing `nextKey` would reject.
    @inline(__always)
    @inlinable package mutating func matchKey(_ name: StaticString, first: inout Bool) -> JSONKey? {
        let count = name.utf8CodeUnitCount
        var i = index
        if !first {
            guard i < bytes.count, bytes[i] == UInt8(ascii: ",") else { return nil }
            i &+= 1
        }
        guard i &+ count &+ 3 <= bytes.count, bytes[i] == UInt8(ascii: "\""),
              bytes[i &+ count &+ 1] == UInt8(ascii: "\""), bytes[i &+ count &+ 2] == UInt8(ascii: ":"),
              memcmp(bytes.baseAddress! + i + 1, name.utf8Start, count) == 0 else { return nil }
        first = false
        index = i &+ count &+ 3
        return JSONKey(raw: UnsafeRawBufferPointer(rebasing: bytes[(i + 1)..<(i + 1 + count)]), escaped: false)
    }

    /// `matchKey` for a name held in memory (a declared protocol's, read at run time).
    @inline(__always)
    @inlinable package mutating func matchKey(utf8 name: UnsafeRawBufferPointer, first: inout Bool) -> JSONKey? {
        let count = name.count
        var i = index
        if !first {
            guard i < bytes.count, bytes[i] == UInt8(ascii: ",") else { return nil }
            i &+= 1
        }
        guard count > 0, i &+ count &+ 3 <= bytes.count, bytes[i] == UInt8(ascii: "\""),
              bytes[i &+ count &+ 1] == UInt8(ascii: "\""), bytes[i &+ count &+ 2] == UInt8(ascii: ":"),
              memcmp(bytes.baseAddress! + i + 1, name.baseAddress!, count) == 0 else { return nil }
        first = false
        index = i &+ count &+ 3
        return JSONKey(raw: UnsafeRawBufferPointer(rebasing: bytes[(i + 1)..<(i + 1 + count)]), escaped: false)
    }

    /// Skips an object, expecting its members in the order `names` (UTF-8) gives.
    @inlinable package mutating func skipObject(predicting names: [[UInt8]]) throws(SyntaxError) {
        try beginObject()
        var first = true
        var next = 0
        while true {
            if next < names.count, names[next].withUnsafeBytes({ matchKey(utf8: $0, first: &first) }) != nil {
                next += 1
            } else {
                next = names.count
                guard try nextKey(first: &first) != nil else { return }
            }
            try skipValue(depth: 1)
        }
    }

    /// Skips an object, expecting its members in the order `names` gives
    /// (falling back to the general path at the first surprise).
    @inlinable package mutating func skipObject(predicting names: [StaticString]) throws(SyntaxError) {
        try beginObject()
        var first = true
        var next = 0
        while true {
            if next < names.count, matchKey(names[next], first: &first) != nil {
                next += 1
            } else {
                next = names.count
                guard try nextKey(first: &first) != nil else { return }
            }
            try skipValue(depth: 1)
        }
    }

    /// Consumes `literal` if the input continues with exactly those bytes
    /// (no whitespace allowed); otherwise consumes nothing.
    @inline(__always)
    @inlinable package mutating func consume(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index &+ count <= bytes.count,
              memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0 else { return false }
        index &+= count
        return true
    }

    /// Consumes `literal` if the input continues with exactly those bytes.
    @inlinable @inline(__always)
    package mutating func consume(_ literal: UnsafeRawBufferPointer) -> Bool {
        let count = literal.count
        guard index &+ count <= bytes.count,
              memcmp(bytes.baseAddress! + index, literal.baseAddress!, count) == 0 else { return false }
        index &+= count
        return true
    }

    // MARK: Strings

    /// Reads a string token; a slice when it has no escapes, decoded otherwise.
    @inline(__always)
    @inlinable package mutating func readStringToken() throws(SyntaxError) -> JSONKey {
        try expect(UInt8(ascii: "\""), "a string")
        let start = index
        let base = bytes.baseAddress!  // non-nil: expect() consumed a byte
        let count = bytes.count
        var i = start
        // Eight bytes at a time until a word holds a quote, a backslash or a control byte.
        while i &+ 8 <= count, !Self.hasSpecialByte(UInt64(littleEndian: (base + i).loadUnaligned(as: UInt64.self))) {
            i &+= 8
        }
        let p = base.assumingMemoryBound(to: UInt8.self)
        while i < count {
            let byte = p[i]
            if byte == UInt8(ascii: "\"") {
                index = i &+ 1
                return JSONKey(raw: UnsafeRawBufferPointer(start: base + start, count: i &- start), escaped: false)
            }
            if byte == UInt8(ascii: "\\") {
                // Rare: validate the escapes now, decode them only if the text is wanted.
                index = start
                _ = try decodeEscapedString()
                return JSONKey(raw: UnsafeRawBufferPointer(rebasing: bytes[start..<index - 1]), escaped: true)
            }
            if byte < 0x20 { throw fail("control character inside a string", at: i) }
            i &+= 1
        }
        throw fail("unterminated string", at: start - 1)
    }

    /// Whether any byte of `word` is '"', '\\' or below 0x20 (SWAR: a byte
    /// is zero after XOR with the target exactly when it matched).
    @inline(__always)
    @inlinable package static func hasSpecialByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let hasQuote = (quote &- ones) & ~quote
        let hasBackslash = (backslash &- ones) & ~backslash
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl) & highs != 0
    }

    @inlinable package mutating func readString() throws(SyntaxError) -> String {
        try readStringToken().string
    }

    /// Decodes string content up to its closing quote, or, with
    /// `toEnd`, up to the end of the input (content already validated).
    @inlinable package mutating func decodeEscapedString(toEnd: Bool = false) throws(SyntaxError) -> String {
        var out: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index &+= 1
            switch byte {
            case UInt8(ascii: "\"") where !toEnd: return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index &+= 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try readHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A high surrogate must be followed by an escaped low surrogate.
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate in \\u escape") }
                        index &+= 2
                        let low = try readHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw fail("unpaired surrogate in \\u escape")
                    }
                    out.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
                default: throw fail("invalid escape '\\\(Character(Unicode.Scalar(escape)))'", at: index - 2)
                }
            case 0..<0x20: throw fail("control character inside a string", at: index - 1)
            default: out.append(byte)
            }
        }
        if toEnd { return String(decoding: out, as: UTF8.self) }
        throw fail("unterminated string")
    }

    @inlinable mutating func readHex4() throws(SyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = hexNibble(bytes[index]) else { throw fail("invalid hex digit in \\u escape") }
            value = value << 4 | UInt32(digit)
            index &+= 1
        }
        return value
    }

    // MARK: Numbers

    /// The number token's extent, checked against JSON's number grammar.
    /// Works on a local cursor and raw pointer so the loops stay in registers.
    @inline(__always)
    @inlinable package mutating func readNumberToken() throws(SyntaxError) -> (start: Int, end: Int, isInteger: Bool) {
        skipWhitespace()
        let start = index
        let count = bytes.count
        guard let p = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { throw fail("expected a number") }
        var i = start
        var isInteger = true
        if i < count, p[i] == UInt8(ascii: "-") { i &+= 1 }
        guard i < count, isDigit(p[i]) else { throw fail("expected a number", at: start) }
        if p[i] == UInt8(ascii: "0") {
            i &+= 1
        } else {
            repeat { i &+= 1 } while i < count && isDigit(p[i])
        }
        if i < count, p[i] == UInt8(ascii: ".") {
            isInteger = false
            i &+= 1
            guard i < count, isDigit(p[i]) else { throw fail("expected a digit after '.'", at: i) }
            repeat { i &+= 1 } while i < count && isDigit(p[i])
        }
        if i < count, p[i] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            i &+= 1
            if i < count, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") { i &+= 1 }
            guard i < count, isDigit(p[i]) else { throw fail("expected a digit in exponent", at: i) }
            repeat { i &+= 1 } while i < count && isDigit(p[i])
        }
        index = i
        return (start, i, isInteger)
    }

    /// An integer-valued number that fits in Int64. Fraction and exponent
    /// forms are accepted when their value is an exact integer (`1.5e3` is
    /// 1500), since JSON Schema's "integer" allows them (TR-READ-2).
    @inlinable package mutating func readInt64(_ what: String) throws(SyntaxError) -> Int64 {
        let (negative, magnitude, start) = try readIntegerParts(what)
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw fail("\(what) is out of range", at: start) }
            return Int64(bitPattern: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw fail("\(what) is out of range", at: start) }
        return Int64(magnitude)
    }

    /// An integer-valued number that fits in UInt64.
    @inlinable package mutating func readUInt64(_ what: String) throws(SyntaxError) -> UInt64 {
        let (negative, magnitude, start) = try readIntegerParts(what)
        guard !negative || magnitude == 0 else { throw fail("\(what) must not be negative", at: start) }
        return magnitude
    }

    @inlinable mutating func readIntegerParts(_ what: String) throws(SyntaxError) -> (negative: Bool, magnitude: UInt64, start: Int) {
        let token = try readNumberToken()
        let negative = bytes[token.start] == UInt8(ascii: "-")
        if token.isInteger {
            var magnitude: UInt64 = 0
            for i in (negative ? token.start + 1 : token.start)..<token.end {
                let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (m2, o2) = m1.addingReportingOverflow(UInt64(bytes[i] &- 0x30))
                if o1 || o2 { throw fail("\(what) is out of range", at: token.start) }
                magnitude = m2
            }
            return (negative, magnitude, token.start)
        }
        switch exactInteger(token.start, token.end) {
        case .some(let magnitude): return (negative, magnitude, token.start)
        case .none: throw fail("expected \(what) to be an integer", at: token.start)
        }
    }

    /// The magnitude of a decimal written with fraction or exponent, when it
    /// is an exact integer that fits in UInt64.
    @usableFromInline func exactInteger(_ start: Int, _ end: Int) -> UInt64? {
        var i = bytes[start] == UInt8(ascii: "-") ? start + 1 : start
        var digits: [UInt8] = []
        var exponent = 0
        var seenPoint = false
        while i < end, bytes[i] | 0x20 != UInt8(ascii: "e") {
            if bytes[i] == UInt8(ascii: ".") {
                seenPoint = true
            } else {
                if seenPoint { exponent -= 1 }
                // Leading zeros carry no value.
                if !(digits.isEmpty && bytes[i] == UInt8(ascii: "0")) { digits.append(bytes[i] - 0x30) }
            }
            i += 1
        }
        if i < end {
            i += 1
            var expNegative = false
            if bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { expNegative = bytes[i] == UInt8(ascii: "-"); i += 1 }
            var e = 0
            while i < end { e = min(e * 10 + Int(bytes[i] - 0x30), 100_000); i += 1 }
            exponent += expNegative ? -e : e
        }
        while let last = digits.last, last == 0 { digits.removeLast(); exponent += 1 }
        if digits.isEmpty { return 0 }
        guard exponent >= 0, digits.count + exponent <= 20 else { return nil }
        var magnitude: UInt64 = 0
        for d in digits + [UInt8](repeating: 0, count: exponent) {
            let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (m2, o2) = m1.addingReportingOverflow(UInt64(d))
            if o1 || o2 { return nil }
            magnitude = m2
        }
        return magnitude
    }

    @inlinable package mutating func readDouble(_ what: String) throws(SyntaxError) -> Double {
        let token = try readNumberToken()
        let value = JSONNumber.double(UnsafeRawBufferPointer(rebasing: bytes[token.start..<token.end]))
        guard !value.isNaN else { throw fail("\(what) is not a number", at: token.start) }
        return value
    }

    // MARK: Literals and generic values

    @inlinable package mutating func readBool(_ what: String) throws(SyntaxError) -> Bool {
        if matchLiteral("true") { return true }
        if matchLiteral("false") { return false }
        throw fail("expected \(what) to be true or false")
    }

    @usableFromInline mutating func matchLiteral(_ literal: StaticString) -> Bool {
        _ = peek()
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let start = literal.utf8Start
        for k in 0..<count where bytes[index + k] != start[k] { return false }
        index += count
        return true
    }

    /// Skips one value of any type without building it.
    @inlinable package mutating func skipValue(depth: Int = 0) throws(SyntaxError) {
        guard depth < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth)") }
        guard let byte = peek() else { throw fail("expected a value, found end of line") }
        switch byte {
        case UInt8(ascii: "{"):
            index &+= 1
            var first = true
            while try nextKey(first: &first) != nil { try skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            index &+= 1
            if peek() == UInt8(ascii: "]") { index &+= 1; return }
            while true {
                try skipValue(depth: depth + 1)
                let next = peek()
                if next == UInt8(ascii: ",") { index &+= 1; continue }
                if next == UInt8(ascii: "]") { index &+= 1; return }
                throw fail("expected ',' or ']' in array, found \(describe(next))")
            }
        case UInt8(ascii: "\""): _ = try readStringToken()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try readBool("value")
        case UInt8(ascii: "n"):
            guard matchLiteral("null") else { throw fail("expected a value, found \(describe(byte))") }
        default:
            guard byte == UInt8(ascii: "-") || isDigit(byte) else { throw fail("expected a value, found \(describe(byte))") }
            _ = try readNumberToken()
        }
    }

    /// Builds a value of any type, up to `maxDepth` deep.
    @inlinable package mutating func readValue(depth: Int = 0) throws(SyntaxError) -> JSONValue {
        guard depth < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth)") }
        guard let byte = peek() else { throw fail("expected a value, found end of line") }
        switch byte {
        case UInt8(ascii: "{"):
            index &+= 1
            var members: [String: JSONValue] = [:]
            var first = true
            while let key = try nextKey(first: &first) {
                members[key.string] = try readValue(depth: depth + 1)
            }
            return .object(members)
        case UInt8(ascii: "["):
            index &+= 1
            var items: [JSONValue] = []
            if peek() == UInt8(ascii: "]") { index &+= 1; return .array(items) }
            while true {
                items.append(try readValue(depth: depth + 1))
                let next = peek()
                if next == UInt8(ascii: ",") { index &+= 1; continue }
                if next == UInt8(ascii: "]") { index &+= 1; return .array(items) }
                throw fail("expected ',' or ']' in array, found \(describe(next))")
            }
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool(try readBool("value"))
        case UInt8(ascii: "n"):
            guard matchLiteral("null") else { throw fail("expected a value, found \(describe(byte))") }
            return .null
        default:
            guard byte == UInt8(ascii: "-") || isDigit(byte) else { throw fail("expected a value, found \(describe(byte))") }
            let save = index
            let token = try readNumberToken()
            if token.isInteger {
                index = save
                if let i = try? readInt64("number") { return .integer(i) }
                index = token.end
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[token.start..<token.end]), as: UTF8.self)
            return .number(Double(text) ?? .nan)
        }
    }
}

/// A string token: the bytes between its quotes, borrowed from the input.
/// A plain value type, so scanning keys costs no reference counting; the
/// rare escaped string is decoded only when its text is asked for.
package struct JSONKey {
    /// The raw content between the quotes, escapes undecoded.
    package let raw: UnsafeRawBufferPointer
    package let escaped: Bool

    @inlinable package init(raw: UnsafeRawBufferPointer, escaped: Bool) {
        self.raw = raw
        self.escaped = escaped
    }

    package var string: String {
        guard escaped else { return String(decoding: raw, as: UTF8.self) }
        var scanner = JSONScanner(raw)
        // Escapes were validated when the token was read.
        return (try? scanner.decodeEscapedString(toEnd: true)) ?? String(decoding: raw, as: UTF8.self)
    }

    /// Compares the decoded text with a name held in memory.
    @inlinable package func equals(utf8 name: [UInt8]) -> Bool {
        guard !escaped else { return string.utf8.elementsEqual(name) }
        guard raw.count == name.count else { return false }
        return name.isEmpty || name.withUnsafeBytes { memcmp(raw.baseAddress!, $0.baseAddress!, name.count) == 0 }
    }

    /// Compares the decoded text with an ASCII name.
    @inline(__always)
    @inlinable package func equals(_ name: StaticString) -> Bool {
        guard !escaped else { return name.withUTF8Buffer { string.utf8.elementsEqual($0) } }
        let count = name.utf8CodeUnitCount
        guard raw.count == count else { return false }
        return memcmp(raw.baseAddress!, name.utf8Start, count) == 0
    }
}

extension JSONKey {
    /// Whether two names or strings are the same text, escapes decoded, compared
    /// byte for byte as RFC 8259 §8.3 says (so "é" and "e\u{301}" differ).
    @inlinable package func hasSameText(as other: JSONKey) -> Bool {
        guard escaped || other.escaped else {
            return raw.count == other.raw.count && (raw.isEmpty || memcmp(raw.baseAddress!, other.raw.baseAddress!, raw.count) == 0)
        }
        return string.utf8.elementsEqual(other.string.utf8)
    }

    /// Feeds the decoded text to `hasher`, agreeing with `hasSameText`.
    @inlinable package func hashText(into hasher: inout Hasher) {
        guard escaped else { return hasher.combine(bytes: raw) }
        var text = string
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

@inlinable @inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

@inlinable @inline(__always) func hexNibble(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: return byte - 0x30
    case 0x61...0x66: return byte - 0x61 + 10
    case 0x41...0x46: return byte - 0x41 + 10
    default: return nil
    }
}
