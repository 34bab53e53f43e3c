import KinetraceJSON

/// The member tree of a JSON kind: which names each object level declares,
/// and whether each is a value (a field's index) or an object below.
final class JSONLayout: Sendable {
    struct Level: Sendable {
        var names: [[UInt8]]
        /// For each name: the field's index, or the child level's index (negated, minus one).
        var targets: [Int]
    }

    let levels: [Level]

    init(_ fields: [DeclaredField]) {
        var levels = [Level(names: [], targets: [])]
        for (index, field) in fields.enumerated() {
            var level = 0
            for (depth, part) in field.path.enumerated() {
                let name = Array(part.utf8)
                let isLeaf = depth == field.path.count - 1
                if let at = levels[level].names.firstIndex(of: name) {
                    level = -levels[level].targets[at] - 1
                } else if isLeaf {
                    levels[level].names.append(name)
                    levels[level].targets.append(index)
                } else {
                    levels.append(Level(names: [], targets: []))
                    levels[level].names.append(name)
                    levels[level].targets.append(-(levels.count - 1) - 1)
                    level = levels.count - 1
                }
            }
        }
        self.levels = levels
    }

    /// Whether a level (or one below it) has a required field.
    func requires(_ level: Int, _ fields: [DeclaredField]) -> Bool {
        levels[level].targets.contains { $0 >= 0 ? fields[$0].required : requires(-$0 - 1, fields) }
    }
}

/// Decodes JSON, text and OSC kinds; each throws the shared invalid-reason codes (PD-CODES-1).
enum TextualInterpreter {
    static let nonFiniteWords: Set<String> = ["nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"]

    // MARK: JSON

    static func decodeJSON(_ bytes: UnsafeRawBufferPointer, _ kind: DeclaredKind, layout: JSONLayout) throws(WireError) -> [DeclaredValue?] {
        guard case .json(let maximum, let unknownAllowed, let repeated) = kind.encoding else { return [] }
        guard !bytes.isEmpty, bytes.count <= maximum else {
            throw WireError(.invalidLength, offset: bytes.count, expected: "a JSON message of 1 to \(maximum) bytes")
        }
        if let bad = UTF8Validation.firstInvalidOffset(bytes) { throw WireError(.malformed, offset: bad, expected: "well-formed UTF-8") }
        var scanner = JSONScanner(bytes)
        var values = [DeclaredValue?](repeating: nil, count: kind.fields.count)
        guard scanner.peek() == UInt8(ascii: "{") else { throw WireError(.malformed, offset: scanner.index, expected: "a JSON object") }
        // The scanner throws SyntaxError only, so a decoding failure is carried out in `pending`.
        var pending: WireError?
        do throws(JSONScanner.SyntaxError) {
            try objectBody(&scanner, level: 0, depth: 1, kind: kind, layout: layout, unknownAllowed: unknownAllowed, repeated: repeated,
                           values: &values, pending: &pending)
            if pending == nil { try scanner.expectEnd() }
        } catch {
            throw WireError(.malformed, offset: error.offset, expected: "JSON: \(error.message)")
        }
        if let pending { throw pending }
        return values
    }

    private static func objectBody(_ scanner: inout JSONScanner, level: Int, depth: Int, kind: DeclaredKind, layout: JSONLayout,
                                   unknownAllowed: Bool, repeated: RepeatedMembers, values: inout [DeclaredValue?],
                                   pending: inout WireError?) throws(JSONScanner.SyntaxError) {
        let start = scanner.index
        try scanner.beginObject()
        let names = layout.levels[level].names
        var seen = [Bool](repeating: false, count: names.count)
        var unknown: Set<String> = []
        var first = true
        while true {
            scanner.skipWhitespace()
            let keyAt = scanner.index + (first ? 0 : 1)
            guard let key = try scanner.nextKey(first: &first) else { break }
            scanner.skipWhitespace()
            let at = scanner.index
            guard let slot = names.firstIndex(where: { key.equals(utf8: $0) }) else {
                if !unknownAllowed { pending = WireError(.malformed, offset: keyAt, expected: "only declared members, not \"\(key.string)\""); return }
                if repeated == .malformed, !unknown.insert(key.string).inserted {
                    pending = WireError(.malformed, offset: keyAt, expected: "each member name once"); return
                }
                try scanner.skipValue(depth: depth)
                continue
            }
            let target = layout.levels[level].targets[slot]
            if seen[slot] {
                switch repeated {
                case .malformed:
                    pending = WireError(.malformed, offset: keyAt, expected: "one \"\(key.string)\" member"); return
                case .first:
                    try scanner.skipValue(depth: depth)
                    continue
                case .last:
                    break
                }
            }
            seen[slot] = true
            if target < 0 {
                guard scanner.peek() == UInt8(ascii: "{") else {
                    pending = WireError(.malformed, offset: at, expected: "\"\(key.string)\" an object"); return
                }
                guard depth < 16 else { pending = WireError(.malformed, offset: at, expected: "nesting at most 16 deep"); return }
                try objectBody(&scanner, level: -target - 1, depth: depth + 1, kind: kind, layout: layout, unknownAllowed: unknownAllowed,
                               repeated: repeated, values: &values, pending: &pending)
                if pending != nil { return }
            } else {
                let field = kind.fields[target]
                switch leaf(&scanner, field, at: at) {
                case .success(let v): values[target] = v
                case .failure(let e): pending = e; return
                }
            }
        }
        for (slot, target) in layout.levels[level].targets.enumerated() where !seen[slot] {
            let needed = target >= 0 ? kind.fields[target].required : layout.requires(-target - 1, kind.fields)
            if needed {
                pending = WireError(.malformed, offset: start, expected: "member \"\(String(decoding: names[slot], as: UTF8.self))\""); return
            }
        }
    }

    private static func leaf(_ scanner: inout JSONScanner, _ field: DeclaredField, at: Int) -> Result<DeclaredValue, WireError> {
        func fail(_ expected: String, _ code: WireError.Code = .malformed) -> Result<DeclaredValue, WireError> {
            .failure(WireError(code, offset: at, expected: expected))
        }
        do throws(JSONScanner.SyntaxError) {
            let value: DeclaredValue
            switch field.type {
            case .string:
                guard scanner.peek() == UInt8(ascii: "\"") else { return fail("\"\(field.name)\" a string") }
                let token = try scanner.readStringToken()
                let text = token.string
                if let format = field.format, !Self.matches(format, text) { return fail("\"\(field.name)\" a \(format == "uuid_upper" ? "an uppercase UUID" : "UUID"), 8-4-4-4-12 hex digits") }
                value = .string(text)
            case .boolean:
                guard let b = scanner.peek(), b == UInt8(ascii: "t") || b == UInt8(ascii: "f") else { return fail("\"\(field.name)\" true or false") }
                value = .bool(try scanner.readBool(field.name))
            default:
                if scanner.peek() == UInt8(ascii: "\"") {
                    let text = (try? scanner.readString()) ?? ""
                    if field.finite, nonFiniteWords.contains(text.lowercased()) { return fail("\"\(field.name)\" a finite JSON number", .nonFinite) }
                    return fail("\"\(field.name)\" a JSON number")
                }
                guard let byte = scanner.peek(), byte == UInt8(ascii: "-") || JSONScanner.isASCIIDigit(byte) else {
                    return fail("\"\(field.name)\" a JSON number")
                }
                let token = try scanner.readNumberToken()
                let text = UnsafeRawBufferPointer(rebasing: scanner.bytes[token.start..<token.end])
                if field.type == .integer {
                    guard token.isInteger else { return fail("\"\(field.name)\" an integer") }
                    guard let v = Int64(String(decoding: text, as: UTF8.self)) else { return fail("\"\(field.name)\" within a 64-bit integer", .outOfRange) }
                    value = .signed(v)
                } else {
                    let v = JSONNumber.double(text)
                    // A JSON number is always finite; one too large for binary64 is out of range (PD-JSON-5).
                    guard v.isFinite else { return fail("\"\(field.name)\" within binary64", .outOfRange) }
                    value = .float64(v)
                }
            }
            return check(value, field, at: at)
        } catch {
            return .failure(WireError(.malformed, offset: error.offset, expected: "JSON: \(error.message)"))
        }
    }

    /// Constant, range and finiteness of a decoded value.
    static func check(_ value: DeclaredValue, _ field: DeclaredField, at: Int) -> Result<DeclaredValue, WireError> {
        if let constant = field.constant, constant != value, !(constant.double != nil && constant.double == value.double) {
            return .failure(WireError(.malformed, offset: at, expected: "\"\(field.name)\" the value \(BinaryInterpreter.render(constant))"))
        }
        if let number = value.double {
            if field.finite, !number.isFinite { return .failure(WireError(.nonFinite, offset: at, expected: "a finite \(field.name)")) }
            if let range = field.range, !range.contains(number) {
                return .failure(WireError(WireError.Code.outOfRange, offset: at,
                                          expected: "\"\(field.name)\" within [\(range.lowerBound), \(range.upperBound)]"))
            }
        }
        return .success(value)
    }

    static func matches(_ format: String, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 { if b != UInt8(ascii: "-") { return false }; continue }
            let digit = (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (format == "uuid" && (0x61...0x66).contains(b))
            if !digit { return false }
        }
        return true
    }

    // MARK: Text lines

    static func decodeText(_ bytes: UnsafeRawBufferPointer, _ kind: DeclaredKind) throws(WireError) -> [DeclaredValue?] {
        guard case .text(let separator, let maximum) = kind.encoding else { return [] }
        var end = bytes.count
        if end > 0, bytes[end - 1] == 0x0A { end -= 1 }
        if end > 0, bytes[end - 1] == 0x0D { end -= 1 }
        guard end > 0, bytes.count <= maximum else { throw WireError(.invalidLength, offset: bytes.count, expected: "a line of 1 to \(maximum) bytes") }
        if let bad = UTF8Validation.firstInvalidOffset(UnsafeRawBufferPointer(rebasing: bytes[0..<end])) {
            throw WireError(.malformed, offset: bad, expected: "well-formed UTF-8")
        }
        let pieces = split(bytes, end: end, separator: separator)
        guard pieces.count == kind.fields.count else {
            throw WireError(.malformed, offset: pieces.count > kind.fields.count ? pieces[kind.fields.count].lowerBound : end,
                            expected: "\(kind.fields.count) fields, found \(pieces.count)")
        }
        var values: [DeclaredValue?] = []
        values.reserveCapacity(pieces.count)
        for (field, piece) in zip(kind.fields, pieces) {
            var lo = piece.lowerBound, hi = piece.upperBound
            while lo < hi, bytes[lo] == 0x20 || bytes[lo] == 0x09 { lo += 1 }
            while hi > lo, bytes[hi - 1] == 0x20 || bytes[hi - 1] == 0x09 { hi -= 1 }
            let token = UnsafeRawBufferPointer(rebasing: bytes[lo..<hi])
            let text = String(decoding: token, as: UTF8.self)
            let value: DeclaredValue
            switch field.type {
            case .string:
                value = .string(text)
            default:
                if nonFiniteWords.contains(text.lowercased()) {
                    if field.finite { throw WireError(.nonFinite, offset: lo, expected: "a finite \(field.name)") }
                    value = .float64(text.hasPrefix("-") ? -.infinity : text.lowercased() == "nan" ? .nan : .infinity)
                    break
                }
                var scanner = JSONScanner(token)
                guard let number = try? scanner.readNumberToken(), number.start == 0, number.end == token.count else {
                    throw WireError(.malformed, offset: lo, expected: "\"\(field.name)\" a number")
                }
                if field.type == .integer {
                    guard number.isInteger else { throw WireError(.malformed, offset: lo, expected: "\"\(field.name)\" an integer") }
                    guard let v = Int64(text) else { throw WireError(.outOfRange, offset: lo, expected: "\"\(field.name)\" within a 64-bit integer") }
                    value = .signed(v)
                } else {
                    let v = JSONNumber.double(token)
                    guard v.isFinite else { throw WireError(.outOfRange, offset: lo, expected: "\"\(field.name)\" within binary64") }
                    value = .float64(v)
                }
            }
            values.append(try check(value, field, at: lo).get())
        }
        return values
    }

    static func split(_ bytes: UnsafeRawBufferPointer, end: Int, separator: [UInt8]) -> [Range<Int>] {
        var pieces: [Range<Int>] = []
        var start = 0, i = 0
        while i + separator.count <= end {
            if bytes[i] == separator[0], separator.indices.allSatisfy({ bytes[i + $0] == separator[$0] }) {
                pieces.append(start..<i)
                i += separator.count
                start = i
            } else {
                i += 1
            }
        }
        pieces.append(start..<end)
        return pieces
    }

    /// Which text kind a line is: the first whose constant fields it has.
    static func textKind(_ bytes: UnsafeRawBufferPointer, _ kinds: [DeclaredKind], candidates: [Int]) -> Int? {
        if candidates.count == 1 { return candidates[0] }
        for index in candidates {
            guard case .text(let separator, _) = kinds[index].encoding else { continue }
            var end = bytes.count
            if end > 0, bytes[end - 1] == 0x0A { end -= 1 }
            if end > 0, bytes[end - 1] == 0x0D { end -= 1 }
            let pieces = split(bytes, end: end, separator: separator)
            let fits = kinds[index].fields.enumerated().allSatisfy { i, field in
                guard let constant = field.constant else { return true }
                guard i < pieces.count else { return false }
                let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[pieces[i]]), as: UTF8.self).trimmingSpaces
                if case .string(let s) = constant { return s == text }
                return Double(text) == constant.double
            }
            if fits && pieces.count == kinds[index].fields.count { return index }
        }
        return nil
    }

    /// Which JSON kind a message is: the first whose constant members it has, checked by decoding.
    static func jsonKind(_ bytes: UnsafeRawBufferPointer, _ kinds: [DeclaredKind], layouts: [JSONLayout?], candidates: [Int])
        -> Result<(Int, [DeclaredValue?]), WireError> {
        var firstError: WireError?
        for index in candidates {
            do throws(WireError) {
                return .success((index, try decodeJSON(bytes, kinds[index], layout: layouts[index]!)))
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        return .failure(firstError ?? WireError(.malformed, offset: 0, expected: "a JSON message"))
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
