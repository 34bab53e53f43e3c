import Testing
@testable import KinetraceTrace
import KinetraceWire

/// TR-READ-1..4: any valid JSON spelling of a record, integer forms, unknown
/// members and unknown kinds.
@Suite struct ReaderSyntaxTests {
    static let c2h = MessageRecord(
        timeNs: 1_767_225_600_140_490_966, direction: .controllerToHost,
        source: Endpoint(host: "10.0.0.11", port: 50001), destination: Endpoint(host: "10.0.0.1", port: 47110),
        payload: [0x47, 0xA8, 0x00, 0xFF, 0x1C, 0x8D, 0x65, 0xB8])

    func expectRecord(_ line: String, _ expected: TraceRecord, sourceLocation: SourceLocation = #_sourceLocation) {
        switch parseOne(line) {
        case .success(let record): #expect(record == expected, "\(line)", sourceLocation: sourceLocation)
        case .failure(let error): Issue.record("\(line) -> \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: TR-READ-1

    @Test func messageMembersInReversedOrder() {
        expectRecord(
            #"{"valid":true,"msg":"unknown","len":8,"payload":"47a800ff1c8d65b8","dst":"10.0.0.1:47110","src":"10.0.0.11:50001","dir":"c2h","t_ns":1767225600140490966,"kind":"msg"}"#,
            .message(Self.c2h))
    }

    @Test func messageMembersInEveryRotation() {
        let members = [#""kind":"msg""#, #""t_ns":1767225600140490966"#, #""dir":"c2h""#, #""src":"10.0.0.11:50001""#,
                       #""dst":"10.0.0.1:47110""#, #""payload":"47a800ff1c8d65b8""#, #""zz":[1,{"a":2}]"#]
        for r in 0..<members.count {
            let rotated = Array(members[r...] + members[..<r])
            expectRecord("{" + rotated.joined(separator: ",") + "}", .message(Self.c2h))
            expectRecord("{" + rotated.reversed().joined(separator: ",") + "}", .message(Self.c2h))
        }
    }

    @Test func arbitraryWhitespaceIncludingCarriageReturn() {
        let line = " \t{ \"kind\" :\t\"msg\" ,\r\"t_ns\"\t:\r1767225600140490966 , \"dir\": \"c2h\",\"src\" : \"10.0.0.11:50001\" ,"
            + "\t\t\"dst\":\"10.0.0.1:47110\",   \"payload\"  :  \"47A800FF1C8D65B8\"  } \t \r"
        expectRecord(line, .message(Self.c2h))
    }

    @Test func crlfLineEndingsInAWholeDocument() throws {
        let text = "{\"format\":\"kinetrace-trace\",\"version\":1}\r\n"
            + "{\"kind\":\"label\",\"t_ns\":5,\"gesture\":\"duck\"}\r\n"
            + "{\"kind\":\"event\",\"t_ns\":6,\"event\":\"e\"}\r\n"
        let reader = try TraceReader(bytes: bytes(text))
        #expect(try readAll(reader) == [
            .label(LabelRecord(timeNs: 5, controller: nil, gesture: "duck")),
            .event(EventRecord(timeNs: 6, event: "e", data: [:])),
        ])
    }

    @Test func escapedStringsEverywhere() {
        // "\u0063\u0032h" is "c2h"; keys and values may be escaped; "\/" is "/".
        let line = #"{"\u006bind":"\u006dsg","t\u005fns":1767225600140490966,"dir":"\u0063\u0032h","#
            + #""\u0073rc":"10.0.0.11\u003a50001","dst":"\u0031\u0030.0.0.1:47110","#
            + #""payload":"\u0034\u0037a800FF1c8d65\u0062\u0038"}"#
        expectRecord(line, .message(Self.c2h))
    }

    @Test func escapedIPv6EndpointWithSlashEscape() {
        let line = #"{"kind":"msg","t_ns":1,"dir":"h2c","src":"\u005b::1\u005d:47110","dst":"[fe80::1%eth0]:5","payload":"","x":"a\/b"}"#
        expectRecord(line, .message(MessageRecord(
            timeNs: 1, direction: .hostToController, source: Endpoint(host: "::1", port: 47110),
            destination: Endpoint(host: "fe80::1%eth0", port: 5), payload: [])))
    }

    @Test func eventDataWithEscapesSurrogatePairsAndNesting() {
        let line = #"{"data":{"emoji":"\ud83d\ude00","upper":"\uD83D\uDE00x","slash":"a\/b","ctl":"\b\f\n\r\t\"\\","#
            + #""nul":"\u0000","cafe":"caf\u00e9","raw":"日本😀","k\u0065y":[1,-2.5e-3,true,false,null,{"":[]}],"#
            + #""int":-9223372036854775808,"big":18446744073709551616,"frac":1.0}, "event":"seed\/\u0031","t_ns":42,"kind":"event"}"#
        expectRecord(line, .event(EventRecord(timeNs: 42, event: "seed/1", data: [
            "emoji": .string("😀"), "upper": .string("😀x"), "slash": .string("a/b"),
            "ctl": .string("\u{8}\u{C}\n\r\t\"\\"), "nul": .string("\u{0}"), "cafe": .string("café"),
            "raw": .string("日本😀"),
            "key": .array([.integer(1), .number(-2.5e-3), .bool(true), .bool(false), .null, .object(["": .array([])])]),
            "int": .integer(.min), "big": .number(18446744073709551616.0), "frac": .number(1.0),
        ])))
    }

    @Test func stringsWithSpecialBytesAtEveryOffset() {
        // Strings may be scanned several bytes at a time: a quote, backslash or
        // control byte must be found at every offset, and bytes that merely
        // resemble them (0xA2 = '"' | 0x80 in "¢", 0xDC = '\\' | 0x80 in "ܐ",
        // 0x20, 0x7F) must not be mistaken for them.
        let specials: [(written: String, value: String)] = [
            (#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), (#"\u0041"#, "A"), (#"\ud83d\ude00"#, "😀"), (" ", " "),
            ("\u{7F}", "\u{7F}"), ("¢", "¢"), ("ܐ", "ܐ"), ("!", "!"), ("#", "#"), ("]", "]"), ("😀", "😀"),
        ]
        let prefix = #"{"kind":"label","t_ns":1,"gesture":""#
        for length in 0...20 {
            for p in 0...length {
                let before = String(repeating: "x", count: p), after = String(repeating: "y", count: length - p)
                for special in specials {
                    let line = prefix + before + special.written + after + #""}"#
                    switch parseOne(line) {
                    case .success(let record):
                        #expect(record == .label(LabelRecord(timeNs: 1, controller: nil, gesture: before + special.value + after)),
                                "\(line)")
                    case .failure(let error): Issue.record("\(line): \(error)")
                    }
                }
                for control in [UInt8(0x00), 0x01, 0x0D, 0x1F] {
                    let line = bytes(prefix + before) + [control] + bytes(after + #""}"#)
                    let data = bytes(Fixtures.minimalHeaderLine) + line + [0x0A]
                    do {
                        let reader = try TraceReader(bytes: data)
                        let error = #expect(throws: TraceError.self) { _ = try reader.next() }
                        #expect(error?.code == .syntax)
                        #expect(error?.byteOffset == Fixtures.minimalHeaderLine.utf8.count + prefix.utf8.count + p,
                                "control 0x\(String(control, radix: 16)) at \(p) of \(length)")
                    } catch {
                        Issue.record("\(error)")
                    }
                }
            }
        }
    }

    @Test func unknownMembersOfEveryTypeAreIgnored() {
        let junk = #""u_null":null,"u_true":true,"u_false":false,"u_num":-1.5e-7,"u_int":99999999999999999999999,"#
            + #""u_str":"with \" and \\ and \ud83d\ude00","u_arr":[1,[2,[3,{}]],{"k":[null,"]"]}],"#
            + #""u_obj":{"p":{"q":[],"r":{"}":"{"}}},"u_empty_o":{},"u_empty_a":[ ]"#
        expectRecord("{" + junk + #","kind":"label","t_ns":7,"gesture":"tilt_left","# + junk + "}",
                     .label(LabelRecord(timeNs: 7, controller: nil, gesture: "tilt_left")))
        expectRecord(#"{"kind":"event","# + junk + #","t_ns":8,"event":"drop"}"#,
                     .event(EventRecord(timeNs: 8, event: "drop", data: [:])))
        expectRecord(#"{"kind":"msg","t_ns":1767225600140490966,"# + junk
                        + #","dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload":"47a800ff1c8d65b8"}"#,
                     .message(Self.c2h))
    }

    @Test func informativeMessageMembersAreNotTrustedOverThePayload() {
        // TR-MSG-1: len/msg/decoded/valid/reason disagree with the payload; the payload wins.
        let line = #"{"kind":"msg","t_ns":1767225600140490966,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","#
            + #""len":36,"payload":"47a800ff1c8d65b8","msg":"frame","decoded":{"t_ms":1,"ax":"NaN","check":0},"#
            + #""valid":true,"reason":"none"}"#
        expectRecord(line, .message(Self.c2h))
    }

    @Test func labelWithAllMembersAndRtt() {
        expectRecord(#"{"duration_ms":450,"t_ms":1767225602638,"gesture":"jump","controller":"10.0.0.10:50000","t_ns":1767225602638000000,"kind":"label"}"#,
                     .label(LabelRecord(timeNs: 1_767_225_602_638_000_000, controller: Endpoint(host: "10.0.0.10", port: 50000),
                                        gesture: "jump", senderTimeMs: 1_767_225_602_638, durationMs: 450)))
        var m = Self.c2h
        m.rttNs = -3
        expectRecord(#"{"kind":"msg","rtt_ns":-3,"t_ns":1767225600140490966,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload":"47a800ff1c8d65b8"}"#,
                     .message(m))
    }

    @Test func eventWithoutDataHasEmptyData() {
        expectRecord(#"{"kind":"event","t_ns":0,"event":""}"#, .event(EventRecord(timeNs: 0, event: "", data: [:])))
        expectRecord(#"{"kind":"event","t_ns":0,"event":"x","data":{}}"#, .event(EventRecord(timeNs: 0, event: "x", data: [:])))
    }

    // MARK: TR-READ-2

    static let exactIntegers: [(String, Int64)] = [
        ("1500", 1500), ("1.5e3", 1500), ("1500.000", 1500), ("15E+2", 1500), ("15e+02", 1500), ("150000e-2", 1500),
        ("0.15e4", 1500), ("1.500E3", 1500), ("-0", 0), ("-0.0", 0), ("0e99999", 0), ("0.0E-7", 0), ("-1.5e3", -1500),
        ("10e-1", 1), ("1E0", 1), ("0.05e2", 5),
        ("9223372036854775807", .max), ("-9223372036854775808", .min), ("9.223372036854775807e18", .max),
        ("-9.223372036854775808E18", .min), ("922337203685477580.7e1", .max),
    ]

    @Test(arguments: exactIntegers)
    func integerMembersAcceptExactIntegerNumbers(_ text: String, _ value: Int64) {
        let event = #"{"kind":"event","t_ns":"# + text + #","event":"e"}"#
        if TraceRecord.timeRangeNs.contains(value) {
            expectRecord(event, .event(EventRecord(timeNs: value, event: "e")))
        } else {
            // Read as an exact integer, then refused by TR-TIME-1, naming t_ns.
            var decoder = TraceDecoder(MotionLinkV1())
            let failure = Array(event.utf8).withUnsafeBytes { raw in
                do throws(TraceDecoder.Failure) { _ = try decoder.generalRecord(raw); return nil as TraceDecoder.Failure? } catch { return error }
            }
            #expect(failure?.message.contains("t_ns \(value) is outside") == true, "\(text): \(String(describing: failure))")
        }
        var m = Self.c2h
        m.rttNs = value
        expectRecord(#"{"kind":"msg","t_ns":1767225600140490966,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload":"47a800ff1c8d65b8","rtt_ns":"#
                     + text + "}", .message(m))
        if value >= 0 {
            expectRecord(#"{"kind":"label","t_ns":1,"gesture":"g","t_ms":"# + text + #","duration_ms":"# + text + "}",
                         .label(LabelRecord(timeNs: 1, controller: nil, gesture: "g", senderTimeMs: UInt64(value), durationMs: UInt64(value))))
        }
    }

    static let notIntegers = [
        "1.5", "1e-3", "1e400", "99999999999999999999", "9223372036854775808", "-9223372036854775809",
        "9.223372036854775808e18", "1.0000000000000000001", "0.1", "-0.5", "1E-1", "12345678901234567890e5",
    ]

    /// Past Int64 but within UInt64: fine for the unsigned label members.
    static let unsignedOnly: Set = ["9223372036854775808", "9.223372036854775808e18"]

    @Test(arguments: notIntegers)
    func integerMembersRejectOtherNumbers(_ text: String) {
        var lines = [
            #"{"kind":"event","t_ns":"# + text + #","event":"e"}"#,
            #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"1.2.3.4:5","dst":"1.2.3.4:6","payload":"","rtt_ns":"# + text + "}",
        ]
        if !Self.unsignedOnly.contains(text) {
            lines.append(#"{"kind":"label","t_ns":1,"gesture":"g","t_ms":"# + text + "}")
            lines.append(#"{"kind":"label","t_ns":1,"gesture":"g","duration_ms":"# + text + "}")
        }
        for line in lines {
            let data = document([#"{"kind":"event","t_ns":0,"event":"ok"}"#, line])
            let extents = lineExtents(data)
            do {
                let reader = try TraceReader(bytes: data)
                #expect(try reader.next() == .event(EventRecord(timeNs: 0, event: "ok")))
                let error = #expect(throws: TraceError.self, "\(line)") { _ = try reader.next() }
                #expect(error?.code == .syntax || error?.code == .badRecord, "\(line)")
                #expect(error?.line == 3, "\(line)")
                #expect(error?.source == "<memory>")
                // The offset is the number itself.
                let numberAt = offset(of: ":" + text, in: data, from: extents[2].start)! + 1
                #expect(error?.byteOffset == numberAt, "\(line)")
                #expect(error?.description.contains("line 3") == true)
            } catch {
                Issue.record("\(line): \(error)")
            }
        }
    }

    @Test(arguments: unsignedOnly.sorted())
    func unsignedLabelMembersTakeTheWholeUInt64Range(_ text: String) throws {
        let data = document([#"{"kind":"label","t_ns":1,"gesture":"g","t_ms":"# + text + #","duration_ms":18446744073709551615}"#])
        let reader = try TraceReader(bytes: data)
        #expect(try reader.next() == .label(LabelRecord(timeNs: 1, controller: nil, gesture: "g",
                                                        senderTimeMs: UInt64(Int64.max) + 1, durationMs: .max)))
    }

    @Test func negativeLabelDurationsAreBadRecords() throws {
        for member in ["t_ms", "duration_ms"] {
            let line = #"{"kind":"label","t_ns":1,"gesture":"g",""# + member + #"":-1}"#
            guard case .failure(let error) = parseOne(line) else { Issue.record("accepted \(line)"); continue }
            #expect(error.code == .badRecord)
            #expect(error.line == 2)
            let data = document([line])
            #expect(error.byteOffset == offset(of: "\"" + member + "\":", in: data)! + member.utf8.count + 3)
        }
        // -0 is zero, not negative.
        #expect(try parseOne(#"{"kind":"label","t_ns":1,"gesture":"g","t_ms":-0,"duration_ms":-0.0e1}"#).get()
                == .label(LabelRecord(timeNs: 1, controller: nil, gesture: "g", senderTimeMs: 0, durationMs: 0)))
    }

    /// TR-MOTION-1: vectors of exactly 3 finite numbers, attitude of 4; the optional members may be absent.
    @Test func motionRecordsNeedWholeFiniteVectors() throws {
        let good = #"{"kind":"motion","t_ns":5,"controller":"10.0.0.1:5","t_ms":9,"user_accel":[0,1e-3,-2],"rotation_rate":[1,2,3]}"#
        #expect(try parseOne(good).get() == .motion(MotionSampleRecord(
            timeNs: 5, controller: Endpoint(host: "10.0.0.1", port: 5), senderTimeMs: 9,
            userAcceleration: Vector3(0, 0.001, -2), rotationRate: Vector3(1, 2, 3))))
        let bad = [
            #"{"kind":"motion","t_ns":5,"controller":"10.0.0.1:5","t_ms":9,"user_accel":[0,1],"rotation_rate":[1,2,3]}"#,
            #"{"kind":"motion","t_ns":5,"controller":"10.0.0.1:5","t_ms":9,"user_accel":[0,1,2],"rotation_rate":[1,"2",3]}"#,
            #"{"kind":"motion","t_ns":5,"controller":"10.0.0.1:5","t_ms":9,"user_accel":[0,1,2],"rotation_rate":[1,2,3],"attitude":[1,0,0]}"#,
            #"{"kind":"motion","t_ns":5,"controller":"10.0.0.1:5","t_ms":9,"user_accel":[0,1,2]}"#,
            #"{"kind":"motion","t_ns":5,"t_ms":9,"user_accel":[0,1,2],"rotation_rate":[1,2,3]}"#,
        ]
        for line in bad {
            guard case .failure(let error) = parseOne(line) else { Issue.record("accepted \(line)"); continue }
            #expect(error.code == .badRecord, "\(line): \(error)")
            #expect(error.line == 2)
        }
    }

    /// The payload's first non-hex digit is named by its byte offset, wherever in the payload it is.
    @Test(arguments: [0, 1, 2, 7, 70, 71])
    func aNonHexPayloadDigitIsNamedByItsOffset(_ position: Int) throws {
        var digits = Array(repeating: Character("a"), count: 72)
        digits[position] = "g"
        if position < 70 { digits[71] = "z" }  // a later bad digit must not be the one named
        let line = #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"1.2.3.4:5","dst":"1.2.3.4:6","payload":""# + String(digits) + #""}"#
        guard case .failure(let error) = parseOne(line) else { Issue.record("accepted \(line)"); return }
        #expect(error.code == .badRecord && error.line == 2, "\(error)")
        let payloadStart = offset(of: #""payload":""#, in: document([line]))! + 11
        #expect(error.byteOffset == payloadStart + (position & ~1), "\(error)")
    }

    @Test func wronglyTypedMembersAreBadRecordsNotSyntaxErrors() {
        // TraceError.Code.badRecord is documented as "Valid JSON, but a record lacks a
        // field or has one of the wrong type"; .syntax as "A line is not valid JSON".
        let lines = [
            #"{"kind":"event","t_ns":"5","event":"e"}"#,
            #"{"kind":5,"t_ns":5}"#,
            #"{"kind":"label","t_ns":5,"gesture":7}"#,
            #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"1.2.3.4:5","dst":"1.2.3.4:6","payload":12}"#,
        ]
        for line in lines {
            guard case .failure(let error) = parseOne(line) else { Issue.record("accepted \(line)"); continue }
            #expect(error.code == .badRecord, "\(line): \(error)")
            #expect(error.line == 2)
        }
    }

    // MARK: TR-READ-4 / TR-READ-8

    @Test func unknownKindsAreSkippedAndCountedAndBlankLinesSkipped() throws {
        let data = document([
            "",
            #"{"kind":"label","t_ns":1,"gesture":"jump"}"#,
            #"{"kind":"future","t_ns":2,"whatever":{"deep":[1,2,3]},"more":"stuff"}"#,
            "   ",
            "\t\r",
            #"{"t_ns":3,"kind":"\u0066uture2"}"#,
            #"{"kind":"event","t_ns":4,"event":"e"}"#,
            #"{"kind":"MSG","t_ns":5}"#,
            #"{"kind":"","t_ns":6}"#,
            "",
        ])
        let reader = try TraceReader(bytes: data)
        #expect(try reader.next() == .label(LabelRecord(timeNs: 1, controller: nil, gesture: "jump")))
        #expect(reader.recordCount == 1)
        #expect(reader.unknownRecordCount == 0)
        #expect(try reader.next() == .event(EventRecord(timeNs: 4, event: "e")))
        #expect(reader.unknownRecordCount == 2)
        #expect(reader.recordCount == 2)
        #expect(try reader.next() == nil)
        #expect(reader.unknownRecordCount == 4)
        #expect(reader.recordCount == 2)
        #expect(reader.truncation == nil)
    }

    @Test func unknownKindsAreSkippedEvenWhenTheyReuseKnownMemberNames() {
        // TR-READ-4: a record of a kind this reader does not know is skipped. A
        // later minor version may add kinds whose members share names with v1
        // members but not their types or formats.
        let lines = [
            #"{"kind":"stats","t_ns":1,"src":"capture.pcap","dst":"summary"}"#,
            #"{"kind":"stats","t_ns":2,"payload":"not hex","dir":"both"}"#,
            #"{"kind":"stats","t_ns":3,"data":[1,2,3],"event":{"n":1}}"#,
            #"{"kind":"stats","t_ns":4,"t_ms":-5,"duration_ms":1.5,"gesture":null}"#,
        ]
        for line in lines {
            do {
                let reader = try TraceReader(bytes: document([line]))
                let records = try readAll(reader)
                #expect(records.isEmpty)
                #expect(reader.unknownRecordCount == 1, "\(line)")
            } catch {
                Issue.record("unknown-kind record was not skipped: \(line) -> \(error)")
            }
        }
    }

    @Test func aDocumentOfOnlyTheHeaderHasNoRecords() throws {
        for text in [Fixtures.minimalHeaderLine, Fixtures.minimalHeaderLine + "\n\n  \n",
                     "{\"format\":\"kinetrace-trace\",\"version\":1}"] {
            let reader = try TraceReader(bytes: bytes(text))
            #expect(try reader.next() == nil)
            #expect(try reader.next() == nil)
            #expect(reader.truncation == nil)
            #expect(reader.recordCount == 0)
        }
    }

    @Test func forEachVisitsEveryRecord() throws {
        let reader = try TraceReader(bytes: try TraceEncoder.document(header: Fixtures.header, records: Fixtures.mixed))
        var seen: [TraceRecord] = []
        try reader.forEach { seen.append($0) }
        #expect(seen == Fixtures.mixed)
        #expect(reader.recordCount == Fixtures.mixed.count)
    }
}
