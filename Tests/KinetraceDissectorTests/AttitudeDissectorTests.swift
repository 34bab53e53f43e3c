import Foundation
import Testing
import KinetraceWire

/// tools/wireshark/attitude_stream.lua through tshark, on TCP connections
/// built by hand (sequence numbers that wrap), against the spec's rules and
/// Kinetrace's codec on the same record bytes.
@Suite(.enabled(if: TShark.requirement.runs, "needs tshark and text2pcap (Debian package tshark); with CI set this fails instead"))
struct AttitudeDissectorTests {
    static let script = TShark.script("attitude_stream.lua")
    static let fields = [
        "frame.number", "tcp.stream", "tcp.len", "attitude.index", "attitude.offset", "attitude.roll", "attitude.pitch",
        "attitude.yaw", "attitude.roll_deg", "attitude.pitch_deg", "attitude.yaw_deg", "attitude.valid", "attitude.reason",
        "_ws.col.Protocol", "_ws.col.Info", "_ws.expert.message",
    ]

    /// One record as tshark showed it.
    struct Shown {
        var frame: Int
        var stream: Int
        var index: String
        var offset: String
        var values: [String]   // roll pitch yaw
        var degrees: [String]  // roll_deg pitch_deg yaw_deg
        var valid: String
    }

    /// tshark's rows, and every record they show, in order.
    static func decode(_ frames: [[UInt8]], extra: [String] = []) throws -> (rows: [[String: String]], records: [Shown]) {
        let tshark = try TShark()
        let rows = try tshark.decode(try tshark.capture(frames: frames), script: script, fields: fields, extra: extra)
        var records: [Shown] = []
        for row in rows where !(row["attitude.index"] ?? "").isEmpty {
            func list(_ name: String) -> [String] {
                (row[name] ?? "").split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            }
            let indices = list("attitude.index")
            let columns = ["attitude.offset", "attitude.roll", "attitude.pitch", "attitude.yaw", "attitude.roll_deg",
                           "attitude.pitch_deg", "attitude.yaw_deg", "attitude.valid"].map(list)
            try #require(columns.allSatisfy { $0.count == indices.count }, "one value per record in \(row)")
            for (k, index) in indices.enumerated() {
                records.append(Shown(frame: Int(row["frame.number"] ?? "") ?? -1, stream: Int(row["tcp.stream"] ?? "") ?? -1,
                                     index: index, offset: columns[0][k], values: [columns[1][k], columns[2][k], columns[3][k]],
                                     degrees: [columns[4][k], columns[5][k], columns[6][k]], valid: columns[7][k]))
            }
        }
        return (rows, records)
    }

    /// The reasons tshark gave, in order (only invalid records carry one).
    static func reasons(_ rows: [[String: String]]) -> [String] {
        rows.flatMap { ($0["attitude.reason"] ?? "").split(separator: ",").map(String.init) }
    }

    static func codecReason(_ record: [UInt8]) -> String { AttitudeStream.facts(record).error?.code.name ?? "" }

    static func degreesMatch(_ printed: String, _ value: Float) -> Bool {
        let exact = Double(value) * 180 / Double.pi
        guard let parsed = Double(printed) else { return false }
        if exact.isNaN { return parsed.isNaN }
        return parsed == exact || abs(parsed - exact) <= 1e-12 * abs(exact)
    }

    /// Each shown record against the records sent on its stream, in order.
    static func expectRecords(_ shown: [Shown], _ sent: [AttitudeRecord], stream: Int, firstIndex: Int = 0, _ label: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        let mine = shown.filter { $0.stream == stream }
        #expect(mine.count == sent.count - firstIndex, "\(label): \(mine.count) records shown", sourceLocation: sourceLocation)
        for (k, (record, view)) in zip(sent.dropFirst(firstIndex), mine).enumerated() {
            let index = firstIndex + k
            let what = "\(label), record \(index)"
            #expect(view.index == String(index), "\(what): index \(view.index)", sourceLocation: sourceLocation)
            #expect(view.offset == String(12 * index), "\(what): offset \(view.offset)", sourceLocation: sourceLocation)
            for (name, (text, value)) in zip(["roll", "pitch", "yaw"], zip(view.values, [record.roll, record.pitch, record.yaw])) {
                #expect(printed(text, matches: value), "\(what): \(name) printed \(text), sent \(value)", sourceLocation: sourceLocation)
            }
            for (name, (text, value)) in zip(["roll", "pitch", "yaw"], zip(view.degrees, [record.roll, record.pitch, record.yaw])) {
                #expect(degreesMatch(text, value), "\(what): \(name)_deg printed \(text)", sourceLocation: sourceLocation)
            }
            let valid = codecReason(record.encoded()).isEmpty ? "1" : "0"
            #expect(view.valid == valid, "\(what): valid \(view.valid), codec \(valid)", sourceLocation: sourceLocation)
        }
    }

    static func dataRows(_ rows: [[String: String]]) -> [[String: String]] { rows.filter { $0["tcp.len"] != "0" } }

    // MARK: Reassembly

    /// A record split at every offset 1–11 between two segments: it shows,
    /// whole, in the segment that completes it, after the record before it.
    @Test func recordSplitAtEveryOffset() throws {
        var frames: [[UInt8]] = []
        var sent: [[AttitudeRecord]] = []
        for split in 1...11 {
            let records = (0..<3).map { j in
                AttitudeRecord(roll: Float(split) * 0.25 - 1.5, pitch: Float(j) * 0.5 - 0.5, yaw: -Float(split) * 0.1 - Float(j) * 0.01)
            }
            sent.append(records)
            let connection = TCPConnection(controllerPort: UInt16(50000 + split))
            frames += connection.frames(TCPConnection.segments(of: records.flatMap { $0.encoded() }, lengths: [12 + split]))
        }
        let (rows, shown) = try Self.decode(frames)
        let data = Self.dataRows(rows)
        try #require(data.count == 22, "two data segments per connection")
        for split in 1...11 {
            let label = "record 1 split after \(split) bytes"
            let (first, second) = (data[2 * (split - 1)], data[2 * (split - 1) + 1])
            #expect(first["attitude.index"] == "0" && first["attitude.offset"] == "0", "\(label): \(first)")
            #expect(second["attitude.index"] == "1,2" && second["attitude.offset"] == "12,24", "\(label): \(second)")
            #expect(second["_ws.col.Info"]?.hasSuffix("Record #1, Record #2") == true, "\(label): \(second["_ws.col.Info"] ?? "")")
            #expect(second["_ws.col.Protocol"] == "Attitude", "\(label)")
            Self.expectRecords(shown, sent[split - 1], stream: split - 1, label)
        }
    }

    /// Ten records in one segment show as ten; three written a byte at a time show as three.
    @Test func coalescedAndByteAtATime() throws {
        let ten = (0..<10).map { AttitudeRecord(roll: Float($0) * 0.3 - 1.5, pitch: Float($0) * -0.1, yaw: Float($0) * 0.2) }
        let three = Array(ten.prefix(3))
        let bytewise = three.flatMap { $0.encoded() }
        let frames = TCPConnection(controllerPort: 50100).frames(TCPConnection.segments(of: ten.flatMap { $0.encoded() }, lengths: [120]))
            + TCPConnection(controllerPort: 50101).frames(TCPConnection.segments(of: bytewise, lengths: Array(repeating: 1, count: 36)))
        let (rows, shown) = try Self.decode(frames)
        let data = Self.dataRows(rows)
        try #require(data.count == 1 + 36)
        #expect(data[0]["attitude.index"] == "0,1,2,3,4,5,6,7,8,9")
        #expect(data[0]["attitude.offset"] == "0,12,24,36,48,60,72,84,96,108")
        #expect(data[0]["_ws.col.Info"]?.hasSuffix("Records #0–#9") == true, "\(data[0]["_ws.col.Info"] ?? "")")
        Self.expectRecords(shown, ten, stream: 0, "ten in one segment")
        // Byte at a time: only every twelfth segment completes a record.
        let completing = data.dropFirst().enumerated().filter { !($0.element["attitude.index"] ?? "").isEmpty }.map(\.offset)
        #expect(completing == [11, 23, 35])
        Self.expectRecords(shown, three, stream: 1, "byte at a time")
    }

    // MARK: Verdicts

    /// NaN, infinities and the float32 bounds, split across seeded segments:
    /// each record's verdict is the one stated here and the codec's.
    @Test func invalidRecordsAgreeWithTheCodec() throws {
        // The spec's bounds: π and π/2 rounded to the nearest float32 (Swift's Float.pi is one ulp inside).
        let pi = Float(Double.pi), halfPi = Float(Double.pi / 2)
        let cases: [(String, AttitudeRecord, String)] = [
            ("zero", AttitudeRecord(roll: 0, pitch: 0, yaw: 0), ""),
            ("roll and yaw at ±π, pitch at π/2, in float32", AttitudeRecord(roll: pi, pitch: halfPi, yaw: -pi), ""),
            ("-0, the least subnormal", AttitudeRecord(roll: -0.0, pitch: .leastNonzeroMagnitude, yaw: -.leastNonzeroMagnitude), ""),
            ("roll one ulp past the float32 nearest π", AttitudeRecord(roll: pi.nextUp, pitch: 0, yaw: 0), "out_of_range"),
            ("pitch one ulp past π/2", AttitudeRecord(roll: 0, pitch: halfPi.nextUp, yaw: 0), "out_of_range"),
            ("pitch one ulp below -π/2", AttitudeRecord(roll: 0, pitch: -halfPi.nextUp, yaw: 0), "out_of_range"),
            ("yaw one ulp below -π", AttitudeRecord(roll: 0, pitch: 0, yaw: -pi.nextUp), "out_of_range"),
            ("roll 4 and pitch 2", AttitudeRecord(roll: 4, pitch: 2, yaw: 0), "out_of_range"),
            ("the largest float", AttitudeRecord(roll: 0, pitch: 0, yaw: .greatestFiniteMagnitude), "out_of_range"),
            ("roll NaN", AttitudeRecord(roll: .nan, pitch: 0, yaw: 0), "non_finite"),
            ("pitch +inf", AttitudeRecord(roll: 0, pitch: .infinity, yaw: 0), "non_finite"),
            ("yaw -inf", AttitudeRecord(roll: 0, pitch: 0, yaw: -.infinity), "non_finite"),
            ("a signalling NaN with payload", AttitudeRecord(roll: 0, pitch: Float(bitPattern: 0xFF80_0001), yaw: 0), "non_finite"),
            ("roll out of range before a NaN yaw: the first bad field decides",
             AttitudeRecord(roll: 4, pitch: 0, yaw: .nan), "out_of_range"),
            ("a NaN roll before an out-of-range yaw", AttitudeRecord(roll: .nan, pitch: 0, yaw: 9), "non_finite"),
            ("back in range after the invalid ones", AttitudeRecord(roll: -1, pitch: 1, yaw: 3), ""),
        ]
        let records = cases.map(\.1)
        for (label, record, reason) in cases {
            #expect(Self.codecReason(record.encoded()) == reason, "\(label): the codec says \(Self.codecReason(record.encoded()))")
        }
        let seed: UInt64 = 0x4154_5449_5455
        var random = SplitMix64(state: seed)
        let lengths = (0..<40).map { _ in 1 + Int(random.next() % 30) }
        let frames = TCPConnection(controllerPort: 50200).frames(TCPConnection.segments(of: records.flatMap { $0.encoded() }, lengths: lengths))
        let (rows, shown) = try Self.decode(frames)
        Self.expectRecords(shown, records, stream: 0, "seed \(seed)")
        #expect(Self.reasons(rows) == cases.map(\.2).filter { !$0.isEmpty }, "seed \(seed)")
        let experts = rows.flatMap { ($0["_ws.expert.message"] ?? "").split(separator: ",").map(String.init) }
            .filter { $0.hasSuffix("(non_finite)") || $0.hasSuffix("(out_of_range)") }
        #expect(experts.count == cases.filter { !$0.2.isEmpty }.count, "one expert item per invalid record: \(experts)")
        #expect(experts.contains("roll 3.14159298 is beyond ±π (out_of_range)"), "one ulp past float32(π)")
        #expect(experts.contains("roll is not finite (0x7fc00000: exponent bits all ones: NaN or infinity) (non_finite)"))
    }

    /// Seeded random records (a third with random bit patterns) in random
    /// segments on a stream whose sequence numbers wrap.
    @Test func randomRecordsInRandomSegmentsMatchTheCodec() throws {
        let seed: UInt64 = 0x3344_4D4F_5553
        var random = SplitMix64(state: seed)
        func value(_ bound: Float, _ random: inout SplitMix64) -> Float {
            random.next() % 3 == 0 ? Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
                : Float.random(in: -bound * 1.05...bound * 1.05, using: &random)
        }
        let records = (0..<300).map { _ in
            AttitudeRecord(roll: value(.pi, &random), pitch: value(.pi / 2, &random), yaw: value(.pi, &random))
        }
        let lengths = (0..<400).map { _ in 1 + Int(random.next() % 64) }
        let connection = TCPConnection(controllerPort: 50300, controllerISN: 0xFFFF_FE00)
        let frames = connection.frames(TCPConnection.segments(of: records.flatMap { $0.encoded() }, lengths: lengths))
        let (rows, shown) = try Self.decode(frames)
        Self.expectRecords(shown, records, stream: 0, "seed \(seed)")
        let expected = records.map { Self.codecReason($0.encoded()) }
        #expect(Self.reasons(rows) == expected.filter { !$0.isEmpty }, "seed \(seed)")
        #expect(Set(expected) == ["", "non_finite", "out_of_range"], "seed \(seed): every verdict occurs")
    }

    // MARK: Imperfect captures

    /// A missing segment, a retransmission, segments out of order, and a
    /// capture without the handshake.
    @Test func gapsRetransmissionsReorderingAndMidStream() throws {
        let records = (0..<10).map { AttitudeRecord(roll: Float($0) * 0.1, pitch: Float($0) * -0.1, yaw: 1 - Float($0) * 0.1) }
        let stream = records.flatMap { $0.encoded() }
        // Bytes 0..<29, 29..<41, 41..<72, 72..<120.
        let segments = TCPConnection.segments(of: stream, lengths: [29, 12, 31])
        let lost = TCPConnection(controllerPort: 50400)
        let resent = TCPConnection(controllerPort: 50401)
        let reordered = TCPConnection(controllerPort: 50402)
        // Wireshark's default: no out-of-order reassembly, so a hole does not hold back what follows it.
        let (rows, shown) = try Self.decode(lost.frames([segments[0], segments[2], segments[3]])
            + resent.frames([segments[0], segments[1], segments[1], segments[2], segments[2], segments[3]]))

        // Lost 29..<41: records 2 and 3 are gone; 41..<48 ends record 3, so it is skipped.
        let afterGap = shown.filter { $0.stream == 0 }
        #expect(afterGap.map(\.index) == ["0", "1", "4", "5", "6", "7", "8", "9"])
        #expect(afterGap.map(\.offset) == ["0", "12", "48", "60", "72", "84", "96", "108"])
        let gapNotes = rows.filter { $0["tcp.stream"] == "0" }.flatMap { ($0["_ws.expert.message"] ?? "").split(separator: ",") }
            .filter { $0.hasSuffix("(stream_gap)") }
        #expect(gapNotes == ["Stream offset 41 is inside record #3 (its first bytes were not reassembled): "
                             + "skipped to the next record boundary (stream_gap)"])
        Self.expectRecords(shown.filter { Int($0.index)! >= 4 }, records, stream: 0, firstIndex: 4, "after the gap")

        // With out-of-order reassembly on, the hole holds back everything after it.
        let held = try Self.decode(lost.frames([segments[0], segments[2], segments[3]]),
                                   extra: ["-o", "tcp.reassemble_out_of_order:TRUE"])
        #expect(held.records.map(\.index) == ["0", "1"])

        // Retransmitted segments show nothing twice.
        Self.expectRecords(shown, records, stream: 1, "retransmissions")
        // Out of order: whole with tcp.reassemble_out_of_order; without it the late segment is taken
        // for a retransmission and the records it completes are lost (a documented limit).
        let reorderedFrames = reordered.frames([segments[0], segments[2], segments[1], segments[3]])
        Self.expectRecords(try Self.decode(reorderedFrames, extra: ["-o", "tcp.reassemble_out_of_order:TRUE"]).records,
                           records, stream: 0, "reordered")
        #expect(try Self.decode(reorderedFrames).records.map(\.index) == ["0", "1", "4", "5", "6", "7", "8", "9"])

        // Without the handshake, offsets count from the first captured byte, and a note says so.
        let midStream = try Self.decode(lost.frames([segments[2], segments[3]], handshake: false))
        #expect(midStream.records.map(\.offset) == ["0", "12", "24", "36", "48", "60"])
        let notes = midStream.rows.flatMap { ($0["_ws.expert.message"] ?? "").split(separator: ",") }
            .filter { $0.hasPrefix("No SYN in the capture") }
        // One per dissector call: the first segment, then the reassembled record and the rest of the second.
        #expect(notes.count == 3, "\(notes)")
    }

    // MARK: Ports and filters

    @Test func portPreferenceAndDecodeAs() throws {
        let stream = AttitudeRecord(roll: 0.5, pitch: 0.25, yaw: -0.5).encoded()
        let frames = TCPConnection(controllerPort: 50500).frames([.init(streamOffset: 0, payload: stream)])
            + TCPConnection(controllerPort: 50501, hostPort: 47999).frames([.init(streamOffset: 0, payload: stream)])
        let tshark = try TShark()
        let file = try tshark.capture(frames: frames)
        func indices(_ extra: [String]) throws -> [String] {
            try tshark.decode(file, script: Self.script, fields: Self.fields, extra: extra)
                .filter { $0["tcp.len"] != "0" }.map { $0["attitude.index"] ?? "" }
        }
        #expect(try indices([]) == ["0", ""])
        #expect(try indices(["-o", "attitude.port:47999"]) == ["", "0"])
        #expect(try indices(["-d", "tcp.port==47999,attitude"]) == ["0", "0"])
        #expect(try indices(["-o", "attitude.port:0"]) == ["", ""])
    }

    /// Every display filter tools/wireshark/README.md shows.
    @Test func documentedFilters() throws {
        let records = [
            AttitudeRecord(roll: 0.1, pitch: 0.9, yaw: 0), AttitudeRecord(roll: .nan, pitch: 0, yaw: 0),
            AttitudeRecord(roll: -2, pitch: 0, yaw: 3.5), AttitudeRecord(roll: 0, pitch: -0.1, yaw: 0),
        ]
        let segments = TCPConnection.segments(of: records.flatMap { $0.encoded() }, lengths: [12, 12, 12])
        let tshark = try TShark()
        let file = try tshark.capture(frames: TCPConnection(controllerPort: 50600).frames(segments))
        func numbers(_ filter: String) throws -> [String] {
            try tshark.decode(file, script: Self.script, fields: ["frame.number"], extra: ["-Y", filter]).map { $0["frame.number"] ?? "" }
        }
        // Frames 1–3 are the handshake, 4–7 one record each, 8 the FIN.
        #expect(try numbers("attitude") == ["4", "5", "6", "7"])
        #expect(try numbers("attitude.valid == 0") == ["5", "6"])
        #expect(try numbers(#"attitude.reason == "out_of_range""#) == ["6"])
        #expect(try numbers("attitude.pitch_deg > 45") == ["4"])
        #expect(try numbers("attitude.roll < -1") == ["6"])
        #expect(try numbers("attitude.index == 3") == ["7"])
        #expect(try numbers("attitude.offset >= 24") == ["6", "7"])

        let expert = try tshark.run("tshark", ["-n", "-X", "lua_script:\(Self.script.path)", "-r", file, "-q", "-z", "expert,note"])
        for text in ["Warns (2)", "roll is not finite (0x7fc00000: exponent bits all ones: NaN or infinity) (non_finite)",
                     "yaw 3.5 is beyond ±π (out_of_range)"] {
            #expect(expert.contains(text), "-z expert lacks \(text)")
        }
    }
}
