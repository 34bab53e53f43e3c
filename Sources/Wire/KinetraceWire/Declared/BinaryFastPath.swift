/// The binary interpreter's per-message path for `facts`, laid out flat once per
/// declaration: trivially copyable slots read with unaligned loads, so a message
/// costs no retain, release or copy of a `DeclaredField` (Benchmarks/declared).
/// It gives the same verdicts as `BinaryInterpreter.validate` (DeclaredProtocolTests).
struct BinaryFastPath: Sendable {
    struct Slot: Sendable {
        var offset: Int
        var size: Int
        var bigEndian: Bool
        /// 0 unsigned, 1 signed, 2 float32, 3 float64.
        var number: UInt8
        var finite: Bool
        var hasRange: Bool
        var low: Double
        var high: Double
        /// 0 none, 1 sender time, 2 echo time, else 3 + slot × 3 + axis.
        var role: Int
        /// The field's index in its kind, for the error's wording.
        var field: Int
    }

    struct Check: Sendable {
        var algorithm: CheckAlgorithm
        var from: Int
        var to: Int
        var offset: Int
        var size: Int
        var bigEndian: Bool
        var field: Int
    }

    struct Constant: Sendable {
        var offset: Int
        var size: Int
        var bigEndian: Bool
        var raw: UInt64
        var bytes: [UInt8]?
        var field: Int
    }

    struct Kind: Sendable {
        var index: Int
        var length: Int
        var direction: Direction
        var slots: ContiguousArray<Slot>
        var checks: ContiguousArray<Check>
        var constants: ContiguousArray<Constant>
    }

    let kinds: ContiguousArray<Kind>
    let unit: ClockUnit?

    /// nil when a kind is not binary (the general path serves those declarations).
    init?(_ declaration: ProtocolDeclaration) {
        var kinds = ContiguousArray<Kind>()
        for (index, kind) in declaration.kinds.enumerated() {
            guard case .binary(let length) = kind.encoding else { return nil }
            var slots = ContiguousArray<Slot>(), checks = ContiguousArray<Check>(), constants = ContiguousArray<Constant>()
            for (i, f) in kind.fields.enumerated() {
                if let c = f.check {
                    checks.append(Check(algorithm: c.algorithm, from: c.from, to: c.to, offset: f.offset, size: f.size, bigEndian: f.bigEndian, field: i))
                }
                if let constant = f.constant {
                    var raw: UInt64 = 0, bytes: [UInt8]?
                    switch constant {
                    case .unsigned(let v): raw = v
                    case .signed(let v): raw = UInt64(bitPattern: v) & (f.size == 8 ? UInt64.max : (UInt64(1) << (8 * UInt64(f.size))) - 1)
                    case .bytes(let b): bytes = b
                    default: return nil
                    }
                    constants.append(Constant(offset: f.offset, size: f.size, bigEndian: f.bigEndian, raw: raw, bytes: bytes, field: i))
                }
                guard f.type != .padding, f.type != .bytes else { continue }
                let number: UInt8 = f.type == .f32 ? 2 : f.type == .f64 ? 3 : f.type.isSigned ? 1 : 0
                var role = 0
                switch f.role {
                case .senderTime?: role = 1
                case .echoTime?: role = 2
                case .motion(let slot, let axis)?: role = 3 + slot.rawValue * 3 + axis
                default: role = 0
                }
                // A field that is neither checked nor meaningful needs no slot.
                guard role != 0 || f.finite || f.range != nil else { continue }
                slots.append(Slot(offset: f.offset, size: f.size, bigEndian: f.bigEndian, number: number, finite: f.finite,
                                  hasRange: f.range != nil, low: f.range?.lowerBound ?? 0, high: f.range?.upperBound ?? 0, role: role, field: i))
            }
            kinds.append(Kind(index: index, length: length, direction: kind.direction, slots: slots, checks: checks, constants: constants))
        }
        self.kinds = kinds
        unit = declaration.senderClockUnit
    }

    @inline(__always)
    static func load(_ bytes: UnsafeRawBufferPointer, _ offset: Int, _ size: Int, _ bigEndian: Bool) -> UInt64 {
        switch size {
        case 1: return UInt64(bytes[offset])
        case 2:
            let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
            return UInt64(bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v))
        case 4:
            let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            return UInt64(bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v))
        default:
            let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            return bigEndian ? UInt64(bigEndian: v) : UInt64(littleEndian: v)
        }
    }

    /// The facts of a body, or the error `BinaryInterpreter` would give (its code and offset).
    func facts(_ body: UnsafeRawBufferPointer, _ declared: [DeclaredKind]) -> MessageFacts {
        var chosen = -1
        var mismatch: WireError?
        kinds.withUnsafeBufferPointer { kinds in
            for k in kinds.indices where kinds[k].length == body.count {
                var matches = true
                for c in kinds[k].constants {
                    let same: Bool
                    if let expected = c.bytes {
                        same = expected.withUnsafeBytes { e in memcmpEqual(body, c.offset, e) }
                    } else {
                        same = Self.load(body, c.offset, c.size, c.bigEndian) == c.raw
                    }
                    if !same {
                        if mismatch == nil {
                            let f = declared[kinds[k].index].fields[c.field]
                            mismatch = WireError(.malformed, offset: c.offset, expected: "\(f.name) = \(f.constant.map(BinaryInterpreter.render) ?? "")")
                        }
                        matches = false
                        break
                    }
                }
                if matches { chosen = k; return }
            }
        }
        guard chosen >= 0 else {
            if let mismatch { return MessageFacts(invalid: mismatch) }
            let lengths = Set(kinds.map(\.length)).sorted().map(String.init).joined(separator: " or ")
            return MessageFacts(invalid: WireError(.invalidLength, offset: body.count, expected: "a message of \(lengths) bytes"))
        }
        let kind = kinds[chosen]
        for c in kind.checks {
            let sum = c.algorithm.compute(UnsafeRawBufferPointer(rebasing: body[c.from..<c.to]))
            guard Self.load(body, c.offset, c.size, c.bigEndian) == sum else {
                return MessageFacts(invalid: WireError(.checksumMismatch, offset: c.offset, expected: "\(c.algorithm.rawValue) of bytes \(c.from)..<\(c.to)"))
            }
        }
        var facts = MessageFacts(direction: kind.direction)
        // Vectors gathered in locals, the reading made once.
        var vectors = (Vector3.zero, Vector3.zero, Vector3.zero, Vector3.zero, Vector3.zero)
        var present: UInt8 = 0
        let failure: WireError? = kind.slots.withUnsafeBufferPointer { slots -> WireError? in
            for s in slots {
                let raw = Self.load(body, s.offset, s.size, s.bigEndian)
                let value: Double
                switch s.number {
                case 2: value = Double(Float32(bitPattern: UInt32(truncatingIfNeeded: raw)))
                case 3: value = Double(bitPattern: raw)
                case 1:
                    value = Double(BinaryInterpreter.signExtended(raw, size: s.size))
                default: value = Double(raw)
                }
                if s.finite, !value.isFinite {
                    return WireError(.nonFinite, offset: s.offset, expected: "a finite \(declared[kind.index].fields[s.field].name)")
                }
                if s.hasRange, !(value >= s.low && value <= s.high) {
                    return WireError(.outOfRange, offset: s.offset, expected: "\(declared[kind.index].fields[s.field].name) within [\(s.low), \(s.high)]")
                }
                switch s.role {
                case 0: continue
                case 1, 2:
                    var ms: UInt64?
                    if let unit {
                        if s.number >= 2 {
                            ms = FactsBuilder.milliseconds(real: value, unit: unit)
                        } else if s.number == 1 && value < 0 {
                            ms = nil
                        } else {
                            ms = FactsBuilder.milliseconds(integer: raw, unit: unit)
                        }
                    }
                    guard let ms else {
                        return WireError(.outOfRange, offset: s.offset, expected: "\(declared[kind.index].fields[s.field].name) a time on the sender's clock")
                    }
                    if s.role == 1 { facts.senderTimeMs = ms } else { facts.echoTimeMs = ms }
                default:
                    let slot = (s.role - 3) / 3, axis = (s.role - 3) % 3
                    present |= 1 << UInt8(slot)
                    func put(_ v: inout Vector3) { if axis == 0 { v.x = value } else if axis == 1 { v.y = value } else { v.z = value } }
                    switch slot {
                    case 0: put(&vectors.0)
                    case 1: put(&vectors.1)
                    case 2: put(&vectors.2)
                    case 3: put(&vectors.3)
                    default: put(&vectors.4)
                    }
                }
            }
            return nil
        }
        if let failure { return MessageFacts(invalid: failure) }
        if present != 0 {
            facts.motion = MotionReading(userAcceleration: present & 1 != 0 ? vectors.0 : nil, rotationRate: present & 2 != 0 ? vectors.1 : nil,
                                         gravity: present & 4 != 0 ? vectors.2 : nil, attitude: present & 8 != 0 ? vectors.3 : nil,
                                         own: present & 16 != 0 ? vectors.4 : nil)
        }
        return facts
    }
}

@inline(__always)
private func memcmpEqual(_ body: UnsafeRawBufferPointer, _ offset: Int, _ expected: UnsafeRawBufferPointer) -> Bool {
    guard offset + expected.count <= body.count else { return false }
    for i in 0..<expected.count where body[offset + i] != expected[i] { return false }
    return true
}
