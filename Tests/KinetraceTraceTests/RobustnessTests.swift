import Foundation
import KinetraceTestSupport
import PropertyBased
import Testing
@testable import KinetraceTrace
import KinetraceWire
import KinetraceJSON

/// Hostile input: random bytes, mutated lines, deep nesting, huge lines.
@Suite struct RobustnessTests {
    static let headerBytes = bytes(Fixtures.minimalHeaderLine)

    /// Reads everything; checks that whatever comes back is well-formed.
    /// Returns the records read.
    @discardableResult
    static func readHostile(_ data: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> [TraceRecord] {
        let reader: TraceReader
        do { reader = try TraceReader(bytes: data) } catch {
            Issue.record("header rejected: \(error)", sourceLocation: sourceLocation)
            return []
        }
        var records: [TraceRecord] = []
        var errors = 0
        let lines = lineExtents(data)
        while true {
            do {
                guard let record = try reader.next() else { break }
                records.append(record)
            } catch {
                errors += 1
                // Errors name a line after the header and a byte inside that line.
                guard let line = error.line, let at = error.byteOffset, line >= 2, line <= lines.count else {
                    Issue.record("error without a valid location: \(error)", sourceLocation: sourceLocation)
                    break
                }
                let extent = lines[line - 1]
                #expect(at >= extent.start && at <= extent.end, "\(error) outside \(extent)", sourceLocation: sourceLocation)
                #expect([TraceError.Code.syntax, .badRecord].contains(error.code), "\(error)", sourceLocation: sourceLocation)
                if errors > lines.count { Issue.record("reader does not advance after errors", sourceLocation: sourceLocation); break }
            }
        }
        if let t = reader.truncation {
            // Only an unterminated last line can be a truncation.
            #expect(data.last != 0x0A, sourceLocation: sourceLocation)
            #expect(t.line == lines.count, sourceLocation: sourceLocation)
            #expect(t.byteOffset == lines.last!.start, sourceLocation: sourceLocation)
            #expect(t.droppedBytes == data.count - lines.last!.start, sourceLocation: sourceLocation)
        }
        #expect(reader.recordCount == records.count, sourceLocation: sourceLocation)
        // Whatever a reader accepts, it accepts again after the writer re-encodes it.
        let reencoded = records.filter {
            if case .event = $0 { return false } // event data may hold 1e999, written back as "Infinity"
            return true
        }
        if let again = try? readAll(TraceReader(bytes: try TraceEncoder.document(header: Fixtures.header, records: reencoded))) {
            #expect(again == reencoded, sourceLocation: sourceLocation)
        } else {
            Issue.record("re-encoded records do not read back: \(reencoded)", sourceLocation: sourceLocation)
        }
        return records
    }

    @Test func randomBytesNeverCrash() async {
        await seededPropertyCheck(count: 3000, input: Gen.uint8().array(of: 0...96), Gen.int(in: 0...2)) { garbage, ending in
            let data = Self.headerBytes + garbage + (ending == 0 ? [] : ending == 1 ? [0x0A] : [0x0D, 0x0A])
            Self.readHostile(data)
        }
    }

    static let jsonAlphabet = Array(#"{}[]",:\/"\u0123456789abcdefABCDEF.eE+- truefalsnul\#t\#r"#.utf8)
        + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x80]

    @Test func jsonLikeGarbageNeverCrashes() async {
        await seededPropertyCheck(count: 3000, input: Gen.uint8().array(of: 0...120), Gen.int(in: 0...1)) { picks, ending in
            var line: [UInt8] = [UInt8(ascii: "{")]
            line += picks.map { Self.jsonAlphabet[Int($0) % Self.jsonAlphabet.count] }
            Self.readHostile(Self.headerBytes + line + (ending == 0 ? [] : [0x0A]))
        }
    }

    @Test func mutatedRecordLinesNeverCrash() async {
        // Valid lines with a few bytes replaced, deleted, inserted or duplicated:
        // reaches the decoder's deeper paths far more often than pure noise.
        let specials = Array(#"{}[]",:\0aZ-.e9 "#.utf8) + [0x00, 0x80, 0xFF, 0x09, 0x0D]
        await seededPropertyCheck(count: 3000, input: Gen.uint64(), Gen.int(in: 1...4), Gen.int(in: 0...1)) { seed, mutations, ending in
            var rng = SplitMix64(seed: seed)
            var line = Array(TraceEncoder.line(for: RandomTrace.record(&rng), as: MotionLinkV1()).dropLast())
            for _ in 0..<mutations where !line.isEmpty {
                let i = rng.int(0...(line.count - 1))
                var byte = rng.chance(50) ? rng.pick(specials) : UInt8(truncatingIfNeeded: rng.next())
                if byte == 0x0A { byte = 0x20 }
                switch rng.int(0...3) {
                case 0: line[i] = byte
                case 1: line.remove(at: i)
                case 2: line.insert(byte, at: i)
                default:
                    let j = rng.int(i...min(line.count - 1, i + 12))
                    line.insert(contentsOf: line[i...j], at: j + 1)
                }
            }
            let data = Self.headerBytes + line + (ending == 0 ? [] : [0x0A])
            let records = Self.readHostile(data)
            #expect(records.count <= 1)
        }
    }

    @Test func invalidUTF8InsideStringsBecomesReplacementCharacters() throws {
        let line: [UInt8] = bytes(#"{"kind":"label","t_ns":1,"gesture":"a"#) + [0xFF, 0xC3] + bytes(#"b"}"#) + [0x0A]
        let reader = try TraceReader(bytes: Self.headerBytes + line)
        #expect(try reader.next() == .label(LabelRecord(timeNs: 1, controller: nil, gesture: "a\u{FFFD}\u{FFFD}b")))
    }

    // MARK: Nesting

    @Test func deeplyNestedEventDataIsAnErrorNotAStackOverflow() throws {
        for (open, name) in [("[", "arrays"), ("{\"a\":", "objects")] {
            for depth in [1_000, 100_000] {
                let line = #"{"kind":"event","t_ns":1,"event":"deep","data":{"x":"# + String(repeating: open, count: depth)
                let data = document([line, #"{"kind":"event","t_ns":2,"event":"after"}"#])
                let reader = try TraceReader(bytes: data)
                let error = #expect(throws: TraceError.self, "\(name) \(depth)") { _ = try reader.next() }
                #expect(error?.code == .syntax)
                #expect(error?.line == 2)
                #expect(error?.message.contains("nesting") == true)
                let extent = lineExtents(data)[1]
                #expect(error.map { $0.byteOffset! > extent.start && $0.byteOffset! < extent.end } == true)
                #expect(try reader.next() == .event(EventRecord(timeNs: 2, event: "after")))
            }
        }
    }

    @Test func deeplyNestedUnknownMemberIsAnErrorNotAStackOverflow() throws {
        let line = #"{"kind":"label","t_ns":1,"gesture":"g","junk":"# + String(repeating: "[", count: 100_000)
            + String(repeating: "]", count: 100_000) + "}"
        let reader = try TraceReader(bytes: document([line]))
        let error = #expect(throws: TraceError.self) { _ = try reader.next() }
        #expect(error?.code == .syntax)
        #expect(error?.line == 2)
    }

    @Test func nestingJustInsideTheLimitIsAccepted() throws {
        // data (depth 0) → "x" (depth 1) → ... innermost array at depth maxDepth - 1.
        let k = JSONScanner.maxDepth - 1
        let line = #"{"kind":"event","t_ns":1,"event":"e","data":{"x":"# + String(repeating: "[", count: k)
            + String(repeating: "]", count: k) + "}}"
        var value = JSONValue.array([])
        for _ in 1..<k { value = .array([value]) }
        #expect(try parseOne(line).get() == .event(EventRecord(timeNs: 1, event: "e", data: ["x": value])))
        // One more level is refused.
        let deeper = #"{"kind":"event","t_ns":1,"event":"e","data":{"x":"# + String(repeating: "[", count: k + 1)
            + String(repeating: "]", count: k + 1) + "}}"
        guard case .failure(let error) = parseOne(deeper) else { Issue.record("accepted depth \(k + 1)"); return }
        #expect(error.code == .syntax)
    }

    // MARK: Long lines

    /// A long line grows the read buffer; once it is read the buffer goes back to its size, so a
    /// merge of many inputs each holding one long line once does not keep them all (issue 24).
    @Test func theReadBufferShrinksAfterALongLine() throws {
        let dir = TempDirectory()
        let big = TraceRecord.event(EventRecord(timeNs: 5, event: "big", data: ["s": .string(String(repeating: "x", count: 200_000))]))
        var records = [big]
        for n in 0..<2_000 { records.append(.event(EventRecord(timeNs: 6 + Int64(n), event: "small"))) }
        let path = dir.write("long-then-short.jsonl", try TraceEncoder.document(header: Fixtures.header, records: records))
        let reader = try TraceReader(path: path, bufferBytes: 16 << 10)
        #expect(reader.readBufferBytes == 16 << 10)
        var read = 0, largest = 0
        while let _ = try reader.next() {
            read += 1
            largest = max(largest, reader.readBufferBytes)
        }
        #expect(read == records.count)
        #expect(largest >= 200_000, "the long line needed a bigger buffer")
        #expect(reader.readBufferBytes == 16 << 10, "and gave it back")
    }

    @Test func lineLongerThanTheReadBufferFromAFile() throws {
        let dir = TempDirectory()
        // A 3 MiB string (the reader's buffer starts at 1 MiB), with multi-byte
        // characters at the seams; escapes live in a second member.
        let chunk = "abcdefghijklmnopqrstuvwxyz0123456789-é😀"
        let big = String(repeating: chunk, count: (3 << 20) / chunk.utf8.count + 1)
        let event = TraceRecord.event(EventRecord(timeNs: 5, event: "big", data: [
            "s": .string(big), "esc": .string("\"\\\n\u{1}é"), "n": .integer(1)]))
        let payload = (0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let message = TraceRecord.message(MessageRecord(timeNs: 6, direction: .hostToController,
                                                        source: Endpoint(host: "::1", port: 1), destination: Endpoint(host: "::1", port: 2),
                                                        payload: payload))
        let records = [Fixtures.label(), event, Fixtures.message(), message, Fixtures.event()]
        let bad = #"{"kind":"label","t_ns":1,"gesture":"x","t_ms":1.5}"#
        let data = try TraceEncoder.document(header: Fixtures.header, records: records) + bytes(bad + "\n")
        let extents = lineExtents(data)
        #expect(extents[2].end - extents[2].start > 3 << 20)
        #expect(extents[4].end - extents[4].start > 1 << 20)
        let path = dir.write("long.jsonl", data)
        let reader = try TraceReader(path: path)
        let (got, error) = readUntilError(reader)
        #expect(got.count == records.count)
        if got.count == records.count {
            #expect(got[0] == records[0])
            if case .event(let e) = got[1] {
                #expect(e.data["s"]?.stringValue?.utf8.count == big.utf8.count)
                #expect(e.data["s"] == .string(big))
                #expect(e.data["esc"] == .string("\"\\\n\u{1}é"))
                #expect(e.data["n"] == .integer(1))
            } else {
                Issue.record("not the big event")
            }
            #expect(got[2] == records[2])
            if case .message(let m) = got[3] { #expect(m.payload == payload) } else { Issue.record("not the big message") }
            #expect(got[4] == records[4])
        }
        // The offset of an error after the long lines is still exact.
        #expect(error?.line == records.count + 2)
        #expect(error?.byteOffset == extents.last!.start + offset(of: "1.5", in: bytes(bad))!)
    }

    @Test func lineLongerThanTheLimitIsRejectedFromAFile() throws {
        let dir = TempDirectory()
        let prefix = try TraceEncoder.document(header: Fixtures.header, records: [Fixtures.label()])
        var data = prefix + bytes(#"{"kind":"event","t_ns":1,"event":""#)
        data += [UInt8](repeating: UInt8(ascii: "x"), count: TraceReader.maxLineBytes + 1024)
        data += bytes("\"}\n")
        let path = dir.write("too-long.jsonl", data)
        let reader = try TraceReader(path: path)
        #expect(try reader.next() == Fixtures.label())
        let error = #expect(throws: TraceError.self) { _ = try reader.next() }
        #expect(error?.code == .lineTooLong)
        #expect(error?.line == 3)
        #expect(error?.byteOffset == prefix.count)
    }
}
