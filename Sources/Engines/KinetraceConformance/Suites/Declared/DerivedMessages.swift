import KinetraceJSON
import KinetraceSupport
import KinetraceWire

/// The messages derived cases send, made from the declaration of the protocol under test:
/// samples with chosen values, and each kind of invalid input the declaration implies,
/// one fault at a time, every other byte as a valid sample's.
struct DerivedMessages: Sendable {
    let declared: DeclaredProtocol
    let kindIndex: Int
    let kind: DeclaredKind
    /// The field the threshold watches, when the host has one.
    let quantityField: Int?
    let threshold: Double?

    init?(_ declared: DeclaredProtocol) {
        guard let index = declared.sampleKind else { return nil }
        self.declared = declared
        kindIndex = index
        kind = declared.declared.kinds[index]
        if case .threshold(let quantity, let above, _, _, _, _)? = declared.declared.host?.behaviour {
            quantityField = kind.fields.firstIndex { $0.role == quantity }
            threshold = above
        } else {
            quantityField = nil
            threshold = nil
        }
    }

    var isStream: Bool { declared.transport == .byteStream }
    var hasSenderClock: Bool { kind.fields.contains { $0.role == .senderTime } }

    // MARK: Values

    /// A value's nearest representation in a field's type (what travels).
    func representable(_ v: Double, in field: DeclaredField) -> Double {
        switch field.type {
        case .f32: return Double(Float32(v))
        case _ where field.type.isIntegral: return v.rounded(.down)
        default: return v
        }
    }

    /// The greatest value of the quantity's type not above `τ`, and the least above it: the threshold's edges.
    func edges(of tau: Double) -> (notAbove: Double, above: Double)? {
        guard let q = quantityField else { return nil }
        switch kind.fields[q].type {
        case .f32:
            let f = Float32(tau)
            let notAbove = Double(f) <= tau ? f : f.nextDown
            return (Double(notAbove), Double(notAbove.nextUp))
        case let t where t.isIntegral:
            return (tau.rounded(.down), tau.rounded(.down) + 1)
        default:
            return (tau, tau.nextUp)
        }
    }

    /// A value the quantity's field may carry that the threshold decides on: a quarter above
    /// `τ`, within the field's declared range.
    func deciding(_ tau: Double) -> Double {
        let upper = quantityField.flatMap { kind.fields[$0].range?.upperBound } ?? .infinity
        return quantityField.map { representable(min(tau + 0.25, (tau + upper) / 2), in: kind.fields[$0]) } ?? tau + 0.25
    }

    /// One below the threshold, within range.
    func quiet(_ tau: Double) -> Double {
        let lower = quantityField.flatMap { kind.fields[$0].range?.lowerBound } ?? -.infinity
        return quantityField.map { representable(max(tau - 0.25, (tau + lower) / 2), in: kind.fields[$0]) } ?? tau - 0.25
    }

    /// A sample's field values: sender time `senderTimeMs`, `quantity` in the watched field,
    /// `motion` for the others by field index (0 when absent), a fresh message id from `salt`.
    func values(senderTimeMs: UInt64, quantity: Double?, motion: [Int: Double] = [:], salt: UInt64) -> [DeclaredValue?] {
        var values = [DeclaredValue?](repeating: nil, count: kind.fields.count)
        for (i, field) in kind.fields.enumerated() where field.constant == nil && field.check == nil && field.type != .padding {
            switch field.role {
            case .senderTime?: values[i] = declared.senderTime(ms: senderTimeMs, as: field)
            case .messageID?, .controllerID?: values[i] = identifier(field, salt: salt)
            case .motion?, nil:
                let v = i == quantityField ? quantity ?? 0 : motion[i] ?? 0
                values[i] = number(v, field)
            case .echoTime?: values[i] = .unsigned(0)
            }
            if field.format != nil, field.role != .messageID { values[i] = identifier(field, salt: salt) }
        }
        return values
    }

    func number(_ v: Double, _ field: DeclaredField) -> DeclaredValue {
        switch field.type {
        case .f32: return .float32(Float32(v))
        case .u8, .u16, .u32, .u64: return .unsigned(v.isFinite && v >= 0 ? UInt64(min(v, 1.8e19)) : 0)
        case .i8, .i16, .i32, .i64, .integer: return .signed(v.isFinite ? Int64(max(min(v, 9e18), -9e18)) : 0)
        case .string: return .string(String(v))
        case .boolean: return .bool(v != 0)
        default: return .float64(v)
        }
    }

    /// A message or controller id no earlier message used: a UUID in the declared case, else a counter.
    func identifier(_ field: DeclaredField, salt: UInt64) -> DeclaredValue {
        guard field.type == .string else { return field.type.isSigned ? .signed(Int64(salt & 0x7fff_ffff)) : .unsigned(salt & 0xffff_ffff) }
        var random = SeededGenerator(seed: salt &+ 0x6b69_6e65_7472_6163)
        let a = random.next(), b = random.next()
        func hex(_ v: UInt64, _ digits: Int) -> String {
            let s = String(v, radix: 16, uppercase: field.format != "uuid")
            return String(repeating: "0", count: max(0, digits - s.count)) + s.suffix(digits)
        }
        let text = "\(hex(a >> 32, 8))-\(hex((a >> 16) & 0xffff, 4))-\(hex(0x4000 | (a & 0x0fff), 4))-\(hex(0x8000 | (b >> 48) & 0x3fff, 4))-\(hex(b & 0xffff_ffff_ffff, 12))"
        return .string(text)
    }

    // MARK: Writing

    /// A valid sample, framed.
    func sample(senderTimeMs: UInt64, quantity: Double?, motion: [Int: Double] = [:], salt: UInt64) -> [UInt8] {
        declared.framed(body(values(senderTimeMs: senderTimeMs, quantity: quantity, motion: motion, salt: salt)))
    }

    func body(_ values: [DeclaredValue?], variant: Variant = .none) -> [UInt8] {
        switch kind.encoding {
        case .json: return json(values, variant)
        case .text(let separator, _): return text(values, separator, variant)
        default:
            var bytes = declared.encodeBody(kind, values)
            switch variant {
            case .wrongType(let i) where oscTagIndex(i) != nil:
                // The argument's bytes kept, its type tag changed: f (float32) read as i (int32), d as t, anything else as f.
                let at = oscTagIndex(i)!
                bytes[at] = bytes[at] == UInt8(ascii: "f") ? UInt8(ascii: "i") : bytes[at] == UInt8(ascii: "d") ? UInt8(ascii: "t") : UInt8(ascii: "f")
            case .unknownMember:
                if case .osc(let address, _) = kind.encoding {
                    // Another address, the same arguments: a message the declaration does not know.
                    let old = Self.oscPadded(Array(address.utf8)), new = Self.oscPadded(Array((address + "-unknown").utf8))
                    bytes = new + bytes.dropFirst(old.count)
                }
            default: break
            }
            return bytes
        }
    }

    /// Where an OSC argument's type tag is in the body.
    private func oscTagIndex(_ field: Int) -> Int? {
        guard case .osc(let address, _) = kind.encoding else { return nil }
        return Self.oscPadded(Array(address.utf8)).count + 1 + field
    }

    static func oscPadded(_ s: [UInt8]) -> [UInt8] {
        var out = s + [0]
        while out.count % 4 != 0 { out.append(0) }
        return out
    }

    /// One fault a body may carry.
    enum Variant: Equatable {
        case none
        /// The field written with a JSON/text token of the wrong type (OSC: the wrong type tag).
        case wrongType(Int)
        /// The field written twice at its level, the first time with `first`.
        case repeated(Int, first: Double)
        /// A member the declaration does not name (OSC: an address it does not name).
        case unknownMember
        /// The field's number written as this token (JSON's overflowing `1e999`).
        case token(Int, String)
    }

    private func json(_ values: [DeclaredValue?], _ variant: Variant) -> [UInt8] {
        var out = ""
        func token(_ i: Int) -> String {
            let field = kind.fields[i]
            if case .token(i, let t) = variant { return t }
            let value = field.constant ?? values[i] ?? .float64(0)
            if case .wrongType(i) = variant {
                // A string where a number belongs; a number where a string or boolean does.
                return field.type == .string || field.type == .boolean ? "1" : "\"\(scalar(value, field))\""
            }
            return scalar(value, field)
        }
        func write(prefix: [String]) {
            out += "{"
            var written: [String] = []
            if prefix.isEmpty, variant == .unknownMember { out += "\"kinetrace_unknown\":{\"a\":[1,2]},"; }
            for (i, field) in kind.fields.enumerated() where field.path.count > prefix.count && Array(field.path.prefix(prefix.count)) == prefix {
                let name = field.path[prefix.count]
                guard !written.contains(name) else { continue }
                if !written.isEmpty { out += "," }
                written.append(name)
                if field.path.count > prefix.count + 1 {
                    out += "\(Self.quoted(name)):"
                    write(prefix: prefix + [name])
                    continue
                }
                if case .repeated(i, let first) = variant { out += "\(Self.quoted(name)):\(scalar(number(first, field), field))," }
                out += "\(Self.quoted(name)):\(token(i))"
            }
            out += "}"
        }
        write(prefix: [])
        return Array(out.utf8)
    }

    private func text(_ values: [DeclaredValue?], _ separator: [UInt8], _ variant: Variant) -> [UInt8] {
        var out: [UInt8] = []
        for (i, field) in kind.fields.enumerated() {
            if i > 0 { out += separator }
            if case .wrongType(i) = variant { out += Array((field.type == .string ? "1" : "x").utf8); continue }
            if case .token(i, let t) = variant { out += Array(t.utf8); continue }
            let value = field.constant ?? values[i] ?? .float64(0)
            switch value {
            case .string(let s): out += Array(s.utf8)
            default: out += Array(scalar(value, field).utf8)
            }
        }
        if variant == .unknownMember { out += separator + Array("0".utf8) }
        return out
    }

    private func scalar(_ value: DeclaredValue, _ field: DeclaredField) -> String {
        switch value {
        case .string(let s): return Self.quoted(s)
        case .signed(let v): return String(v)
        case .unsigned(let v): return String(v)
        case .bool(let b): return b ? "true" : "false"
        case .float32(let f): return Double(f).description
        case .float64(let d): return d.description
        case .bytes: return "\"\""
        }
    }

    static func quoted(_ s: String) -> String { JSONValue.string(s).jsonText }

    // MARK: Invalid input

    /// One invalid message the declaration implies, with everything else a deciding sample's.
    struct Invalid: Sendable {
        enum Category: String, Sendable { case range, finite, check, length, type, members }
        var category: Category
        /// What is wrong, for evidence: "payload.y = 101 (range [-100, 100])".
        var label: String
        var bytes: @Sendable (_ senderTimeMs: UInt64, _ salt: UInt64) -> [UInt8]
        /// The message cannot be framed on a byte stream (a record over the maximum): the host rightly
        /// gives up on that stream, so the valid message that follows comes from a fresh controller.
        var breaksStream = false
    }

    /// Every invalid message the declaration implies, each carrying a value the host would decide on
    /// were it valid (for a threshold host, its quantity above τ unless the fault is the quantity's).
    func invalidMessages(tau: Double) -> [Invalid] {
        var out: [Invalid] = []
        let decidingValue = threshold.map { _ in deciding(tau) }
        let me = self
        @Sendable func base(_ t: UInt64, _ salt: UInt64) -> [DeclaredValue?] { me.values(senderTimeMs: t, quantity: decidingValue, salt: salt) }
        for (i, field) in kind.fields.enumerated() where field.constant == nil && field.check == nil && field.type.isNumeric {
            guard case .motion? = field.role else { continue }
            if let range = field.range {
                // Above the range: for the quantity that is also above τ, so a host that skips the range check decides.
                let over = field.type == .f32 ? Double(Float32(range.upperBound).nextUp.nextUp) : field.type.isIntegral ? range.upperBound + 1 : range.upperBound.nextUp * (range.upperBound > 0 ? 1.000001 : 1) + (range.upperBound == 0 ? 1 : 0)
                out.append(Invalid(category: .range, label: "\(field.name) = \(over), outside its range [\(range.lowerBound), \(range.upperBound)]") { t, salt in
                    var v = base(t, salt)
                    v[i] = me.number(over, field)
                    return me.declared.framed(me.body(v))
                })
            }
            // JSON and text numbers are finite by construction (one that overflows a double is malformed whatever
            // the declaration says), so only binary and OSC floats have a non-finite value to send.
            if field.finite, field.type == .f32 || field.type == .f64 {
                // The quantity infinite (a lax host decides on it); any other field NaN.
                out.append(Invalid(category: .finite, label: "\(field.name) = \(i == quantityField ? "+infinity" : "NaN")") { t, salt in
                    var v = base(t, salt)
                    v[i] = me.number(i == me.quantityField ? .infinity : .nan, field)
                    return me.declared.framed(me.body(v))
                })
            }
        }
        for field in kind.fields where field.check != nil {
            out.append(Invalid(category: .check, label: "\(field.name) (\(field.check!.algorithm.rawValue)) one bit off") { t, salt in
                var body = me.declared.encodeBody(me.kind, base(t, salt))
                body[field.offset] ^= 0x01
                return me.declared.framed(body)
            })
        }
        switch (kind.encoding, declared.declared.framing) {
        case (.binary(let length), .datagram):
            out.append(Invalid(category: .length, label: "\(length + 1) bytes, one more than the kind's \(length)") { t, salt in
                me.declared.encodeBody(me.kind, base(t, salt)) + [0]
            })
            out.append(Invalid(category: .length, label: "\(length - 1) bytes, one fewer than the kind's \(length)") { t, salt in
                Array(me.declared.encodeBody(me.kind, base(t, salt)).dropLast())
            })
        case (.json(let maximum, let unknownAllowed, let repeated), _):
            for (i, field) in kind.fields.enumerated() where field.constant != nil || field.role != nil && field.role != .senderTime {
                out.append(Invalid(category: .type, label: "\(field.path.joined(separator: ".")) written as a \(field.type == .string || field.type == .boolean ? "number" : "string")") { t, salt in
                    me.declared.framed(me.body(base(t, salt), variant: .wrongType(i)))
                })
            }
            if repeated == .malformed, let q = quantityField {
                // Both values decide, so a host taking either the first or the last decides: only dropping it is right.
                out.append(Invalid(category: .members, label: "\(kind.fields[q].path.joined(separator: ".")) given twice") { t, salt in
                    me.declared.framed(me.body(base(t, salt), variant: .repeated(q, first: decidingValue ?? 0)))
                })
            }
            if !unknownAllowed {
                out.append(Invalid(category: .members, label: "an unknown member kinetrace_unknown") { t, salt in
                    me.declared.framed(me.body(base(t, salt), variant: .unknownMember))
                })
            }
            if maximum < 65_000 {
                let framed: Bool = { if case .datagram = me.declared.declared.framing { return false } else { return true } }()
                out.append(Invalid(category: .length, label: "\(maximum + 1) bytes, one more than max_length \(maximum)", bytes: { t, salt in
                    var body = me.body(base(t, salt))
                    // Padding inside the object keeps it JSON: only its length is wrong.
                    let pad = max(0, maximum + 1 - body.count)
                    body.insert(contentsOf: [UInt8](repeating: 0x20, count: pad), at: 1)
                    return me.declared.framed(body)
                }, breaksStream: framed))
            }
        case (.osc, _), (.text, _):
            let isOSC: Bool = { if case .osc = me.kind.encoding { return true } else { return false } }()
            if let q = quantityField {
                out.append(Invalid(category: .type, label: "\(kind.fields[q].name)" + (isOSC ? "'s type tag changed" : " written as x")) { t, salt in
                    me.declared.framed(me.body(base(t, salt), variant: .wrongType(q)))
                })
            }
            out.append(Invalid(category: .members, label: isOSC ? "an address the declaration does not name" : "one field more than declared") { t, salt in
                me.declared.framed(me.body(base(t, salt), variant: .unknownMember))
            })
        default: break
        }
        return out
    }
}

extension ScalarType {
    var isIntegral: Bool { isInteger }
}
