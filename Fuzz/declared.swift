// Declared protocols (Sources/Wire/KinetraceWire/Declared/DeclaredProtocol.swift): the
// interpreter of a declaration. Byte 0 picks the declaration (bits 0-2, 6 and 7 wrap):
// the seed declarations in specs/protocols (motionlink-v1, keepcalm-json,
// attitude-stream), then three in Fuzz/declarations (`inlineDeclarations`: OSC over UDP,
// newline-delimited JSON over TCP, length-prefixed binary over TCP); bit 3 repairs the
// checks of binary kinds (so the fuzzer gets past the CRC); bits 4-7 with the message
// bytes draw the chunk sizes. The rest is one datagram, or one direction of a TCP stream,
// appended to makeFramer() in those chunks, then finish().
// Checks: facts(b) is valid exactly when decode(b) succeeds, and equals the decoded
// message's facts (an OSC bundle's only in validity: its later messages add roles), or
// carries decode's error; describe names the decoded kind; a decoded message re-encodes
// to bytes that decode to the same kind and facts (and frame as one record); restamped
// gives the same facts with the new time exactly for valid controller samples with a
// sender_time; the seed declarations agree with the compiled codec of the same protocol
// (facts and error code); chunked framing gives the records, error and tail one append
// gives, tiling the stream from 0, and a tail never decodes; sample and reply decode to
// what was asked, and never trap.
@testable import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The three declarations of Fuzz/declarations/: small, but every encoding, framing, field
/// type and check the seed declarations leave out has one use (FuzzCorpusTests reads them too).
let inlineDeclarations = ["osc-udp", "ndjson-tcp", "length-prefix-tcp"]

/// The repository this target was built from (this file is Fuzz/declared.swift in it).
let repositoryRoot = String("\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).dropLast(2).joined(separator: "/"))

func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n <= 0 { break }
        out += buffer[0..<n]
    }
    return out
}

/// The six declarations, read once.
let declaredProtocols: [DeclaredProtocol] = {
    var list: [DeclaredProtocol] = []
    var sources: [(String, [UInt8])] = []
    for name in ["motionlink-v1", "keepcalm-json", "attitude-stream"] {
        let path = "\(repositoryRoot)/specs/protocols/\(name).json"
        guard let bytes = readFile(path) else {
            invariant(false, "cannot read \(path) (the target reads the declarations of the checkout it was built from)")
            return []
        }
        sources.append((path, bytes))
    }
    for name in inlineDeclarations {
        let path = "\(repositoryRoot)/Fuzz/declarations/\(name).json"
        guard let bytes = readFile(path) else {
            invariant(false, "cannot read \(path)")
            return []
        }
        sources.append((path, bytes))
    }
    for (path, bytes) in sources {
        do throws(DeclarationError) {
            list.append(try DeclaredProtocol.read(bytes, path: path))
        } catch {
            invariant(false, "a fuzz declaration does not read: \(error)")
        }
    }
    return list
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeclared(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let selector = Int(data![0] & 7) % 6
    let wire = declaredProtocols[selector]
    let repair = data![0] & 8 != 0
    let seed = Int(data![0] >> 4)
    let bytes = Array(UnsafeBufferPointer(start: data! + 1, count: size - 1))
    let timeMs = 1_767_225_600_000 + UInt64(seed)
    var checker = Checker(wire: wire, selector: selector, timeMs: timeMs)

    if wire.transport == .datagram {
        checker.message(repair ? repaired(wire, bytes) : bytes)
    } else {
        frame(wire, bytes, seed: seed) { record, isTail in
            if isTail {
                let decodes = (try? wire.decode(record)) != nil
                invariant(!decodes, "the tail finish() left (\(record.count) bytes) decodes")
            }
            checker.message(record)
            if repair, !isTail {
                let fixed = repaired(wire, record)
                if fixed != record { checker.message(fixed) }
            }
        }
    }
    checker.samplesAndReplies(bytes)
    return 0
}

/// The records of a stream appended in chunks, checked against one append of the whole.
func frame(_ wire: DeclaredProtocol, _ stream: [UInt8], seed: Int, _ each: (_ record: [UInt8], _ isTail: Bool) -> Void) {
    var whole = wire.makeFramer()
    whole.append(stream)
    var wholeRecords: [FramedMessage] = []
    var wholeError: WireError?
    do throws(WireError) {
        while let record = try whole.next() { wholeRecords.append(record) }
    } catch {
        wholeError = error
    }
    let wholeTail = wholeError == nil ? whole.finish() : nil

    var framer = wire.makeFramer()
    var records: [FramedMessage] = []
    var failure: WireError?
    var at = 0, chunk = 0
    while at < stream.count, failure == nil {
        // 1 to 40 bytes, drawn from the stream itself and the seed.
        let size = 1 + Int(stream[(chunk * 7) % stream.count] ^ UInt8(seed * 17 & 0xFF)) % 40
        framer.append(Array(stream[at..<min(at + size, stream.count)]))
        at += size
        chunk += 1
        do throws(WireError) {
            while let record = try framer.next() { records.append(record) }
        } catch {
            failure = error
        }
    }
    let tail = failure == nil ? framer.finish() : nil

    invariant(records == wholeRecords, "chunked framing gave \(records.count) records, one append \(wholeRecords.count)")
    invariant(failure?.code == wholeError?.code && failure?.offset == wholeError?.offset,
              "chunked framing failed with \(String(describing: failure)), one append with \(String(describing: wholeError))")
    invariant(tail == wholeTail, "chunked framing left another tail")
    var offset = 0
    for record in records + (tail.map { [$0] } ?? []) {
        invariant(record.offset == offset && !record.bytes.isEmpty, "record at \(record.offset), expected \(offset)")
        invariant(record.offset + record.bytes.count <= stream.count && Array(stream[record.offset..<(record.offset + record.bytes.count)]) == record.bytes,
                  "framed bytes differ from the stream at \(record.offset)")
        offset += record.bytes.count
    }
    if let failure {
        invariant(failure.offset >= offset && failure.offset <= stream.count, "framing error at \(failure.offset), records end at \(offset)")
    } else {
        invariant(offset == stream.count, "framing covered \(offset) of \(stream.count) bytes")
    }
    for record in records { each(record.bytes, false) }
    if let tail { each(tail.bytes, true) }
}

/// The record with every check of the binary kind its body's length names recomputed.
func repaired(_ wire: DeclaredProtocol, _ record: [UInt8]) -> [UInt8] {
    var out = record
    var start = 0
    switch wire.declared.framing {
    case .lengthPrefix(let width, _, let offset, _, _):
        guard offset == 0 else { return out }
        start = width
    case .delimiter: return out
    default: break
    }
    guard out.count >= start else { return out }
    for kind in wire.declared.kinds {
        guard case .binary(let length) = kind.encoding, length == out.count - start else { continue }
        for field in kind.fields {
            guard let check = field.check else { continue }
            let sum = out.withUnsafeBytes { check.algorithm.compute(UnsafeRawBufferPointer(rebasing: $0[(start + check.from)..<(start + check.to)])) }
            for i in 0..<field.size {
                let shift = UInt64(8 * (field.bigEndian ? field.size - 1 - i : i))
                out[start + field.offset + i] = UInt8(truncatingIfNeeded: sum >> shift)
            }
        }
        break
    }
    return out
}

struct Checker {
    let wire: DeclaredProtocol
    let selector: Int
    let timeMs: UInt64
    var model: any HostModel
    var received: Int64 = 0

    init(wire: DeclaredProtocol, selector: Int, timeMs: UInt64) {
        self.wire = wire
        self.selector = selector
        self.timeMs = timeMs
        model = wire.makeHostModel(rule: wire.defaultRule)
    }

    var kinds: [DeclaredKind] { wire.declared.kinds }
    var hasOSC: Bool { kinds.contains { $0.encoding.name == "osc" } }

    func decode(_ bytes: [UInt8]) -> Result<DeclaredMessage, WireError> {
        bytes.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try wire.decode(raw)) } catch { return .failure(error) }
        }
    }

    /// One message: facts, decode, describe, re-encoding, restamping, the compiled twin, the host model.
    mutating func message(_ bytes: [UInt8]) {
        let facts = wire.facts(bytes)
        var visitor = NamingVisitor()
        bytes.withUnsafeBytes { wire.describe($0, into: &visitor) }
        invariant(visitor.kinds.count == 1, "describe named \(visitor.kinds.count) kinds")
        let restamped = wire.restamped(bytes, timeMs: timeMs)
        compareWithCompiled(bytes, facts)
        received += 16_000_000
        _ = model.accept(facts, from: Int(bytes.first ?? 0) % 3, receivedNs: received)

        switch decode(bytes) {
        case .failure(let error):
            invariant(!facts.isValid, "facts are valid for bytes that do not decode (\(error))")
            invariant(facts.error == error, "facts' error \(String(describing: facts.error)) differs from decode's \(error)")
            invariant(error.offset >= 0 && error.offset <= bytes.count, "error offset \(error.offset) outside \(bytes.count) bytes")
            invariant(restamped == nil, "restamped accepted bytes that do not decode")
        case .success(let message):
            let kind = kinds[message.kind]
            invariant(facts.isValid, "bytes that decode have invalid facts: \(String(describing: facts.error))")
            invariant(message.values.count == kind.fields.count, "\(message.values.count) values for \(kind.fields.count) fields")
            let expected = wire.facts(of: message)
            invariant(hasOSC ? expected.isValid : sameFacts(facts, expected), "facts of the bytes differ from the decoded message's")
            invariant(facts.direction == kind.direction, "facts' direction is not the kind's")
            invariant(visitor.kinds == [kind.name], "describe named \(visitor.kinds), decode \(kind.name)")

            let again = wire.encode(message)
            switch decode(again) {
            case .success(let decoded):
                invariant(decoded.kind == message.kind, "a re-encoded \(kind.name) decodes as \(kinds[decoded.kind].name)")
                invariant(sameFacts(wire.facts(of: decoded), expected) && sameFacts(wire.facts(again), expected),
                          "a re-encoded \(kind.name) has other facts")
            case .failure(let error):
                invariant(false, "a decoded \(kind.name) re-encodes to bytes that fail: \(error)")
            }
            if wire.transport == .byteStream { frameAlone(again, "a re-encoded \(kind.name)") }

            if kind.direction == .controllerToHost, kind.field(withRole: .senderTime) != nil {
                guard let restamped else { return invariant(false, "a valid \(kind.name) was not restamped") }
                var want = expected
                want.senderTimeMs = timeMs
                invariant(sameFacts(wire.facts(restamped), want), "restamped \(kind.name): facts \(wire.facts(restamped)), expected \(want)")
                if case .success(let decoded) = decode(restamped) {
                    invariant(decoded.kind == message.kind, "a restamped \(kind.name) decodes as another kind")
                }
            } else {
                invariant(restamped == nil, "restamped a \(kind.name), which has no sender_time or is not a sample")
            }
        }
    }

    /// The seed declarations describe the compiled protocols: both must judge bytes alike.
    func compareWithCompiled(_ bytes: [UInt8], _ facts: MessageFacts) {
        let compiled: MessageFacts
        switch selector {
        case 0: compiled = MotionLinkV1.facts(bytes)
        case 1: compiled = KeepCalmJSON.facts(bytes)
        case 2: compiled = AttitudeStream.facts(bytes)
        default: return
        }
        invariant(compiled.isValid == facts.isValid && compiled.error?.code == facts.error?.code,
                  "\(wire.id): compiled \(String(describing: compiled.error)), declared \(String(describing: facts.error))")
        if compiled.isValid { invariant(sameFacts(compiled, facts), "\(wire.id): compiled facts \(compiled), declared \(facts)") }
    }

    /// sample() of a zero reading and of one from the input decode as a sample, and the sample
    /// template filled with the input's reading says the same; reply() decodes as a reply.
    func samplesAndReplies(_ bytes: [UInt8]) {
        let zero = Vector3.zero
        if let sample = wire.sample(MotionReading(userAcceleration: zero, rotationRate: zero, gravity: zero, attitude: zero), timeMs: timeMs) {
            let facts = wire.facts(sample)
            invariant(facts.isValid && facts.direction == .controllerToHost, "a sample of a zero reading: \(facts)")
            if wire.samplesCarrySenderClock { invariant(facts.senderTimeMs == timeMs, "a sample stamped \(timeMs) has \(String(describing: facts.senderTimeMs))") }
            if case .byteStream = wire.transport { frameAlone(sample, "a sample") }
        }
        if bytes.count >= 48 {
            func vector(_ at: Int) -> Vector3 {
                func f(_ i: Int) -> Double {
                    Double(Float32(bitPattern: UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24))
                }
                return Vector3(f(at), f(at + 4), f(at + 8))
            }
            let reading = MotionReading(userAcceleration: vector(0), rotationRate: vector(12), gravity: vector(24), attitude: vector(36))
            if let sample = wire.sample(reading, timeMs: timeMs) {
                let facts = wire.facts(sample)
                invariant(facts.isValid == ((try? wire.decode(sample)) != nil), "a sample's facts disagree with its decoding")
                // The phone page's template, filled as the page fills it, says what the sample says.
                if let template = try? SampleTemplate(wire) {
                    let filled = wire.facts(template.filled(reading, timeMs: timeMs))
                    // Both invalid (a non-finite value) may name different first errors; valid, they agree
                    // value for value (== on doubles: ECMAScript writes −0 as 0, as the page does).
                    invariant(filled.isValid == facts.isValid
                              && (!facts.isValid || (filled.direction == facts.direction && filled.senderTimeMs == facts.senderTimeMs
                                                     && sameMotion(filled.motion, facts.motion))),
                              "\(wire.id): a filled template's facts \(filled), the sample's \(facts)")
                }
            }
        }
        if wire.hostReplies, let host = wire.declared.host {
            let echo = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000_000_000_000
            guard let reply = wire.reply(to: HostDecision(name: host.decision, sampleTimeMs: echo, owesReply: true)) else {
                return invariant(false, "a host that replies made no reply")
            }
            let facts = wire.facts(reply)
            invariant(facts.isValid && facts.direction == .hostToController && facts.echoTimeMs == echo,
                      "a reply echoing \(echo): \(facts)")
        }
    }

    /// Bytes the codec wrote make exactly one record of the stream.
    func frameAlone(_ bytes: [UInt8], _ what: String) {
        var framer = wire.makeFramer()
        framer.append(bytes)
        var records: [[UInt8]] = []
        do throws(WireError) {
            while let record = try framer.next() { records.append(record.bytes) }
        } catch {
            invariant(false, "\(what) (\(bytes.count) bytes) does not frame: \(error)")
        }
        invariant(records == [bytes] && framer.finish() == nil, "\(what) (\(bytes.count) bytes) frames as \(records.map(\.count))")
    }
}

/// The same motion, value for value: −0 equals 0 (ECMAScript writes both as 0), any NaN equals any NaN.
func sameMotion(_ a: MotionReading?, _ b: MotionReading?) -> Bool {
    guard (a == nil) == (b == nil), let a, let b else { return a == nil && b == nil }
    for slot in VectorSlot.allCases {
        for axis in 0..<3 {
            let x = a.value(slot, axis: axis), y = b.value(slot, axis: axis)
            guard (x == nil) == (y == nil) else { return false }
            if let x, let y, !(x == y || (x.isNaN && y.isNaN)) { return false }
        }
    }
    return true
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
