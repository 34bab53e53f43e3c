import Foundation
import Testing
import KinetraceWire

/// tools/wireshark/keepcalm.lua through tshark, on datagrams built by hand,
/// against the spec's rules and Kinetrace's codec on the same bytes.
@Suite(.enabled(if: TShark.requirement.runs, "needs tshark and text2pcap (Debian package tshark); with CI set this fails instead"))
struct KeepCalmDissectorTests {
    static let script = TShark.script("keepcalm.lua")
    static let fields = [
        "frame.number", "keepcalm.type", "keepcalm.payload_type", "keepcalm.id", "keepcalm.x", "keepcalm.y",
        "keepcalm.z", "keepcalm.valid", "keepcalm.reason", "keepcalm.error_offset", "_ws.col.Protocol",
        "_ws.col.Info", "_ws.expert.message", "json.key",
    ]

    static let id = MessageID(high: 0x0A1B_2C3D_4E5F_4A6B, low: 0x8C7D_8E9F_A0B1_C2D3)
    static let idText = "0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3"

    static func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The canonical message (the game's member order) with other values.
    static func message(x: String = "0.25", y: String = "0.75", z: String = "-0.5", id: String = "\"\(idText)\"",
                        payloadType: String = "\"Combined\"", type: String = "\"MotionData\"") -> [UInt8] {
        utf8("{\"type\":\(type),\"payload\":{\"id\":\(id),\"type\":\(payloadType),\"x\":\(x),\"y\":\(y),\"z\":\(z)}}")
    }

    static func padded(_ bytes: [UInt8], to length: Int) -> [UInt8] {
        bytes + [UInt8](repeating: 0x20, count: length - bytes.count)
    }

    static func decode(_ payloads: [[UInt8]], extra: [String] = []) throws -> [[String: String]] {
        let tshark = try TShark()
        let file = try tshark.capture(frames: payloads.map { Datagram.toHost($0, port: KeepCalmJSON.defaultPort).ethernetFrame() })
        let rows = try tshark.decode(file, script: script, fields: fields, extra: extra)
        try #require(rows.count == payloads.count, "one output line per datagram")
        return rows
    }

    /// "" when valid, else the codec's reason and offset.
    static func codecVerdict(_ payload: [UInt8]) -> (reason: String, offset: String) {
        guard let error = KeepCalmJSON.facts(payload).error else { return ("", "") }
        return (error.code.name, String(error.offset))
    }

    static func matches(_ printed: String?, _ value: Double) -> Bool {
        guard let printed, let parsed = Double(printed) else { return false }
        return parsed == value || abs(parsed - value) <= 1e-12 * abs(value)
    }

    // MARK: Valid messages

    static let valid: [(label: String, bytes: [UInt8], x: Double, y: Double, z: Double)] = [
        ("canonical, the codec's own encoding",
         KeepCalmMotion(id: id, x: 0.25, y: 0.75, z: -0.5).encoded(), 0.25, 0.75, -0.5),
        ("payload first, its members reversed",
         utf8("{\"payload\":{\"z\":-0.5,\"y\":0.75,\"x\":0.25,\"type\":\"Combined\",\"id\":\"\(idText)\"},\"type\":\"MotionData\"}"),
         0.25, 0.75, -0.5),
        ("whitespace, unknown members, the ±100 bounds",
         utf8(" {\n\t\"type\" : \"MotionData\" , \"extra\": [1, {\"a\": null}, true, \"\\u00e9\"],\r\n \"payload\" : "
              + "{ \"x\" : 1e-3, \"id\" : \"\(idText)\", \"y\":-100, \"note\":\"ok\", \"type\":\"Combined\", \"z\":100 } }\n"),
         0.001, -100, 100),
        ("an escaped member name",
         utf8("{\"type\":\"MotionData\",\"payload\":{\"id\":\"\(idText)\",\"type\":\"Combined\",\"x\":0.25,\"\\u0079\":0.5000001,\"z\":-0.5}}"),
         0.25, 0.5000001, -0.5),
        ("shortest round-trip doubles, as JSONEncoder writes them",
         KeepCalmMotion(id: id, x: 0.1 + 0.2, y: 1e-300, z: -99.99999999999999).encoded(), 0.1 + 0.2, 1e-300, -99.99999999999999),
        ("an unknown member nested 200 deep",
         utf8("{\"deep\":" + String(repeating: "[", count: 200) + String(repeating: "]", count: 200) + ",")
            + message().dropFirst(), 0.25, 0.75, -0.5),
        ("4096 bytes, the longest allowed", padded(message(), to: 4096), 0.25, 0.75, -0.5),
        ("escaped strings, the text they decode to (KC-MSG-7)",
         message(id: "\"0A1B2C3D\\u002D4E5F-4A6B-8C7D-8E9FA0B1C2D3\"", payloadType: "\"\\u0043ombined\"", type: "\"Motion\\u0044ata\""),
         0.25, 0.75, -0.5),
        ("non-ASCII UTF-8 in unknown members",
         utf8("{\"é\":\"€ \u{10FFFF} \u{D7FF} \u{E000}\",") + message().dropFirst(), 0.25, 0.75, -0.5),
    ]

    @Test func validMessagesInAnyMemberOrder() throws {
        let rows = try Self.decode(Self.valid.map(\.bytes))
        for (entry, row) in zip(Self.valid, rows) {
            let label = entry.label
            #expect(Self.codecVerdict(entry.bytes).reason == "", "\(label): the codec accepts it")
            #expect(row["keepcalm.valid"] == "1", "\(label)")
            #expect(row["keepcalm.reason"] == "", "\(label)")
            #expect(row["keepcalm.error_offset"] == "", "\(label)")
            #expect(row["keepcalm.type"] == "MotionData", "\(label)")
            #expect(row["keepcalm.payload_type"] == "Combined", "\(label)")
            #expect(row["keepcalm.id"] == Self.idText, "\(label)")
            #expect(Self.matches(row["keepcalm.x"], entry.x), "\(label): x printed \(row["keepcalm.x"] ?? "")")
            #expect(Self.matches(row["keepcalm.y"], entry.y), "\(label): y printed \(row["keepcalm.y"] ?? "")")
            #expect(Self.matches(row["keepcalm.z"], entry.z), "\(label): z printed \(row["keepcalm.z"] ?? "")")
            #expect(row["_ws.col.Protocol"] == "KeepCalm", "\(label)")
            #expect(row["_ws.expert.message"] == "", "\(label): no expert info")
            // Wireshark's own JSON dissector shows the tree under ours (but gives up on deep nesting).
            #expect(label.contains("nested") || (row["json.key"] ?? "").split(separator: ",").filter { ["type", "payload", "id", "x", "z"].contains($0) }.count == 6,
                    "\(label): json.key \(row["json.key"] ?? "")")
        }
        #expect(rows[0]["_ws.col.Info"] == "MotionData x=0.250 y=0.750 z=-0.500")
    }

    // MARK: Invalid messages, one per kind and check

    static let invalid: [(label: String, bytes: [UInt8], reason: String)] = [
        ("4097 bytes", padded(message(), to: 4097), "invalid_length"),
        ("lowercase UUID", message(id: "\"\(idText.lowercased())\""), "malformed"),
        ("UUID without dashes", message(id: "\"\(idText.filter { $0 != "-" })\""), "malformed"),
        ("UUID in braces", message(id: "\"{\(idText)}\""), "malformed"),
        ("UUID with an escape of a lowercase letter", message(id: "\"\\u0065\(idText.dropFirst())\""), "malformed"),
        ("id a number", message(id: "42"), "malformed"),
        ("x \"NaN\"", message(x: "\"NaN\""), "non_finite"),
        ("y \"-Infinity\"", message(y: "\"-Infinity\""), "non_finite"),
        ("z \"inf\"", message(z: "\"inf\""), "non_finite"),
        ("x a word", message(x: "\"abc\""), "malformed"),
        ("y 100.5", message(y: "100.5"), "out_of_range"),
        ("z -1e400, infinite as a double", message(z: "-1e400"), "out_of_range"),
        ("x 2e308", message(x: "2e308"), "out_of_range"),
        ("x leading zero", message(x: "01"), "malformed"),
        ("y ends with a dot", message(y: "1."), "malformed"),
        ("z true", message(z: "true"), "malformed"),
        ("wrong envelope type", message(type: "\"MotionDatum\""), "malformed"),
        ("wrong payload type", message(payloadType: "\"Raw\""), "malformed"),
        ("no payload", utf8("{\"type\":\"MotionData\"}"), "malformed"),
        ("no type", utf8("{\"payload\":{\"id\":\"\(idText)\",\"type\":\"Combined\",\"x\":1,\"y\":2,\"z\":3}}"), "malformed"),
        ("no z", utf8("{\"type\":\"MotionData\",\"payload\":{\"id\":\"\(idText)\",\"type\":\"Combined\",\"x\":1,\"y\":2}}"), "malformed"),
        ("x twice", utf8("{\"type\":\"MotionData\",\"payload\":{\"id\":\"\(idText)\",\"type\":\"Combined\",\"x\":1,\"x\":1,\"y\":2,\"z\":3}}"),
         "malformed"),
        ("payload twice", utf8("{\"type\":\"MotionData\",\"payload\":{\"id\":\"\(idText)\",\"type\":\"Combined\",\"x\":1,\"y\":2,\"z\":3},"
                               + "\"payload\":{}}"), "malformed"),
        ("payload an array", utf8("{\"type\":\"MotionData\",\"payload\":[]}"), "malformed"),
        ("trailing bytes", message() + utf8(" x"), "malformed"),
        ("cut short", Array(message().prefix(60)), "malformed"),
        ("not JSON", utf8("hello"), "malformed"),
        ("a JSON array", utf8("[1,2,3]"), "malformed"),
        ("a control byte in a string", message(id: "\"\u{01}\""), "malformed"),
        ("an unpaired surrogate in an unknown member", utf8("{\"n\":\"\\ud800\",") + message().dropFirst(), "malformed"),
        ("an unknown member nested 300 deep",
         utf8("{\"deep\":" + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + ",") + message().dropFirst(),
         "malformed"),
        ("non_finite x before an out-of-range y", message(x: "\"NaN\"", y: "500"), "non_finite"),
        ("out-of-range y before a non-finite x", utf8("{\"type\":\"MotionData\",\"payload\":{\"id\":\"\(idText)\","
                                                       + "\"type\":\"Combined\",\"y\":500,\"x\":\"NaN\",\"z\":0}}"), "out_of_range"),
        ("out-of-range x, then the end", Array(message(x: "200").prefix(101)), "out_of_range"),
        // KC-MSG-6: ill-formed UTF-8, in names and values, known and unknown.
        ("a lone continuation byte in the id", utf8("{\"type\":\"MotionData\",\"payload\":{\"id\":\"") + [0x80] + Array(message().dropFirst(38)), "malformed"),
        ("an overlong '/' in an unknown value", utf8("{\"n\":\"") + [0xC0, 0xAF] + utf8("\",") + message().dropFirst(), "malformed"),
        ("an overlong '/' in three bytes in an unknown name", utf8("{\"") + [0xE0, 0x80, 0xAF] + utf8("\":1,") + message().dropFirst(), "malformed"),
        ("an encoded surrogate after a payload member", Array(message().dropLast(2)) + utf8(",\"") + [0xED, 0xA0, 0x80] + utf8("\":0}}"), "malformed"),
        ("a code point above U+10FFFF in the type", utf8("{\"type\":\"MotionData") + [0xF4, 0x90, 0x80, 0x80] + Array(message().dropFirst(19)), "malformed"),
        ("a sequence cut short before a quote", utf8("{\"n\":\"") + [0xE2, 0x82] + utf8("\",") + message().dropFirst(), "malformed"),
        ("the byte 0xFF before a JSON error", utf8("{\"n\":[,") + [0xFF] + utf8("],") + message().dropFirst(), "malformed"),
        // KC-MSG-3: repeated names, unknown ones too, compared decoded.
        ("an unknown member twice", utf8("{\"n\":1,\"n\":2,") + message().dropFirst(), "malformed"),
        ("an unknown payload member twice, once escaped",
         Array(message().dropLast(2)) + utf8(",\"note\":1,\"\\u006Eote\":2}}"), "malformed"),
        ("x escaped twice", utf8("{\"type\":\"MotionData\",\"payload\":{\"id\":\"\(idText)\",\"type\":\"Combined\",\"\\u0078\":1,\"\\u0078\":1,\"y\":2,\"z\":3}}"),
         "malformed"),
        ("an unpaired surrogate escape in the id", message(id: "\"\\ud800\(idText.dropFirst())\""), "malformed"),
    ]

    @Test func everyInvalidKindWithTheCodecsReasonAndOffset() throws {
        let rows = try Self.decode(Self.invalid.map(\.bytes))
        for (entry, row) in zip(Self.invalid, rows) {
            let label = "\(entry.label): \(String(decoding: entry.bytes.prefix(160), as: UTF8.self))"
            let codec = Self.codecVerdict(entry.bytes)
            #expect(codec.reason == entry.reason, "\(label): the codec says \(codec.reason)")
            #expect(row["keepcalm.valid"] == "0", "\(label)")
            #expect(row["keepcalm.reason"] == entry.reason, "\(label): dissector says \(row["keepcalm.reason"] ?? "")")
            #expect(row["keepcalm.error_offset"] == codec.offset,
                    "\(label): dissector offset \(row["keepcalm.error_offset"] ?? ""), codec \(codec.offset)")
            // One expert item, naming the reason, so `-z expert` reads on its own.
            let expert = row["_ws.expert.message"] ?? ""
            #expect(expert.hasPrefix("At byte \(codec.offset): expected ") && expert.hasSuffix("(\(entry.reason))"),
                    "\(label): expert \(expert)")
        }
        let info = rows.map { $0["_ws.col.Info"] ?? "" }
        #expect(info[0] == "Invalid: invalid_length (4097 bytes)")
        #expect(info[1] == "Invalid: malformed at byte 37")
        #expect(info[10] == "Invalid: out_of_range at byte 107 (x=0.250 y=100.500)")
        // Fields read before the first failure are shown.
        #expect(rows[1]["keepcalm.id"] == Self.idText.lowercased())
        #expect(rows[16]["keepcalm.type"] == "MotionDatum")
        #expect(rows[17]["keepcalm.payload_type"] == "Raw")
    }

    /// Seeded mutations of valid messages (bytes changed, cut, inserted):
    /// for each, the dissector's verdict and offset are the codec's.
    @Test func mutatedMessagesMatchTheCodec() throws {
        let seed: UInt64 = 0x4B43_4A53_4F4E
        var random = SplitMix64(state: seed)
        let tokens = ["\"", "{", "}", "[", "]", ",", ":", " ", "\\", "\\u", "NaN", "\"inf\"", "1e999", "-", ".", "e", "0",
                      "\"x\":1,", "\"id\":", "\u{7f}", "\u{01}", "é", "null", "true", "\\u0041", "\\ud800", "\"n\":0,"].map { Array($0.utf8) }
            + [[0x80], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xF5], [0xFF]]
        let bases = Self.valid.prefix(5).map(\.bytes) + [Self.message(y: "\"NaN\""), Self.message(z: "150")]
        var payloads: [[UInt8]] = []
        for _ in 0..<400 {
            var bytes = bases[Int(random.next() % UInt64(bases.count))]
            for _ in 0...(random.next() % 3) {
                let at = Int(random.next() % UInt64(bytes.count + 1))
                switch random.next() % 4 {
                case 0 where at < bytes.count: bytes[at] = UInt8(truncatingIfNeeded: random.next() % 0x80)
                case 1: bytes.removeSubrange(at..<min(bytes.count, at + 1 + Int(random.next() % 8)))
                case 2: bytes.insert(contentsOf: tokens[Int(random.next() % UInt64(tokens.count))], at: at)
                default: bytes = Array(bytes.prefix(at))
                }
            }
            if !bytes.isEmpty { payloads.append(bytes) }  // an empty datagram never reaches the dissector
        }
        let rows = try Self.decode(payloads)
        var verdicts: [String: Int] = [:]
        for (index, (payload, row)) in zip(payloads, rows).enumerated() {
            let codec = Self.codecVerdict(payload)
            verdicts[codec.reason.isEmpty ? "valid" : codec.reason, default: 0] += 1
            let label = "seed \(seed), datagram \(index + 1): \(String(decoding: payload, as: UTF8.self))"
            #expect(row["keepcalm.reason"] == codec.reason, "\(label)")
            #expect(row["keepcalm.error_offset"] == codec.offset, "\(label)")
            #expect(row["keepcalm.valid"] == (codec.reason.isEmpty ? "1" : "0"), "\(label)")
        }
        // The mutations reach every verdict but invalid_length, so the comparison means something.
        for reason in ["valid", "malformed", "non_finite", "out_of_range"] {
            #expect(verdicts[reason, default: 0] > 0, "seed \(seed): no \(reason) datagram among \(verdicts)")
        }
    }

    /// The port preference, Decode As, and the empty datagram UDP keeps to itself.
    @Test func portPreferenceAndDecodeAs() throws {
        let tshark = try TShark()
        let file = try tshark.capture(frames: [
            Datagram.toHost(Self.message(), port: 47120),
            Datagram.toHost(Self.message(), port: 47999),
            Datagram.toHost([], port: 47120),
        ].map { $0.ethernetFrame() })
        func valid(_ extra: [String]) throws -> [String] {
            try tshark.decode(file, script: Self.script, fields: Self.fields, extra: extra).map { $0["keepcalm.valid"] ?? "" }
        }
        #expect(try valid([]) == ["1", "", ""])
        #expect(try valid(["-o", "keepcalm.port:47999"]) == ["", "1", ""])
        #expect(try valid(["-d", "udp.port==47999,keepcalm"]) == ["1", "1", ""])
        #expect(try valid(["-o", "keepcalm.port:0"]) == ["", "", ""])
        let empty = try tshark.decode(file, script: Self.script, fields: Self.fields)[2]
        #expect(empty["_ws.col.Info"] == "50000 → 47120 Len=0", "a 0-byte datagram stays plain UDP (a documented limit)")
    }

    /// A datagram the capture's snapshot length cut is noted, not judged.
    @Test func truncatedDatagramsAreNotChecked() throws {
        let tshark = try TShark()
        let full = try tshark.capture(frames: [Datagram.toHost(Self.message(), port: 47120).ethernetFrame()])
        let cut = tshark.directory.appendingPathComponent("cut.pcapng").path
        _ = try tshark.run("editcap", ["-s", "100", full, cut])
        let row = try tshark.decode(cut, script: Self.script, fields: Self.fields)
        try #require(row.count == 1)
        #expect(row[0]["keepcalm.valid"] == "" && row[0]["keepcalm.reason"] == "")
        #expect(row[0]["_ws.col.Info"] == "Truncated (58 of \(Self.message().count) bytes captured)")
        #expect(row[0]["_ws.expert.message"] == "Only 58 of the datagram's \(Self.message().count) bytes were captured; not checked")
    }

    /// Every display filter tools/wireshark/README.md shows.
    @Test func documentedFilters() throws {
        let payloads = [
            Self.message(y: "0.75"), Self.message(y: "0.25"), Self.message(y: "\"NaN\""),
            Self.message(id: "\"\(Self.idText.lowercased())\""), Self.message(y: "150"), Self.message(y: "0.5"),
        ]
        let tshark = try TShark()
        let file = try tshark.capture(frames: payloads.map { Datagram.toHost($0, port: 47120).ethernetFrame() })
        func numbers(_ filter: String) throws -> [String] {
            try tshark.decode(file, script: Self.script, fields: ["frame.number"], extra: ["-Y", filter]).map { $0["frame.number"] ?? "" }
        }
        #expect(try numbers("keepcalm.y > 0.5") == ["1", "5"])
        #expect(try numbers("keepcalm.y > 0.5 && keepcalm.valid == 1") == ["1"])
        #expect(try numbers("keepcalm.valid == 0") == ["3", "4", "5"])
        // A bare boolean field tests presence, and every dissected datagram has one.
        #expect(try numbers("keepcalm && !keepcalm.valid") == [])
        #expect(try numbers("keepcalm.valid == False") == ["3", "4", "5"])
        #expect(try numbers(#"keepcalm.reason == "non_finite""#) == ["3"])
        #expect(try numbers(#"keepcalm.id == "0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3""#) == ["1", "2", "3", "5", "6"])
        #expect(try numbers(#"json.member_with_value == "y:0.5""#) == ["6"])

        // Without the script, Decode As JSON still finds members by value.
        let plain = try tshark.run("tshark", ["-n", "-r", file, "-d", "udp.port==47120,json",
                                              "-Y", #"json.member_with_value == "y:0.75""#, "-T", "fields", "-e", "frame.number"])
        #expect(plain == "1\n4\n")

        let expert = try tshark.run("tshark", ["-n", "-X", "lua_script:\(Self.script.path)", "-r", file, "-q", "-z", "expert,note"])
        for text in ["Errors (1)", "Warns (2)", "At byte 107: expected \"y\" a finite JSON number (non_finite)",
                     "At byte 37: expected \"id\" an uppercase UUID, 8-4-4-4-12 hex digits (malformed)",
                     "At byte 107: expected \"y\" within ±100 (out_of_range)"] {
            #expect(expert.contains(text), "-z expert lacks \(text)")
        }
    }
}
