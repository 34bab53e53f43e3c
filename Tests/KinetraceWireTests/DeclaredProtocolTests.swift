import Foundation
import KinetraceHash
import KinetraceJSON
import KinetraceTestSupport
import KinetraceWire
import PropertyBased
import Testing

/// Protocols declared in files (specs/protocol-declaration-v1.md): the seed declarations
/// agree with the compiled codecs message for message, and bad declarations fail on one
/// line naming the file, line and column.
@Suite struct DeclaredProtocolTests {
    static func seed(_ name: String) throws -> DeclaredProtocol {
        let path = Fixture.packageRoot.appendingPathComponent("specs/protocols/\(name).json").path
        return try DeclaredProtocol.read(Array(try Data(contentsOf: URL(fileURLWithPath: path))), path: path)
    }

    static func declare(_ text: String) -> Result<DeclaredProtocol, DeclarationError> {
        Result { () throws(DeclarationError) in try DeclaredProtocol.read(Array(text.utf8), path: "t.json") }
    }

    /// Facts and verdicts of both codecs on the same bytes.
    static func same(_ compiled: any WireProtocol, _ declared: DeclaredProtocol, _ bytes: [UInt8]) -> Bool {
        let a = compiled.facts(bytes), b = declared.facts(bytes)
        return a.direction == b.direction && a.error?.code == b.error?.code && a.senderTimeMs == b.senderTimeMs
            && a.echoTimeMs == b.echoTimeMs && a.motion == b.motion
    }

    @Test func theSeedsAreTheCompiledProtocolsByDigest() throws {
        #expect(try Self.seed("motionlink-v1").declared.digest == MotionLinkV1.declarationDigest)
        #expect(try Self.seed("keepcalm-json").declared.digest == KeepCalmJSON.declarationDigest)
        #expect(try Self.seed("attitude-stream").declared.digest == AttitudeStream.declarationDigest)
    }

    @Test func theDigestIsSHA256OfTheCanonicalForm() throws {
        // FIPS 180-4's "abc" vector, then the canonical form's own digest recomputed.
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let p = try Self.seed("attitude-stream")
        #expect(p.declared.digest == "sha256:" + SHA256.hex(Array(p.declared.canonicalText.utf8)))
        // The canonical form reads back to the same declaration.
        let again = try ProtocolDeclaration.read(Array(p.declared.canonicalText.utf8), source: "canonical")
        #expect(again.digest == p.declared.digest)
    }

    @Test func canonicalNumbersAreECMAScripts() throws {
        // PD-CANON-2's examples and the edges of ECMAScript's Number::toString; the expected texts are Node.js's String(Number(t)).
        let cases: [(String, String)] = [
            ("1.0", "1"), ("2.50", "2.5"), ("-1E1", "-10"), ("1e20", "100000000000000000000"), ("1e21", "1e+21"),
            ("1.5e-6", "0.0000015"), ("1e-7", "1e-7"), ("-0.0", "0"), ("-0", "0"), ("0.1", "0.1"), ("123456789012345678901234", "1.2345678901234569e+23"),
            ("3.141592653589793", "3.141592653589793"), ("18446744073709551616", "18446744073709552000"), ("-9223372036854775808", "-9223372036854775808"),
            ("1.5e300", "1.5e+300"), ("5e-324", "5e-324"), ("0.000001", "0.000001"), ("1234.5e-2", "12.345"),
        ]
        for (token, expected) in cases {
            let p = try #require(try? Self.declare("""
                {"kinetrace_protocol":1,"name":"n","version":"1","summary":"s","rate_hz":10,"transport":{"kind":"udp","default_port":9},
                 "messages":[{"kind":"m","direction":"controller_to_host","encoding":"json","members":[{"path":"x","type":"number","range":[\(token),1e308]}]}]}
                """).get(), "\(token)")
            #expect(p.declared.canonicalText.contains("\"range\":[\(expected),1e+308]"), "\(token): \(p.declared.canonicalText)")
        }
    }

    @Test func declaredMotionLinkAgreesWithTheCompiledCodec() async throws {
        let declared = try Self.seed("motionlink-v1")
        await seededPropertyCheck(count: 3000, input: Gen.uint64(), Gen.uint32().array(of: 6), Gen.int(in: 0...5)) { t, bits, mutation in
            var frame = MotionFrame(tMs: t, ax: Float32(bitPattern: bits[0]), ay: Float32(bitPattern: bits[1]), az: Float32(bitPattern: bits[2]),
                                    wx: Float32(bitPattern: bits[3]), wy: Float32(bitPattern: bits[4]), wz: Float32(bitPattern: bits[5])).encoded()
            switch mutation {
            case 1: frame[Int(t % 36)] ^= 0x01
            case 2: frame.removeLast()
            case 3: frame = HapticAck(echoTMs: t, intensity: Float32(bitPattern: bits[0]), sharpness: 1).encoded()
            default: break
            }
            #expect(Self.same(MotionLinkV1(), declared, frame), "\(Hex.encode(frame))")
            #expect(MotionLinkV1.restamped(frame, timeMs: t &+ 1) == declared.restamped(frame, timeMs: t &+ 1))
        }
    }

    @Test func declaredAttitudeAgreesWithTheCompiledCodec() async throws {
        let declared = try Self.seed("attitude-stream")
        await seededPropertyCheck(count: 3000, input: Gen.uint32().array(of: 3)) { bits in
            let record = AttitudeRecord(roll: Float32(bitPattern: bits[0]), pitch: Float32(bitPattern: bits[1] & 0x3FFF_FFFF), yaw: Float32(bitPattern: bits[2])).encoded()
            #expect(Self.same(AttitudeStream(), declared, record), "\(Hex.encode(record))")
        }
        // π rounded to float32 is inside; the next float outside.
        let edge = AttitudeRecord(roll: AttitudeRecord.piFloat32, pitch: AttitudeRecord.halfPiFloat32, yaw: -AttitudeRecord.piFloat32).encoded()
        #expect(declared.facts(edge).isValid)
        let past = AttitudeRecord(roll: AttitudeRecord.piFloat32.nextUp, pitch: 0, yaw: 0).encoded()
        #expect(declared.facts(past).error?.code == .outOfRange)
    }

    @Test func declaredKeepCalmAgreesOnTheSpecsHardCases() throws {
        let declared = try Self.seed("keepcalm-json")
        let id = "0F8FAD5B-D9CB-469F-A165-70867728950E"
        let cases = [
            #"{"type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":0.1,"y":0.7,"z":-0.2}}"#,
            #"{"payload":{"z":1,"y":2,"x":3,"type":"Combined","id":"\#(id)","extra":[1,{"a":2}]},"type":"MotionData","more":null}"#,
            #"{"type":"Motion\u0044ata","payload":{"id":"0F8FAD5B\u002DD9CB-469F-A165-70867728950E","type":"Combined","x":0,"y":0,"z":0}}"#,
            #"{"type":"MotionData","type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":0,"y":0,"z":0}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":0,"y":0,"z":0,"q":1,"q":2}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(id.lowercased())","type":"Combined","x":0,"y":0,"z":0}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":"NaN","y":0,"z":0}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":"fast","y":0,"z":0}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":1e999,"y":0,"z":0}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":100.5,"y":0,"z":0}}"#,
            #"{"type":"MotionData","payload":{"id":"\#(id)","type":"Combined","x":0,"y":0}}"#,
            #"{"type":"Other","payload":{"id":"\#(id)","type":"Combined","x":0,"y":0,"z":0}}"#,
            #"{"type":"MotionData","payload":[]}"#, "[]", "", "{", #"{"type":"MotionData","payload":{}} x"#,
        ]
        for text in cases {
            #expect(Self.same(KeepCalmJSON(), declared, Array(text.utf8)), "\(text)")
        }
        #expect(Self.same(KeepCalmJSON(), declared, [0x7B, 0xC0, 0xAF, 0x7D]))  // an overlong form: malformed
        #expect(Self.same(KeepCalmJSON(), declared, [UInt8](repeating: 0x20, count: 5000)))
        // Samples are the same bytes: the same sum, the same id.
        let reading = MotionReading(userAcceleration: Vector3(0.1, 0.6, -0.2), rotationRate: Vector3(0.01, 0.02, 0.03))
        #expect(KeepCalmJSON.sample(reading, timeMs: 1_767_225_600_123) == declared.sample(reading, timeMs: 1_767_225_600_123))
    }

    @Test func hostModelsDecideAlike() throws {
        for (compiled, name) in [(MotionLinkV1() as any WireProtocol, "motionlink-v1"), (KeepCalmJSON(), "keepcalm-json"), (AttitudeStream(), "attitude-stream")] {
            let declared = try Self.seed(name)
            var a = compiled.makeHostModel(rule: .default), b = declared.makeHostModel(rule: .default)
            // Seeded: the same samples every run. Every 17th goes back 300 ms (stale on a sender clock).
            var rng = SplitMix(seed: 0x4B54_2500 ^ UInt64(name.utf8.count))
            var t: UInt64 = 1_767_225_600_000
            for i in 0..<2000 {
                t = i % 17 == 0 ? t - 300 : t + UInt64.random(in: 0...150, using: &rng)
                let reading = MotionReading(userAcceleration: Vector3(0, Double.random(in: -1...1.5, using: &rng), 0), rotationRate: .zero,
                                            attitude: Vector3(Double.random(in: -3...3, using: &rng), 0.5, 1))
                guard let bytes = compiled.sample(reading, timeMs: t) else { continue }
                let receivedNs = Int64(i) * 50_000_000
                let va = a.accept(compiled.facts(bytes), from: i % 3, receivedNs: receivedNs)
                let vb = b.accept(declared.facts(bytes), from: i % 3, receivedNs: receivedNs)
                #expect(va == vb, "\(name) sample \(i)")
                if let d = va.decision { #expect(compiled.reply(to: d) == declared.reply(to: d)) }
            }
        }
    }

    @Test func aBadDeclarationNamesFileLineAndColumn() {
        let cases: [(String, String)] = [
            ("{\n  \"kinetrace_protocol\": 1,\n  \"nmae\": \"x\"\n}", "t.json:1:1: the declaration needs member \"name\""),
            ("{\"kinetrace_protocol\": 2}", "t.json:1:24: declaration language 2 is newer"),
            ("{\"kinetrace_protocol\": 1,\n \"name\": \"Bad Name\"}", "t.json:2:10: \"name\" must be"),
            ("{\"a\": 1, \"a\": 2}", "t.json:1:10: expected each member name once"),
            ("{\"a\": [1, 2", "t.json:1:"),
            ("", "t.json:1:1: expected a JSON object"),
            (String(repeating: "[", count: 40), "t.json:1:17: expected nesting at most 16 deep"),
        ]
        for (text, prefix) in cases {
            guard case .failure(let error) = Self.declare(text) else { Issue.record("accepted: \(text)"); continue }
            #expect(error.description.hasPrefix(prefix), "\(error.description)")
            #expect(!error.description.contains("\n"))
        }
        // A typo deep inside is caught where it is.
        let text = try! String(contentsOf: Fixture.packageRoot.appendingPathComponent("examples/protocols/osc-motion.json"), encoding: .utf8)
        guard case .failure(let error) = Self.declare(text.replacingOccurrences(of: "\"finite\": true, \"role\": \"sender_time\"", with: "\"finit\": true, \"role\": \"sender_time\"")) else {
            Issue.record("a misspelt member was accepted")
            return
        }
        #expect(error.description.hasPrefix("t.json:19:40: an argument has no member \"finit\""), "\(error.description)")
    }

    @Test func framersCutDeclaredStreams() throws {
        let lines = try #require(try? Self.declare(String(contentsOf: Fixture.packageRoot.appendingPathComponent("examples/protocols/ndjson-motion.json"), encoding: .utf8)).get())
        let one = try #require(lines.sample(MotionReading(userAcceleration: Vector3(0, 0.7, 0), rotationRate: .zero), timeMs: 5))
        var framer = lines.makeFramer()
        // Trickled a byte at a time, three records come out whole, and a partial one at the end.
        for byte in one + one + one + Array(one.prefix(7)) { framer.append([byte]) }
        var cut: [[UInt8]] = []
        while let m = try framer.next() { cut.append(m.bytes) }
        #expect(cut == [one, one, one])
        #expect(framer.finish()?.bytes == Array(one.prefix(7)))
        #expect(lines.facts(one).motion?.userAcceleration?.y == 0.7)
        #expect(lines.facts(one).senderTimeMs == 5)
        // A line past max_length without its delimiter breaks the stream.
        var flood = lines.makeFramer()
        flood.append([UInt8](repeating: 0x41, count: 2000))
        #expect(throws: WireError.self) { _ = try flood.next() }

        let prefixed = try #require(try? Self.declare("""
            {"kinetrace_protocol":1,"name":"lp","version":"1","summary":"s","rate_hz":10,
             "transport":{"kind":"tcp","default_port":9,"framing":{"length_prefix":{"width":2,"byte_order":"big","max_length":64}}},
             "messages":[{"kind":"m","direction":"controller_to_host","encoding":"binary","byte_order":"big",
               "fields":[{"name":"magic","type":"u8","constant":171},{"name":"v","type":"f32","range":[-100,100],"role":"attitude.x"},
                         {"name":"sum","type":"u8","check":{"algorithm":"xor8","from":0,"to":5}}]}]}
            """).get())
        let record = try #require(prefixed.sample(MotionReading(attitude: Vector3(-7, 0, 0)), timeMs: 0))
        // -7.0 as a big-endian binary32 is C0 E0 00 00.
        #expect(record == [0x00, 0x06, 0xAB, 0xC0, 0xE0, 0x00, 0x00, 0xAB ^ 0xC0 ^ 0xE0])
        #expect(prefixed.facts(record).motion?.attitude?.x == -7)
        var bad = record
        bad[7] ^= 1
        #expect(prefixed.facts(bad).error?.code == .checksumMismatch)
        bad = record
        bad[2] = 0
        #expect(prefixed.facts(bad).error?.code == .malformed)
        var stream = prefixed.makeFramer()
        stream.append([0xFF, 0xFF])
        #expect(throws: WireError.self) { _ = try stream.next() }
    }

    @Test func aBundlesLaterMessagesAddOnlyTheRolesTheEarlierOnesDidNotGive() throws {
        let osc = try #require(try? Self.declare("""
            {"kinetrace_protocol":1,"name":"two","version":"1","summary":"s","rate_hz":10,"transport":{"kind":"udp","default_port":9},
             "sender_clock":{"unit":"s","epoch":"unix"},
             "messages":[{"kind":"a","direction":"controller_to_host","encoding":"osc","address":"/a",
                          "arguments":[{"name":"t","type":"d","role":"sender_time"},{"name":"y","type":"f","role":"user_acceleration.y"}]},
                         {"kind":"b","direction":"controller_to_host","encoding":"osc","address":"/b",
                          "arguments":[{"name":"y","type":"f","role":"user_acceleration.y"},{"name":"w","type":"f","role":"rotation_rate.x"}]}]}
            """).get())
        func message(_ kind: String, _ values: [DeclaredValue?]) -> [UInt8] {
            osc.encode(DeclaredMessage(kind: osc.declared.kinds.firstIndex { $0.name == kind }!, values: values))
        }
        let first = message("a", [.float64(1_767_225_600.5), .float32(0)])  // y = 0 given: it must be kept
        let second = message("b", [.float32(0.9), .float32(0.25)])
        var bundle = Array("#bundle\0".utf8) + [0, 0, 0, 0, 0, 0, 0, 1]
        for m in [first, second] { bundle += [0, 0, 0, UInt8(m.count)] + m }
        let facts = osc.facts(bundle)
        #expect(facts.isValid, "\(facts)")
        #expect(facts.senderTimeMs == 1_767_225_600_500)
        #expect(facts.motion?.userAcceleration?.y == 0, "the first message's y, not the second's")
        #expect(facts.motion?.rotationRate?.x == 0.25)
        #expect((try? osc.decodeResult(bundle).get()) != nil)
    }

    @Test func oscMessagesAndBundles() throws {
        let osc = try #require(try? Self.declare(String(contentsOf: Fixture.packageRoot.appendingPathComponent("examples/protocols/osc-motion.json"), encoding: .utf8)).get())
        let message = try #require(osc.sample(MotionReading(userAcceleration: Vector3(0, 0.75, 0), rotationRate: .zero), timeMs: 1_767_225_600_250))
        #expect(Array(message.prefix(16)) == Array("/motion\0,dffffff".utf8) + [])
        let facts = osc.facts(message)
        #expect(facts.senderTimeMs == 1_767_225_600_250 && facts.motion?.userAcceleration?.y == 0.75)
        // The same message inside a bundle.
        var bundle = Array("#bundle\0".utf8) + [0, 0, 0, 0, 0, 0, 0, 1]
        bundle += [0, 0, 0, UInt8(message.count)] + message
        #expect(osc.facts(bundle).motion?.userAcceleration?.y == 0.75)
        // A wrong type tag, an unknown address, a blob size past the end.
        var tags = message
        tags[10] = UInt8(ascii: "i")
        #expect(osc.facts(tags).error?.code == .malformed)
        #expect(osc.facts(Array("/other\0\0,\0\0\0".utf8)).error?.code == .malformed)
        var huge = Array("#bundle\0".utf8) + [0, 0, 0, 0, 0, 0, 0, 1]
        huge += [0x7F, 0xFF, 0xFF, 0xFC] + message
        #expect(osc.facts(huge).error?.code == .invalidLength)
    }
}

/// SplitMix64, for seeded test draws.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
