/// A protocol declared in a file, as every engine sees a protocol: a value
/// that interprets its declaration (specs/protocol-declaration-v1.md).
package struct DeclaredProtocol: WireProtocol {
    package typealias Message = DeclaredMessage

    package let declared: ProtocolDeclaration
    /// Where it was read from, for `specification` when the declaration names none.
    package let path: String
    private let plan: Plan

    /// What the interpreter precomputes once per declaration.
    final class Plan: Sendable {
        let kinds: [DeclaredKind]
        let binaryKinds: [Int]
        let jsonKinds: [Int]
        let textKinds: [Int]
        let oscKinds: [Int]
        let jsonLayouts: [JSONLayout?]
        let firstSample: Int?
        let unit: ClockUnit?
        let senderTimeField: [Int?]
        /// The flat path `facts` takes when every kind is binary.
        let fast: BinaryFastPath?

        init(_ d: ProtocolDeclaration) {
            fast = BinaryFastPath(d)
            kinds = d.kinds
            func indices(_ name: String) -> [Int] { d.kinds.indices.filter { d.kinds[$0].encoding.name == name } }
            binaryKinds = indices("binary")
            jsonKinds = indices("json")
            textKinds = indices("text")
            oscKinds = indices("osc")
            jsonLayouts = d.kinds.map { k in if case .json = k.encoding { return JSONLayout(k.fields) } else { return nil } }
            firstSample = d.kinds.firstIndex { $0.direction == .controllerToHost }
            unit = d.senderClockUnit
            senderTimeField = d.kinds.map { $0.field(withRole: .senderTime) }
        }
    }

    package init(_ declaration: ProtocolDeclaration, path: String) {
        declared = declaration
        self.path = path
        plan = Plan(declaration)
    }

    /// Reads, checks and wraps a declaration file's bytes.
    package static func read(_ bytes: [UInt8], path: String) throws(DeclarationError) -> DeclaredProtocol {
        DeclaredProtocol(try ProtocolDeclaration.read(bytes, source: path), path: path)
    }

    // MARK: Identity

    package var id: ProtocolID { ProtocolID(declared.name) }
    package var summary: String { declared.summary }
    package var specification: String { declared.specification.isEmpty ? path : declared.specification }
    package var transport: TransportKind { declared.transport }
    package var defaultPort: UInt16 { declared.defaultPort }
    package var nominalRateHz: Double { declared.rateHz }
    package var hostReplies: Bool { declared.host?.replyKind != nil }
    package var samplesCarrySenderClock: Bool { plan.firstSample.flatMap { plan.senderTimeField[$0] } != nil }
    package var declaration: ProtocolDeclaration? { declared }

    package func makeFramer() -> any MessageFramer {
        switch declared.framing {
        case .datagram: return DatagramFramer()
        case .fixedLength(let n): return StreamFramer(FixedLengthRecords(length: n), maximumRecordLength: n)
        case .lengthPrefix(let width, let big, let offset, let countsItself, let maximum):
            return StreamFramer(LengthPrefixedRecords(width: width, bigEndian: big, offset: offset, countsItself: countsItself, maximumLength: maximum),
                                maximumRecordLength: maximum)
        case .delimiter(let delimiter, let maximum):
            return StreamFramer(DelimitedRecords(delimiter: delimiter, maximumLength: maximum), maximumRecordLength: maximum)
        }
    }

    // MARK: Framing of one record

    /// The body of a record: the record without its length prefix or delimiter.
    @inline(__always)
    func withBody<R>(_ record: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(WireError) -> R) throws(WireError) -> R {
        switch declared.framing {
        case .datagram, .fixedLength:
            return try body(record)
        case .delimiter(let delimiter, _):
            let ends = record.count >= delimiter.count && record.suffix(delimiter.count).elementsEqual(delimiter)
            guard ends else { throw WireError(.invalidLength, offset: record.count, expected: "a record ending with its delimiter") }
            return try body(UnsafeRawBufferPointer(rebasing: record[0..<(record.count - delimiter.count)]))
        case .lengthPrefix(let width, let big, let offset, let countsItself, _):
            guard record.count >= offset + width else { throw WireError(.invalidLength, offset: record.count, expected: "a record with its \(width)-byte length") }
            let stated = LengthPrefixedRecords.value(record, at: offset, width: width, bigEndian: big)
            let expected = UInt64(offset + (countsItself ? 0 : width))
            guard stated <= UInt64(Int.max) - expected, Int(stated) + Int(expected) == record.count else {
                throw WireError(.invalidLength, offset: offset, expected: "a length that gives the record's \(record.count) bytes")
            }
            if offset == 0 { return try body(UnsafeRawBufferPointer(rebasing: record[width...])) }
            let joined = Array(record[0..<offset]) + Array(record[(offset + width)...])
            let result: Result<R, WireError> = joined.withUnsafeBytes { raw in
                do throws(WireError) { return .success(try body(raw)) } catch { return .failure(error) }
            }
            return try result.get()
        }
    }

    /// `ms` on the sender's clock as `field`'s value, in the declared unit and type (what a sample carries).
    package func senderTime(ms: UInt64, as field: DeclaredField) -> DeclaredValue {
        DeclaredWriting.clockValue(ms: ms, unit: plan.unit ?? .ms, type: field.type)
    }

    /// The first controller→host kind: the one `sample` writes.
    package var sampleKind: Int? { plan.firstSample }

    /// A body made into a record: its length prefix or delimiter added.
    package func framed(_ body: [UInt8]) -> [UInt8] { Self.framed(body, framing: declared.framing) }

    /// A body made into a record of `framing`.
    package static func framed(_ body: [UInt8], framing: DeclaredFraming) -> [UInt8] {
        switch framing {
        case .datagram, .fixedLength: return body
        case .delimiter(let delimiter, _): return body + delimiter
        case .lengthPrefix(let width, let big, let offset, let countsItself, _):
            // A body shorter than the bytes before the prefix is padded (the parser makes every kind long enough).
            let body = body.count >= offset ? body : body + [UInt8](repeating: 0, count: offset - body.count)
            let length = UInt64(body.count - offset + (countsItself ? width : 0))
            var prefix: [UInt8] = []
            for i in 0..<width {
                let shift = UInt64(8 * (big ? width - 1 - i : i))
                prefix.append(UInt8(truncatingIfNeeded: length >> shift))
            }
            return Array(body[0..<offset]) + prefix + Array(body[offset...])
        }
    }

    // MARK: Codec

    /// The kind and values of a body; a message whose roles cannot be facts (a negative time)
    /// does not decode either, so `decode` and `facts` agree on validity.
    func decodeBody(_ body: UnsafeRawBufferPointer) throws(WireError) -> DeclaredMessage {
        let message = try decodeValues(body)
        if let error = facts(of: message).error { throw error }
        return message
    }

    func decodeValues(_ body: UnsafeRawBufferPointer) throws(WireError) -> DeclaredMessage {
        if !plan.oscKinds.isEmpty, !body.isEmpty, body[0] == UInt8(ascii: "/") || OSCInterpreter.isBundle(body) {
            if OSCInterpreter.isBundle(body) {
                let (_, elements) = try OSCInterpreter.bundleElements(body)
                let first = elements[0]
                let kind = try OSCInterpreter.kind(first.bytes, plan.kinds, candidates: plan.oscKinds)
                guard case .osc(_, let allowed) = plan.kinds[kind].encoding, allowed else {
                    throw WireError(.malformed, offset: 0, expected: "a message, not a bundle (kind \(plan.kinds[kind].name) refuses bundles)")
                }
                // Every element must decode, of a kind that allows bundles and of the first's direction (PD-OSC-4);
                // the first is the message, the others add their roles to its facts.
                for element in elements.dropFirst() {
                    let k = try OSCInterpreter.kind(element.bytes, plan.kinds, candidates: plan.oscKinds)
                    guard case .osc(_, let allows) = plan.kinds[k].encoding, allows, plan.kinds[k].direction == plan.kinds[kind].direction else {
                        throw WireError(.malformed, offset: element.offset, expected: "a message of a kind that allows bundles, in the bundle's direction")
                    }
                    _ = try OSCInterpreter.decodeMessage(element.bytes, plan.kinds[k], base: element.offset)
                }
                return DeclaredMessage(kind: kind, values: try OSCInterpreter.decodeMessage(first.bytes, plan.kinds[kind], base: first.offset))
            }
            let kind = try OSCInterpreter.kind(body, plan.kinds, candidates: plan.oscKinds)
            return DeclaredMessage(kind: kind, values: try OSCInterpreter.decodeMessage(body, plan.kinds[kind]))
        }
        if !plan.binaryKinds.isEmpty, plan.jsonKinds.isEmpty && plan.textKinds.isEmpty || plan.binaryKinds.contains(where: { i in
            if case .binary(let l) = plan.kinds[i].encoding { return l == body.count } else { return false }
        }) {
            let kind = try BinaryInterpreter.kind(of: body, plan.kinds, candidates: plan.binaryKinds)
            var values = [DeclaredValue?](repeating: nil, count: plan.kinds[kind].fields.count)
            try BinaryInterpreter.validate(body, plan.kinds[kind]) { index, field, _ in values[index] = BinaryInterpreter.value(body, field) }
            return DeclaredMessage(kind: kind, values: values)
        }
        if !plan.jsonKinds.isEmpty {
            let start = body.firstIndex { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
            if plan.textKinds.isEmpty || start.map({ body[$0] == UInt8(ascii: "{") }) == true {
                let (kind, values) = try TextualInterpreter.jsonKind(body, plan.kinds, layouts: plan.jsonLayouts, candidates: plan.jsonKinds).get()
                return DeclaredMessage(kind: kind, values: values)
            }
        }
        if !plan.textKinds.isEmpty {
            guard let kind = TextualInterpreter.textKind(body, plan.kinds, candidates: plan.textKinds) else {
                throw WireError(.malformed, offset: 0, expected: "a line of a declared kind")
            }
            return DeclaredMessage(kind: kind, values: try TextualInterpreter.decodeText(body, plan.kinds[kind]))
        }
        if !plan.oscKinds.isEmpty { throw WireError(.malformed, offset: 0, expected: "an OSC message or bundle") }
        throw WireError(.invalidLength, offset: body.count, expected: "a message of a declared kind")
    }

    package func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> DeclaredMessage {
        try withBody(bytes) { body throws(WireError) in try decodeBody(body) }
    }

    package func encode(_ message: DeclaredMessage) -> [UInt8] {
        guard plan.kinds.indices.contains(message.kind) else { return [] }
        return framed(encodeBody(plan.kinds[message.kind], message.values))
    }

    /// A kind's body with these values, before framing: constants and checks as declared.
    package func encodeBody(_ kind: DeclaredKind, _ values: [DeclaredValue?]) -> [UInt8] {
        switch kind.encoding {
        case .binary: return BinaryInterpreter.encode(kind, values)
        case .osc: return OSCInterpreter.encode(kind, values)
        case .json: return DeclaredWriting.json(kind, values)
        case .text(let separator, _): return DeclaredWriting.text(kind, values, separator: separator)
        }
    }

    package func facts(of message: DeclaredMessage) -> MessageFacts {
        guard plan.kinds.indices.contains(message.kind) else { return MessageFacts(invalid: WireError(.malformed, offset: 0, expected: "a declared kind")) }
        let kind = plan.kinds[message.kind]
        var builder = FactsBuilder(direction: kind.direction, unit: plan.unit)
        for (field, value) in zip(kind.fields, message.values) {
            guard let role = field.role, let value else { continue }
            let ok: Bool
            switch value {
            case .unsigned(let v): ok = builder.set(role, unsigned: v)
            case .signed(let v): ok = v >= 0 ? builder.set(role, unsigned: UInt64(v)) : (role == .senderTime || role == .echoTime ? false : builder.set(role, real: Double(v)))
            case .float32, .float64, .bool: ok = builder.set(role, real: value.double!)
            case .string, .bytes: ok = true
            }
            if !ok { return MessageFacts(invalid: WireError(.outOfRange, offset: field.offset, expected: "\(field.name) a time on the sender's clock")) }
        }
        return builder.facts
    }

    /// Written out for binary kinds: the flat path, no value array per message (the engines call it per message).
    package func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts {
        if let fast = plan.fast, case .datagram = declared.framing { return fast.facts(bytes, plan.kinds) }
        do throws(WireError) {
            return try withBody(bytes) { body throws(WireError) -> MessageFacts in
                if let fast = plan.fast { return fast.facts(body, plan.kinds) }
                // decodeValues, not decodeBody: its facts are these (an invalid role included), made once.
                let message = try decodeValues(body)
                var facts = self.facts(of: message)
                // A bundle's later messages add the roles the earlier ones did not give (PD-OSC-4).
                if !plan.oscKinds.isEmpty, OSCInterpreter.isBundle(body), facts.isValid {
                    var given = Set(plan.kinds[message.kind].fields.compactMap(\.role))
                    let (_, elements) = try OSCInterpreter.bundleElements(body)
                    for element in elements.dropFirst() {
                        let k = try OSCInterpreter.kind(element.bytes, plan.kinds, candidates: plan.oscKinds)
                        let more = self.facts(of: DeclaredMessage(kind: k, values: try OSCInterpreter.decodeMessage(element.bytes, plan.kinds[k], base: element.offset)))
                        for role in plan.kinds[k].fields.compactMap(\.role) where given.insert(role).inserted {
                            switch role {
                            case .senderTime: facts.senderTimeMs = more.senderTimeMs
                            case .echoTime: facts.echoTimeMs = more.echoTimeMs
                            case .motion(let slot, let axis):
                                if let v = more.motion?.value(slot, axis: axis) {
                                    var reading = facts.motion ?? MotionReading()
                                    reading.set(slot, axis: axis, v)
                                    facts.motion = reading
                                }
                            case .controllerID, .messageID: break
                            }
                        }
                    }
                }
                return facts
            }
        } catch {
            return MessageFacts(invalid: error)
        }
    }

    // MARK: Making messages

    package func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]? {
        guard let index = plan.firstSample else { return nil }
        let kind = plan.kinds[index]
        var reading = reading
        if let own = declared.ownVector, reading.own == nil, !own.sumOf.isEmpty {
            var sum = Vector3.zero
            for slot in own.sumOf {
                let v = MotionReading.vector(reading, slot) ?? .zero
                sum = Vector3(sum.x + v.x, sum.y + v.y, sum.z + v.z)
            }
            reading.own = sum
        }
        var values = [DeclaredValue?](repeating: nil, count: kind.fields.count)
        var motionBits: [UInt64] = []
        for (i, field) in kind.fields.enumerated() {
            guard let role = field.role else { continue }
            switch role {
            case .senderTime: values[i] = DeclaredWriting.clockValue(ms: timeMs, unit: plan.unit ?? .ms, type: field.type)
            case .motion:
                let v = reading.value(of: role) ?? 0
                motionBits.append(v.bitPattern)
                values[i] = field.type == .f32 ? .float32(Float32(v)) : field.type.isInteger ? .signed(Int64(nearest: v)) : .float64(v)
            default: break
            }
        }
        for (i, field) in kind.fields.enumerated() where field.role == .messageID || (field.format != nil && field.constant == nil) {
            values[i] = .string(DeclaredWriting.messageID(timeMs: timeMs, motionBits: motionBits, upper: field.format != "uuid"))
        }
        return framed(encodeBody(kind, values))
    }

    package func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]? {
        guard var message = try? decode(bytes), let field = plan.senderTimeField[message.kind],
              plan.kinds[message.kind].direction == .controllerToHost else { return nil }
        message.values[field] = DeclaredWriting.clockValue(ms: timeMs, unit: plan.unit ?? .ms, type: plan.kinds[message.kind].fields[field].type)
        return encode(message)
    }

    // MARK: The host

    package var defaultRule: GestureRule {
        guard case .threshold(_, let above, let windowMs, _, _, let resyncMs)? = declared.host?.behaviour else { return .default }
        return GestureRule(threshold: above, refractoryMs: windowMs, staleResyncMs: resyncMs)
    }

    package func makeHostModel(rule: GestureRule) -> any HostModel { DeclaredHostModel(declared.host, rule: rule) }

    package func hostRule(_ rule: GestureRule) -> String {
        guard let host = declared.host else { return "no host behaviour declared" }
        let reply = host.replyKind.map { "; one \(declared.kinds[$0].name) reply per \(host.decision)" + (host.replyDeadlineMs.map { " within \($0) ms" } ?? "") } ?? "; no reply"
        switch host.behaviour {
        case .apply:
            return "\(host.decision) on every valid sample" + reply
        case .threshold(let quantity, _, _, let senderClock, _, _):
            return "\(host.decision) when \(quantity) > \(rule.threshold), then "
                + (senderClock ? "\(rule.refractoryMs) ms of the sender's clock before the next" : "latched for \(rule.refractoryMs) ms of the host's arrival clock") + reply
        }
    }

    package func reply(to decision: HostDecision) -> [UInt8]? {
        guard decision.owesReply, let host = declared.host, let index = host.replyKind else { return nil }
        let kind = plan.kinds[index]
        var values = [DeclaredValue?](repeating: nil, count: kind.fields.count)
        for (i, field) in kind.fields.enumerated() {
            if field.role == .echoTime, let senderTimeMs = decision.sampleTimeMs {
                values[i] = DeclaredWriting.clockValue(ms: senderTimeMs, unit: plan.unit ?? .ms, type: field.type)
            } else if let v = host.replyFields[field.name] {
                values[i] = field.type == .f32 ? .float32(Float32(v)) : field.type.isFloat ? .float64(v) : field.type.isSigned ? .signed(Int64(nearest: v)) : .unsigned(UInt64(nearest: v))
            }
        }
        return framed(encodeBody(kind, values))
    }

    // MARK: Rendering

    package var decodedShapes: [DecodedShape] {
        plan.kinds.map { kind in
            DecodedShape(kind: kind.name, fields: kind.fields.filter(\.isRendered).map { ($0.name, $0.type == .string || $0.type == .bytes ? .string : .number) })
        } + [DecodedShape(kind: "unknown", fields: [])]
    }

    /// A binary kind is described whenever its length and constants match (even with a bad check
    /// or value, as the compiled codecs do); other encodings only when they decode.
    package func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) {
        let described: Bool = (try? withBody(bytes) { body throws(WireError) -> Bool in
            if plan.jsonKinds.isEmpty, plan.textKinds.isEmpty, plan.oscKinds.isEmpty {
                let index = try BinaryInterpreter.kind(of: body, plan.kinds, candidates: plan.binaryKinds)
                let kind = plan.kinds[index]
                visitor.kind(kind.name)
                for field in kind.fields where field.isRendered {
                    if let value = BinaryInterpreter.value(body, field) { DeclaredWriting.visit(field, value, &visitor) }
                }
                return true
            }
            let message = try decodeBody(body)
            let kind = plan.kinds[message.kind]
            visitor.kind(kind.name)
            for (field, value) in zip(kind.fields, message.values) where field.isRendered {
                if let value { DeclaredWriting.visit(field, value, &visitor) }
            }
            return true
        }) ?? false
        if !described { visitor.kind("unknown") }
    }
}

extension MotionReading {
    static func vector(_ reading: MotionReading, _ slot: VectorSlot) -> Vector3? {
        switch slot {
        case .userAcceleration: return reading.userAcceleration
        case .rotationRate: return reading.rotationRate
        case .gravity: return reading.gravity
        case .attitude: return reading.attitude
        case .own: return reading.own
        }
    }
}
