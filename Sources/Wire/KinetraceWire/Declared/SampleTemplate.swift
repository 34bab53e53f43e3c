import KinetraceJSON

/// A protocol's sample as a template another encoder fills in (the phone page's script):
/// the record's fixed bytes or literal text with a slot per role, the checks to redo, and
/// the framing. Made from the declaration through the protocol's own writers, so what a
/// filled template gives is what `sample(_:timeMs:)` gives (SampleTemplateTests fill it
/// in Swift and compare).
package struct SampleTemplate: Sendable, Equatable {
    /// How a record is laid out.
    package enum Layout: Sendable, Equatable {
        /// Fixed bytes (binary and OSC): each slot at an offset.
        case bytes([UInt8])
        /// JSON or text: literal pieces with a slot between each two.
        case text([String])
    }

    /// What a slot holds.
    package enum Content: Sendable, Equatable {
        /// The sender's clock, from ms since the UNIX epoch, in the declared unit.
        case senderTime(ClockUnit)
        /// One axis of a motion vector.
        case motion(VectorSlot, axis: Int)
        /// A message id: a version-4 UUID, upper- or lower-case.
        case messageID(upper: Bool)
    }

    package struct Slot: Sendable, Equatable {
        package var content: Content
        package var type: ScalarType
        /// Bytes layouts: where the value goes.
        package var offset = 0
        package var size = 0
        package var bigEndian = false
    }

    package struct Check: Sendable, Equatable {
        package var algorithm: CheckAlgorithm
        /// The body bytes it covers, and where it goes in the body.
        package var from: Int
        package var to: Int
        package var offset: Int
        package var size: Int
        package var bigEndian: Bool
    }

    package var protocolName: String
    package var rateHz: Double
    /// Sent as WebSocket text rather than binary.
    package var isText: Bool
    package var encoding: String
    package var layout: Layout
    package var slots: [Slot]
    package var checks: [Check]
    package var framing: DeclaredFraming
    /// The protocol's own vector: the standard vectors it sums, axis by axis.
    package var ownSumOf: [VectorSlot]

    /// Why a protocol has no template (a phone page cannot stream it).
    package struct Unsupported: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    /// The template of `declared`'s sample kind.
    package init(_ declared: DeclaredProtocol) throws(Unsupported) {
        let declaration = declared.declared
        guard let index = declared.sampleKind else { throw Unsupported(description: "\(declaration.name) has no controller-to-host message") }
        let kind = declaration.kinds[index]
        guard kind.fields.contains(where: { if case .motion = $0.role { return true } else { return false } }) else {
            throw Unsupported(description: "\(declaration.name)'s samples carry no motion")
        }
        protocolName = declaration.name
        rateHz = declaration.rateHz
        framing = declaration.framing
        ownSumOf = declaration.ownVector?.sumOf ?? []
        encoding = kind.encoding.name
        checks = []
        slots = []
        func content(_ field: DeclaredField) -> Content? {
            switch field.role {
            case .senderTime?: return .senderTime(declaration.senderClockUnit ?? .ms)
            case .motion(let slot, let axis)?: return .motion(slot, axis: axis)
            case .messageID?: return .messageID(upper: field.format != "uuid")
            default:
                if field.format != nil, field.constant == nil { return .messageID(upper: field.format != "uuid") }
                return nil
            }
        }
        switch kind.encoding {
        case .binary, .osc:
            isText = false
            let values = [DeclaredValue?](repeating: nil, count: kind.fields.count)
            var argumentOffset = 0
            if case .osc(let address, _) = kind.encoding {
                func paddedLength(_ n: Int) -> Int { (n + 4) / 4 * 4 }
                argumentOffset = paddedLength(address.utf8.count) + paddedLength(1 + kind.fields.count)
            }
            for field in kind.fields {
                if case .osc = kind.encoding {
                    // Booleans are T or F in the tags and take no argument bytes.
                    if field.type == .boolean { continue }
                    guard let size = field.type.fixedSize else {
                        throw Unsupported(description: "\(declaration.name): the page writes OSC numbers only, not \(field.type.rawValue) (\(field.name))")
                    }
                    if let content = content(field) {
                        if case .messageID = content { throw Unsupported(description: "\(declaration.name): a message id in OSC") }
                        slots.append(Slot(content: content, type: field.type, offset: argumentOffset, size: size, bigEndian: true))
                    }
                    argumentOffset += size
                    continue
                }
                if let check = field.check {
                    checks.append(Check(algorithm: check.algorithm, from: check.from, to: check.to, offset: field.offset, size: field.size, bigEndian: field.bigEndian))
                } else if let content = content(field) {
                    guard field.type.fixedSize != nil else { throw Unsupported(description: "\(declaration.name): \(field.name) is \(field.type.rawValue), not a number") }
                    slots.append(Slot(content: content, type: field.type, offset: field.offset, size: field.size, bigEndian: field.bigEndian))
                }
            }
            layout = .bytes(declared.encodeBody(kind, values))
            if case .bytes(let body) = layout, slots.contains(where: { $0.offset + $0.size > body.count }) {
                throw Unsupported(description: "\(declaration.name): a slot beyond the record")
            }
        case .json, .text:
            isText = true
            // Each slot written as a sentinel no declaration can hold elsewhere, then cut out.
            var values = [DeclaredValue?](repeating: nil, count: kind.fields.count)
            var sentinels: [(String, Slot)] = []
            for (i, field) in kind.fields.enumerated() {
                guard field.constant == nil, let content = content(field) else { continue }
                let n = sentinels.count
                let sentinel: String
                switch content {
                case .messageID:
                    sentinel = "KTSLOT\(n)X"
                    values[i] = .string(sentinel)
                default:
                    if field.type == .string { throw Unsupported(description: "\(declaration.name): \(field.name) is a string, not a number") }
                    if field.type.isInteger {
                        let v = Int64(918_273_645_000 + n * 1000)
                        sentinel = String(v)
                        values[i] = .signed(v)
                    } else {
                        let v = 918_273_645.25 + Double(n * 1000)
                        sentinel = v.description
                        values[i] = .float64(v)
                    }
                }
                sentinels.append((sentinel, Slot(content: content, type: field.type)))
            }
            var text = String(decoding: declared.encodeBody(kind, values), as: UTF8.self)
            for (sentinel, _) in sentinels where text.ranges(of: sentinel).count != 1 {
                throw Unsupported(description: "\(declaration.name): a field's value did not come through its writer exactly once")
            }
            var pieces: [String] = []
            var ordered: [Slot] = []
            // Cut at whichever sentinel comes first each time, so pieces and slots stay in text order.
            while let first = sentinels.compactMap({ (entry: (String, Slot)) -> (Range<String.Index>, Slot)? in text.firstRange(of: entry.0).map { ($0, entry.1) } })
                .min(by: { $0.0.lowerBound < $1.0.lowerBound }) {
                pieces.append(String(text[..<first.0.lowerBound]))
                ordered.append(first.1)
                text = String(text[first.0.upperBound...])
            }
            pieces.append(text)
            layout = .text(pieces)
            slots = ordered
        }
    }

    /// The record this template gives for `reading` at `timeMs`, as the page's script fills it
    /// (the same arithmetic and number spelling, in Swift): what the tests and the `declared`
    /// fuzz target hold against `sample(_:timeMs:)`.
    package func filled(_ reading: MotionReading, timeMs: UInt64, messageID: String = "00000000-0000-4000-8000-000000000000") -> [UInt8] {
        var reading = reading
        if !ownSumOf.isEmpty, reading.own == nil {
            var sum = Vector3.zero
            for slot in ownSumOf {
                let v = MotionReading.vector(reading, slot) ?? .zero
                sum = Vector3(sum.x + v.x, sum.y + v.y, sum.z + v.z)
            }
            reading.own = sum
        }
        func value(_ slot: Slot) -> DeclaredValue {
            switch slot.content {
            case .senderTime(let unit): return DeclaredWriting.clockValue(ms: timeMs, unit: unit, type: slot.type)
            case .motion(let vector, let axis):
                let v = reading.value(vector, axis: axis) ?? 0
                return slot.type == .f32 ? .float32(Float32(v)) : slot.type.isInteger ? .signed(Int64(nearest: v)) : .float64(v)
            case .messageID(let upper): return .string(upper ? messageID.uppercased() : messageID.lowercased())
            }
        }
        var body: [UInt8]
        switch layout {
        case .bytes(let template):
            body = template
            for slot in slots {
                let v = value(slot)
                let bits: UInt64
                switch (slot.type, v) {
                case (.f32, _): bits = UInt64(Float32(v.double ?? 0).bitPattern)
                case (.f64, _): bits = (v.double ?? 0).bitPattern
                case (_, .unsigned(let u)): bits = u
                case (_, .signed(let s)): bits = UInt64(bitPattern: s)
                default: bits = UInt64(bitPattern: Int64(nearest: v.double ?? 0))
                }
                for i in 0..<slot.size {
                    let shift = UInt64(8 * (slot.bigEndian ? slot.size - 1 - i : i))
                    body[slot.offset + i] = UInt8(truncatingIfNeeded: bits >> shift)
                }
            }
            for check in checks {
                let sum = body[check.from..<check.to].withUnsafeBytes { check.algorithm.compute($0) }
                for i in 0..<check.size {
                    let shift = UInt64(8 * (check.bigEndian ? check.size - 1 - i : i))
                    body[check.offset + i] = UInt8(truncatingIfNeeded: sum >> shift)
                }
            }
        case .text(let pieces):
            var text = pieces[0]
            for (slot, piece) in zip(slots, pieces.dropFirst()) {
                switch value(slot) {
                case .string(let s): text += s
                case .signed(let s): text += String(s)
                case .unsigned(let u): text += String(u)
                case let v: text += Self.scriptNumber(v.double ?? 0)
                }
                text += piece
            }
            body = Array(text.utf8)
        }
        return DeclaredProtocol.framed(body, framing: framing)
    }

    /// A number as the page's script writes it (ECMAScript's `String(number)`), non-finite ones included.
    static func scriptNumber(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return CanonicalJSON.ecmaScript(value)
    }

    /// The template as the page's script reads it.
    package var json: JSONValue {
        func slotJSON(_ slot: Slot) -> JSONValue {
            var members: [String: JSONValue] = ["type": .string(slot.type.rawValue), "offset": .integer(Int64(slot.offset)),
                                                "size": .integer(Int64(slot.size)), "big_endian": .bool(slot.bigEndian),
                                                "integer": .bool(slot.type.isInteger)]
            switch slot.content {
            case .senderTime(let unit): members["role"] = .string("sender_time"); members["unit"] = .string(unit.rawValue)
            case .motion(let vector, let axis): members["role"] = .string(FieldRole.motion(vector, axis: axis).description)
            case .messageID(let upper): members["role"] = .string(upper ? "message_id_upper" : "message_id")
            }
            return .object(members)
        }
        var framingJSON: [String: JSONValue]
        switch framing {
        case .datagram, .fixedLength: framingJSON = ["kind": .string("none")]
        case .delimiter(let bytes, _): framingJSON = ["kind": .string("delimiter"), "bytes": .array(bytes.map { .integer(Int64($0)) })]
        case .lengthPrefix(let width, let big, let offset, let countsItself, _):
            framingJSON = ["kind": .string("length_prefix"), "width": .integer(Int64(width)), "big_endian": .bool(big),
                           "offset": .integer(Int64(offset)), "counts_itself": .bool(countsItself)]
        }
        var members: [String: JSONValue] = [
            "protocol": .string(protocolName), "rate_hz": .number(rateHz), "text": .bool(isText), "encoding": .string(encoding),
            "slots": .array(slots.map(slotJSON)), "framing": .object(framingJSON),
            "own_sum_of": .array(ownSumOf.map { .string(VectorSlot.standardNames[$0.rawValue]) }),
            "checks": .array(checks.map { c in
                .object(["algorithm": .string(c.algorithm.rawValue), "from": .integer(Int64(c.from)), "to": .integer(Int64(c.to)),
                         "offset": .integer(Int64(c.offset)), "size": .integer(Int64(c.size)), "big_endian": .bool(c.bigEndian)])
            }),
        ]
        switch layout {
        case .bytes(let bytes): members["bytes"] = .array(bytes.map { .integer(Int64($0)) })
        case .text(let pieces): members["pieces"] = .array(pieces.map { .string($0) })
        }
        return .object(members)
    }
}

extension SampleTemplate {
    /// The template of any protocol: its declaration's, or a compiled protocol's built-in one.
    package init(_ wireProtocol: any WireProtocol) throws(Unsupported) {
        if let declared = wireProtocol as? DeclaredProtocol { try self.init(declared); return }
        if let compiled = wireProtocol as? any CompiledWireProtocol, let declared = type(of: compiled).builtInDeclaration {
            try self.init(declared)
            return
        }
        if let declaration = wireProtocol.declaration { try self.init(DeclaredProtocol(declaration, path: wireProtocol.specification)); return }
        throw Unsupported(description: "\(wireProtocol.id) has no declaration to make a page's template from")
    }
}
