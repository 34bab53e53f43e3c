import KinetraceJSON

/// Writing declared messages (samples, replies, restamped messages) and rendering their fields.
enum DeclaredWriting {
    /// A JSON kind's text: members in declaration order, objects where the paths say,
    /// numbers in their shortest round-trip form.
    static func json(_ kind: DeclaredKind, _ values: [DeclaredValue?]) -> [UInt8] {
        var out = JSONOutput()
        func write(prefix: [String]) {
            out.raw("{")
            var written: [String] = []
            for (index, field) in kind.fields.enumerated() where field.path.count > prefix.count && Array(field.path.prefix(prefix.count)) == prefix {
                let name = field.path[prefix.count]
                guard !written.contains(name) else { continue }
                guard let value = field.constant ?? values[index] ?? (field.path.count > prefix.count + 1 || field.required ? .float64(0) : nil) else { continue }
                if !written.isEmpty { out.raw(",") }
                written.append(name)
                out.string(name)
                out.raw(":")
                if field.path.count > prefix.count + 1 {
                    write(prefix: prefix + [name])
                } else {
                    switch (field.type, value) {
                    case (.string, .string(let s)): out.string(s)
                    case (.string, _): out.string("")
                    case (.boolean, _): out.raw(value.double == 1 ? "true" : "false")
                    case (.integer, .signed(let v)): out.integer(v)
                    case (.integer, _): out.integer(Int64(nearest: value.double ?? 0))
                    default: out.double(value.double ?? 0)
                    }
                }
            }
            out.raw("}")
        }
        write(prefix: [])
        return out.bytes
    }

    static func text(_ kind: DeclaredKind, _ values: [DeclaredValue?], separator: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, field) in kind.fields.enumerated() {
            if index > 0 { out += separator }
            let value = field.constant ?? values[index]
            switch value {
            case .string(let s)?: out += Array(s.utf8)
            case .signed(let v)?: out += Array(String(v).utf8)
            case .unsigned(let v)?: out += Array(String(v).utf8)
            case let v?: out += Array((v.double ?? 0).description.utf8)
            case nil: out += Array((field.type == .string ? "" : "0").utf8)
            }
        }
        return out
    }

    /// ms on the sender's clock as a field of `type` in `unit`.
    static func clockValue(ms: UInt64, unit: ClockUnit, type: ScalarType) -> DeclaredValue {
        let real: Double
        switch unit {
        case .s: real = Double(ms) / 1000
        case .ms: real = Double(ms)
        case .us: real = Double(ms) * 1000
        case .ns: real = Double(ms) * 1_000_000
        }
        if type.isFloat { return type == .f32 ? .float32(Float32(real)) : .float64(real) }
        let integer: UInt64
        switch unit {
        case .s: integer = ms / 1000
        case .ms: integer = ms
        case .us: integer = ms.multipliedReportingOverflow(by: 1000).partialValue
        case .ns: integer = ms.multipliedReportingOverflow(by: 1_000_000).partialValue
        }
        return type.isSigned ? .signed(Int64(truncatingIfNeeded: integer)) : .unsigned(integer)
    }

    /// A version-4 UUID drawn from the stamp and the first three motion values, so the same
    /// input makes the same message and distinct samples distinct ids (as the compiled JSON codec does).
    static func messageID(timeMs: UInt64, motionBits: [UInt64], upper: Bool) -> String {
        func bits(_ i: Int) -> UInt64 { i < motionBits.count ? motionBits[i] : 0 }
        var state = timeMs ^ bits(0)
        let high = SplitMix64.step(&state) ^ bits(1)
        state ^= bits(2)
        let low = SplitMix64.step(&state)
        let text = MessageID(randomHigh: SplitMix64.step(&state) ^ high, randomLow: low).description
        return upper ? text : text.lowercased()
    }

    /// Renders one field the way the compiled codecs render theirs (u64 as UInt64, other
    /// unsigned as UInt32, float32 as Float32), so traces read the same either way.
    static func visit<V: DecodedFieldVisitor>(_ field: DeclaredField, _ value: DeclaredValue, _ visitor: inout V) {
        switch value {
        case .unsigned(let v):
            if field.type == .u64 || v > UInt64(UInt32.max) { visitor.field(field.name, v) } else { visitor.field(field.name, UInt32(v)) }
        case .signed(let v): visitor.field(field.name, v)
        case .float32(let v): visitor.field(field.name, v)
        case .float64(let v): visitor.field(field.name, v)
        case .string(let s): visitor.field(field.name, s)
        case .bytes(let b): visitor.field(field.name, Hex.encode(b))
        case .bool(let b): visitor.field(field.name, UInt32(b ? 1 : 0))
        }
    }
}

/// What a host of a declared protocol keeps and owes (PD-HOST-*).
struct DeclaredHostModel: HostModel {
    private let host: DeclaredHost?
    private let rule: GestureRule
    private var tracker: GestureTracker<Int>
    private var latchEndsNs: [Int64] = []
    /// The last trigger's sender stamp per controller, for a sender window that judges every sample (no `stale`).
    private var lastTriggerMs: [UInt64?] = []
    private var seen: [Bool] = []
    private(set) var controllerCount = 0

    init(_ host: DeclaredHost?, rule: GestureRule) {
        self.host = host
        self.rule = rule
        tracker = GestureTracker(rule: rule)
    }

    mutating func forget(_ controller: Int) {
        tracker.forget(controller)
        if controller < latchEndsNs.count { latchEndsNs[controller] = Int64.min }
        if controller < lastTriggerMs.count { lastTriggerMs[controller] = nil }
        if controller < seen.count, seen[controller] {
            seen[controller] = false
            controllerCount -= 1
        }
    }

    private mutating func note(_ controller: Int) {
        if controller >= seen.count {
            seen.append(contentsOf: repeatElement(false, count: controller - seen.count + 1))
            latchEndsNs.append(contentsOf: repeatElement(Int64.min, count: controller - latchEndsNs.count + 1))
            lastTriggerMs.append(contentsOf: repeatElement(nil, count: controller - lastTriggerMs.count + 1))
        }
        if !seen[controller] {
            seen[controller] = true
            controllerCount += 1
        }
    }

    private func values(_ message: MessageFacts) -> [Double] {
        (host?.decisionValues ?? []).map { message.motion?.value(of: $0) ?? 0 }
    }

    mutating func accept(_ message: MessageFacts, from controller: Int, receivedNs: Int64) -> HostVerdict {
        if let error = message.error { return .dropped(reason: error.code.name) }
        guard message.direction == .controllerToHost else { return .dropped(reason: "wrong_direction") }
        guard let host else { note(controller); return .accepted }
        switch host.behaviour {
        case .apply:
            note(controller)
            return .decided(HostDecision(name: host.decision, values: values(message)))
        case .threshold(let quantity, _, _, let senderClock, let ignoreStale, _):
            guard let value = message.motion?.value(of: quantity) else { return .dropped(reason: "wrong_direction") }
            if senderClock {
                guard let senderTimeMs = message.senderTimeMs else { return .dropped(reason: "wrong_direction") }
                if !ignoreStale {
                    // PD-HOST-7 without "stale": every sample judged; one older than the last trigger is inside no allowed window.
                    note(controller)
                    guard value > rule.threshold else { return .accepted }
                    if let last = lastTriggerMs[controller], senderTimeMs < last || senderTimeMs - last < rule.refractoryMs { return .accepted }
                    lastTriggerMs[controller] = senderTimeMs
                    return .decided(HostDecision(name: host.decision, sampleTimeMs: senderTimeMs, owesReply: host.replyKind != nil, values: values(message)))
                }
                switch tracker.accept(senderTimeMs: senderTimeMs, value: value, from: controller, receivedNs: receivedNs) {
                case .stale: return .stale
                case .accepted: return .accepted
                case .trigger:
                    return .decided(HostDecision(name: host.decision, sampleTimeMs: senderTimeMs, owesReply: host.replyKind != nil, values: values(message)))
                }
            }
            note(controller)
            // A latch whose end overflowed the clock never ends (only absurd clocks or windows get there).
            let end = latchEndsNs[controller]
            guard value > rule.threshold, receivedNs >= end, end != Int64.max else { return .accepted }
            let (window, tooLong) = Int64(clamping: rule.refractoryMs).multipliedReportingOverflow(by: 1_000_000)
            let (next, overflow) = receivedNs.addingReportingOverflow(window)
            latchEndsNs[controller] = tooLong || overflow ? Int64.max : next
            return .decided(HostDecision(name: host.decision, sampleTimeMs: message.senderTimeMs, owesReply: host.replyKind != nil && message.senderTimeMs != nil,
                                         values: values(message)))
        }
    }
}

/// Records whose length is stated in a prefix field (PD-FRAME-2).
package struct LengthPrefixedRecords: RecordBoundary, Sendable {
    package let width: Int
    package let bigEndian: Bool
    package let offset: Int
    package let countsItself: Bool
    package let maximumLength: Int

    static func value(_ bytes: UnsafeRawBufferPointer, at offset: Int, width: Int, bigEndian: Bool) -> UInt64 {
        var v: UInt64 = 0
        if bigEndian {
            for i in 0..<width { v = v << 8 | UInt64(bytes[offset + i]) }
        } else {
            for i in stride(from: width - 1, through: 0, by: -1) { v = v << 8 | UInt64(bytes[offset + i]) }
        }
        return v
    }

    package func recordLength(_ bytes: UnsafeRawBufferPointer, at streamOffset: Int) throws(WireError) -> Int? {
        guard bytes.count >= offset + width else { return nil }
        let stated = Self.value(bytes, at: offset, width: width, bigEndian: bigEndian)
        let overhead = UInt64(offset + (countsItself ? 0 : width))
        guard stated <= UInt64(maximumLength), stated + overhead <= UInt64(maximumLength), stated + overhead > UInt64(offset + width) || (!countsItself && stated > 0) else {
            throw WireError(.invalidLength, offset: streamOffset + offset,
                            expected: "a record length from 1 to \(maximumLength) bytes, the prefix says \(stated)")
        }
        return Int(stated + overhead)
    }
}

/// Records ending with a delimiter (PD-FRAME-3).
package struct DelimitedRecords: RecordBoundary, Sendable {
    package let delimiter: [UInt8]
    package let maximumLength: Int
    /// Bytes of the current record already searched, so each byte is looked at about once.
    private var searched = 0

    package init(delimiter: [UInt8], maximumLength: Int) {
        self.delimiter = delimiter
        self.maximumLength = maximumLength
    }

    package mutating func recordLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int? {
        let limit = min(bytes.count, maximumLength)
        guard limit >= delimiter.count else { return nil }
        let first = delimiter[0]
        var i = max(0, searched - delimiter.count + 1)
        while i + delimiter.count <= limit {
            if bytes[i] == first, delimiter.count == 1 || delimiter.indices.allSatisfy({ bytes[i + $0] == delimiter[$0] }) {
                searched = 0
                return i + delimiter.count
            }
            i += 1
        }
        searched = i
        guard bytes.count < maximumLength else {
            throw WireError(.invalidLength, offset: offset, expected: "a delimiter within \(maximumLength) bytes")
        }
        return nil
    }
}
