import Foundation
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// Exit statuses and flags that had no test: each is checked for its documented
/// effect on the built `kinetrace`, with real processes (the stdio reference host
/// behind `--exec`), real files and a real signal.
@Suite struct ExitStatusAndFlagEffectTests {
    static let session = Fixture.bundledTrace

    /// The report: the whole output, or its last line when progress lines precede it.
    func json(_ text: String) throws -> [String: Any] {
        if let whole = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] { return whole }
        let line = try #require(text.split(separator: "\n").last, "no output")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(text)")
    }

    /// `replay` to the stdio reference host, which answers at once.
    func replay(_ extra: [String]) throws -> RunResult {
        let binary = try Fixture.binary.path
        return try kinetrace(["replay", Self.session, "--exec", "exec '\(binary)' host --stdio", "--format", "json"] + extra, timeout: 120)
    }

    /// Messages of a trace in file order.
    func messages(_ path: String) throws -> [MessageRecord] {
        let reader = try TraceReader(path: path)
        var out: [MessageRecord] = []
        while let record = try reader.next() { if case .message(let m) = record { out.append(m) } }
        return out
    }

    func events(_ path: String, named name: String) throws -> [EventRecord] {
        let reader = try TraceReader(path: path)
        var out: [EventRecord] = []
        while let record = try reader.next() { if case .event(let e) = record, e.event == name { out.append(e) } }
        return out
    }

    func expectOneLineError(_ result: RunResult, status: Int32, naming path: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == status && !result.signalled, "\(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("kinetrace: error: ") }
        #expect(errors.count == 1 && errors[0].contains(path), "\(result.stderr)", sourceLocation: sourceLocation)
    }

    // MARK: 73, 74

    /// A path under a regular file cannot be created, even by root (CI runs as root, so a
    /// read-only directory would prove nothing).
    @Test func outputsThatCannotBeCreatedExit73() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        func under(_ name: String) -> String { file.appendingPathComponent(name).path }

        expectOneLineError(try replay(["--end", "2", "--speed", "20", "--record", under("r.jsonl")]), status: 73, naming: under("r.jsonl"))
        expectOneLineError(try kinetrace("host", "--port", "0", "--trace", under("h.jsonl")), status: 73, naming: under("h.jsonl"))
        expectOneLineError(try kinetrace("inspect", Self.session, "--out", under("i.txt")), status: 73, naming: under("i.txt"))
        expectOneLineError(try kinetrace("latency", Self.session, "--out", under("l.txt")), status: 73, naming: under("l.txt"))
        expectOneLineError(try kinetrace("latency", Self.session, "--plot", under("l.svg")), status: 73, naming: under("l.svg"))
        expectOneLineError(try kinetrace("conform", "--capture", Self.session, "--out", under("c.txt")), status: 73, naming: under("c.txt"))
        expectOneLineError(try kinetrace("synth", "--out", under("s.jsonl"), "--duration", "1"), status: 73, naming: under("s.jsonl"))
        // Nothing was created beside the file.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["a-file"])
    }

    /// /dev/full takes the open and fails every write (ENOSPC): an I/O error, 74, and the device is still a device.
    @Test func writesThatFailExit74() throws {
        var info = stat()
        try #require(stat("/dev/full", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/full is not a character device here")
        expectOneLineError(try replay(["--end", "2", "--speed", "20", "--record", "/dev/full"]), status: 74, naming: "/dev/full")
        expectOneLineError(try kinetrace("host", "--port", "0", "--trace", "/dev/full"), status: 74, naming: "/dev/full")
        expectOneLineError(try kinetrace("inspect", Self.session, "--out", "/dev/full"), status: 74, naming: "/dev/full")
        expectOneLineError(try kinetrace("latency", Self.session, "--plot", "/dev/full"), status: 74, naming: "/dev/full")
        // An atomic write would have renamed a regular file over the device.
        #expect(stat("/dev/full", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/full was replaced")
    }

    /// A report or summary on standard output is checked like a file (issue 24: print ignored a failed write, exit 0).
    @Test(arguments: [["inspect", "SESSION"], ["conform", "--capture", "SESSION"], ["gestures", "eval", "--detector", "threshold", "SESSION"],
                      ["inspect", "SESSION", "--format", "json"],
                      // Summaries printed with print: checked once the command is done (main's standardOutputStatus).
                      ["synth", "-o", "/dev/null", "--duration", "1"], ["replay", "SESSION", "--to", "127.0.0.1:9", "--dry-run"]])
    func aReportToAFullStandardOutputExits74(_ arguments: [String]) throws {
        let resolved = arguments.map { $0 == "SESSION" ? Self.session : $0 }
        let result = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "\"$0\" \"$@\" > /dev/full", try Fixture.binary.path] + resolved)
        expectOneLineError(result, status: 74, naming: "standard output")
    }

    // MARK: 130

    /// SIGINT stops a replay mid-run: the report says interrupted, and the status is 130.
    @Test func anInterruptedReplayExits130() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let started = dir.appendingPathComponent("host-started").path
        let binary = try Fixture.binary.path
        // The whole session at its own pace (a minute): the signal comes long before the end.
        let replay = try Background.kinetrace("replay", Self.session, "--exec", "touch '\(started)'; exec '\(binary)' host --stdio",
                                              "--format", "json")
        // The host starts after replay has taken over SIGINT, so the signal reaches the replay's handler.
        try waitUntil("the replay to start its host: \(replay.stderr)") { FileManager.default.fileExists(atPath: started) }
        let result = try replay.stop(SIGINT, timeout: 30)
        #expect(result.status == 130 && !result.signalled, "\(result.status) \(result.stderr)")
        #expect(result.stderr.contains("kinetrace: error: stopped on request"), "\(result.stderr)")
        let report = try json(result.stdout)
        #expect(report["outcome"] as? String == "interrupted")
        #expect((report["sent"] as? Int ?? 0) < 1800, "the replay ran to its end instead")
    }

    // MARK: gestures list

    @Test func gesturesListNamesEveryDetectorWithItsParameters() throws {
        let text = try kinetrace("gestures", "list")
        #expect(text.status == 0, "\(text.stderr)")
        let listed = try kinetrace("gestures", "list", "--format", "json")
        #expect(listed.status == 0, "\(listed.stderr)")
        let detectors = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        let names = detectors.compactMap { $0["name"] as? String }
        #expect(names == ["threshold", "threshold-latch", "threshold-refractory", "badger-jump", "badger-duck", "badger-tilt", "attitude-tilt", "host-model"])
        for detector in detectors {
            let name = try #require(detector["name"] as? String)
            let gestures = try #require(detector["gestures"] as? [String])
            #expect(!gestures.isEmpty, "\(name)")
            // The text lists the same detector, its gestures, and each parameter with its default.
            #expect(text.stdout.contains("\(name)  (\(gestures.joined(separator: ", ")))"), "\(name)")
            for parameter in try #require(detector["parameters"] as? [[String: Any]]) {
                let pname = try #require(parameter["name"] as? String)
                #expect(text.stdout.contains("--param \(pname)="), "\(name): \(pname)")
            }
        }
    }

    // MARK: conform

    /// --reply-deadline-ms is the limit PC-ACK-DEADLINE judges the capture's ack delays
    /// against (about 0.5 ms in the loopback capture): far below them it fails, far above it passes.
    @Test func theAckDeadlineFlagSetsTheLimit() throws {
        let capture = Fixture.packageRoot.appendingPathComponent("captures/loopback-session.pcap").path
        func deadlineCase(_ ms: String) throws -> (status: Int32, verdict: String?, limit: Double?) {
            let result = try kinetrace("conform", "--capture", capture, "--port", "41448", "--cases", "PC-ACK-DEADLINE",
                                       "--reply-deadline-ms", ms, "--format", "json")
            let only = try #require((try json(result.stdout)["cases"] as? [[String: Any]])?.first)
            return (result.status, only["verdict"] as? String, (only["measurements"] as? [String: Double])?["limit"])
        }
        let strict = try deadlineCase("0.001")
        #expect(strict.status == 1 && strict.verdict == "FAIL" && strict.limit == 0.001)
        let loose = try deadlineCase("5000")
        #expect(loose.status == 0 && loose.verdict == "PASS" && loose.limit == 5000)
        #expect(try kinetrace("conform", "--capture", capture, "--reply-deadline-ms", "0").status == 64)
    }

    /// A 9.5 Hz session is inside the MUST rate band (100 ± 10 ms) and outside the SHOULD one
    /// (100 ± 2 ms): conformant, but not with --strict.
    @Test func strictMakesAShouldCaseCount() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("slow.jsonl").path
        #expect(try kinetrace("synth", "--out", trace, "--rate", "9.5", "--duration", "30", "--seed", "2").status == 0)
        let lenient = try kinetrace("conform", "--capture", trace, "--cases", "PC-RATE-*", "--format", "json")
        let verdicts = try #require(try json(lenient.stdout)["cases"] as? [[String: Any]])
        #expect(verdicts.first { $0["id"] as? String == "PC-RATE-NOMINAL" }?["verdict"] as? String == "NON-STRICT")
        #expect(verdicts.first { $0["id"] as? String == "PC-RATE-BAND" }?["verdict"] as? String == "PASS")
        #expect(lenient.status == 0, "\(lenient.stdout)")
        let strict = try kinetrace("conform", "--capture", trace, "--cases", "PC-RATE-*", "--strict")
        #expect(strict.status == 1, "\(strict.stdout)")
        #expect(strict.stdout.contains("NOT CONFORMANT"))
    }

    // MARK: replay

    /// --start skips the input's first seconds: exactly the messages from START to END are sent.
    @Test func startSkipsTheBeginning() throws {
        let input = try messages(Self.session).filter { $0.direction == .controllerToHost }
        let t0 = try #require(try messages(Self.session).first?.timeNs)
        func inWindow(_ from: Double, _ to: Double) -> Int {
            input.filter { Double($0.timeNs - t0) >= from * 1e9 && Double($0.timeNs - t0) < to * 1e9 }.count
        }
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let record = dir.appendingPathComponent("r.jsonl").path
        let result = try replay(["--start", "20", "--end", "26", "--speed", "10", "--timestamps", "original", "--record", record])
        #expect(result.status == 0, "\(result.stderr)")
        let expected = inWindow(20, 26)
        #expect(expected > 0 && expected < input.count)
        #expect(try json(result.stdout)["sent"] as? Int == expected)
        // What was sent is that window of the input, byte for byte.
        let sent = try messages(record).filter { $0.direction == .controllerToHost }.map(\.payload)
        let window = input.filter { Double($0.timeNs - t0) >= 20e9 && Double($0.timeNs - t0) < 26e9 }.map(\.payload)
        #expect(sent.count == window.count && Set(sent.map { Hex.encode($0) }) == Set(window.map { Hex.encode($0) }))
    }

    /// With delays drawn from 0–300 ms, --order keep sends each controller's frames in order,
    /// and --order jitter lets a later frame overtake an earlier one.
    @Test(arguments: ["keep", "jitter"])
    func orderDecidesWhetherDelaysReorder(_ order: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let record = dir.appendingPathComponent("r.jsonl").path
        let result = try replay(["--end", "12", "--speed", "20", "--delay", "uniform:0:300", "--seed", "4", "--order", order, "--record", record])
        #expect(result.status == 0, "\(result.stderr)")
        var inversions = 0, frames = 0
        var last: [Endpoint: UInt64] = [:]
        for m in try messages(record) where m.direction == .controllerToHost {
            frames += 1
            // Two input frames carry a bad CRC on purpose (and a garbled t_ms): order is judged on the valid ones.
            guard case .success(.frame(let frame)) = m.decoded(as: MotionLinkV1()) else { continue }
            if let previous = last[m.source], frame.tMs < previous { inversions += 1 }
            last[m.source] = max(last[m.source] ?? 0, frame.tMs)
        }
        #expect(frames == 360)
        if order == "keep" { #expect(inversions == 0) } else { #expect(inversions > 0) }
    }

    /// --stagger-ms bounds the seeded start offsets of fanned-out copies; 0 starts them together.
    @Test func staggerBoundsTheCopiesOffsets() throws {
        func offsets(_ stagger: String) throws -> [Double] {
            let result = try replay(["--end", "2", "--speed", "20", "--controllers", "9", "--seed", "9", "--stagger-ms", stagger])
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try json(result.stdout)["controllers"] as? [[String: Any]]).compactMap { $0["offset_ms"] as? Double }
        }
        let together = try offsets("0")
        #expect(together.count == 9 && together.allSatisfy { $0 == 0 })
        let spread = try offsets("40")
        #expect(spread.count == 9 && spread.allSatisfy { $0 >= 0 && $0 < 40 })
        #expect(spread.filter { $0 > 0 }.count >= 2, "\(spread)")  // the copies, not the originals, are offset
        #expect(try offsets("40") == spread, "the offsets are seeded")
    }

    /// --corrupt-bits is how many bits each corrupted message has flipped: the record's
    /// impairment events list that many, and the bytes sent differ from the input's in exactly those bits.
    @Test(arguments: [1, 5])
    func corruptBitsFlipsThatManyBits(_ bits: Int) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let record = dir.appendingPathComponent("r.jsonl").path
        let result = try replay(["--end", "3", "--speed", "20", "--corrupt", "1", "--corrupt-bits", "\(bits)", "--seed", "5",
                                 "--timestamps", "original", "--record", record])
        #expect(result.status == 0, "\(result.stderr)")
        // Each impairment event comes just before the message it changed; that message is the
        // input message it names with exactly the listed bits flipped.
        let input = try messages(Self.session).filter { $0.direction == .controllerToHost }.map { Array($0.payload) }
        let reader = try TraceReader(path: record)
        var pending: EventRecord?
        var checked = 0
        while let next = try reader.next() {
            switch next {
            case .event(let e) where e.event == "impair":
                pending = e
            case .message(let m) where m.direction == .controllerToHost:
                guard let event = pending else { Issue.record("a message sent with --corrupt 1 but no impairment"); continue }
                pending = nil
                guard case .array(let flipped)? = event.data["flipped_bits"], let index = event.data["source_index"]?.integerValue,
                      input.indices.contains(Int(index)) else { Issue.record("not a corruption: \(event)"); continue }
                #expect(flipped.count == bits)
                var expected = input[Int(index)]
                for bit in flipped.compactMap(\.integerValue) { expected[Int(bit) / 8] ^= 1 << UInt8(bit % 8) }
                #expect(Array(m.payload) == expected, "message \(index): sent \(Hex.encode(Array(m.payload))), expected \(Hex.encode(expected))")
                checked += 1
            default: break
            }
        }
        let sent = try json(result.stdout)["sent"] as? Int
        #expect(checked > 0 && checked == sent, "every message sent was checked")
    }

    /// --rate limits the link: the plan of 300 frames at 8 kbit/s takes at least their bits
    /// divided by the rate (10.8 s of payload alone), against under 10 s without the limit.
    @Test func rateStretchesTheSchedule() throws {
        func lastDeadline(_ extra: [String]) throws -> Double {
            let result = try kinetrace(["replay", Self.session, "--dry-run", "--end", "10", "--format", "json"] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            let plan = try json(result.stdout)
            #expect(plan["sends"] as? Int == 300)
            return try #require(plan["last_deadline_ns"] as? Double) / 1e9
        }
        let free = try lastDeadline([])
        let limited = try lastDeadline(["--rate", "8kbit"])
        #expect(free < 10)
        #expect(limited >= 300 * 36 * 8 / 8000, "\(limited) s")
        // A rate that rises later stretches less.
        let rising = try lastDeadline(["--rate", "8kbit", "--rate", "1mbit@5"])
        #expect(rising > free && rising < limited)
        // And a live replay under a limit still sends every frame (60 in 2 s of input).
        let live = try replay(["--end", "2", "--speed", "20", "--rate", "64kbit"])
        #expect(live.status == 0, "\(live.stderr)")
        #expect(try json(live.stdout)["sent"] as? Int == 60)
    }
}
