/// A parsed JSON value, for the parts of a trace that are free-form
/// (header metadata, event data). Records' fixed fields bypass it.
package enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent that fits in Int64.
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    package var integerValue: Int64? {
        switch self {
        case .integer(let i): return i
        case .number(let d) where d.rounded() == d && abs(d) < 9.0e18: return Int64(d)
        default: return nil
        }
    }
    package var doubleValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .number(let d): return d
        default: return nil
        }
    }
    package var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o } else { return nil } }
}

extension JSONValue {
    /// Compact JSON text; object keys sorted so output is deterministic.
    package var jsonText: String {
        var out = JSONOutput()
        out.append(self)
        return out.text
    }
}

/// Appends compact JSON to a byte buffer.
package struct JSONOutput {
    package var bytes: [UInt8] = []

    package init() {}

    package var text: String { String(decoding: bytes, as: UTF8.self) }

    @inlinable package mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    @inlinable package mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }

    /// Appends `count` bytes that `fill` writes in place: one append instead of one per byte.
    @inlinable package mutating func appendUninitialized(_ count: Int, _ fill: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        let start = bytes.count
        grow(by: count)
        bytes.withUnsafeMutableBufferPointer { fill(UnsafeMutableBufferPointer(rebasing: $0[start...])) }
    }

    /// Appends `count` zero bytes by copying (appending `repeatElement` goes a byte at a time).
    @usableFromInline mutating func grow(by count: Int) {
        if count <= JSONOutput.zeros.count {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: JSONOutput.zeros[..<count]))
        } else {
            bytes.append(contentsOf: repeatElement(0, count: count))
        }
    }

    /// Never freed, never written after it is made.
    nonisolated(unsafe) static let zeros: UnsafeBufferPointer<UInt8> = {
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1024)
        buffer.initialize(repeating: 0)
        return UnsafeBufferPointer(buffer)
    }()

    /// Appends what `body` writes through a cursor, at most `maxCount` bytes: a run
    /// of small pieces (a member name, a number, an endpoint) costs one append, not one each.
    @inlinable package mutating func write(upTo maxCount: Int, _ body: (inout JSONCursor) -> Void) {
        let start = bytes.count
        grow(by: maxCount)
        let written = bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = JSONCursor(buffer.baseAddress! + start, capacity: maxCount)
            body(&cursor)
            return cursor.count
        }
        bytes.removeLast(maxCount &- written)
    }

    @inlinable package mutating func key(_ s: StaticString) {
        bytes.append(UInt8(ascii: "\""))
        raw(s)
        raw("\":")
    }

    @inlinable package mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            // Most strings need no escape: one copy of their bytes.
            if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                bytes.append(contentsOf: utf8)
            } else {
                for byte in utf8 { escaped(byte) }
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    @usableFromInline mutating func escaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): raw("\\\"")
        case UInt8(ascii: "\\"): raw("\\\\")
        case UInt8(ascii: "\n"): raw("\\n")
        case UInt8(ascii: "\r"): raw("\\r")
        case UInt8(ascii: "\t"): raw("\\t")
        case 0..<0x20:
            let hex: StaticString = "0123456789abcdef"
            raw("\\u00")
            bytes.append(hex.utf8Start[Int(byte >> 4)])
            bytes.append(hex.utf8Start[Int(byte & 0xF)])
        default: bytes.append(byte)
        }
    }

    /// Decimal digits written straight into the buffer: `String(value)` would allocate per number.
    @inlinable package mutating func integer<T: BinaryInteger>(_ value: T) {
        if let small = Int64(exactly: value) {
            digits(small.magnitude, negative: small < 0)
        } else if let large = UInt64(exactly: value) {
            digits(large, negative: false)
        } else {
            raw(String(value))
        }
    }

    @usableFromInline mutating func digits(_ magnitude: UInt64, negative: Bool) {
        write(upTo: 21) { $0.digits(magnitude, negative: negative) }
    }

    /// Finite doubles as their shortest round-trip text; JSON has no NaN or
    /// infinities, so those become the strings "NaN", "Infinity", "-Infinity".
    @inlinable package mutating func double(_ value: Double) {
        if value.isFinite { text(value.description) } else { string(Self.nonFiniteName(value)) }
    }

    /// A short string's bytes in one copy (its UTF-8 view would be walked a byte at a time).
    @inlinable mutating func text(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    @inlinable package mutating func float(_ value: Float32) {
        if value.isFinite { text(value.description) } else { string(Self.nonFiniteName(Double(value))) }
    }

    @inlinable package static func nonFiniteName(_ value: Double) -> String {
        value.isNaN ? "NaN" : (value < 0 ? "-Infinity" : "Infinity")
    }

    @inlinable package mutating func append(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let b): raw(b ? "true" : "false")
        case .integer(let i): integer(i)
        case .number(let d): double(d)
        case .string(let s): string(s)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                append(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (i, key) in members.keys.sorted().enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                string(key)
                bytes.append(UInt8(ascii: ":"))
                append(members[key]!)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

extension JSONOutput {
    /// An object whose `members` are values and whose `written` members each write their own
    /// value here when their turn comes, keys sorted across both as `append` sorts them: a
    /// report with a member per controller writes each as it makes it, instead of holding a
    /// value tree for all of them (a kilobyte or two each) beside the text.
    package mutating func object(_ members: [String: JSONValue], written: [String: (inout JSONOutput) -> Void]) {
        bytes.append(UInt8(ascii: "{"))
        for (i, key) in Set(members.keys).union(written.keys).sorted().enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            string(key)
            bytes.append(UInt8(ascii: ":"))
            if let write = written[key] { write(&self) } else { append(members[key]!) }
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// An array of `count` elements, each written by `element` in turn.
    package mutating func array(count: Int, _ element: (Int, inout JSONOutput) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for i in 0..<count {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            element(i, &self)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}

/// Writes into room `JSONOutput.write(upTo:_:)` made; writing past it traps
/// (a caller's bound was wrong), never overruns.
package struct JSONCursor {
    @usableFromInline let base: UnsafeMutablePointer<UInt8>
    @usableFromInline let capacity: Int
    @usableFromInline var written = 0
    /// Bytes written so far.
    package var count: Int { written }

    @inlinable init(_ base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    @inlinable package mutating func byte(_ byte: UInt8) {
        precondition(written < capacity, "JSONCursor: write past the bound")
        base[written] = byte
        written &+= 1
    }

    @inlinable package mutating func bytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        precondition(bytes.count <= capacity &- written, "JSONCursor: write past the bound")
        if let source = bytes.baseAddress { (base + written).update(from: source, count: bytes.count) }
        written &+= bytes.count
    }

    @inlinable package mutating func raw(_ s: StaticString) {
        bytes(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Decimal digits, right to left in place: at most 20 and a sign.
    @inlinable package mutating func digits(_ magnitude: UInt64, negative: Bool) {
        var length = negative ? 2 : 1
        var rest = magnitude
        while rest >= 10 { rest /= 10; length &+= 1 }
        precondition(length <= capacity &- written, "JSONCursor: write past the bound")
        if negative { base[written] = UInt8(ascii: "-") }
        var value = magnitude
        var i = written &+ length
        repeat {
            i &-= 1
            base[i] = UInt8(truncatingIfNeeded: value % 10) &+ UInt8(ascii: "0")
            value /= 10
        } while value > 0
        written &+= length
    }

    @inlinable package mutating func integer(_ value: Int64) { digits(value.magnitude, negative: value < 0) }
    @inlinable package mutating func integer(_ value: UInt64) { digits(value, negative: false) }
}

/// Why a standalone JSON document (a network, a config) did not parse.
package struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Byte offset of the problem in the document.
    package var offset: Int
    /// 1-based line of `offset`.
    package var line: Int
    package var message: String

    package var description: String { "line \(line) (byte \(offset)): \(message)" }
}

extension JSONValue {
    /// Parses one complete JSON document (RFC 8259), rejecting trailing content.
    package static func parse(_ bytes: [UInt8]) -> Result<JSONValue, JSONParseError> {
        bytes.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw)
            do throws(JSONScanner.SyntaxError) {
                let value = try scanner.readValue()
                try scanner.expectEnd()
                return .success(value)
            } catch {
                let line = 1 + raw.prefix(min(error.offset, raw.count)).reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                return .failure(JSONParseError(offset: error.offset, line: line, message: error.message))
            }
        }
    }
}
