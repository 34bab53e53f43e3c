import Foundation
import Testing
@testable import KinetraceTrace
import KinetraceJSON
import KinetraceTestSupport
import KinetraceWire

// The MCAP form of a trace (docs/guide/mcap.md): exact round trips, the index's
// seeks, an independent reader, and a file cut or mangled anywhere.

/// Every record of any source, to the end.
private func readAll(_ source: any TraceRecordSource) throws(TraceError) -> [TraceRecord] {
    var records: [TraceRecord] = []
    while let record = try source.next() { records.append(record) }
    return records
}

private func writeMCAP(_ path: String, header: TraceHeader, records: [TraceRecord], compression: TraceCompression = .none,
                       policy: TraceWriter.FlushPolicy = .default) throws(TraceError) {
    let writer = try MCAPTraceWriter(path: path, header: header, policy: policy, compression: compression)
    for record in records { try writer.write(record) }
    try writer.close()
}

/// A session of `count` frames from 40 controllers, 10 ms apart, with a label every 500.
private func session(_ count: Int) -> [TraceRecord] {
    let start: Int64 = 1_767_225_600_000_000_000
    return (0..<count).map { i in
        let t = start + Int64(i) * 10_000_000
        if i % 500 == 499 {
            return .label(LabelRecord(timeNs: t, controller: Endpoint(host: "10.0.0.\(i % 40 + 2)", port: 50000), gesture: "jump"))
        }
        let frame = MotionFrame(tMs: UInt64(t / 1_000_000), ax: 0.01, ay: Float(i % 17) / 10, az: -1)
        return .message(MessageRecord(timeNs: t, direction: .controllerToHost, source: Endpoint(host: "10.0.0.\(i % 40 + 2)", port: 50000),
                                      destination: Endpoint(host: "10.0.0.1", port: 47110), payload: frame.encoded()))
    }
}

@Suite struct MCAPRoundTripTests {
    @Test func randomRecordsRoundTripExactly() throws {
        let dir = TempDirectory()
        for seed in 1...40 {
            var rng = SplitMix64(seed: UInt64(seed))
            let header = RandomTrace.header(&rng)
            let records = (0..<rng.int(0...300)).map { _ in RandomTrace.record(&rng) }
            for compression in TraceCompression.allCases {
                let path = dir.file("random-\(seed)-\(compression).mcap")
                try writeMCAP(path, header: header, records: records, compression: compression)
                let reader = try MCAPTraceReader(path: path)
                #expect(reader.header == header, "seed \(seed)")
                let back = try readAll(reader)
                #expect(back == records, "seed \(seed), \(compression): \(back.count) of \(records.count) records back")
                #expect(reader.truncation == nil)
                #expect(reader.readingNote == nil)
            }
        }
    }

    /// Every bundled trace goes to MCAP and back to the same JSON Lines text, byte for byte.
    @Test(arguments: ["synthetic-session", "attitude-session", "loopback-session", "keepcalm-session", "phone/guided-jumps",
                      "gestures/weak", "gestures/strong", "gestures/steering", "gestures/steady", "gestures/walking",
                      "gestures/ducker", "gestures/tremor", "gestures/noisy"])
    func bundledTraceRoundTrips(name: String) throws {
        let path = Fixture.packageRoot.appendingPathComponent("captures/\(name).jsonl").path
        let reader = try TraceReader(path: path)
        let records = try readAll(reader)
        #expect(!records.isEmpty)
        let dir = TempDirectory()
        for compression in TraceCompression.allCases {
            let mcap = dir.file("bundled-\(compression).mcap")
            try writeMCAP(mcap, header: reader.header, records: records, compression: compression)
            let back = try MCAPTraceReader(path: mcap)
            let again = try readAll(back)
            #expect(again == records, "\(name): \(again.count) of \(records.count) records")
            let original = try TraceEncoder.document(header: reader.header, records: records)
            let rewritten = try TraceEncoder.document(header: back.header, records: again)
            #expect(original == rewritten, "\(name): the JSON Lines text differs after the MCAP round trip")
        }
    }

    /// The form follows the name, and MCAP input is found by its magic whatever its name.
    @Test func formsByNameAndMagic() throws {
        #expect(TraceOutput.form(forPath: "a/b.MCAP") == .mcap)
        #expect(TraceOutput.form(forPath: "a/b.jsonl") == .jsonLines)
        #expect(TraceOutput.form(forPath: "a/b.jsonl.gz") == .jsonLines)
        let dir = TempDirectory()
        let path = dir.file("named-oddly.trace")
        let sink = try TraceOutput.create(path: path, header: Fixtures.header, form: .mcap)
        for record in Fixtures.mixed { try sink.write(record) }
        try sink.close()
        #expect(try MCAPTraceReader.hasMagic(path: path))
        #expect(try readAll(MCAPTraceReader(path: path)) == Fixtures.mixed)
        #expect(throws: TraceError.self) { try TraceOutput.create(path: dir.file("x.jsonl"), header: Fixtures.header, compression: .zstd) }
    }
}

@Suite struct MCAPIndexTests {
    /// A window in the middle reads its chunks only, and the same records a JSON Lines read keeps.
    @Test func windowSeeksThroughTheChunkIndex() throws {
        let dir = TempDirectory()
        let records = session(120_000)
        let mcap = dir.file("session.mcap"), jsonl = dir.file("session.jsonl")
        try writeMCAP(mcap, header: Fixtures.header, records: records)
        let writer = try TraceWriter(path: jsonl, header: Fixtures.header)
        for record in records { try writer.write(record) }
        try writer.close()
        // 1,200 s of records; 30 s from the middle.
        let window = TraceWindow(startNs: 600_000_000_000, endNs: 630_000_000_000)
        let seeking = try MCAPTraceReader(path: mcap, window: window)
        let windowed = try readAll(seeking)
        let filtered = try readAll(WindowedRecordSource(try TraceReader(path: jsonl), window: window))
        #expect(windowed.count == 3_000)
        #expect(windowed == filtered)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: mcap)[.size] as? Int)
        let read = try #require(seeking.bytesRead?.file)
        #expect(read * 10 < size, "read \(read) of \(size) bytes for a 2.5 % window")
        #expect(seeking.chunksRead < (seeking.chunkCount ?? 0) / 5, "\(seeking.chunksRead) of \(String(describing: seeking.chunkCount)) chunks")
        // A window at the file's end, and one past it.
        let tail = try readAll(MCAPTraceReader(path: mcap, window: TraceWindow(startNs: 1_199_000_000_000)))
        #expect(tail == Array(records.suffix(100)))
        // Never an empty success: a window past the end says how far the records reach, in both forms.
        let past = TraceWindow(startNs: 5_000_000_000_000)
        for source in [try MCAPTraceReader(path: mcap, window: past) as any TraceRecordSource,
                       WindowedRecordSource(try TraceReader(path: jsonl), window: past)] {
            let error = #expect(throws: TraceError.self) { _ = try readAll(source) }
            #expect(error?.code == .emptyWindow)
            #expect(error?.message.contains("reach 1199.990 s after its first record") == true, "\(String(describing: error))")
        }
    }

    /// The Python `mcap` package (with mcap_ros1 to decode) reads every record, validates the CRCs,
    /// and finds the fields the layout promises: viewers need no Kinetrace code.
    @Test(.enabled(if: Requirement.python("mcap", "mcap_ros1").runs, "needs python3 with mcap and mcap_ros1; with CI set this fails instead"))
    func independentReaderReadsEveryRecord() throws {
        try Requirement.python("mcap", "mcap_ros1").check()
        let source = Fixture.packageRoot.appendingPathComponent("captures/synthetic-session.jsonl").path
        let reader = try TraceReader(path: source)
        let records = try readAll(reader)
        let dir = TempDirectory()
        for compression in TraceCompression.allCases {
            let mcap = dir.file("independent-\(compression).mcap")
            try writeMCAP(mcap, header: reader.header, records: records, compression: compression)
            let script = Fixture.packageRoot.appendingPathComponent("Tests/Scripts/mcap_read.py").path
            let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, mcap], timeout: 120)
            #expect(result.status == 0, "\(result.stderr)")
            guard case .success(.object(let report)) = JSONValue.parse(Array(result.stdout.utf8)) else {
                Issue.record("not a JSON object: \(result.stdout.prefix(200))")
                continue
            }
            #expect(report["profile"] == .string("kinetrace"))
            #expect(report["message_count"]?.integerValue == Int64(records.count))
            guard case .object(let topics)? = report["topics"] else { Issue.record("no topics"); continue }
            let counted = topics.values.reduce(Int64(0)) { $0 + ($1.objectValue?["count"]?.integerValue ?? 0) }
            #expect(counted == Int64(records.count), "the independent reader found \(counted) of \(records.count) records")
            let frames = records.filter { if case .message(let m) = $0 { return m.payload.count == MotionFrame.size } else { return false } }
            #expect(topics["/msg/frame"]?.objectValue?["count"]?.integerValue == Int64(frames.count))
            // The first frame's decoded ay, as Python decoded it, is the codec's.
            guard case .message(let first)? = frames.first, case .success(.frame(let frame)) = first.decoded(as: MotionLinkV1()),
                  case .object(let fields)? = topics["/msg/frame"]?.objectValue?["first"] else {
                Issue.record("no decoded frame")
                continue
            }
            #expect(fields["ay"]?.doubleValue == Double(frame.ay))
            #expect(fields["valid"] == .bool(true))
            #expect(fields["src"] == .string(first.source.description))
            #expect(fields["direction"]?.integerValue == 0)
            guard case .object(let metadata)? = report["metadata"], case .object(let headerMap)? = metadata["kinetrace-trace-header"],
                  case .string(let headerText)? = headerMap["header"] else {
                Issue.record("no header metadata")
                continue
            }
            #expect(headerText + "\n" == String(decoding: TraceEncoder.line(for: reader.header), as: UTF8.self))
        }
    }
}

@Suite struct MCAPHostileInputTests {
    private func small(_ dir: TempDirectory, policy: TraceWriter.FlushPolicy = .everyRecord) throws -> (path: String, bytes: [UInt8], records: [TraceRecord]) {
        let path = dir.file("small.mcap")
        let records = Fixtures.mixed + session(30)
        try writeMCAP(path, header: Fixtures.header, records: records, policy: policy)
        return (path, dir.contents("small.mcap"), records)
    }

    /// A writer killed anywhere: every cut reads a prefix of the records, and says it was cut.
    @Test func cutAnywhereReadsAPrefix() throws {
        let dir = TempDirectory()
        let (_, bytes, records) = try small(dir)
        var cutsWithRecords = 0, cuts = 0
        // Every cut through the head and first records, then every 7th byte (the rest repeats the same shapes).
        for length in Array(0..<min(bytes.count, 1_500)) + Array(stride(from: 1_500, to: bytes.count, by: 7)) {
            cuts += 1
            let path = dir.write("cut.mcap", Array(bytes.prefix(length)))
            do throws(TraceError) {
                let reader = try MCAPTraceReader(path: path)
                let back = try readAll(reader)
                #expect(Array(records.prefix(back.count)) == back, "cut at \(length)")
                if back.count < records.count { #expect(reader.truncation != nil, "cut at \(length): \(back.count) records and no truncation") }
                if !back.isEmpty { cutsWithRecords += 1 }
            } catch {
                #expect(!error.description.contains("\n"))
                // Only a cut before the first record (inside the head, header or first chunk's definitions) may fail.
                #expect(error.code == .badHeader || error.code == .badRecord || error.code == .io, "cut at \(length): \(error)")
            }
        }
        #expect(cutsWithRecords > cuts / 2, "\(cutsWithRecords) of \(cuts) cuts read any record")
    }

    /// Flipped bytes anywhere: records or a one-line error with a byte offset inside the file, never a trap.
    @Test func mangledBytesFailCleanly() throws {
        let dir = TempDirectory()
        let (_, bytes, _) = try small(dir, policy: .default)
        var rng = SplitMix64(seed: 30)
        var errors = 0
        for round in 0..<3_000 {
            var mangled = bytes
            for _ in 0..<rng.int(1...4) {
                let at = rng.int(0...(mangled.count - 1))
                mangled[at] = rng.chance(50) ? UInt8.random(in: 0...255, using: &rng) : [0x00, 0xFF, 0x7F, 0x80][rng.int(0...3)]
            }
            let path = dir.write("mangled.mcap", mangled)
            do throws(TraceError) {
                _ = try readAll(try MCAPTraceReader(path: path))
            } catch {
                errors += 1
                #expect(!error.description.contains("\n"), "round \(round): \(error)")
                if let offset = error.byteOffset { #expect((0..<mangled.count).contains(offset), "round \(round): \(error)") }
            }
        }
        #expect(errors > 100, "only \(errors) of 3,000 mangled files were refused")
    }

    @Test func namedFailures() throws {
        let dir = TempDirectory()
        let (_, bytes, _) = try small(dir, policy: .default)
        func failure(_ data: [UInt8]) -> TraceError? {
            let p = dir.write("bad.mcap", data)
            do throws(TraceError) { _ = try readAll(try MCAPTraceReader(path: p)); return nil } catch { return error }
        }
        // Another tool's MCAP file.
        var foreign = bytes
        let profile = try #require(offset(of: "kinetrace", in: bytes))
        foreign[profile] = UInt8(ascii: "K")
        #expect(failure(foreign)?.message.contains("not a kinetrace trace") == true)
        // A chunk whose records' CRC does not match.
        var damaged = bytes
        let frameAt = try #require(offset(of: "10.0.0.1:47110", in: bytes, from: 400))
        damaged[frameAt] ^= 0x01
        let crcFailure = failure(damaged)
        #expect(crcFailure?.message.contains("CRC-32") == true, "\(String(describing: crcFailure))")
        // A summary's chunk index that names bytes past the end.
        var lying = bytes
        let footer = bytes.count - 37
        let summaryStart = Int(bytes[(footer + 9)..<(footer + 17)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        #expect(summaryStart > 0 && summaryStart < footer)
        lying[footer + 25] ^= 0xFF  // the summary CRC
        #expect(failure(lying)?.message.contains("summary") == true)
        // An empty file and a bare magic.
        #expect(failure([]) != nil)
        #expect(failure(MCAP.magic)?.message.contains("ends before its header") == true)
    }

    /// A chunk index that names one chunk twice would read its records twice: refused, named.
    @Test func anIndexThatRepeatsAChunkIsRefused() throws {
        let dir = TempDirectory()
        let (_, bytes, _) = try small(dir)  // a chunk per record
        let footer = bytes.count - 37
        let summaryStart = Int(bytes[(footer + 9)..<(footer + 17)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        var edited = bytes
        var at = summaryStart, chunkIndexes: [Int] = []
        while at < footer, edited[at] != MCAP.Opcode.footer.rawValue {
            let length = Int(edited[(at + 1)..<(at + 9)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            if edited[at] == MCAP.Opcode.chunkIndex.rawValue { chunkIndexes.append(at + 9) }
            at += 9 + length
        }
        #expect(chunkIndexes.count > 2)
        // The second entry's chunk_start_offset (after two u64 times) := the first's.
        for i in 0..<8 { edited[chunkIndexes[1] + 16 + i] = edited[chunkIndexes[0] + 16 + i] }
        for i in 0..<4 { edited[footer + 25 + i] = 0 }  // no summary CRC, so the edit reads
        let path = dir.write("repeated.mcap", edited)
        for window in [nil, TraceWindow(startNs: 1)] {
            let error = #expect(throws: TraceError.self) { _ = try MCAPTraceReader(path: path, window: window) }
            #expect(error?.message.contains("overlap") == true, "\(String(describing: error))")
        }
    }

    /// A channel without kinetrace's record kind (another tool's topic) is skipped and counted, not an error.
    @Test func foreignChannelIsSkipped() throws {
        let dir = TempDirectory()
        let (_, bytes, records) = try small(dir, policy: .default)
        // Rename the record-kind key of every channel that carries labels: their messages become foreign.
        var edited = bytes
        var from = 0
        var renamed = 0
        while let at = offset(of: "kinetrace_record", in: edited, from: from) {
            // The value follows: u32 length then "label".
            let value = at + "kinetrace_record".utf8.count + 4
            if Array(edited[value..<(value + 5)]) == Array("label".utf8) {
                edited[at] = UInt8(ascii: "K")
                renamed += 1
            }
            from = at + 1
        }
        #expect(renamed >= 1)
        // The summary CRC covers a renamed channel: zero it (no CRC) so the edit reads.
        let footer = edited.count - 37
        for i in 0..<4 { edited[footer + 25 + i] = 0 }
        let reader = try MCAPTraceReader(path: dir.write("foreign.mcap", edited))
        let back = try readAll(reader)
        let labels = records.filter { if case .label = $0 { return true } else { return false } }
        #expect(back.count == records.count - labels.count)
        #expect(reader.unknownRecordCount == labels.count)
    }
}
