import Foundation
import Testing
@testable import KinetraceTrace
import KinetraceWire

/// TR-READ-5 (a cut-off last line is a truncation, not an error) and
/// TR-READ-6 (any other bad line is an error naming its line and byte).
@Suite struct TruncationAndErrorTests {
    static let records: [TraceRecord] = [
        Fixtures.event(), Fixtures.message(), Fixtures.label(), Fixtures.message(Fixtures.frameT + 9, length: 20, rtt: 77),
    ]

    /// The last record in turn is each kind.
    static let lastRecords: [TraceRecord] = [
        Fixtures.message(Fixtures.frameT + 10, length: 36, fill: 1, rtt: -12), Fixtures.label(5), Fixtures.event(6),
        .message(MessageRecord(timeNs: 7, direction: .hostToController, source: Endpoint(host: "fe80::1%eth0", port: 5),
                               destination: Endpoint(host: "::1", port: 47110), payload: [])),
    ]

    /// Checks a document cut at `cut` bytes, whose last line starts at `lineStart`.
    static func checkCut(_ reader: TraceReader, cut: Int, full: [UInt8], lineStart: Int, last: TraceRecord,
                         sourceLocation: SourceLocation = #_sourceLocation) {
        let expectedLine = records.count + 2 // header is line 1
        do {
            let got = try readAll(reader)
            if cut == full.count - 1 {
                // Everything but the newline: a complete JSON object, so a record.
                #expect(got == records + [last], "cut \(cut)", sourceLocation: sourceLocation)
                #expect(reader.truncation == nil, "cut \(cut)", sourceLocation: sourceLocation)
            } else {
                #expect(got == records, "cut \(cut)", sourceLocation: sourceLocation)
                #expect(reader.truncation == TraceTruncation(line: expectedLine, byteOffset: lineStart, droppedBytes: cut - lineStart),
                        "cut \(cut)", sourceLocation: sourceLocation)
                #expect(reader.recordCount == records.count, sourceLocation: sourceLocation)
            }
            // After the end, the reader stays at the end.
            #expect(try reader.next() == nil, sourceLocation: sourceLocation)
        } catch {
            Issue.record("cut \(cut): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: lastRecords)
    func cutAtEveryOffsetOfTheLastLineInMemory(_ last: TraceRecord) throws {
        let full = try TraceEncoder.document(header: Fixtures.header, records: Self.records + [last])
        let lineStart = lineExtents(full).last!.start
        #expect(full.last == 0x0A)
        for cut in (lineStart + 1)...(full.count - 1) {
            let reader = try TraceReader(bytes: Array(full[..<cut]))
            Self.checkCut(reader, cut: cut, full: full, lineStart: lineStart, last: last)
        }
        // Cut right after the previous newline: nothing is truncated.
        let reader = try TraceReader(bytes: Array(full[..<lineStart]))
        #expect(try readAll(reader) == Self.records)
        #expect(reader.truncation == nil)
    }

    @Test(arguments: lastRecords)
    func cutAtEveryOffsetOfTheLastLineInAFile(_ last: TraceRecord) throws {
        let dir = TempDirectory()
        let full = try TraceEncoder.document(header: Fixtures.header, records: Self.records + [last])
        let lineStart = lineExtents(full).last!.start
        for cut in (lineStart + 1)...(full.count - 1) {
            let path = dir.write("cut-\(cut).jsonl", Array(full[..<cut]))
            let reader = try TraceReader(path: path)
            Self.checkCut(reader, cut: cut, full: full, lineStart: lineStart, last: last)
        }
    }

    @Test func truncationAfterMoreThanABufferOfDataInAFile() throws {
        // The byte offset must count bytes the reader has already discarded.
        let dir = TempDirectory()
        let many = (0..<6000).map { Fixtures.message(Int64($0), length: 36 + $0 % 50) }
        let full = try TraceEncoder.document(header: Fixtures.header, records: many)
        let lineStart = lineExtents(full).last!.start
        #expect(lineStart > 1 << 20)
        let cut = lineStart + 40
        let path = dir.write("big-cut.jsonl", Array(full[..<cut]))
        let reader = try TraceReader(path: path)
        let got = try readAll(reader)
        #expect(got.count == many.count - 1)
        #expect(got.last == many[many.count - 2])
        #expect(reader.truncation == TraceTruncation(line: many.count + 1, byteOffset: lineStart, droppedBytes: 40))
    }

    @Test func truncatedFirstRecordLeavesOnlyTheHeader() throws {
        let full = try TraceEncoder.document(header: Fixtures.header, records: [Fixtures.event()])
        let headerLength = TraceEncoder.line(for: Fixtures.header).count
        let reader = try TraceReader(bytes: Array(full[..<(headerLength + 10)]))
        #expect(reader.header == Fixtures.header)
        #expect(try reader.next() == nil)
        #expect(reader.truncation == TraceTruncation(line: 2, byteOffset: headerLength, droppedBytes: 10))
        #expect(reader.truncation?.description == "truncated at line 2 (byte \(headerLength)): dropped an incomplete record of 10 bytes")
    }

    @Test func unterminatedBlankLastLineIsNotATruncation() throws {
        let reader = try TraceReader(bytes: document([#"{"kind":"event","t_ns":1,"event":"e"}"#]) + bytes(" \t "))
        #expect(try readAll(reader) == [.event(EventRecord(timeNs: 1, event: "e"))])
        #expect(reader.truncation == nil)
    }

    @Test func unterminatedLastLineThatIsCompleteJSONButLacksARequiredMemberIsAnError() throws {
        // TR-READ-5 covers a last line that does not parse (a writer killed
        // mid-line); TR-READ-6 makes a line that "lacks a required member" an
        // error. A complete JSON object is not something a killed writer leaves.
        let data = document([#"{"kind":"event","t_ns":1,"event":"e"}"#]) + bytes(#"{"kind":"msg","t_ns":2}"#)
        let reader = try TraceReader(bytes: data)
        #expect(try reader.next() == .event(EventRecord(timeNs: 1, event: "e")))
        let error = #expect(throws: TraceError.self) { _ = try reader.next() }
        #expect(error?.code == .badRecord)
        #expect(error?.line == 3)
        #expect(reader.truncation == nil)
    }

    // MARK: TR-READ-6

    struct Corruption: CustomTestStringConvertible, Sendable {
        var name: String
        var line: String
        var code: TraceError.Code
        /// Where the error must point, as text whose first byte is the spot
        /// (searched for in the bad line); nil means only "inside the line".
        var at: String?
        var testDescription: String { name }
    }

    static let good = #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload":"00ff"}"#

    static let corruptions: [Corruption] = [
        Corruption(name: "missing comma", line: #"{"kind":"label" "t_ns":1,"gesture":"jump"}"#, code: .syntax, at: #""t_ns""#),
        Corruption(name: "missing colon", line: #"{"kind" "label","t_ns":1,"gesture":"jump"}"#, code: .syntax, at: #""label""#),
        Corruption(name: "bad hex digit", line: good.replacingOccurrences(of: "00ff", with: "00fg11"), code: .badRecord, at: "fg11"),
        Corruption(name: "odd hex length", line: good.replacingOccurrences(of: "00ff", with: "00f"), code: .badRecord, at: nil),
        Corruption(name: "missing payload", line: good.replacingOccurrences(of: #","payload":"00ff""#, with: ""), code: .badRecord, at: nil),
        Corruption(name: "missing dir", line: good.replacingOccurrences(of: #""dir":"c2h","#, with: ""), code: .badRecord, at: nil),
        Corruption(name: "missing src", line: good.replacingOccurrences(of: #""src":"10.0.0.11:50001","#, with: ""), code: .badRecord, at: nil),
        Corruption(name: "missing dst", line: good.replacingOccurrences(of: #""dst":"10.0.0.1:47110","#, with: ""), code: .badRecord, at: nil),
        Corruption(name: "missing t_ns", line: good.replacingOccurrences(of: #""t_ns":1,"#, with: ""), code: .badRecord, at: nil),
        Corruption(name: "missing kind", line: good.replacingOccurrences(of: #""kind":"msg","#, with: ""), code: .badRecord, at: nil),
        Corruption(name: "missing gesture", line: #"{"kind":"label","t_ns":1}"#, code: .badRecord, at: nil),
        Corruption(name: "missing event", line: #"{"kind":"event","t_ns":1,"data":{}}"#, code: .badRecord, at: nil),
        Corruption(name: "dir x2y", line: good.replacingOccurrences(of: "c2h", with: "x2y"), code: .badRecord, at: #""x2y""#),
        Corruption(name: "endpoint without port", line: good.replacingOccurrences(of: "10.0.0.11:50001", with: "1.2.3.4"), code: .badRecord, at: #""1.2.3.4""#),
        Corruption(name: "v6 endpoint without colon", line: good.replacingOccurrences(of: "10.0.0.1:47110", with: "[::1]47110"), code: .badRecord, at: #""[::1]47110""#),
        Corruption(name: "port 70000", line: good.replacingOccurrences(of: "10.0.0.1:47110", with: "10.0.0.1:70000"), code: .badRecord, at: #""10.0.0.1:70000""#),
        Corruption(name: "bad controller", line: #"{"kind":"label","t_ns":1,"gesture":"g","controller":"::1:5"}"#, code: .badRecord, at: #""::1:5""#),
        Corruption(name: "data not an object", line: #"{"kind":"event","t_ns":1,"event":"e","data":[1]}"#, code: .badRecord, at: "[1]"),
        Corruption(name: "unterminated string", line: #"{"kind":"label","t_ns":1,"gesture":"jum}"#, code: .syntax, at: #""jum"#),
        Corruption(name: "trailing garbage", line: #"{"kind":"event","t_ns":1,"event":"e"} x"#, code: .syntax, at: "x"),
        Corruption(name: "two objects", line: #"{"kind":"event","t_ns":1,"event":"e"}{}"#, code: .syntax, at: "{}"),
        Corruption(name: "trailing comma", line: #"{"kind":"event","t_ns":1,"event":"e",}"#, code: .syntax, at: nil),
        Corruption(name: "bad escape", line: #"{"kind":"event","t_ns":1,"event":"a\xb"}"#, code: .syntax, at: #"\xb"#),
        Corruption(name: "lone low surrogate", line: #"{"kind":"event","t_ns":1,"event":"\udc00"}"#, code: .syntax, at: nil),
        Corruption(name: "high surrogate without low", line: #"{"kind":"event","t_ns":1,"event":"\ud83dx"}"#, code: .syntax, at: nil),
        Corruption(name: "bad \\u hex", line: #"{"kind":"event","t_ns":1,"event":"\u00g1"}"#, code: .syntax, at: "g1"),
        Corruption(name: "raw control character", line: "{\"kind\":\"event\",\"t_ns\":1,\"event\":\"a\u{1}b\"}", code: .syntax, at: "\u{1}"),
        Corruption(name: "not an object", line: "[1,2,3]", code: .syntax, at: "["),
        Corruption(name: "bare word", line: "hello", code: .syntax, at: "h"),
        Corruption(name: "leading zero", line: #"{"kind":"event","t_ns":01,"event":"e"}"#, code: .syntax, at: nil),
        Corruption(name: "truncated literal", line: #"{"kind":"event","t_ns":1,"event":"e","x":tru}"#, code: .syntax, at: nil),
        Corruption(name: "unquoted key", line: #"{kind:"event","t_ns":1,"event":"e"}"#, code: .syntax, at: "kind"),
        Corruption(name: "nan literal", line: #"{"kind":"event","t_ns":NaN,"event":"e"}"#, code: .syntax, at: nil),
        Corruption(name: "plus sign", line: #"{"kind":"event","t_ns":+1,"event":"e"}"#, code: .syntax, at: nil),
        Corruption(name: "negative t_ms", line: #"{"kind":"label","t_ns":1,"gesture":"g","t_ms":-7}"#, code: .badRecord, at: "-7"),
    ]

    static func corruptDocument(_ corruption: Corruption) -> [UInt8] {
        document([
            #"{"kind":"event","t_ns":0,"event":"first"}"#,
            "",
            corruption.line,
            #"{"kind":"event","t_ns":2,"event":"after"}"#,
        ])
    }

    static func check(_ reader: TraceReader, _ data: [UInt8], _ corruption: Corruption,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        let (records, error) = readUntilError(reader)
        #expect(records == [.event(EventRecord(timeNs: 0, event: "first"))], sourceLocation: sourceLocation)
        guard let error else { Issue.record("no error for \(corruption.name)", sourceLocation: sourceLocation); return }
        let extent = lineExtents(data)[3]
        #expect(error.code == corruption.code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.line == 4, sourceLocation: sourceLocation)
        #expect(error.source == reader.source, sourceLocation: sourceLocation)
        #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
        #expect(error.description.hasPrefix("\(reader.source): line 4, byte "), sourceLocation: sourceLocation)
        guard let at = error.byteOffset else { Issue.record("no byte offset", sourceLocation: sourceLocation); return }
        #expect(at >= extent.start && at <= extent.end, "offset \(at) outside \(extent)", sourceLocation: sourceLocation)
        if let spot = corruption.at {
            #expect(at == offset(of: spot, in: data, from: extent.start), "\(error)", sourceLocation: sourceLocation)
        }
        #expect(reader.truncation == nil, sourceLocation: sourceLocation)
    }

    @Test(arguments: corruptions)
    func corruptMiddleLineIsAnErrorNamingItsLineAndByte(_ corruption: Corruption) throws {
        let data = Self.corruptDocument(corruption)
        Self.check(try TraceReader(bytes: data), data, corruption)
    }

    @Test func corruptMiddleLinesInAFile() throws {
        let dir = TempDirectory()
        for (i, corruption) in Self.corruptions.enumerated() {
            let data = Self.corruptDocument(corruption)
            let path = dir.write("bad-\(i).jsonl", data)
            let reader = try TraceReader(path: path)
            Self.check(reader, data, corruption)
            #expect(reader.source == path)
        }
    }

    @Test func readingContinuesAfterAnErrorWithTheNextLine() throws {
        let data = Self.corruptDocument(Self.corruptions[0])
        let reader = try TraceReader(bytes: data)
        #expect(try reader.next() == .event(EventRecord(timeNs: 0, event: "first")))
        #expect(throws: TraceError.self) { _ = try reader.next() }
        #expect(try reader.next() == .event(EventRecord(timeNs: 2, event: "after")))
        #expect(try reader.next() == nil)
    }

    @Test func errorOffsetAfterMoreThanABufferOfDataInAFile() throws {
        let dir = TempDirectory()
        let many = (0..<6000).map { Fixtures.message(Int64($0), length: 36 + $0 % 50) }
        let bad = #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload":"00zz"}"#
        let data = try TraceEncoder.document(header: Fixtures.header, records: many) + bytes(bad + "\n")
        let lineStart = lineExtents(data).last!.start
        let path = dir.write("big-bad.jsonl", data)
        let reader = try TraceReader(path: path)
        let (records, error) = readUntilError(reader)
        #expect(records.count == many.count)
        #expect(error?.code == .badRecord)
        #expect(error?.line == many.count + 2)
        #expect(error?.byteOffset == lineStart + offset(of: "zz", in: bytes(bad))!)
    }

    @Test func badHexOffsetPointsAtTheBadDigitsEvenAfterWhitespace() {
        // "payload": "00zz" with a space before the string.
        let line = #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload": "00zz"}"#
        let data = document([line])
        guard case .failure(let error) = parseOne(line) else { Issue.record("accepted"); return }
        #expect(error.code == .badRecord)
        #expect(error.byteOffset == offset(of: "zz", in: data))
    }

    @Test func payloadWithEscapedWhitespaceIsNotHex() {
        // The payload must be hex digits. With no escapes, "00 ff" and a raw tab
        // are rejected; the same characters written as JSON escapes must be too.
        let base = #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload":"PAYLOAD"}"#
        for payload in [#"00 ff"#, #"00\u0020ff"#, #"00\nff"#, #"00\tff"#, #"\n00ff"#, #"00\u000aff"#, #"0\t0ff"#] {
            let line = base.replacingOccurrences(of: "PAYLOAD", with: payload)
            switch parseOne(line) {
            case .success(let record): Issue.record("payload \(payload) accepted as \(String(describing: record))")
            case .failure(let error):
                #expect(error.code == .badRecord, "\(payload)")
                #expect(error.line == 2)
            }
        }
    }

    @Test func escapedHexPayloadsDecode() throws {
        let base = #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","payload":"PAYLOAD"}"#
        for (payload, expected) in [(#"\u0030\u0030FF"#, [UInt8(0x00), 0xFF]), (#"a\u0042"#, [0xAB]), (#"\u0061\u0062\u0043\u0064"#, [0xAB, 0xCD])] {
            let line = base.replacingOccurrences(of: "PAYLOAD", with: payload)
            guard case .message(let m)? = try parseOne(line).get() else { Issue.record("no message"); continue }
            #expect(m.payload == expected)
        }
        for payload in [#"\u0030"#, #"\u0067\u0067"#, #"0\u00e9"#] {
            let line = base.replacingOccurrences(of: "PAYLOAD", with: payload)
            guard case .failure(let error) = parseOne(line) else { Issue.record("accepted \(payload)"); continue }
            #expect(error.code == .badRecord)
        }
    }
}
