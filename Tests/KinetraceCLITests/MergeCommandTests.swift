import Foundation
import KinetraceJSON
import KinetraceTestSupport
import KinetraceTrace
import Testing

/// `kinetrace merge RECORD... -w OUT`: shard records into one trace in time order.
@Suite struct MergeCommandTests {
    /// A trace header line with the given members.
    static func header(protocol name: String = "motionlink-v1", capturePoint: String = "controller", clock: String = "realtime",
                       tool: String = "kinetrace replay", notes: String = "", extra: String = "") -> String {
        #"{"format":"kinetrace-trace","version":1,"minor":1,"created":"2026-05-01T10:00:00.000Z","tool":"\#(tool)","profile":"\#(name)","capture_point":"\#(capturePoint)","clock":"\#(clock)","notes":"\#(notes)"\#(extra)}"#
    }

    /// An event record line: `name` identifies it in the merged output.
    static func event(_ timeNs: Int64, _ name: String) -> String {
        #"{"kind":"event","t_ns":\#(timeNs),"event":"\#(name)","data":{}}"#
    }

    /// Writes a trace of `lines` after `header` and returns its path.
    static func write(_ dir: URL, _ name: String, header: String = header(), _ lines: [String], newline: Bool = true) throws -> String {
        let url = dir.appendingPathComponent(name)
        let text = ([header] + lines).joined(separator: "\n") + (newline ? "\n" : "")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static func readAll(_ path: String) throws -> (header: TraceHeader, records: [TraceRecord]) {
        let reader = try TraceReader(path: path)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(reader.truncation == nil, "\(path)")
        return (reader.header, records)
    }

    static func eventNames(_ records: [TraceRecord]) -> [String] {
        records.map { if case .event(let e) = $0 { return e.event } else { return "?" } }
    }

    static let ms: Int64 = 1_000_000
    static let base: Int64 = 1_777_777_777_000_000_000

    // MARK: Order

    /// Three shards interleave; equal times go by input position, then by position in the file.
    @Test func threeShardsInterleaveIntoTimeOrderWithStableTies() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let b = Self.base, ms = Self.ms
        let a = try Self.write(dir, "a.jsonl", header: Self.header(notes: "shard 1/3", extra: #","seed":7,"site":"hall 1""#),
                               [Self.event(b + 1 * ms, "a1"), Self.event(b + 3 * ms, "a3"), Self.event(b + 5 * ms, "a5"), Self.event(b + 5 * ms, "a5'")])
        let bb = try Self.write(dir, "b.jsonl", header: Self.header(notes: "shard 2/3"),
                                [Self.event(b + 2 * ms, "b2"), Self.event(b + 3 * ms, "b3"), Self.event(b + 5 * ms, "b5")])
        let c = try Self.write(dir, "c.jsonl", header: Self.header(tool: "kinetrace replay 2", notes: "shard 3/3"),
                               [Self.event(b + 3 * ms, "c3"), Self.event(b + 3 * ms, "c3'"), Self.event(b + 4 * ms, "c4")])
        let out = dir.appendingPathComponent("merged.jsonl").path
        let result = try kinetrace(["merge", a, bb, c, "-w", out])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        #expect(result.stdout.contains("Written    10 records from 3 files"), "\(result.stdout)")
        let merged = try Self.readAll(out)
        #expect(Self.eventNames(merged.records) == ["a1", "b2", "a3", "b3", "c3", "c3'", "c4", "a5", "a5'", "b5"])

        // The header: the common facts, and every input's header under "shards".
        #expect(merged.header.tool == "kinetrace merge")
        #expect(merged.header.notes.contains("10 records") && merged.header.notes.contains("3 files"), "\(merged.header.notes)")
        #expect(merged.header.protocolID.name == "motionlink-v1" && merged.header.capturePoint == .controller && merged.header.clock == .realtime)
        let shards = try #require(merged.header.extra["shards"].flatMap { if case .array(let a) = $0 { a } else { nil } })
        #expect(shards.count == 3)
        let objects = shards.compactMap(\.objectValue)
        #expect(objects.map { $0["path"]?.stringValue } == [a, bb, c])
        #expect(objects.map { $0["notes"]?.stringValue } == ["shard 1/3", "shard 2/3", "shard 3/3"])
        #expect(objects.map { $0["tool"]?.stringValue } == ["kinetrace replay", "kinetrace replay", "kinetrace replay 2"])
        #expect(objects.allSatisfy {
            $0["created"]?.stringValue == "2026-05-01T10:00:00.000Z" && $0["capture_point"]?.stringValue == "controller"
                && $0["clock"]?.stringValue == "realtime" && $0["profile"]?.stringValue == "motionlink-v1"
        })
        #expect(objects.map { $0["records"]?.integerValue } == [4, 3, 3])
        let firstExtra = try #require(objects.first?["extra"]?.objectValue)
        #expect(firstExtra["seed"]?.integerValue == 7 && firstExtra["site"]?.stringValue == "hall 1", "\(firstExtra)")
        #expect(objects.dropFirst().allSatisfy { $0["extra"]?.objectValue?.isEmpty == true })
    }

    /// Reordering within the window is put right, and the summary says how much there was.
    @Test func reorderingWithinTheWindowIsFixed() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let b = Self.base, ms = Self.ms
        // Acks written in batches: 12 ms before 10 ms, 30 before 27 (3 ms late).
        let a = try Self.write(dir, "a.jsonl", [Self.event(b, "0"), Self.event(b + 12 * ms, "12"), Self.event(b + 10 * ms, "10"),
                                                Self.event(b + 30 * ms, "30"), Self.event(b + 27 * ms, "27"), Self.event(b + 40 * ms, "40")])
        let c = try Self.write(dir, "c.jsonl", [Self.event(b + 11 * ms, "c11"), Self.event(b + 28 * ms, "c28")])
        let out = dir.appendingPathComponent("merged.jsonl").path
        let result = try kinetrace(["merge", a, c, "-w", out, "--window", "0.005"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.eventNames(try Self.readAll(out).records) == ["0", "10", "c11", "12", "27", "c28", "30", "40"])
        #expect(result.stdout.contains("Reordered  up to 3.000 ms in \(a), within the 5.000 ms window"), "\(result.stdout)")
        let json = try kinetrace(["merge", a, c, "-w", out, "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(summary["records_written"] as? Int == 8 && summary["largest_reorder_ns"] as? Int == 3_000_000, "\(summary)")
        let inputs = try #require(summary["inputs"] as? [[String: Any]])
        #expect(inputs.map { $0["records"] as? Int } == [6, 2])
        #expect(inputs.first?["largest_reorder_line"] as? Int == 6, "line 6 holds the 27 ms record: \(inputs)")
        #expect(summary["first_t_ns"] as? Int == Int(b) && summary["last_t_ns"] as? Int == Int(b + 40 * ms))
    }

    /// Further out of order than the window: exit 65 naming the file, the line and how far.
    @Test func reorderingBeyondTheWindowIsADataError() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let b = Self.base, ms = Self.ms
        let good = try Self.write(dir, "good.jsonl", [Self.event(b, "g")])
        let bad = try Self.write(dir, "bad.jsonl", [Self.event(b, "0"), Self.event(b + 2000 * ms, "2000"), Self.event(b + 500 * ms, "500")])
        let out = dir.appendingPathComponent("merged.jsonl").path
        let result = try kinetrace(["merge", good, bad, "-w", out])
        #expect(result.status == 65, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(result.stderr)")
        #expect(result.stderr.contains("\(bad): line 4: record 3") && result.stderr.contains("1.500 s out of time order")
                && result.stderr.contains("1.000 s reorder window") && result.stderr.contains("--window"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out), "a refused merge writes nothing")
        // A wider window takes it.
        let wider = try kinetrace(["merge", good, bad, "-w", out, "--window", "2"])
        #expect(wider.status == 0, "\(wider.stderr)")
        #expect(Self.eventNames(try Self.readAll(out).records) == ["g", "0", "500", "2000"])
    }

    // MARK: Refusals

    @Test func differentProtocolsAreRefused() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let a = try Self.write(dir, "a.jsonl", [Self.event(Self.base, "a")])
        let k = try Self.write(dir, "k.jsonl", header: Self.header(protocol: "keepcalm-json"), [Self.event(Self.base, "k")])
        let out = dir.appendingPathComponent("merged.jsonl").path
        let result = try kinetrace(["merge", a, k, "-w", out])
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(a) && result.stderr.contains(k) && result.stderr.contains("\"keepcalm-json\"")
                && result.stderr.contains("\"motionlink-v1\""), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // A different clock has no common order either.
        let p = try Self.write(dir, "p.jsonl", header: Self.header(clock: "pcap"), [Self.event(Self.base, "p")])
        let clocks = try kinetrace(["merge", a, p, "-w", out])
        #expect(clocks.status == 65 && clocks.stderr.contains("\"pcap\"") && clocks.stderr.contains(a), "\(clocks.stderr)")
    }

    @Test func aMissingInputIs66AndNamesIt() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let a = try Self.write(dir, "a.jsonl", [Self.event(Self.base, "a")])
        let missing = dir.appendingPathComponent("missing.jsonl").path
        let result = try kinetrace(["merge", a, missing, "-w", dir.appendingPathComponent("out.jsonl").path])
        #expect(result.status == 66, "\(result.stderr)")
        #expect(result.stderr.contains(missing), "\(result.stderr)")
    }

    @Test func noInputsIsAUsageError() throws {
        let result = try kinetrace(["merge", "-w", "/tmp/kinetrace-merge-never.jsonl"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/kinetrace-merge-never.jsonl"))
        #expect(try kinetrace(["merge", Fixture.bundledTrace]).status == 64, "-w is required")
    }

    @Test(arguments: ["0", "0.0009", "3601", "nan", "inf", "-1", "1e309"])
    func aWindowOutOfRangeIsAUsageError(_ window: String) throws {
        let result = try kinetrace(["merge", Fixture.bundledTrace, "-w", "/tmp/kinetrace-merge-never.jsonl", "--window", window])
        #expect(result.status == 64, "\(window): \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/kinetrace-merge-never.jsonl"))
    }

    /// One empty input is a warning; all of them empty is one line and exit 65, with nothing written.
    @Test func emptyInputsWarnAndAllEmptyIsAnError() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let a = try Self.write(dir, "a.jsonl", [Self.event(Self.base, "a")])
        let e1 = try Self.write(dir, "e1.jsonl", []), e2 = try Self.write(dir, "e2.jsonl", [])
        let out = dir.appendingPathComponent("merged.jsonl").path
        let some = try kinetrace(["merge", a, e1, "-w", out])
        #expect(some.status == 0, "\(some.stderr)")
        #expect(some.stderr == "kinetrace: warning: \(e1) holds no records\n", "\(some.stderr)")
        #expect(Self.eventNames(try Self.readAll(out).records) == ["a"])
        try FileManager.default.removeItem(atPath: out)
        let none = try kinetrace(["merge", e1, e2, "-w", out])
        #expect(none.status == 65, "\(none.stderr)")
        let errors = none.stderr.split(separator: "\n").filter { $0.hasPrefix("kinetrace: error:") }
        #expect(errors.count == 1 && errors[0].contains("nothing to merge") && errors[0].contains("none of the 2 inputs holds a record"),
                "\(none.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// Issue 24, finding 14a: one input without records says so ("holds no record", not "holds a
    /// record"), one line, exit 65 like every command that reads nothing; so does an input whose
    /// only record is cut, or whose records are all of kinds this kinetrace does not know.
    @Test func aSingleInputWithNoRecordsSaysSoAndExits65() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("merged.jsonl").path
        let inputs = [
            try Self.write(dir, "empty.jsonl", []),
            try Self.write(dir, "cut.jsonl", [#"{"kind":"event","t_ns":1"#], newline: false),
            try Self.write(dir, "unknown.jsonl", [#"{"kind":"future","t_ns":1}"#]),
        ]
        for input in inputs {
            let result = try kinetrace(["merge", input, "-w", out])
            #expect(result.status == 65, "\(input): \(result.stderr)")
            let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("kinetrace: error:") }
            #expect(errors.count == 1 && errors[0].contains("nothing to merge: the input holds no record; \(out) not written"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    /// Issue 24, finding 9: --max-waiting bounds the records waiting in all inputs together. Each
    /// of three inputs fits it alone; together they pass it: one line naming the input and line,
    /// exit 65, nothing written.
    @Test func theWaitingRecordsOfAllInputsTogetherAreBounded() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let inputs = try ["a", "b", "c"].map { name in
            try Self.write(dir, "\(name).jsonl", (0..<6).map { Self.event(Self.base, "\(name)\($0)") } + [Self.event(Self.base + 2_000 * Self.ms, "\(name)-late")])
        }
        let out = dir.appendingPathComponent("merged.jsonl").path
        for input in inputs {
            let alone = try kinetrace(["merge", input, "-w", out, "--max-waiting", "10"])
            #expect(alone.status == 0, "\(alone.stderr)")
            try FileManager.default.removeItem(atPath: out)
        }
        let together = try kinetrace(["merge"] + inputs + ["-w", out, "--max-waiting", "10"])
        #expect(together.status == 65, "\(together.stderr)")
        #expect(together.stderr.split(separator: "\n").count == 1, "one line: \(together.stderr)")
        #expect(together.stderr.contains("\(inputs[1]): line 6: more than 10 records wait") && together.stderr.contains("3 inputs together"),
                "\(together.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        for bad in ["0", "-1", "16777217", "many"] {
            #expect(try kinetrace(["merge"] + inputs + ["-w", out, "--max-waiting", bad]).status == 64, "--max-waiting \(bad)")
        }
    }

    /// The output may not be one of the inputs, however it is spelled; nor may an input come twice.
    @Test func writingOverAnInputIsRefused() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let a = try Self.write(dir, "a.jsonl", [Self.event(Self.base, "a")])
        let c = try Self.write(dir, "c.jsonl", [Self.event(Self.base, "c")])
        let before = try Data(contentsOf: URL(fileURLWithPath: c))
        for output in [c, dir.appendingPathComponent("./c.jsonl").path, dir.path + "/../" + dir.lastPathComponent + "/c.jsonl"] {
            let result = try kinetrace(["merge", a, c, "-w", output])
            #expect(result.status == 64, "\(output): \(result.stderr)")
            #expect(result.stderr.contains("writing would destroy it"), "\(result.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: c)) == before)
        let twice = try kinetrace(["merge", a, a, "-w", dir.appendingPathComponent("out.jsonl").path])
        #expect(twice.status == 64 && twice.stderr.contains("given twice"), "\(twice.stderr)")
    }

    /// Inputs are read twice (to check, then to write): a FIFO or `-` is read once into a private copy
    /// and merged like a file (issue 24, finding 10: it was refused).
    @Test func aPipeInputIsMergedLikeAFile() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let a = try Self.write(dir, "a.jsonl", [Self.event(Self.base, "a"), Self.event(Self.base + 2, "a2")])
        let b = try Self.write(dir, "b.jsonl", [Self.event(Self.base + 1, "b")])
        let fifo = dir.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = try Background(URL(fileURLWithPath: "/bin/sh"), ["-c", "cat \"$0\" > \"$1\"", b, fifo])
        let viaFIFO = dir.appendingPathComponent("fifo-out.jsonl").path
        let result = try kinetrace(["merge", a, fifo, "-w", viaFIFO])
        #expect(try writer.wait(timeout: 10).status == 0)
        #expect(result.status == 0, "\(result.stderr)")
        let viaStdin = dir.appendingPathComponent("stdin-out.jsonl").path
        let piped = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "cat \"$2\" | \"$0\" merge \"$1\" - -w \"$3\"", try Fixture.binary.path, a, b, viaStdin])
        #expect(piped.status == 0, "\(piped.stderr)")
        let direct = dir.appendingPathComponent("direct-out.jsonl").path
        #expect(try kinetrace(["merge", a, b, "-w", direct]).status == 0)
        // The same records in the same order (the headers' shard notes name the inputs).
        func records(_ path: String) throws -> [Substring] { try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").dropFirst().map { $0 } }
        #expect(try records(viaFIFO) == records(direct) && records(viaStdin) == records(direct) && records(direct).count == 3)
    }

    /// A truncated input is a warning naming the file and line, and the merge goes on.
    @Test func aTruncatedInputIsAWarning() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let a = try Self.write(dir, "a.jsonl", [Self.event(Self.base, "a")])
        let cut = try Self.write(dir, "cut.jsonl", [Self.event(Self.base + 1, "c1"), #"{"kind":"event","t_ns":17777"#], newline: false)
        let out = dir.appendingPathComponent("merged.jsonl").path
        let result = try kinetrace(["merge", a, cut, "-w", out])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning: \(cut): truncated at line 3"), "\(result.stderr)")
        #expect(Self.eventNames(try Self.readAll(out).records) == ["a", "c1"])
    }

    /// An output that cannot be created is 73, as for every writer.
    @Test func anUncreatableOutputIs73() throws {
        let result = try kinetrace(["merge", Fixture.bundledTrace, "-w", "/nonexistent-dir/merged.jsonl"])
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("/nonexistent-dir/merged.jsonl"), "\(result.stderr)")
    }

    /// A write that fails is 74, and a device written to is not removed as a half-written output.
    @Test func aFailedWriteIs74AndLeavesADeviceAlone() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let result = try kinetrace(["merge", Fixture.bundledTrace, "-w", "/dev/full"])
        #expect(result.status == 74, "\(result.stderr)")
        #expect(result.stderr.contains("/dev/full"), "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: "/dev/full"))
    }

    // MARK: Output

    /// `-w OUT.gz` writes gzip, which reads back to the same records as the plain merge.
    @Test func aGzipOutputRoundTrips() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let parts = try Self.splitByController(Fixture.bundledTrace, into: dir)
        let plain = dir.appendingPathComponent("merged.jsonl").path, gz = dir.appendingPathComponent("merged.jsonl.gz").path
        #expect(try kinetrace(["merge"] + parts + ["-w", plain]).status == 0)
        let result = try kinetrace(["merge"] + parts + ["-w", gz])
        #expect(result.status == 0, "\(result.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: gz))
        #expect(bytes.prefix(2) == Data([0x1F, 0x8B]), "gzip magic")
        let (plainHeader, plainRecords) = try Self.readAll(plain)
        let (gzHeader, gzRecords) = try Self.readAll(gz)
        #expect(gzRecords == plainRecords && gzRecords.count > 1000)
        #expect(gzHeader.extra["shards"] == plainHeader.extra["shards"])
    }

    /// One trace merged alone gives back its records unchanged.
    @Test(arguments: ["loopback-session.jsonl", "synthetic-session.jsonl", "attitude-session.jsonl"])
    func oneTraceMergesToItself(_ name: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let input = Fixture.packageRoot.appendingPathComponent("captures/\(name)").path
        let out = dir.appendingPathComponent("merged.jsonl").path
        let result = try kinetrace(["merge", input, "-w", out])
        #expect(result.status == 0, "\(result.stderr)")
        let original = try Self.readAll(input), merged = try Self.readAll(out)
        #expect(merged.records == original.records)
        #expect(merged.header.protocolID == original.header.protocolID && merged.header.clock == original.header.clock)
    }

    // MARK: Property: split and merge back

    /// Splits a trace into one file per controller (records with none go to the first
    /// file), each file's header the original's; returns the paths.
    static func splitByController(_ path: String, into dir: URL, prefix: String = "part", shuffleWithinNs: Int64 = 0, seed: UInt64 = 1) throws -> [String] {
        let (header, records) = try readAll(path)
        var keys: [String] = [""]
        var parts: [[TraceRecord]] = [[]]
        for record in records {
            let key: String
            switch record {
            case .message(let m): key = "\(m.controller)"
            case .label(let l): key = l.controller.map { "\($0)" } ?? ""
            case .motion(let m): key = "\(m.controller)"
            case .event: key = ""
            }
            if let index = keys.firstIndex(of: key) {
                parts[index].append(record)
            } else {
                keys.append(key)
                parts.append([record])
            }
        }
        // Batched writes: neighbours a little apart in time swapped (never equal times, whose order is the file's).
        var generator = SplitMix64(seed: seed)
        if shuffleWithinNs > 0 {
            for p in parts.indices {
                var i = 0
                while i + 1 < parts[p].count {
                    let gap = parts[p][i + 1].timeNs - parts[p][i].timeNs
                    if gap > 0, gap <= shuffleWithinNs, generator.next() % 2 == 0 {
                        parts[p].swapAt(i, i + 1)
                        i += 2
                    } else {
                        i += 1
                    }
                }
            }
        }
        return try parts.enumerated().map { index, records in
            let url = dir.appendingPathComponent("\(prefix)\(index).jsonl")
            try Data(TraceEncoder.document(header: header, records: records)).write(to: url)
            return url.path
        }
    }

    /// Split by controller and merged back: the same records, in time order, equal times by
    /// input then file position; with neighbours swapped within the window, the same again.
    @Test(arguments: ["synthetic-session.jsonl", "loopback-session.jsonl", "attitude-session.jsonl"])
    func splitByControllerAndMergedBackIsTheOriginalInTimeOrder(_ name: String) throws {
        let input = Fixture.packageRoot.appendingPathComponent("captures/\(name)").path
        let original = try Self.readAll(input).records
        for (shuffle, seed) in [(Int64(0), UInt64(1)), (200 * Self.ms, 2), (200 * Self.ms, 3)] {
            let dir = try Fixture.temporaryDirectory()
            defer { Fixture.remove(dir) }
            let parts = try Self.splitByController(input, into: dir, shuffleWithinNs: shuffle, seed: seed)
            #expect(parts.count >= 3, "\(name): \(parts.count) parts")
            let out = dir.appendingPathComponent("merged.jsonl").path
            let result = try kinetrace(["merge"] + parts + ["-w", out, "--window", "0.25"])
            #expect(result.status == 0, "\(name): \(result.stderr)")
            let merged = try Self.readAll(out).records
            // What the merge promises, computed from the unshuffled parts: time, then input, then file position.
            let unshuffled = try Self.splitByController(input, into: dir, prefix: "plain").map { try Self.readAll($0).records }
            let expected = unshuffled.enumerated()
                .flatMap { part, records in records.enumerated().map { (record: $1, part: part, position: $0) } }
                .sorted { ($0.record.timeNs, $0.part, $0.position) < ($1.record.timeNs, $1.part, $1.position) }
                .map(\.record)
            #expect(merged == expected, "\(name), shuffled within \(shuffle) ns: \(merged.count) vs \(expected.count)")
            #expect(Dictionary(merged.map { ($0, 1) }, uniquingKeysWith: +) == Dictionary(original.map { ($0, 1) }, uniquingKeysWith: +),
                    "\(name): the same multiset of records")
            #expect(zip(merged, merged.dropFirst()).allSatisfy { $0.timeNs <= $1.timeNs })
            // The original is in time order; a stable sort of it equals the merge wherever no tie crosses parts.
            #expect(merged.map(\.timeNs) == original.map(\.timeNs).sorted())
        }
    }
}
