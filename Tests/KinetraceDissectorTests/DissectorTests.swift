import Foundation
import Testing
import KinetraceWire

/// What tshark should print for one packet. Empty strings mean "field absent".
struct Expected {
    var kind: String
    var tMs = ""
    var floats: [Float]? = nil  // ax ay az wx wy wz
    var echo = ""
    var intensity: Float? = nil
    var sharpness: Float? = nil
    var check = ""
    var computed = ""
    var status = ""  // Wireshark's checksum status numbering: 0 Bad, 1 Good
    var valid: Bool
    var reason = ""
    var trigger = ""
    var utc = ""
    var info: String
    /// (severity, group) of each expert item, in tree order.
    var experts: [(UInt32, UInt32)] = []
}

// Wireshark's expert severities and groups, as tshark prints them.
let note: UInt32 = 0x0040_0000, warn: UInt32 = 0x0060_0000, error: UInt32 = 0x0080_0000
let checksumGroup: UInt32 = 0x0100_0000, malformed: UInt32 = 0x0700_0000, protocolGroup: UInt32 = 0x0900_0000

/// tshark prints floats with about six significant digits ("0.750015").
func printed(_ text: String, matches value: Float) -> Bool {
    guard let parsed = Double(text) else { return false }
    let exact = Double(value)
    if exact.isNaN { return parsed.isNaN }
    if exact.isInfinite || exact == 0 { return parsed == exact }
    return abs(parsed - exact) <= 1e-5 * abs(exact)
}

func expectRow(_ row: [String: String], _ expected: Expected, _ label: String,
           sourceLocation: SourceLocation = #_sourceLocation) {
    func field(_ name: String) -> String { row["motionlink.\(name)"] ?? "<missing>" }
    func expectEqual(_ actual: String, _ wanted: String, _ what: String) {
        #expect(actual == wanted, "\(label): \(what)", sourceLocation: sourceLocation)
    }
    func expectFloat(_ name: String, _ wanted: Float?) {
        if let wanted {
            #expect(printed(field(name), matches: wanted), "\(label): \(name) printed \(field(name)), wanted \(wanted)",
                    sourceLocation: sourceLocation)
        } else {
            expectEqual(field(name), "", name)
        }
    }
    expectEqual(field("kind"), expected.kind, "kind")
    expectEqual(field("t_ms"), expected.tMs, "t_ms")
    for (index, name) in MotionFrame.valueNames.enumerated() { expectFloat(name, expected.floats?[index]) }
    expectEqual(field("echo_t_ms"), expected.echo, "echo_t_ms")
    expectFloat("intensity", expected.intensity)
    expectFloat("sharpness", expected.sharpness)
    expectEqual(field("check"), expected.check, "check")
    expectEqual(field("check.computed"), expected.computed, "check.computed")
    expectEqual(field("check.status"), expected.status, "check.status")
    expectEqual(field("valid"), expected.valid ? "1" : "0", "valid")
    expectEqual(field("reason"), expected.reason, "reason")
    expectEqual(field("trigger"), expected.trigger, "trigger")
    if !expected.utc.isEmpty { expectEqual(field("t_utc"), expected.utc, "t_utc") }
    expectEqual(row["_ws.col.Info"] ?? "", expected.info, "Info column")
    let severities = expected.experts.map { String($0.0) }.joined(separator: ",")
    let groups = expected.experts.map { String($0.1) }.joined(separator: ",")
    expectEqual(row["_ws.expert.severity"] ?? "", severities, "expert severities")
    expectEqual(row["_ws.expert.group"] ?? "", groups, "expert groups")
    if expected.experts.isEmpty {
        expectEqual(row["_ws.expert.message"] ?? "", "", "expert messages")
    } else if !expected.reason.isEmpty {
        // Every expert text names its reason, so `-z expert` output reads on its own.
        #expect((row["_ws.expert.message"] ?? "").contains("(\(expected.reason))"),
                "\(label): expert message \(row["_ws.expert.message"] ?? "")", sourceLocation: sourceLocation)
    }
}

/// The literal test vectors of specs/motionlink-v1.md §9.
enum SpecVectors {
    static let frameZero = bytes(hex: "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 ad550a19")
    static let frameTrigger = bytes(hex: "0068e5cf 8b010000 0000003d 0000403f 000080bd 0000003f 000080be 0000003e ed6950cc")
    static let frameThreshold = bytes(hex: "6468e5cf 8b010000 00000000 0000003f 00000000 00000000 00000000 00000000 172b9fde")
    static let ackTrigger = bytes(hex: "0068e5cf 8b010000 0000803f 0000803f c93769b0")
    static let frameCorrupt = bytes(hex: "0068e5cf 8b010000 0000003d 0001403f 000080bd 0000003f 000080be 0000003e ed6950cc")
    static let frameNaN = bytes(hex: "c868e5cf 8b010000 00000000 0000c07f 00000000 00000000 00000000 00000000 e65cd8d5")
    static let frameShort = bytes(hex: "0068e5cf 8b010000 0000003d 0000403f 000080bd 0000003f 000080be 0000003e ed6950")
    static let ackOutOfRange = bytes(hex: "0068e5cf 8b010000 0000c03f 0000803f a53d31bf")
}

/// SplitMix64, so the random cases are reproducible from the printed seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite(.enabled(if: TShark.requirement.runs, "needs tshark and text2pcap (Debian package tshark); with CI set this fails instead"))
struct DissectorTests {
    static let triggerT: UInt64 = 1_700_000_000_000
    static let triggerFloats: [Float] = [0.03125, 0.75, -0.0625, 0.5, -0.25, 0.125]

    /// The spec's vectors, frames to the host and acks to the controller, over IPv4 and IPv6.
    static let specDatagrams: [(String, Datagram, Expected)] = [
        ("frame-zero", .toHost(SpecVectors.frameZero),
         Expected(kind: "frame", tMs: "0", floats: [0, 0, 0, 0, 0, 0], check: "0x190a55ad", computed: "0x190a55ad",
                  status: "1", valid: true, trigger: "0", utc: "Jan  1, 1970 00:00:00.000000000 UTC",
                  info: "Frame t=0 ay=0.000")),
        ("frame-trigger", .toHost(SpecVectors.frameTrigger),
         Expected(kind: "frame", tMs: "1700000000000", floats: triggerFloats, check: "0xcc5069ed",
                  computed: "0xcc5069ed", status: "1", valid: true, trigger: "1",
                  utc: "Nov 14, 2023 22:13:20.000000000 UTC",
                  info: "Frame t=1700000000000 ay=0.750 [trigger hint]")),
        ("frame-threshold", .toHost(SpecVectors.frameThreshold),
         Expected(kind: "frame", tMs: "1700000000100", floats: [0, 0.5, 0, 0, 0, 0], check: "0xde9f2b17",
                  computed: "0xde9f2b17", status: "1", valid: true, trigger: "0",
                  info: "Frame t=1700000000100 ay=0.500")),
        ("ack-trigger", .toController(SpecVectors.ackTrigger),
         Expected(kind: "ack", echo: "1700000000000", intensity: 1, sharpness: 1, check: "0xb06937c9",
                  computed: "0xb06937c9", status: "1", valid: true, utc: "Nov 14, 2023 22:13:20.000000000 UTC",
                  info: "Ack echo=1700000000000")),
        ("frame-corrupt", .toHost(SpecVectors.frameCorrupt),
         Expected(kind: "frame", tMs: "1700000000000",
                  floats: [0.03125, Float(bitPattern: 0x3F40_0100), -0.0625, 0.5, -0.25, 0.125],
                  check: "0xcc5069ed", computed: "0x1bb2e9b5", status: "0", valid: false, reason: "crc_mismatch",
                  trigger: "0", info: "Invalid: crc_mismatch (Frame t=1700000000000 ay=0.750)",
                  experts: [(error, checksumGroup)])),
        ("frame-nan", .toHost(SpecVectors.frameNaN),
         Expected(kind: "frame", tMs: "1700000000200", floats: [0, .nan, 0, 0, 0, 0], check: "0xd5d85ce6",
                  computed: "0xd5d85ce6", status: "1", valid: false, reason: "non_finite", trigger: "0",
                  info: "Invalid: non_finite (Frame t=1700000000200 ay=nan)", experts: [(warn, protocolGroup)])),
        ("frame-short", .toHost(SpecVectors.frameShort),
         Expected(kind: "invalid", valid: false, reason: "invalid_length",
                  info: "Invalid: invalid_length (35 bytes)", experts: [(error, malformed)])),
        ("ack-out-of-range", .toController(SpecVectors.ackOutOfRange),
         Expected(kind: "ack", echo: "1700000000000", intensity: 1.5, sharpness: 1, check: "0xbf313da5",
                  computed: "0xbf313da5", status: "1", valid: false, reason: "out_of_range",
                  info: "Invalid: out_of_range (Ack echo=1700000000000)", experts: [(warn, protocolGroup)])),
        ("frame-trigger over IPv6", .toHost(SpecVectors.frameTrigger, family: .v6),
         Expected(kind: "frame", tMs: "1700000000000", floats: triggerFloats, check: "0xcc5069ed",
                  computed: "0xcc5069ed", status: "1", valid: true, trigger: "1",
                  info: "Frame t=1700000000000 ay=0.750 [trigger hint]")),
        ("frame-corrupt over IPv6", .toHost(SpecVectors.frameCorrupt, family: .v6),
         Expected(kind: "frame", tMs: "1700000000000",
                  floats: [0.03125, Float(bitPattern: 0x3F40_0100), -0.0625, 0.5, -0.25, 0.125],
                  check: "0xcc5069ed", computed: "0x1bb2e9b5", status: "0", valid: false, reason: "crc_mismatch",
                  trigger: "0", info: "Invalid: crc_mismatch (Frame t=1700000000000 ay=0.750)",
                  experts: [(error, checksumGroup)])),
        ("ack-trigger over IPv6", .toController(SpecVectors.ackTrigger, family: .v6),
         Expected(kind: "ack", echo: "1700000000000", intensity: 1, sharpness: 1, check: "0xb06937c9",
                  computed: "0xb06937c9", status: "1", valid: true, info: "Ack echo=1700000000000")),
        ("one-byte datagram", .toHost([0x4D]),
         Expected(kind: "invalid", valid: false, reason: "invalid_length",
                  info: "Invalid: invalid_length (1 byte)", experts: [(error, malformed)])),
    ]

    @Test func specVectorsDecodeFieldByField() throws {
        var tshark = try TShark()
        let file = try tshark.capture(Self.specDatagrams.map(\.1))
        let rows = try tshark.decode(file)
        try #require(rows.count == Self.specDatagrams.count, "one output line per packet")
        for ((label, _, expected), row) in zip(Self.specDatagrams, rows) {
            expectRow(row, expected, label)
        }
    }

    /// The codec's own encoder builds the payloads; the dissector must read back
    /// every value and agree with the codec's verdict.
    @Test func codecEncodedMessagesDecode() throws {
        let frames: [MotionFrame] = [
            MotionFrame(tMs: Self.triggerT, ax: 0.03125, ay: 0.75, az: -0.0625, wx: 0.5, wy: -0.25, wz: 0.125),
            MotionFrame(tMs: Self.triggerT + 100, ay: 0.5),
            MotionFrame(tMs: Self.triggerT + 200, ay: Float(0.5).nextUp),
            MotionFrame(tMs: UInt64.max, ax: .leastNonzeroMagnitude, ay: -0.0, az: .greatestFiniteMagnitude,
                        wx: 123.456, wy: -9.876543, wz: 1.0 / 3.0),
            MotionFrame(tMs: 1, ax: .infinity, wz: -.infinity),
        ]
        let acks: [HapticAck] = [
            HapticAck(echoTMs: Self.triggerT),
            HapticAck(echoTMs: Self.triggerT, intensity: 0.25, sharpness: 0),
            HapticAck(echoTMs: 7, intensity: -0.0, sharpness: Float(1).nextUp),
            HapticAck(echoTMs: 8, intensity: .nan, sharpness: -0.25),
            HapticAck(echoTMs: 9, intensity: 2, sharpness: .nan),
        ]
        let payloads = frames.map { $0.encoded() } + acks.map { $0.encoded() }
        var datagrams = frames.map { Datagram.toHost($0.encoded()) } + acks.map { Datagram.toController($0.encoded()) }
        datagrams[2].family = .v6
        datagrams[6].family = .v6

        var tshark = try TShark()
        let rows = try tshark.decode(try tshark.capture(datagrams))
        try #require(rows.count == payloads.count)

        let verdicts = payloads.map(Self.codecVerdict)
        #expect(verdicts == ["", "", "", "", "non_finite", "", "", "out_of_range", "non_finite", "out_of_range"])
        for (index, frame) in frames.enumerated() {
            let reason = verdicts[index]
            let crc = hex32(Self.sentCheck(of: payloads[index]))
            let trigger = reason.isEmpty && frame.ay > 0.5
            let summary = "Frame t=\(frame.tMs) ay=\(String(format: "%.3f", Double(frame.ay)))"
            expectRow(rows[index], Expected(
                kind: "frame", tMs: String(frame.tMs), floats: frame.values, check: crc, computed: crc,
                status: "1", valid: reason.isEmpty, reason: reason, trigger: trigger ? "1" : "0",
                info: reason.isEmpty ? summary + (trigger ? " [trigger hint]" : "") : "Invalid: \(reason) (\(summary))",
                experts: frame.values.filter { !$0.isFinite }.map { _ in (warn, protocolGroup) }), "frame \(index)")
        }
        #expect(rows[1]["motionlink.trigger"] == "0", "ay exactly 0.5 is no trigger (strict comparison)")
        #expect(rows[2]["motionlink.trigger"] == "1", "the next float above 0.5 triggers")
        for (offset, ack) in acks.enumerated() {
            let index = frames.count + offset
            let reason = verdicts[index]
            let crc = hex32(Self.sentCheck(of: payloads[index]))
            let summary = "Ack echo=\(ack.echoTMs)"
            let experts = [ack.intensity, ack.sharpness].filter { !($0 >= 0 && $0 <= 1) }.map { _ in (warn, protocolGroup) }
            expectRow(rows[index], Expected(
                kind: "ack", echo: String(ack.echoTMs), intensity: ack.intensity, sharpness: ack.sharpness,
                check: crc, computed: crc, status: "1", valid: reason.isEmpty, reason: reason,
                info: reason.isEmpty ? summary : "Invalid: \(reason) (\(summary))", experts: experts), "ack \(offset)")
        }
    }

    /// Seeded random frames and acks, some with NaN/infinite bit patterns or
    /// out-of-range values, and copies with one bit flipped: the dissector's
    /// kind, check status and reason must match Kinetrace's codec on each.
    @Test func randomMessagesMatchTheCodec() throws {
        let seed: UInt64 = 0x4D4C_5631_2024
        var random = SplitMix64(state: seed)
        func float(_ random: inout SplitMix64, unit: Bool) -> Float {
            switch random.next() % 10 {
            case 0: return Float(bitPattern: 0x7F80_0000 | UInt32(truncatingIfNeeded: random.next()) & 0x807F_FFFF)
            case 1: return Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            default: return unit ? Float.random(in: -0.25...1.25, using: &random) : Float.random(in: -8...8, using: &random)
            }
        }
        var payloads: [[UInt8]] = []
        for _ in 0..<40 {
            if random.next() % 2 == 0 {
                payloads.append(MotionFrame(
                    tMs: random.next() % 4_000_000_000_000, ax: float(&random, unit: false), ay: float(&random, unit: false),
                    az: float(&random, unit: false), wx: float(&random, unit: false), wy: float(&random, unit: false),
                    wz: float(&random, unit: false)).encoded())
            } else {
                payloads.append(HapticAck(echoTMs: random.next(), intensity: float(&random, unit: true),
                                          sharpness: float(&random, unit: true)).encoded())
            }
        }
        for index in 0..<10 {
            var corrupted = payloads[index]
            let bit = Int(random.next() % UInt64(corrupted.count * 8))
            corrupted[bit / 8] ^= 1 << UInt8(bit % 8)
            payloads.append(corrupted)
        }
        payloads.append(Array(payloads[0].prefix(Int(random.next() % 36))))

        var tshark = try TShark()
        let rows = try tshark.decode(try tshark.capture(payloads.map { Datagram.toHost($0) }))
        try #require(rows.count == payloads.count, "seed \(seed)")
        for (index, (payload, row)) in zip(payloads, rows).enumerated() {
            let label = "seed \(seed), packet \(index + 1), payload \(Hex.encode(payload))"
            let verdict = Self.codecVerdict(payload)
            let kind = MotionLinkV1.kind(forLength: payload.count)?.rawValue ?? "invalid"
            #expect(row["motionlink.kind"] == kind, "\(label)")
            #expect(row["motionlink.reason"] == verdict, "\(label)")
            #expect(row["motionlink.valid"] == (verdict.isEmpty ? "1" : "0"), "\(label)")
            if kind != "invalid" {
                let sent = hex32(Self.sentCheck(of: payload))
                let computed = hex32(CRC32.checksum(payload.prefix(payload.count - 4)))
                #expect(row["motionlink.check"] == sent, "\(label)")
                #expect(row["motionlink.check.computed"] == computed, "\(label): Lua CRC-32 vs KinetraceWire's")
                #expect(row["motionlink.check.status"] == (sent == computed ? "1" : "0"), "\(label)")
            }
            if kind == "frame" {
                let values = (0..<6).map { Float(bitPattern: Self.word(payload, at: 8 + 4 * $0)) }
                for (name, value) in zip(MotionFrame.valueNames, values) {
                    #expect(printed(row["motionlink.\(name)"] ?? "", matches: value),
                            "\(label): \(name) printed \(row["motionlink.\(name)"] ?? "")")
                }
            }
        }
    }

    /// The same capture, once on the default port, once moved with the
    /// preference, once with Decode As.
    @Test func portPreferenceAndDecodeAs() throws {
        var tshark = try TShark()
        let file = try tshark.capture([
            .toHost(SpecVectors.frameTrigger, port: 47110),
            .toHost(SpecVectors.frameTrigger, port: 47999),
            .toController(SpecVectors.ackTrigger, family: .v6, port: 47999),
            .toHost([], port: 47110),
        ])
        let byDefault = try tshark.decode(file)
        #expect(byDefault.map { $0["motionlink.kind"] ?? "" } == ["frame", "", "", ""])
        // Wireshark's UDP dissector hands no empty payload to a subdissector,
        // so a zero-length datagram stays plain UDP (a documented limit).
        #expect(byDefault.last?["_ws.col.Info"] == "50000 → 47110 Len=0")
        let moved = try tshark.decode(file, extra: ["-o", "motionlink.port:47999"]).map { $0["motionlink.kind"] ?? "" }
        #expect(moved == ["", "frame", "ack", ""])
        let decodeAs = try tshark.decode(file, extra: ["-d", "udp.port==47999,motionlink"])
        #expect(decodeAs.map { $0["motionlink.kind"] ?? "" } == ["frame", "frame", "ack", ""])
        #expect(decodeAs.map { $0["motionlink.valid"] ?? "" } == ["1", "1", "1", ""])
    }

    /// Display filters on the new fields, and the labels of the tree view.
    @Test func filtersAndTreeView() throws {
        var tshark = try TShark()
        let file = try tshark.capture(Self.specDatagrams.map(\.1))
        func numbers(_ filter: String) throws -> [String] {
            try tshark.decode(file, extra: ["-Y", filter]).map { $0["frame.number"] ?? "" }
        }
        #expect(try numbers("motionlink.check.status == 0") == ["5", "10"])
        #expect(try numbers(#"motionlink.reason == "invalid_length""#) == ["7", "12"])
        #expect(try numbers("motionlink.trigger == 1") == ["2", "9"])
        #expect(try numbers("motionlink.ay > 0.5 && motionlink.valid == 0") == ["5", "10"])

        let tree = try tshark.run("tshark", ["-n", "-X", "lua_script:\(TShark.dissector.path)", "-r", file,
                                             "-Y", "frame.number == 5", "-V", "-O", "motionlink"])
        for line in ["t_ms: 1700000000000 (2023-11-14 22:13:20.000 UTC)",
                     "Check: 0xcc5069ed [incorrect, should be 0x1bb2e9b5]",
                     "[Computed check: 0x1bb2e9b5]", "[Check status: Bad (0)]", "[Valid: False]",
                     "[Invalidity reason: crc_mismatch]",
                     "[Expert Info (Error/Checksum): CRC-32 of bytes 0..<32 is 0x1bb2e9b5 but check says 0xcc5069ed (crc_mismatch)]"] {
            #expect(tree.contains(line), "tree view lacks \(line)")
        }
        let expert = try tshark.run("tshark", ["-n", "-X", "lua_script:\(TShark.dissector.path)", "-r", file,
                                               "-q", "-z", "expert,note"])
        for text in ["Errors (4)", "Warns (2)", "Datagram is 35 bytes: a MotionFrame is 36 and a HapticAck 20 (invalid_length)",
                     "ay is not finite (0x7fc00000: exponent bits all ones, NaN or infinity) (non_finite)",
                     "intensity 1.5 is outside [0, 1] (out_of_range)"] {
            #expect(expert.contains(text), "-z expert lacks \(text)")
        }
    }

    static func word(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    static func sentCheck(of payload: [UInt8]) -> UInt32 { word(payload, at: payload.count - 4) }

    /// Kinetrace's codec verdict: "" when valid, else the reason name.
    static func codecVerdict(_ payload: [UInt8]) -> String {
        switch MotionLinkV1.decodeResult(payload) {
        case .success: return ""
        case .failure(let error): return error.code.name
        }
    }
}
