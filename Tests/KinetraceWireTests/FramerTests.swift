import KinetraceJSON
import KinetraceSupport
import KinetraceTestSupport
import PropertyBased
import Testing
import KinetraceWire

/// The framers byte-stream and datagram protocols plug in through
/// (Core/Framing.swift), the stdio adapter's framing on top of them, and the
/// adapter's observation payload.
///
/// Random data comes from `SeededGenerator` seeded by a property-test input
/// (`seed`), so a failure prints the seed that reproduces it; example tests
/// use the fixed seeds written in them.
@Suite struct FramerTests {
    // MARK: Helpers

    /// Cuts `count` bytes into chunk lengths by `mode`: 0 one-byte chunks,
    /// 1 one giant chunk, 2 random lengths 1…31, 3 random lengths 0…64
    /// (empty appends included).
    static func chunkLengths(_ count: Int, mode: Int, _ rng: inout SeededGenerator) -> [Int] {
        switch mode {
        case 0: return [Int](repeating: 1, count: count)
        case 1: return count == 0 ? [] : [count]
        default:
            var lengths: [Int] = []
            var left = count
            while left > 0 {
                let n = min(left, mode == 2 ? Int.random(in: 1...31, using: &rng) : Int.random(in: 0...64, using: &rng))
                lengths.append(n)
                left -= n
            }
            return lengths
        }
    }

    static func randomBytes(_ count: Int, _ rng: inout SeededGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// Every message `next` gives now, failing the test on a throw.
    static func drain(_ framer: inout some MessageFramer) -> [FramedMessage] {
        var out: [FramedMessage] = []
        do {
            while let message = try framer.next() { out.append(message) }
        } catch {
            Issue.record("the framer threw \(error)")
        }
        return out
    }

    // MARK: StreamFramer + FixedLengthRecords

    @Test func fixedLengthRecordsComeOutWholeWhateverTheChunking() async {
        await seededPropertyCheck(count: 400, input: Gen.uint64(), Gen.int(in: 0...60), Gen.int(in: 0...11), Gen.int(in: 0...3)) {
            seed, recordCount, trailing, mode in
            var rng = SeededGenerator(seed: seed)
            let records = (0..<recordCount).map { _ in Self.randomBytes(12, &rng) }
            let tail = Self.randomBytes(trailing, &rng)
            let stream = records.flatMap { $0 } + tail
            var framer = StreamFramer(FixedLengthRecords(length: 12))
            var got: [FramedMessage] = []
            var index = 0
            for length in Self.chunkLengths(stream.count, mode: mode, &rng) {
                framer.append(Array(stream[index..<index + length]))
                index += length
                got += Self.drain(&framer)
                // Whatever has arrived that is not yet a whole record is all that waits.
                #expect(framer.pendingBytes == index % 12 || index > 12 * recordCount)
                #expect(framer.pendingBytes < 12)
            }
            #expect(index == stream.count)
            #expect(got == records.enumerated().map { FramedMessage(bytes: $0.element, offset: 12 * $0.offset) })
            #expect(framer.offset == 12 * recordCount)
            #expect(framer.pendingBytes == trailing)
            let rest = framer.finish()
            #expect(rest == (trailing == 0 ? nil : FramedMessage(bytes: tail, offset: 12 * recordCount)))
            #expect(framer.pendingBytes == 0)
            #expect(framer.offset == stream.count)
            #expect(framer.finish() == nil, "a second finish gives nothing")
            #expect(Self.drain(&framer).isEmpty)
        }
    }

    @Test func aPartialRecordWaitsAndIsNotRepeated() throws {
        var framer = StreamFramer(FixedLengthRecords(length: 12))
        #expect(try framer.next() == nil, "an empty framer has nothing")
        framer.append(Array(0..<11))
        #expect(try framer.next() == nil)
        #expect(try framer.next() == nil)
        #expect(framer.pendingBytes == 11)
        framer.append([11, 12])
        #expect(try framer.next() == FramedMessage(bytes: Array(0..<12), offset: 0))
        #expect(try framer.next() == nil)
        #expect(framer.finish() == FramedMessage(bytes: [12], offset: 12))
    }

    /// 10 MB in 4 KiB chunks, drained after each: what waits stays under one record.
    @Test func memoryStaysBoundedByThePartialRecord() throws {
        var framer = StreamFramer(FixedLengthRecords(length: 12))
        let total = 10 << 20
        var chunk = [UInt8](repeating: 0, count: 4096)
        var fed = 0
        var records = 0
        var largestPending = 0
        while fed < total {
            // Each byte is its stream offset mod 251, so a misplaced cut shows in the contents.
            for i in chunk.indices { chunk[i] = UInt8((fed + i) % 251) }
            framer.append(chunk)
            fed += chunk.count
            while let message = try framer.next() {
                if message.offset != 12 * records || message.bytes.count != 12
                    || message.bytes[0] != UInt8(message.offset % 251) || message.bytes[11] != UInt8((message.offset + 11) % 251) {
                    Issue.record("record \(records) came out as \(message)")
                    return
                }
                records += 1
            }
            largestPending = max(largestPending, framer.pendingBytes)
        }
        #expect(records == total / 12)
        #expect(framer.pendingBytes == total % 12)
        #expect(largestPending < 12)
        #expect(framer.offset == 12 * records)
        #expect(framer.finish()?.bytes.count == total % 12)
    }

    /// A boundary that never finds an end, and one that claims absurd lengths: both stop at the limit with the offset.
    @Test func aRecordThatNeverEndsStopsAtTheLimit() throws {
        struct NeverEnds: RecordBoundary {
            func recordLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int? { nil }
        }
        struct Claims: RecordBoundary {
            let length: Int
            func recordLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int? { length }
        }
        var framer = StreamFramer(NeverEnds(), maximumRecordLength: 100)
        framer.append([UInt8](repeating: 7, count: 100))
        #expect(try framer.next() == nil, "at the limit it still waits")
        framer.append([7])
        #expect(throws: WireError.self) { try framer.next() }
        do { _ = try framer.next() } catch { #expect(error.code == .invalidLength && error.offset == 0) }

        for length in [0, -1, 101, Int.max] {
            var claims = StreamFramer(Claims(length: length), maximumRecordLength: 100)
            claims.append([1, 2, 3])
            #expect(throws: WireError.self, "length \(length)") { try claims.next() }
        }
        // Records up to the limit pass.
        var fits = StreamFramer(FixedLengthRecords(length: 100), maximumRecordLength: 100)
        fits.append([UInt8](repeating: 1, count: 200))
        #expect(try fits.next()?.bytes.count == 100)
        #expect(try fits.next()?.offset == 100)
    }

    // MARK: DatagramFramer

    @Test func everyDatagramIsOneMessageInOrder() async {
        await seededPropertyCheck(count: 300, input: Gen.uint64(), Gen.int(in: 0...40)) { seed, count in
            var rng = SeededGenerator(seed: seed)
            var framer = DatagramFramer()
            var sent: [[UInt8]] = []
            var got: [FramedMessage] = []
            for _ in 0..<count {
                // Empty datagrams are messages too; so are long ones.
                let length = Bool.random(using: &rng) ? [0, 0, 1, 12, 20, 36, 1500].randomElement(using: &rng)! : Int.random(in: 0...200, using: &rng)
                let datagram = Self.randomBytes(length, &rng)
                framer.append(datagram)
                sent.append(datagram)
                // Drain at random moments, so several may wait at once.
                if Int.random(in: 0...2, using: &rng) == 0 { got += Self.drain(&framer) }
            }
            got += Self.drain(&framer)
            #expect(got == sent.enumerated().map { FramedMessage(bytes: $0.element, offset: $0.offset) })
            #expect(framer.finish() == nil, "a datagram is never partial")
            // Numbering goes on after a drain.
            framer.append([7])
            #expect(Self.drain(&framer) == [FramedMessage(bytes: [7], offset: count)])
        }
    }

    @Test func anEmptyDatagramIsAMessage() throws {
        var framer = DatagramFramer()
        #expect(try framer.next() == nil)
        framer.append([])
        framer.append([])
        #expect(try framer.next() == FramedMessage(bytes: [], offset: 0))
        #expect(try framer.next() == FramedMessage(bytes: [], offset: 1))
        #expect(try framer.next() == nil)
    }

    // MARK: StdioRecordDecoder

    static func randomRecords(_ count: Int, _ rng: inout SeededGenerator) -> [StdioRecord] {
        (0..<count).map { _ in
            let kind = [StdioRecord.Kind.controllerToHost, .hostToController, .observation, StdioRecord.Kind(rawValue: 0x7F)]
                .randomElement(using: &rng)!
            let length = Int.random(in: 0...3, using: &rng) == 0 ? [0, 1, 20, 36, 255, 256].randomElement(using: &rng)!
                : Int.random(in: 0...300, using: &rng)
            return StdioRecord(kind: kind, controller: UInt16.random(in: 0...UInt16.max, using: &rng), payload: randomBytes(length, &rng))
        }
    }

    /// Decodes `stream` appended in chunks of `lengths`, draining after each append.
    static func decodeStdio(_ stream: [UInt8], _ lengths: [Int]) throws(WireError) -> (records: [StdioRecord], decoder: StdioRecordDecoder) {
        var decoder = StdioRecordDecoder()
        var records: [StdioRecord] = []
        var index = 0
        for length in lengths {
            decoder.append(stream[index..<index + length])
            index += length
            while let record = try decoder.next() { records.append(record) }
        }
        return (records, decoder)
    }

    @Test func stdioRecordsDecodeTheSameInAnyChunking() async {
        await seededPropertyCheck(count: 300, input: Gen.uint64(), Gen.int(in: 0...12), Gen.int(in: 0...3)) { seed, count, mode in
            var rng = SeededGenerator(seed: seed)
            let records = Self.randomRecords(count, &rng)
            let stream = records.flatMap { $0.encoded() }
            do {
                let whole = try Self.decodeStdio(stream, stream.isEmpty ? [] : [stream.count])
                let chunked = try Self.decodeStdio(stream, Self.chunkLengths(stream.count, mode: mode, &rng))
                #expect(whole.records == records)
                #expect(chunked.records == whole.records)
                #expect(chunked.decoder.pendingBytes == 0)
                #expect(chunked.decoder.offset == stream.count)
            } catch {
                Issue.record("a valid stream threw \(error)")
            }
        }
    }

    /// A bad record after some good ones, its first byte inside a chunk: the good
    /// ones come out, then the error names the bad record's stream offset
    /// (its length field for a bad length, its flags byte for bad flags).
    @Test func aBadRecordMidChunkThrowsWithItsStreamOffset() async {
        let badLengths: [UInt32] = [0, 1, 2, 3, 65_540, 0x0100_0000, 0xFFFF_FFFF]
        await seededPropertyCheck(count: 300, input: Gen.uint64(), Gen.int(in: 0...6), Gen.int(in: 0...badLengths.count)) { seed, count, which in
            var rng = SeededGenerator(seed: seed)
            let good = Self.randomRecords(count, &rng)
            let prefix = good.flatMap { $0.encoded() }
            let bad: [UInt8]
            let expectedCode: WireError.Code
            let expectedOffset: Int
            if which < badLengths.count {
                let l = badLengths[which]
                bad = [UInt8(l >> 24), UInt8(l >> 16 & 0xFF), UInt8(l >> 8 & 0xFF), UInt8(l & 0xFF), 0x01, 0x00, 0x00, 0x01]
                expectedCode = .invalidLength
                expectedOffset = prefix.count
            } else {
                bad = [0, 0, 0, 4, 0x01, UInt8.random(in: 1...255, using: &rng), 0, 1]
                expectedCode = .outOfRange
                expectedOffset = prefix.count + 5
            }
            let stream = prefix + bad + Self.randomBytes(Int.random(in: 0...40, using: &rng), &rng)
            // Chunks that start 1…7 bytes before the bad record and run past its header.
            let cut = max(0, prefix.count - Int.random(in: 1...7, using: &rng))
            let head = Self.chunkLengths(cut, mode: 2, &rng)
            let lengths = head + [stream.count - cut]
            var decoder = StdioRecordDecoder()
            var decoded: [StdioRecord] = []
            var index = 0
            var thrown: WireError?
            outer: for length in lengths {
                decoder.append(stream[index..<index + length])
                index += length
                do throws(WireError) {
                    while let record = try decoder.next() { decoded.append(record) }
                } catch {
                    thrown = error
                    break outer
                }
            }
            #expect(decoded == good)
            #expect(thrown?.code == expectedCode)
            #expect(thrown?.offset == expectedOffset)
            // It keeps failing the same way: the stream cannot be resynchronised.
            #expect(throws: WireError.self) { _ = try decoder.next() }
        }
    }

    // MARK: Observation

    static let decisionPieces = [
        "jump", "duck", "tilt", "a\"b", "\"", "back\\slash", "\\u0041", "new\nline", "\t", "\u{0}", "\u{1F}", "\u{7F}",
        "é", "e\u{301}", "日本語", "😀", "👩‍👩‍👧", "\u{2028}", "/", "{\"decision\":\"x\"}", ",", "}", " ",
    ]

    static func decision(_ rng: inout SeededGenerator) -> String {
        var s = ""
        while s.isEmpty {
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                if Int.random(in: 0...9, using: &rng) < 7 {
                    s += decisionPieces.randomElement(using: &rng)!
                } else {
                    var v = UInt32.random(in: 0...0x10FFFF, using: &rng)
                    if (0xD800...0xDFFF).contains(v) { v = 0x41 }
                    s.unicodeScalars.append(Unicode.Scalar(v)!)
                }
            }
        }
        return s
    }

    static func finiteValue(_ rng: inout SeededGenerator) -> Double {
        switch Int.random(in: 0...2, using: &rng) {
        case 0:
            return [0.0, -0.0, 0.5, -1.25, 3.0, 1e16, 1e300, -1e-300, .leastNonzeroMagnitude, .leastNormalMagnitude,
                    .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 0.1, 123456789.125].randomElement(using: &rng)!
        case 1:
            let d = Double(bitPattern: rng.next())
            return d.isFinite ? d : 42.5
        default:
            return Double(Int32.random(in: .min ... .max, using: &rng)) / 1024
        }
    }

    @Test func observationsRoundTrip() async {
        await seededPropertyCheck(count: 500, input: Gen.uint64(), Gen.int(in: 0...6), Gen.int(in: 0...2)) { seed, valueCount, stampKind in
            var rng = SeededGenerator(seed: seed)
            // t_ms up to Int64.max here; larger stamps are `largeStampsRoundTrip`.
            let stamp: UInt64? = switch stampKind {
            case 0: nil
            case 1: [0, 1, 1_767_225_600_123, UInt64(Int64.max)].randomElement(using: &rng)!
            default: UInt64.random(in: 0...UInt64(Int64.max), using: &rng)
            }
            let observation = Observation(decision: Self.decision(&rng), sampleTimeMs: stamp,
                                          values: (0..<valueCount).map { _ in Self.finiteValue(&rng) })
            let bytes = observation.encoded()
            #expect(String(validating: bytes, as: UTF8.self) != nil, "the payload is UTF-8")
            guard case .success(.object) = JSONValue.parse(bytes) else {
                Issue.record("not one JSON object: \(String(decoding: bytes, as: UTF8.self))")
                return
            }
            do {
                let decoded = try Observation.decode(bytes)
                #expect(decoded.decision == observation.decision)
                #expect(decoded.sampleTimeMs == observation.sampleTimeMs)
                #expect(decoded.values.map(\.bitPattern) == observation.values.map(\.bitPattern), "values bit for bit, -0.0 included")
                #expect(decoded.encoded() == bytes)
            } catch {
                Issue.record("\(String(decoding: bytes, as: UTF8.self)) did not decode: \(error)")
            }
        }
    }

    @Test func theDocumentedExampleDecodes() throws {
        let text = #"{"decision":"jump","t_ms":1767225600123,"values":[0.1,0.2,0.3]}"#
        let observation = try Observation.decode(Array(text.utf8))
        #expect(observation == Observation(decision: "jump", sampleTimeMs: 1_767_225_600_123, values: [0.1, 0.2, 0.3]))
        #expect(observation.encoded() == Array(text.utf8))
        #expect(Observation(decision: "jump").encoded() == Array(#"{"decision":"jump"}"#.utf8))
        #expect(Observation(HostDecision(name: "jump", sampleTimeMs: 5, owesReply: true, values: [1.5]))
                == Observation(decision: "jump", sampleTimeMs: 5, values: [1.5]))
    }

    /// `sampleTimeMs` is a UInt64 and `encoded()` writes any of them, so `decode` should read them all back.
    @Test func largeStampsRoundTrip() throws {
        for stamp in [UInt64(Int64.max) + 1, UInt64.max] {
            let observation = Observation(decision: "jump", sampleTimeMs: stamp)
            let decoded = Observation.decodeResult(observation.encoded())
            #expect(decoded == .success(observation), "t_ms \(stamp): \(String(decoding: observation.encoded(), as: UTF8.self))")
        }
    }

    @Test func otherSpellingsOfTheSameObservationDecode() throws {
        let spellings = [
            #"{ "values" : [1, 2.5e0, -0] , "t_ms" : 1.5e3, "decision" : "j\u0075mp" }"#,
            #"{"decision":"jump","t_ms":1500,"values":[1,2.5,0],"extra":{"nested":[null,true]},"more":"x"}"#,
        ]
        for text in spellings {
            let observation = try Observation.decode(Array(text.utf8))
            #expect(observation == Observation(decision: "jump", sampleTimeMs: 1500, values: [1, 2.5, 0]), "\(text)")
        }
        // Unknown members alone are fine too; values may be empty.
        #expect(try Observation.decode(Array(#"{"decision":"d","future":1,"values":[]}"#.utf8)) == Observation(decision: "d"))
    }

    @Test(arguments: [
        "", " ", "not json", "{", #"{"decision":"jump""#, #"{"decision":"jump"} {}"#, #"{"decision":"jump",}"#,
        "[]", #"["decision","jump"]"#, #""jump""#, "42", "null", "true",
        "{}", #"{"t_ms":5}"#, #"{"decision":""}"#, #"{"decision":null}"#, #"{"decision":7}"#, #"{"decision":["jump"]}"#,
        #"{"decision":{"name":"jump"}}"#,
        #"{"decision":"jump","t_ms":-1}"#, #"{"decision":"jump","t_ms":-9223372036854775808}"#,
        #"{"decision":"jump","t_ms":1.5}"#, #"{"decision":"jump","t_ms":0.001}"#, #"{"decision":"jump","t_ms":"5"}"#,
        #"{"decision":"jump","t_ms":null}"#, #"{"decision":"jump","t_ms":1e400}"#,
        #"{"decision":"jump","values":["NaN"]}"#, #"{"decision":"jump","values":["Infinity"]}"#,
        #"{"decision":"jump","values":[1,"-Infinity"]}"#, #"{"decision":"jump","values":["1.5"]}"#,
        #"{"decision":"jump","values":[1e400]}"#, #"{"decision":"jump","values":[-1e999]}"#,
        #"{"decision":"jump","values":[null]}"#, #"{"decision":"jump","values":[true]}"#, #"{"decision":"jump","values":[[1]]}"#,
        #"{"decision":"jump","values":1}"#, #"{"decision":"jump","values":{"x":1}}"#, #"{"decision":"jump","values":"1,2"}"#,
    ])
    func malformedObservationsAreRejected(_ text: String) {
        switch Observation.decodeResult(Array(text.utf8)) {
        case .success(let observation): Issue.record("\(text) decoded as \(observation)")
        case .failure(let error): #expect(error.code == .malformed, "\(text): \(error)")
        }
    }

    // MARK: Observation records

    @Test func observationRecordsTravelThroughTheStdioFraming() throws {
        let observation = Observation(decision: "jump \"high\" 日本", sampleTimeMs: 1_767_225_600_123, values: [0.1, -0.0, 1e300])
        let record = StdioRecord(kind: .observation, controller: 0xBEEF, payload: observation.encoded())
        let bytes = record.encoded()
        #expect(bytes[4] == 0x03, "kind 0x03")
        #expect(Array(bytes[0..<4]) == [0, 0, UInt8((observation.encoded().count + 4) >> 8), UInt8((observation.encoded().count + 4) & 0xFF)])
        // A frame record, the observation, an ack record: byte by byte.
        let stream = StdioRecord(kind: .controllerToHost, controller: 0xBEEF, payload: Array(repeating: 1, count: 36)).encoded()
            + bytes + StdioRecord(kind: .hostToController, controller: 0xBEEF, payload: Array(repeating: 2, count: 20)).encoded()
        let (records, decoder) = try Self.decodeStdio(stream, [Int](repeating: 1, count: stream.count))
        #expect(records.count == 3)
        #expect(decoder.pendingBytes == 0)
        let decoded = try #require(records.dropFirst().first)
        #expect(decoded == record)
        #expect(decoded.kind == .observation)
        #expect(decoded.kind.description == "0x3")
        let back = try Observation.decode(decoded.payload)
        #expect(back.decision == observation.decision && back.sampleTimeMs == observation.sampleTimeMs)
        #expect(back.values.map(\.bitPattern) == observation.values.map(\.bitPattern))
    }
}

extension Observation {
    /// `decode` as a `Result`, for comparing outcomes.
    fileprivate static func decodeResult(_ payload: [UInt8]) -> Result<Observation, WireError> {
        do throws(WireError) { return .success(try decode(payload)) } catch { return .failure(error) }
    }
}
