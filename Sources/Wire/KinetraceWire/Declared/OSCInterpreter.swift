import KinetraceJSON

/// Open Sound Control 1.0 messages and bundles (PD-OSC-*): an address, a type
/// tag string, then big-endian arguments, every part padded to 4 bytes.
enum OSCInterpreter {
    static let bundleTag: [UInt8] = Array("#bundle".utf8) + [0]
    /// Bundles inside bundles, at most.
    static let maximumBundleDepth = 4

    /// An OSC-string at `offset`: its bytes and the offset after its padding; nil when not terminated.
    static func string(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (text: UnsafeRawBufferPointer, next: Int)? {
        var end = offset
        while end < bytes.count, bytes[end] != 0 { end += 1 }
        guard end < bytes.count else { return nil }
        let next = (end + 4) & ~3
        guard next <= bytes.count, (end..<next).allSatisfy({ bytes[$0] == 0 }) else { return nil }
        return (UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), next)
    }

    static func bigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int, size: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<size { v = v << 8 | UInt64(bytes[offset + i]) }
        return v
    }

    /// The kind of a message (not a bundle) by its address.
    static func kind(_ bytes: UnsafeRawBufferPointer, _ kinds: [DeclaredKind], candidates: [Int]) throws(WireError) -> Int {
        guard !bytes.isEmpty, bytes[0] == UInt8(ascii: "/"), let (address, _) = string(bytes, at: 0) else {
            throw WireError(.malformed, offset: 0, expected: "an OSC address: '/', text, a NUL and padding to 4 bytes")
        }
        for index in candidates {
            if case .osc(let declared, _) = kinds[index].encoding, address.elementsEqual(declared.utf8) { return index }
        }
        throw WireError(.malformed, offset: 0, expected: "a declared OSC address, not \(String(decoding: address, as: UTF8.self))")
    }

    /// Decodes one message of `kind` (the address already matched).
    static func decodeMessage(_ bytes: UnsafeRawBufferPointer, _ kind: DeclaredKind, base: Int = 0) throws(WireError) -> [DeclaredValue?] {
        guard bytes.count % 4 == 0 else { throw WireError(.invalidLength, offset: base + bytes.count, expected: "an OSC packet of a multiple of 4 bytes") }
        guard let (_, afterAddress) = string(bytes, at: 0) else { throw WireError(.malformed, offset: base, expected: "an OSC address") }
        guard afterAddress < bytes.count, bytes[afterAddress] == UInt8(ascii: ","), let (tags, afterTags) = string(bytes, at: afterAddress) else {
            throw WireError(.malformed, offset: base + afterAddress, expected: "an OSC type tag string")
        }
        let expectedTags = kind.fields.map { field -> UInt8 in
            switch field.type {
            case .i32: return UInt8(ascii: "i")
            case .f32: return UInt8(ascii: "f")
            case .f64: return UInt8(ascii: "d")
            case .string: return UInt8(ascii: "s")
            case .bytes: return UInt8(ascii: "b")
            case .u64: return UInt8(ascii: "t")
            default: return field.constant == .bool(true) ? UInt8(ascii: "T") : UInt8(ascii: "F")
            }
        }
        guard tags.count == expectedTags.count + 1, tags.dropFirst().elementsEqual(expectedTags) else {
            throw WireError(.malformed, offset: base + afterAddress, expected: ",\(String(decoding: expectedTags, as: UTF8.self)) as the type tags")
        }
        var offset = afterTags
        var values: [DeclaredValue?] = []
        for field in kind.fields {
            let at = offset
            func need(_ n: Int) throws(WireError) {
                guard offset + n <= bytes.count else { throw WireError(.invalidLength, offset: base + bytes.count, expected: "\(n) bytes for \(field.name)") }
            }
            let value: DeclaredValue
            switch field.type {
            case .i32:
                try need(4)
                value = .signed(Int64(Int32(bitPattern: UInt32(bigEndian(bytes, at: offset, size: 4)))))
                offset += 4
            case .f32:
                try need(4)
                value = .float32(Float32(bitPattern: UInt32(bigEndian(bytes, at: offset, size: 4))))
                offset += 4
            case .f64:
                try need(8)
                value = .float64(Double(bitPattern: bigEndian(bytes, at: offset, size: 8)))
                offset += 8
            case .u64:
                try need(8)
                value = .unsigned(bigEndian(bytes, at: offset, size: 8))
                offset += 8
            case .string:
                guard let (text, next) = string(bytes, at: offset) else { throw WireError(.malformed, offset: base + offset, expected: "an OSC-string for \(field.name)") }
                guard UTF8Validation.firstInvalidOffset(text) == nil else { throw WireError(.malformed, offset: base + offset, expected: "UTF-8 text for \(field.name)") }
                value = .string(String(decoding: text, as: UTF8.self))
                offset = next
            case .bytes:
                try need(4)
                let size = Int(Int32(bitPattern: UInt32(bigEndian(bytes, at: offset, size: 4))))
                guard size >= 0, offset + 4 + size <= bytes.count else { throw WireError(.invalidLength, offset: base + offset, expected: "a blob within the packet") }
                value = .bytes(Array(bytes[(offset + 4)..<(offset + 4 + size)]))
                offset = (offset + 4 + size + 3) & ~3
            default:
                value = field.constant ?? .bool(false)
            }
            values.append(try TextualInterpreter.check(value, field, at: base + at).get())
        }
        guard offset == bytes.count else { throw WireError(.invalidLength, offset: base + offset, expected: "no bytes after the last argument") }
        return values
    }

    /// The elements of a bundle, with their offsets, and its time tag.
    static func bundleElements(_ bytes: UnsafeRawBufferPointer, depth: Int = 0, base: Int = 0) throws(WireError)
        -> (timeTag: UInt64, elements: [(offset: Int, bytes: UnsafeRawBufferPointer)]) {
        guard bytes.count >= 16, bytes.count % 4 == 0 else { throw WireError(.invalidLength, offset: base + bytes.count, expected: "a bundle of 16 bytes or more, a multiple of 4") }
        let tag = bigEndian(bytes, at: 8, size: 8)
        var elements: [(Int, UnsafeRawBufferPointer)] = []
        var offset = 16
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw WireError(.invalidLength, offset: base + offset, expected: "an element size") }
            let size = Int(Int32(bitPattern: UInt32(bigEndian(bytes, at: offset, size: 4))))
            guard size > 0, size % 4 == 0, offset + 4 + size <= bytes.count else {
                throw WireError(.invalidLength, offset: base + offset, expected: "an element size, a positive multiple of 4 within the bundle")
            }
            let element = UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 4 + size)])
            if element.starts(with: bundleTag) {
                guard depth + 1 < maximumBundleDepth else { throw WireError(.malformed, offset: base + offset + 4, expected: "bundles nested at most \(maximumBundleDepth) deep") }
                elements.append(contentsOf: try bundleElements(element, depth: depth + 1, base: base + offset + 4).elements)
            } else {
                elements.append((base + offset + 4, element))
            }
            guard elements.count <= 64 else { throw WireError(.malformed, offset: base + offset, expected: "at most 64 messages in a bundle") }
            offset += 4 + size
        }
        guard !elements.isEmpty else { throw WireError(.malformed, offset: base + 16, expected: "a bundle with a message") }
        return (tag, elements)
    }

    static func isBundle(_ bytes: UnsafeRawBufferPointer) -> Bool { bytes.starts(with: bundleTag) }

    // MARK: Writing

    static func padded(_ text: [UInt8], into out: inout [UInt8]) {
        out.append(contentsOf: text)
        out.append(0)
        while out.count % 4 != 0 { out.append(0) }
    }

    static func encode(_ kind: DeclaredKind, _ values: [DeclaredValue?]) -> [UInt8] {
        guard case .osc(let address, _) = kind.encoding else { return [] }
        var out: [UInt8] = []
        padded(Array(address.utf8), into: &out)
        var tags: [UInt8] = [UInt8(ascii: ",")]
        var arguments: [UInt8] = []
        func be(_ v: UInt64, _ size: Int) { for i in stride(from: size - 1, through: 0, by: -1) { arguments.append(UInt8(truncatingIfNeeded: v >> UInt64(8 * i))) } }
        for (index, field) in kind.fields.enumerated() {
            let value = field.constant ?? (index < values.count ? values[index] : nil)
            switch field.type {
            case .i32:
                tags.append(UInt8(ascii: "i"))
                let d = value?.double ?? 0
                be(UInt64(UInt32(bitPattern: Int32(clamping: Int64(nearest: d)))), 4)
            case .f32: tags.append(UInt8(ascii: "f")); be(UInt64(Float32(value?.double ?? 0).bitPattern), 4)
            case .f64: tags.append(UInt8(ascii: "d")); be((value?.double ?? 0).bitPattern, 8)
            case .u64:
                tags.append(UInt8(ascii: "t"))
                if case .unsigned(let v) = value { be(v, 8) } else { be(1, 8) }
            case .string:
                tags.append(UInt8(ascii: "s"))
                if case .string(let s) = value { padded(Array(s.utf8), into: &arguments) } else { padded([], into: &arguments) }
            case .bytes:
                tags.append(UInt8(ascii: "b"))
                let blob: [UInt8] = { if case .bytes(let b) = value { return b } else { return [] } }()
                be(UInt64(blob.count), 4)
                arguments.append(contentsOf: blob)
                while arguments.count % 4 != 0 { arguments.append(0) }
            default:
                tags.append(field.constant == .bool(true) ? UInt8(ascii: "T") : UInt8(ascii: "F"))
            }
        }
        padded(tags, into: &out)
        return out + arguments
    }
}
