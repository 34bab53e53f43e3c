/// Reads and writes a declaration's binary fixed layouts (PD-BIN-*): fields at
/// known offsets, checks first, then each field's finiteness and range, so the
/// error names the first bad field as the compiled codecs do.
enum BinaryInterpreter {
    /// The raw bits of a scalar field (bytes and padding have none).
    @inline(__always)
    static func bits(_ bytes: UnsafeRawBufferPointer, _ field: DeclaredField) -> UInt64 {
        var value: UInt64 = 0
        let base = field.offset
        if field.bigEndian {
            for i in 0..<field.size { value = value << 8 | UInt64(bytes[base + i]) }
        } else {
            for i in stride(from: field.size - 1, through: 0, by: -1) { value = value << 8 | UInt64(bytes[base + i]) }
        }
        return value
    }

    /// A two's-complement integer of `size` bytes, held in the low bits of `raw`, as an Int64.
    @inline(__always)
    static func signExtended(_ raw: UInt64, size: Int) -> Int64 {
        let unused = UInt64(64 - 8 * size)
        return Int64(bitPattern: raw << unused) >> Int64(unused)
    }

    /// The field's value from its bits.
    static func value(_ bytes: UnsafeRawBufferPointer, _ field: DeclaredField) -> DeclaredValue? {
        switch field.type {
        case .padding: return nil
        case .bytes: return .bytes(Array(bytes[field.offset..<(field.offset + field.size)]))
        case .f32: return .float32(Float32(bitPattern: UInt32(truncatingIfNeeded: bits(bytes, field))))
        case .f64: return .float64(Double(bitPattern: bits(bytes, field)))
        case .i8, .i16, .i32, .i64:
            return .signed(signExtended(bits(bytes, field), size: field.size))
        default: return .unsigned(bits(bytes, field))
        }
    }

    /// The first kind whose length and constants the bytes have, or the error.
    static func kind(of bytes: UnsafeRawBufferPointer, _ kinds: [DeclaredKind], candidates: [Int]) throws(WireError) -> Int {
        var firstMismatch: WireError?
        for index in candidates {
            guard case .binary(let length) = kinds[index].encoding, length == bytes.count else { continue }
            var matches = true
            for field in kinds[index].fields {
                guard let constant = field.constant else { continue }
                if value(bytes, field) != constant {
                    if firstMismatch == nil {
                        firstMismatch = WireError(.malformed, offset: field.offset, expected: "\(field.name) = \(render(constant))")
                    }
                    matches = false
                    break
                }
            }
            if matches { return index }
        }
        if let firstMismatch { throw firstMismatch }
        let lengths = candidates.compactMap { i -> Int? in if case .binary(let l) = kinds[i].encoding { return l } else { return nil } }
        throw WireError(.invalidLength, offset: bytes.count,
                        expected: lengths.isEmpty ? "no binary message" : "a message of " + Set(lengths).sorted().map(String.init).joined(separator: " or ") + " bytes")
    }

    static func render(_ value: DeclaredValue) -> String {
        switch value {
        case .unsigned(let v): return String(v)
        case .signed(let v): return String(v)
        case .float32(let v): return v.description
        case .float64(let v): return v.description
        case .string(let s): return "\"\(s)\""
        case .bytes(let b): return Hex.encode(b)
        case .bool(let b): return b ? "true" : "false"
        }
    }

    /// Checks then fields; calls `visit` with each valid field's value as a number (for the facts path).
    @inline(__always)
    static func validate(_ bytes: UnsafeRawBufferPointer, _ kind: DeclaredKind, visit: (Int, DeclaredField, UInt64) throws(WireError) -> Void) throws(WireError) {
        for field in kind.fields {
            guard let check = field.check else { continue }
            let expected = check.algorithm.compute(UnsafeRawBufferPointer(rebasing: bytes[check.from..<check.to]))
            guard bits(bytes, field) == expected else {
                throw WireError(.checksumMismatch, offset: field.offset, expected: "\(check.algorithm.rawValue) of bytes \(check.from)..<\(check.to)")
            }
        }
        for (index, field) in kind.fields.enumerated() where field.type != .padding && field.type != .bytes {
            let raw = bits(bytes, field)
            if field.finite || field.range != nil {
                let number: Double
                switch field.type {
                case .f32: number = Double(Float32(bitPattern: UInt32(truncatingIfNeeded: raw)))
                case .f64: number = Double(bitPattern: raw)
                case .i8, .i16, .i32, .i64:
                    number = Double(signExtended(raw, size: field.size))
                default: number = Double(raw)
                }
                if field.finite, !number.isFinite {
                    throw WireError(.nonFinite, offset: field.offset, expected: "a finite \(field.name)")
                }
                if let range = field.range, !range.contains(number) {
                    throw WireError(WireError.Code.outOfRange, offset: field.offset,
                                    expected: "\(field.name) within [\(range.lowerBound), \(range.upperBound)]")
                }
            }
            try visit(index, field, raw)
        }
    }

    /// The body of a kind from values (missing ones zero), constants and checks filled in.
    static func encode(_ kind: DeclaredKind, _ values: [DeclaredValue?]) -> [UInt8] {
        guard case .binary(let length) = kind.encoding else { return [] }
        var out = [UInt8](repeating: 0, count: length)
        func put(_ raw: UInt64, _ field: DeclaredField) {
            for i in 0..<field.size {
                let shift = UInt64(8 * (field.bigEndian ? field.size - 1 - i : i))
                out[field.offset + i] = UInt8(truncatingIfNeeded: raw >> shift)
            }
        }
        for (index, field) in kind.fields.enumerated() {
            guard let value = field.constant ?? (index < values.count ? values[index] : nil) else { continue }
            switch (field.type, value) {
            case (.bytes, .bytes(let b)): for (i, byte) in b.prefix(field.size).enumerated() { out[field.offset + i] = byte }
            case (.f32, _): put(UInt64(Float32(value.double ?? 0).bitPattern), field)
            case (.f64, _): put((value.double ?? 0).bitPattern, field)
            case (_, .unsigned(let v)): put(v, field)
            case (_, .signed(let v)): put(UInt64(bitPattern: v), field)
            case (.i8, _), (.i16, _), (.i32, _), (.i64, _):
                put(UInt64(bitPattern: Int64(nearest: value.double ?? 0)), field)
            default:
                put(UInt64(nearest: value.double ?? 0), field)
            }
        }
        // In field order, so a check may cover an earlier check's field.
        for field in kind.fields {
            guard let check = field.check else { continue }
            let sum = out.withUnsafeBytes { check.algorithm.compute(UnsafeRawBufferPointer(rebasing: $0[check.from..<check.to])) }
            put(sum, field)
        }
        return out
    }
}
