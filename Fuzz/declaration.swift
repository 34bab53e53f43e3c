// Protocol declarations (Sources/Wire/KinetraceWire/Declared): the whole input
// through ProtocolDeclaration.read, the reader of the files --protocol takes.
// Checks: a refusal is one line naming the input, at a line and column inside
// it; an accepted declaration's canonical text reads back as the same
// declaration with the same digest; the DeclaredProtocol made from it never
// traps on a few fixed byte strings, its kinds' default messages, its sample of
// a zero reading, its reply, its framer and its host model; and on each of
// those, facts agree with decode and describe names the decoded kind. The phone
// page's sample template of it is made or refused without a trap, and a filled
// one says what the protocol's own sample says.
import KinetraceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeclaration(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    let declaration: ProtocolDeclaration
    do throws(DeclarationError) {
        declaration = try ProtocolDeclaration.read(bytes, source: "fuzz.json")
    } catch {
        let lines = bytes.reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
        invariant(error.source == "fuzz.json", "the error names \(error.source), not the input")
        invariant((1...lines).contains(error.line), "error line \(error.line) outside the input's \(lines) lines")
        invariant((1...(size + 1)).contains(error.column), "error column \(error.column) outside \(size) bytes")
        invariant(!error.message.isEmpty, "an error without a message")
        invariant(!error.description.utf8.contains(0x0A) && !error.description.utf8.contains(0x0D),
                  "an error of more than one line: \(error.description.debugDescription)")
        return 0
    }
    invariant(declaration.digest.hasPrefix("sha256:") && declaration.digest.utf8.count == 71, "digest \(declaration.digest)")
    do throws(DeclarationError) {
        let again = try ProtocolDeclaration.read(Array(declaration.canonicalText.utf8), source: "<canonical>")
        invariant(again.digest == declaration.digest && again.canonicalText == declaration.canonicalText,
                  "the canonical text reads back with another digest")
        invariant(again.name == declaration.name && again.version == declaration.version && again.summary == declaration.summary
                  && again.specification == declaration.specification && again.framing == declaration.framing
                  && again.defaultPort == declaration.defaultPort && again.rateHz == declaration.rateHz
                  && again.senderClockUnit == declaration.senderClockUnit && again.senderClockEpoch == declaration.senderClockEpoch
                  && again.ownVector == declaration.ownVector && again.kinds == declaration.kinds && again.host == declaration.host
                  && again.requirements == declaration.requirements,
                  "the canonical text reads back as a different declaration")
    } catch {
        invariant(false, "the canonical text does not read back: \(error)")
    }
    exercise(DeclaredProtocol(declaration, path: "fuzz.json"))
    return 0
}

/// Byte strings of every encoding's shape, whatever the declaration says.
let fixedProbes: [[UInt8]] = [
    [], [0], [UInt8](repeating: 0, count: 12), [UInt8](repeating: 0, count: 20), [UInt8](repeating: 0, count: 36),
    Array("{}".utf8), Array("{\"type\":\"x\",\"a\":{\"b\":1.5}}\n".utf8), Array("1,2,3\n".utf8), Array("a b\r\n".utf8),
    Array("/a\0\0,\0\0\0".utf8), Array("/a\0\0,if\0\0\0\0\u{1}?\u{80}\0\0".utf8),
    Array("#bundle\0".utf8) + [0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 8] + Array("/a\0\0,\0\0\0".utf8),
    [0, 4, 1, 2, 3, 4], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
]

func exercise(_ wire: DeclaredProtocol) {
    let declaration = wire.declared
    _ = (wire.id, wire.summary, wire.specification, wire.transport, wire.defaultPort, wire.nominalRateHz, wire.hostReplies,
         wire.samplesCarrySenderClock, wire.decodedShapes.count)
    var probes = fixedProbes
    for (index, kind) in declaration.kinds.enumerated() {
        probes.append(wire.encode(DeclaredMessage(kind: index, values: [DeclaredValue?](repeating: nil, count: kind.fields.count))))
    }
    let zero = Vector3.zero
    for reading in [MotionReading(userAcceleration: zero, rotationRate: zero, gravity: zero, attitude: zero), MotionReading()] {
        if let sample = wire.sample(reading, timeMs: 1_767_225_600_000) { probes.append(sample) }
    }
    // The phone page's template of any declaration: made or refused, never a trap; made, its
    // record says what the protocol's own sample of the same reading says.
    if let template = try? SampleTemplate(wire) {
        let reading = MotionReading(userAcceleration: Vector3(0.25, -0.5, 1), rotationRate: Vector3(0.125, 2, -0.75),
                                    gravity: Vector3(0, -1, 0), attitude: Vector3(0.5, -0.25, 3))
        let filled = template.filled(reading, timeMs: 1_767_225_600_000)
        probes.append(filled)
        if let sample = wire.sample(reading, timeMs: 1_767_225_600_000) {
            let a = wire.facts(filled), b = wire.facts(sample)
            invariant(a.isValid == b.isValid && (!b.isValid || (a.senderTimeMs == b.senderTimeMs && a.motion == b.motion)),
                      "a filled template's facts \(a), the sample's \(b)")
        }
    }
    if let host = declaration.host,
       let reply = wire.reply(to: HostDecision(name: host.decision, sampleTimeMs: 1_767_225_600_000, owesReply: true)) {
        probes.append(reply)
    }
    var model = wire.makeHostModel(rule: wire.defaultRule)
    for (i, probe) in probes.enumerated() {
        check(wire, probe)
        _ = model.accept(wire.facts(probe), from: i % 3, receivedNs: Int64(i) * 50_000_000)
    }
    // Every probe back to back through the framer, as one stream.
    var framer = wire.makeFramer()
    var appended = 0
    for probe in probes {
        framer.append(probe)
        appended += probe.count
    }
    var framed = 0
    do throws(WireError) {
        while let message = try framer.next() {
            framed += message.bytes.count
            check(wire, message.bytes)
        }
        if let tail = framer.finish() { framed += tail.bytes.count }
        if wire.transport == .byteStream { invariant(framed == appended, "framing gave \(framed) of \(appended) bytes") }
    } catch {
        invariant(error.offset >= 0 && error.offset <= appended, "framing error offset \(error.offset) outside \(appended) bytes")
    }
}

/// One message's facts, decode, describe, re-encoding and restamping.
func check(_ wire: DeclaredProtocol, _ bytes: [UInt8]) {
    let kinds = wire.declared.kinds
    bytes.withUnsafeBytes { raw in
        let facts = wire.facts(raw)
        var visitor = NamingVisitor()
        wire.describe(raw, into: &visitor)
        invariant(visitor.kinds.count == 1, "describe named \(visitor.kinds.count) kinds")
        _ = wire.restamped(raw, timeMs: 1_767_225_600_123)
        do throws(WireError) {
            let message = try wire.decode(raw)
            invariant(kinds.indices.contains(message.kind) && message.values.count == kinds[message.kind].fields.count,
                      "decoded kind \(message.kind) with \(message.values.count) values")
            let expected = wire.facts(of: message)
            invariant(facts.isValid == expected.isValid, "facts of the bytes and of the decoded message disagree on validity")
            // An OSC bundle's facts also take its later messages' roles.
            if !kinds.contains(where: { $0.encoding.name == "osc" }) {
                invariant(sameFacts(facts, expected), "facts of the bytes differ from facts of the decoded message")
            }
            invariant(visitor.kinds == [kinds[message.kind].name], "describe named \(visitor.kinds), decode \(kinds[message.kind].name)")
            // One encoding: a re-encoded message cannot be taken for another encoding's kind.
            guard Set(kinds.map(\.encoding.name)).count == 1 else { return }
            let again = wire.encode(message)
            let result = again.withUnsafeBytes { raw in
                do throws(WireError) { return Result<DeclaredMessage, WireError>.success(try wire.decode(raw)) } catch { return .failure(error) }
            }
            switch result {
            case .success(let decoded):
                invariant(decoded.kind == message.kind, "re-encoded \(kinds[message.kind].name) decodes as \(kinds[decoded.kind].name)")
                invariant(sameFacts(wire.facts(of: decoded), expected), "re-encoded message has other facts")
            case .failure(let error):
                invariant(false, "a decoded \(kinds[message.kind].name) re-encodes to bytes that fail: \(error)")
            }
        } catch {
            invariant(!facts.isValid, "facts valid for bytes that do not decode (\(error))")
            invariant(facts.error?.code == error.code, "facts' error \(String(describing: facts.error)) differs from decode's \(error)")
        }
    }
}

/// Same facts, comparing doubles by bit pattern (any NaN equals any NaN).
func sameFacts(_ a: MessageFacts, _ b: MessageFacts) -> Bool {
    guard a.direction == b.direction, a.error == b.error, a.senderTimeMs == b.senderTimeMs, a.echoTimeMs == b.echoTimeMs,
          (a.motion == nil) == (b.motion == nil) else { return false }
    guard let m = a.motion, let n = b.motion else { return true }
    for slot in VectorSlot.allCases {
        for axis in 0..<3 {
            switch (m.value(slot, axis: axis), n.value(slot, axis: axis)) {
            case (nil, nil): continue
            case (let x?, let y?) where sameBits(x, y): continue
            default: return false
            }
        }
    }
    return true
}

/// Records the kinds `describe` names (it must name exactly one).
struct NamingVisitor: DecodedFieldVisitor {
    var kinds: [String] = []
    var fields = 0
    mutating func kind(_ name: String) { kinds.append(name) }
    mutating func field(_ name: String, _ value: UInt64) { fields += 1 }
    mutating func field(_ name: String, _ value: UInt32) { fields += 1 }
    mutating func field(_ name: String, _ value: Float32) { fields += 1 }
    mutating func field(_ name: String, _ value: Double) { fields += 1 }
    mutating func field(_ name: String, _ value: String) { fields += 1 }
    mutating func field(_ name: String, _ value: Int64) { fields += 1 }
}
