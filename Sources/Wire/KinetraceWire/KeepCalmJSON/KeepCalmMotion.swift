import KinetraceJSON

/// A message identifier as Foundation's `UUID` writes it: 16 bytes, shown in
/// the uppercase 8-4-4-4-12 form (KC-MSG-4).
package struct MessageID: Hashable, Sendable, CustomStringConvertible {
    package var high: UInt64
    package var low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A version-4 (random) UUID from 128 random bits, as `UUID()` makes one.
    package init(randomHigh: UInt64, randomLow: UInt64) {
        high = (randomHigh & ~0xF000) | 0x4000
        low = (randomLow & ~(0xC000_0000_0000_0000 as UInt64)) | 0x8000_0000_0000_0000
    }

    package static let textLength = 36

    /// `8-4-4-4-12` uppercase hex, as `UUID().uuidString`.
    package var description: String { String(decoding: text, as: UTF8.self) }

    var text: [UInt8] {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(Self.textLength)
        for i in 0..<32 {
            if i == 8 || i == 12 || i == 16 || i == 20 { out.append(UInt8(ascii: "-")) }
            let word = i < 16 ? high : low
            let shift = UInt64(60 - 4 * (i % 16))
            out.append(digits[Int((word >> shift) & 0xF)])
        }
        return out
    }

    /// Parses exactly 36 bytes of uppercase UUID text; nil on any other form.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> MessageID? {
        guard bytes.count == textLength, bytes[8] == UInt8(ascii: "-"), bytes[13] == UInt8(ascii: "-"),
              bytes[18] == UInt8(ascii: "-"), bytes[23] == UInt8(ascii: "-") else { return nil }
        var invalid = false
        // Branch-light: one pass per group, invalid digits remembered rather than returned from.
        @inline(__always) func digits(_ range: Range<Int>, into word: inout UInt64) {
            for i in range {
                let byte = bytes[i]
                let decimal = byte &- UInt8(ascii: "0"), letter = byte &- UInt8(ascii: "A")
                let value = decimal < 10 ? decimal : letter &+ 10
                invalid = invalid || (decimal >= 10 && letter >= 6)
                word = word << 4 | UInt64(value & 0xF)
            }
        }
        var high: UInt64 = 0, low: UInt64 = 0
        digits(0..<8, into: &high)
        digits(9..<13, into: &high)
        digits(14..<18, into: &high)
        digits(19..<23, into: &low)
        digits(24..<36, into: &low)
        return invalid ? nil : MessageID(high: high, low: low)
    }
}

/// One KeepCalm message (specs/keepcalm-json.md): the envelope MultipeerKit
/// writes around the game's `MotionData` payload,
///
///     {"type":"MotionData","payload":{"id":"<UUID>","type":"Combined","x":…,"y":…,"z":…}}
///
/// where x, y and z are user acceleration (g) plus rotation rate (rad/s) on
/// each axis. There is no timestamp, checksum or reply.
package struct KeepCalmMotion: Hashable, Sendable {
    package var id: MessageID
    package var x: Double
    package var y: Double
    package var z: Double

    package init(id: MessageID, x: Double, y: Double, z: Double) {
        self.id = id
        self.x = x
        self.y = y
        self.z = z
    }

    /// KC-SIZE-1: the longest datagram a host must read. A JSONEncoder message is about 150 bytes.
    package static let maximumSize = 4096
    /// KC-VALUE-2: no phone reports a sum this large (±16 g plus ±35 rad/s at most).
    package static let maximumMagnitude = 100.0

    /// The canonical form: members in the order the game declares them,
    /// numbers as Swift's shortest round-trip text (what JSONEncoder writes).
    package func encoded() -> [UInt8] {
        var out = JSONOutput()
        out.raw("{\"type\":\"MotionData\",\"payload\":{\"id\":\"")
        out.bytes.append(contentsOf: id.text)
        out.raw("\",\"type\":\"Combined\",\"x\":")
        out.double(x)
        out.raw(",\"y\":")
        out.double(y)
        out.raw(",\"z\":")
        out.double(z)
        out.raw("}}")
        return out.bytes
    }

    /// Decodes and validates one datagram (KC-MSG-*, KC-VALUE-*, KC-SIZE-1). Members may
    /// come in any order and unknown ones are ignored; a repeated member is malformed.
    /// Names and strings are compared as text, escapes decoded (KC-MSG-7).
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> KeepCalmMotion {
        guard !bytes.isEmpty, bytes.count <= maximumSize else {
            throw WireError(.invalidLength, offset: bytes.count, expected: "a JSON message of 1 to \(maximumSize) bytes")
        }
        // KC-MSG-6, before any parsing, so the offset is the bad byte's whatever surrounds it.
        if let bad = UTF8Validation.firstInvalidOffset(bytes) {
            throw WireError(.malformed, offset: bad, expected: "well-formed UTF-8")
        }
        var parser = Parser(scanner: JSONScanner(bytes))
        do {
            return try parser.message()
        } catch let error as WireError {
            throw error
        } catch let error as JSONScanner.SyntaxError {
            throw WireError(.malformed, offset: error.offset, expected: "JSON: \(error.message)")
        } catch {
            throw WireError(.malformed, offset: parser.scanner.index, expected: "JSON")
        }
    }

    private struct Parser {
        var scanner: JSONScanner

        func fail(_ code: WireError.Code = .malformed, at offset: Int, _ expected: String) -> WireError {
            WireError(code, offset: offset, expected: expected)
        }

        mutating func message() throws -> KeepCalmMotion {
            scanner.skipWhitespace()
            guard scanner.peek() == UInt8(ascii: "{") else { throw fail(at: scanner.index, "a JSON object") }
            try scanner.beginObject()
            var first = true
            var sawType = false
            var motion: KeepCalmMotion?
            var unknown = UnknownNames()
            while true {
                let keyAt = scanner.index
                let key: JSONKey
                if let fast = scanner.matchKey("type", first: &first) ?? scanner.matchKey("payload", first: &first) {
                    key = fast
                } else if let slow = try scanner.nextKey(first: &first) {
                    key = slow
                } else {
                    break
                }
                scanner.skipWhitespace()
                let at = scanner.index
                if key.equals("type") {
                    guard !sawType else { throw fail(at: keyAt, "one \"type\" member") }
                    sawType = true
                    guard try scanner.consume("\"MotionData\"") || escapedString(is: "MotionData") else { throw fail(at: at, "\"type\" the string \"MotionData\"") }
                } else if key.equals("payload") {
                    guard motion == nil else { throw fail(at: keyAt, "one \"payload\" member") }
                    guard scanner.peek() == UInt8(ascii: "{") else { throw fail(at: at, "\"payload\" an object") }
                    motion = try payload()
                } else {
                    guard unknown.insert(key, bytesLeft: bytesCount - scanner.index) else { throw fail(at: keyAt, "each member name once") }
                    try scanner.skipValue(depth: 1)
                }
                scanner.skipWhitespace()
            }
            try scanner.expectEnd()
            guard sawType else { throw fail(at: bytesCount, "a \"type\" member") }
            guard let motion else { throw fail(at: bytesCount, "a \"payload\" member") }
            return motion
        }

        var bytesCount: Int { scanner.bytes.count }

        mutating func payload() throws -> KeepCalmMotion {
            let start = scanner.index
            try scanner.beginObject()
            var first = true
            var id: MessageID?, sawType = false
            var unknown = UnknownNames()
            // Three locals, not an array: no allocation per message.
            var x: Double?, y: Double?, z: Double?
            while true {
                let keyAt = scanner.index
                let key: JSONKey
                if let fast = scanner.matchKey("id", first: &first) ?? scanner.matchKey("type", first: &first)
                    ?? scanner.matchKey("x", first: &first) ?? scanner.matchKey("y", first: &first) ?? scanner.matchKey("z", first: &first) {
                    key = fast
                } else if let slow = try scanner.nextKey(first: &first) {
                    key = slow
                } else {
                    break
                }
                scanner.skipWhitespace()
                let at = scanner.index
                if key.equals("id") {
                    guard id == nil else { throw fail(at: keyAt, "one \"id\" member") }
                    id = try uuid(at: at)
                } else if key.equals("type") {
                    guard !sawType else { throw fail(at: keyAt, "one payload \"type\" member") }
                    sawType = true
                    guard try scanner.consume("\"Combined\"") || escapedString(is: "Combined") else { throw fail(at: at, "payload \"type\" the string \"Combined\"") }
                } else if key.equals("x") {
                    guard x == nil else { throw fail(at: keyAt, "one \"x\" member") }
                    x = try number("x", at: at)
                } else if key.equals("y") {
                    guard y == nil else { throw fail(at: keyAt, "one \"y\" member") }
                    y = try number("y", at: at)
                } else if key.equals("z") {
                    guard z == nil else { throw fail(at: keyAt, "one \"z\" member") }
                    z = try number("z", at: at)
                } else {
                    guard unknown.insert(key, bytesLeft: bytesCount - scanner.index) else { throw fail(at: keyAt, "each payload member name once") }
                    try scanner.skipValue(depth: 2)
                }
                scanner.skipWhitespace()
            }
            guard let id else { throw fail(at: start, "payload member \"id\"") }
            guard sawType else { throw fail(at: start, "payload member \"type\"") }
            guard let x else { throw fail(at: start, "payload member \"x\"") }
            guard let y else { throw fail(at: start, "payload member \"y\"") }
            guard let z else { throw fail(at: start, "payload member \"z\"") }
            return KeepCalmMotion(id: id, x: x, y: y, z: z)
        }

        mutating func uuid(at: Int) throws -> MessageID {
            guard scanner.peek() == UInt8(ascii: "\"") else { throw fail(at: at, "\"id\" a UUID string") }
            let token = try scanner.readStringToken()
            let parsed = token.escaped ? Array(token.string.utf8).withUnsafeBytes(MessageID.parse) : MessageID.parse(token.raw)
            guard let id = parsed else {
                throw fail(at: at, "\"id\" an uppercase UUID, 8-4-4-4-12 hex digits")
            }
            return id
        }

        /// Whether the next value is the string `text` written some other way than its
        /// plain bytes (which the caller tries first): with escapes, decoded (KC-MSG-7).
        mutating func escapedString(is text: StaticString) throws -> Bool {
            guard scanner.peek() == UInt8(ascii: "\"") else { return false }
            return try scanner.readStringToken().equals(text)
        }

        mutating func number(_ name: StaticString, at: Int) throws -> Double {
            if scanner.peek() == UInt8(ascii: "\"") {
                // JSONEncoder's nonConformingFloatEncodingStrategy writes NaN and infinities as strings.
                let text = (try? scanner.readString()) ?? ""
                let nonFinite = ["nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"]
                throw fail(nonFinite.contains(text.lowercased()) ? .nonFinite : .malformed, at: at, "\"\(name)\" a finite JSON number")
            }
            guard let byte = scanner.peek(), byte == UInt8(ascii: "-") || JSONScanner.isASCIIDigit(byte) else {
                throw fail(at: at, "\"\(name)\" a JSON number")
            }
            let token = try scanner.readNumberToken()
            let value = JSONNumber.double(UnsafeRawBufferPointer(rebasing: scanner.bytes[token.start..<token.end]))
            guard value.isFinite, abs(value) <= KeepCalmMotion.maximumMagnitude else {
                throw fail(.outOfRange, at: at, "\"\(name)\" within ±\(Int(KeepCalmMotion.maximumMagnitude))")
            }
            return value
        }
    }

    /// The unknown member names met at one level (KC-MSG-3), compared as decoded text.
    /// The first eight stay in place and are compared one by one, so a message with a few
    /// unknown members allocates nothing; more (a sender padding a datagram with names) go
    /// in a hash set, so a datagram full of names still costs linear time. Valid only while
    /// the datagram's bytes are.
    private struct UnknownNames {
        private typealias Eight = (JSONKey, JSONKey, JSONKey, JSONKey, JSONKey, JSONKey, JSONKey, JSONKey)
        private static let inPlace = 8
        private var few: Eight
        private var count = 0
        private var many: Set<Name>?  // nil until needed: not even the empty set's reference counting

        init() {
            let none = JSONKey(raw: UnsafeRawBufferPointer(start: nil, count: 0), escaped: false)
            few = (none, none, none, none, none, none, none, none)
        }

        /// Adds `key`'s name; false when the level already has it. `bytesLeft` bounds the
        /// names still to come (each takes at least 5 bytes, `"":0,`), so the set never rehashes.
        mutating func insert(_ key: JSONKey, bytesLeft: Int) -> Bool {
            if count < Self.inPlace {
                let stored = count
                let isNew = withUnsafeMutablePointer(to: &few) { tuple in
                    tuple.withMemoryRebound(to: JSONKey.self, capacity: Self.inPlace) { keys in
                        for i in 0..<stored where keys[i].hasSameText(as: key) { return false }
                        keys[stored] = key
                        return true
                    }
                }
                if isNew { count += 1 }
                return isNew
            }
            if many == nil {
                var earlier = few
                var set = Set<Name>(minimumCapacity: Self.inPlace + 1 + bytesLeft / 5)
                withUnsafePointer(to: &earlier) { tuple in
                    tuple.withMemoryRebound(to: JSONKey.self, capacity: Self.inPlace) { keys in
                        for i in 0..<Self.inPlace { set.insert(Name(key: keys[i])) }
                    }
                }
                many = set
            }
            return many!.insert(Name(key: key)).inserted
        }

        private struct Name: Hashable {
            let key: JSONKey
            func hash(into hasher: inout Hasher) { key.hashText(into: &hasher) }
            static func == (a: Name, b: Name) -> Bool { a.key.hasSameText(as: b.key) }
        }
    }
}
