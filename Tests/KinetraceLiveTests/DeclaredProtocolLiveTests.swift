import Foundation
import KinetraceJSON
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// The two example declarations (examples/protocols: OSC 1.0 over UDP, newline-delimited
/// JSON over TCP) through every command, as a user with a fourth protocol runs them:
/// one declaration file, no Swift. Real processes, sockets and files.
@Suite(.serialized) struct DeclaredProtocolLiveTests {
    static let examples = ["osc-motion", "ndjson-motion"]

    static func declaration(_ name: String) -> String {
        Fixture.packageRoot.appendingPathComponent("examples/protocols/\(name).json").path
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The payloads of a trace's controller→host records, joined per source in order (so a byte
    /// stream compares by its bytes whatever its chunking).
    static func streams(_ path: String) throws -> [String: [UInt8]] {
        let reader = try TraceReader(path: path)
        var out: [String: [UInt8]] = [:]
        while let record = try reader.next() {
            if case .message(let m) = record, m.direction == .controllerToHost { out[m.source.description, default: []] += Array(m.payload) }
        }
        return out
    }

    @Test(arguments: examples) func everyOfflineCommandRunsOnTheDeclaration(_ name: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = Self.declaration(name)
        let trace = dir.appendingPathComponent("s.jsonl").path
        let synth = try kinetrace("synth", "--protocol", file, "--out", trace, "--duration", "12", "--seed", "9", "--controllers", "2")
        #expect(synth.status == 0, "\(synth.stderr)")

        // The trace reads without the file: its header carries the declaration.
        let header = try Self.json(String(decoding: try Data(contentsOf: URL(fileURLWithPath: trace)).split(separator: 0x0A)[0], as: UTF8.self))
        #expect(header["profile"] as? String == name)
        #expect(header["minor"] as? Int == 2)
        #expect((header["protocol_digest"] as? String)?.hasPrefix("sha256:") == true)
        let summary = try Self.json(try kinetrace("inspect", "--format", "json", trace).stdout)
        let direction = try #require((summary["messages"] as? [String: Any])?["c2h"] as? [String: Any])
        let sent = try #require(direction["total"] as? Int)
        #expect(sent > 100 && direction["valid"] as? Int == sent, "\(summary)")
        #expect(((summary["decisions"] as? [String: Int])?["jump"] ?? 0) > 0, "\(summary)")

        // pcap both ways (TCP synthesised for the byte stream), the same bytes back.
        let pcap = dir.appendingPathComponent("s.pcap").path, back = dir.appendingPathComponent("back.jsonl").path
        #expect(try kinetrace("convert", trace, pcap).status == 0)
        let fromPcap = try kinetrace("convert", "--protocol", file, pcap, back)
        #expect(fromPcap.status == 0, "\(fromPcap.stderr)")
        // Compared as sets of streams (ordered by their bytes: two controllers may send as many).
        #expect(try Self.streams(back).values.sorted { $0.lexicographicallyPrecedes($1) }
                == (try Self.streams(trace)).values.sorted { $0.lexicographicallyPrecedes($1) })
        let pcapSummary = try Self.json(try kinetrace("inspect", "--format", "json", "--protocol", file, pcap).stdout)
        #expect(((pcapSummary["messages"] as? [String: Any])?["c2h"] as? [String: Any])?["valid"] as? Int == sent)

        // latency, gestures, replay's plan, merge, conform's derived passive cases.
        let latency = try kinetrace("latency", "--format", "json", trace)
        #expect(latency.status == 0, "\(latency.stderr)")
        let gestures = try kinetrace("gestures", "eval", "--detector", "threshold", "--format", "json", trace)
        #expect(gestures.status == 0 || gestures.status == 1, "\(gestures.stderr)")
        #expect(((try Self.json(gestures.stdout)["summary"] as? [String: Any])?["tp"] as? Int ?? 0) > 0, "\(gestures.stdout)")
        let plan = try Self.json(try kinetrace("replay", "--dry-run", "--format", "json", trace).stdout)
        #expect(plan["input_messages"] as? Int == sent && plan["sends"] as? Int == sent, "\(plan)")
        let second = dir.appendingPathComponent("s2.jsonl").path, merged = dir.appendingPathComponent("m.jsonl").path
        #expect(try kinetrace("synth", "--protocol", file, "--out", second, "--duration", "3", "--seed", "10").status == 0)
        let merge = try kinetrace("merge", trace, second, "-w", merged)
        #expect(merge.status == 0, "\(merge.stderr)")
        let mergedSummary = try Self.json(try kinetrace("inspect", "--format", "json", merged).stdout)
        #expect(((mergedSummary["messages"] as? [String: Any])?["c2h"] as? [String: Any])?["valid"] as? Int ?? 0 > sent)
        let conform = try kinetrace("conform", "--capture", trace, "--format", "json")
        let report = try Self.json(conform.stdout)
        let cases = try #require(report["cases"] as? [[String: Any]])
        #expect(Set(cases.compactMap { $0["id"] as? String }) == ["PC-DECL-LAYOUT", "PC-DECL-VALUES", "PC-DECL-RATE-BAND", "PC-DECL-RATE-NOMINAL"])
        #expect(cases.first { $0["id"] as? String == "PC-DECL-LAYOUT" }?["verdict"] as? String == "PASS")
        #expect(cases.allSatisfy { $0["verdict"] as? String != "FAIL" }, "\(conform.stdout)")
    }

    @Test(arguments: examples) func hostSimulateAndReplayOverTheDeclaredTransport(_ name: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = Self.declaration(name)
        let hostTrace = dir.appendingPathComponent("host.jsonl").path, simTrace = dir.appendingPathComponent("sim.jsonl").path
        let host = try Background.kinetrace("host", "--protocol", file, "--port", "0", "--trace", hostTrace, "-v")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let sim = try kinetrace("simulate", "--protocol", file, "--to", "127.0.0.1:\(port)", "--controllers", "2", "--duration", "6",
                                "--script", "jumps", "--seed", "4", "--trace", simTrace)
        #expect(sim.status == 0, "\(sim.stderr)")
        #expect(!sim.stderr.contains("warning"), "\(sim.stderr)")
        // A replay of the simulator's own record to the same host.
        let replay = try kinetrace("replay", simTrace, "--to", "127.0.0.1:\(port)", "--speed", "4")
        #expect(replay.status == 0, "\(replay.stderr)")
        let stopped = try host.stop(SIGTERM)
        #expect(stopped.status == 0, "\(stopped.stderr)")

        // Everything the simulator sent reached the host whole (loopback), and the host decided jumps
        // by the declared behaviour.
        let sent = try Self.streams(simTrace), received = try Self.streams(hostTrace)
        #expect(sent.count == 2)
        for (_, bytes) in sent { #expect(received.values.contains(bytes)) }
        // One-way delay per message from the two recordings, joined by bytes.
        let joined = try kinetrace("latency", "--join", simTrace, hostTrace, "--format", "json")
        #expect(joined.status == 0, "\(joined.stderr)")
        let measures = (try Self.json(joined.stdout)["traces"] as? [[String: Any]])?.first?["measures"] as? [[String: Any]]
        let joinedCount = (measures?.first?["all"] as? [String: Any])?["n"] as? Int
        let simSummary = try Self.json(try kinetrace("inspect", "--format", "json", simTrace).stdout)
        let simMessages = ((simSummary["messages"] as? [String: Any])?["c2h"] as? [String: Any])?["total"] as? Int
        #expect(joinedCount != nil && joinedCount == simMessages, "\(joined.stdout.prefix(600))")
        // The host behind the stdio adapter, observing its decisions (replay --exec).
        let exec = try kinetrace("replay", "--exec", "\(Fixture.binary.path) host --stdio --observe --protocol \(file)", simTrace, "--speed", "4", "--format", "json")
        #expect(exec.status == 0, "\(exec.stderr)")
        let execReport = try Self.json(exec.stdout)
        #expect((execReport["observations"] as? Int ?? 0) > 0 && execReport["host_exit"] as? String == "exited with status 0", "\(exec.stdout.suffix(600))")

        let decisions = try TraceStreams(path: hostTrace).decisions.values.flatMap { $0 }
        let hostRecord = (try? String(contentsOfFile: hostTrace, encoding: .utf8)) ?? ""
        #expect(!decisions.isEmpty, "no decision in \(hostRecord.prefix(2000))")
        #expect(decisions.allSatisfy { $0.name == "jump" && ($0.values.first ?? 0) > 0.5 })
    }

    @Test(.enabled(if: Requirement.root.runs, "live capture needs root; with CI set this fails instead"), arguments: examples)
    func captureRecordsTheDeclaredProtocol(_ name: String) throws {
        try Requirement.root.check()
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = Self.declaration(name)
        let host = try Background.kinetrace("host", "--protocol", file, "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let pcap = dir.appendingPathComponent("c.pcap").path, trace = dir.appendingPathComponent("c.jsonl").path
        let capture = try Background.kinetrace("capture", "-i", "lo", "--protocol", file, "--port", "\(port)", "-w", pcap, "--trace", trace, "--duration", "6")
        _ = try capture.waitForLine(startingWith: "capturing on")
        let sim = try kinetrace("simulate", "--protocol", file, "--to", "127.0.0.1:\(port)", "--controllers", "2", "--duration", "2", "--seed", "5")
        #expect(sim.status == 0, "\(sim.stderr)")
        let captured = try capture.wait(timeout: 30)
        #expect(captured.status == 0, "\(captured.stderr)")
        _ = try host.stop(SIGTERM)
        let summary = try Self.json(try kinetrace("inspect", "--format", "json", trace).stdout)
        let direction = try #require((summary["messages"] as? [String: Any])?["c2h"] as? [String: Any])
        #expect((direction["total"] as? Int ?? 0) > 0 && direction["invalid"] as? Int == 0, "\(summary)")
        let fromPcap = try Self.json(try kinetrace("inspect", "--format", "json", "--protocol", file, pcap).stdout)
        #expect(((fromPcap["messages"] as? [String: Any])?["c2h"] as? [String: Any])?["total"] as? Int == direction["total"] as? Int)
    }

    /// The active cases a declared host behaviour implies run against the reference host behind the stdio
    /// adapter (the declaration handed over in a file of its own) and pass; a host that decides nothing
    /// leaves each INCONCLUSIVE, and the run is not shown conformant.
    @Test(arguments: examples) func theDerivedActiveCasesJudgeTheReferenceHost(_ name: String) throws {
        let declaration = Self.declaration(name)
        let result = try kinetrace(["conform", "--protocol", declaration, "--format", "json"], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try Self.json(result.stdout)
        let cases = report["cases"] as? [[String: Any]] ?? []
        let expected = name == "osc-motion"
            ? ["EDGE-THRESHOLD", "EDGE-WINDOW", "STALE", "ISOLATION", "INVALID-RANGE", "INVALID-FINITE", "INVALID-TYPE", "INVALID-MEMBERS", "LOAD",
               "IMPAIRED-LAB-5GHZ", "IMPAIRED-CROWDED-EVENT", "IMPAIRED-HARSH", "OBS-TIMELY"]
            : ["EDGE-THRESHOLD", "EDGE-WINDOW", "ISOLATION", "INVALID-RANGE", "INVALID-LENGTH", "INVALID-TYPE", "INVALID-MEMBERS", "STREAM-READS",
               "CUT-AT-END", "LOAD", "OBS-TIMELY"]
        #expect(cases.map { $0["id"] as? String } == expected.map { "AC-DECL-" + $0 }, "\(result.stdout)")
        #expect(cases.allSatisfy { $0["verdict"] as? String == "PASS" }, "\(result.stdout)")
        #expect((report["target"] as? String)?.contains("stdio adapter") == true, "\(report["target"] ?? "")")

        let silent = "'\(try Fixture.binary.path)' host --stdio --observe --protocol '\(declaration)' --threshold 100"
        let undecided = try kinetrace(["conform", "--protocol", declaration, "--exec", silent, "--format", "json"], timeout: 120)
        #expect(undecided.status == 1, "\(undecided.stdout)")
        let undecidedReport = try Self.json(undecided.stdout)
        let undecidedCases = undecidedReport["cases"] as? [[String: Any]] ?? []
        #expect(undecidedCases.count == expected.count && undecidedCases.allSatisfy { $0["verdict"] as? String == "INCONCLUSIVE" }, "\(undecided.stdout)")
        #expect(undecidedReport["decisions_judged"] as? Bool == false)
    }

    /// A declaration is someone else's file: a latch of an hour (the most the language allows) must not hold a run for
    /// two hours. The case that would have to wait it out says so (INCONCLUSIVE) at once.
    @Test func anHourLongArrivalWindowDoesNotHoldTheRun() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("long.json")
        let text = try String(contentsOfFile: Self.declaration("ndjson-motion"), encoding: .utf8)
            .replacingOccurrences(of: "\"window\": { \"ms\": 400,", with: "\"window\": { \"ms\": 3600000,")
        #expect(text.contains("3600000"))
        try text.write(to: file, atomically: true, encoding: .utf8)
        let result = try kinetrace(["conform", "--protocol", file.path, "--cases", "AC-DECL-EDGE-WINDOW", "--format", "json"], timeout: 60)
        let cases = try Self.json(result.stdout)["cases"] as? [[String: Any]] ?? []
        #expect(cases.first?["verdict"] as? String == "INCONCLUSIVE", "\(result.stdout)")
        #expect((cases.first?["detail"] as? String)?.contains("longer than the 10,000 ms") == true, "\(result.stdout)")
        #expect(result.status == 1, "nothing judged is not a pass")
    }

    @Test func aBadDeclarationIsOneLineWithItsPlaceAndExit65() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let bad = dir.appendingPathComponent("bad.json")
        let text = try String(contentsOfFile: Self.declaration("osc-motion"), encoding: .utf8).replacingOccurrences(of: "\"rate_hz\": 50", with: "\"rate_hz\": -50")
        try text.write(to: bad, atomically: true, encoding: .utf8)
        for arguments in [["inspect", "--protocol", bad.path, Fixture.bundledTrace], ["protocol", "check", bad.path]] {
            let result = try kinetrace(arguments)
            #expect(result.status == 65, "\(arguments): \(result.stderr)")
            #expect(result.stderr == "kinetrace: error: \(bad.path):8:14: \"rate_hz\" must be from 0.001 to 10000, found -50\n", "\(result.stderr)")
        }
        // A directory, a FIFO: not declaration files.
        #expect(try kinetrace("protocol", "check", dir.path).status == 66)
        let missing = try kinetrace("inspect", "--protocol", "no-such-protocol", Fixture.bundledTrace)
        #expect(missing.status == 64 && missing.stderr.contains("no such protocol"), "\(missing.stderr)")
    }

    @Test func aTraceWhoseDeclarationWasChangedIsRefused() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("t.jsonl").path
        #expect(try kinetrace("synth", "--protocol", Self.declaration("osc-motion"), "--out", trace, "--duration", "2").status == 0)
        var lines = try String(contentsOfFile: trace, encoding: .utf8).components(separatedBy: "\n")
        // Loosen a range inside the embedded declaration, leave the digest: the reader must notice.
        lines[0] = lines[0].replacingOccurrences(of: "[-16,16]", with: "[-99,99]")
        let tampered = dir.appendingPathComponent("tampered.jsonl")
        try lines.joined(separator: "\n").write(to: tampered, atomically: true, encoding: .utf8)
        let result = try kinetrace("inspect", tampered.path)
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("line 1") && result.stderr.contains("does not match its protocol declaration"), "\(result.stderr)")
        // The same declaration written other than canonically (a space added): refused, since the digest
        // must name exactly the text that is there.
        var spaced = try String(contentsOfFile: trace, encoding: .utf8).components(separatedBy: "\n")
        spaced[0] = spaced[0].replacingOccurrences(of: "{\\\"host\\\":", with: "{ \\\"host\\\":")
        #expect(spaced[0] != lines[0] && spaced[0].contains("{ \\\"host\\\":"), "\(spaced[0].prefix(300))")
        let loose = dir.appendingPathComponent("spaced.jsonl")
        try spaced.joined(separator: "\n").write(to: loose, atomically: true, encoding: .utf8)
        let notCanonical = try kinetrace("inspect", loose.path)
        #expect(notCanonical.status == 65 && notCanonical.stderr.contains("not in canonical form"), "\(notCanonical.stderr)")
        // And given a different declaration of the same name, --protocol refuses the trace.
        let other = dir.appendingPathComponent("osc-motion.json")
        try String(contentsOfFile: Self.declaration("osc-motion"), encoding: .utf8).replacingOccurrences(of: "\"rate_hz\": 50", with: "\"rate_hz\": 60")
            .write(to: other, atomically: true, encoding: .utf8)
        let mismatch = try kinetrace("inspect", "--protocol", other.path, trace)
        #expect(mismatch.status == 65 && mismatch.stderr.contains("differs from --protocol's"), "\(mismatch.stderr)")
        // Found by name on the protocol path, through the flag and the environment.
        #expect(try kinetrace("inspect", "--protocol", "osc-motion", "--protocol-path", dir.path, "--format", "json", Fixture.bundledTrace).status == 65)
        let listed = try kinetrace("protocol", "list", "--protocol-path", Fixture.packageRoot.appendingPathComponent("examples/protocols").path)
        #expect(listed.status == 0 && listed.stdout.contains("osc-motion") && listed.stdout.contains("ndjson-motion") && listed.stdout.contains("motionlink-v1  compiled"))
    }

    @Test func theHostRuleDefaultsToTheDeclarations() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        // The same motion under a declaration whose threshold no sample reaches.
        let high = dir.appendingPathComponent("osc-motion.json")
        try String(contentsOfFile: Self.declaration("osc-motion"), encoding: .utf8).replacingOccurrences(of: "\"above\": 0.5", with: "\"above\": 9")
            .write(to: high, atomically: true, encoding: .utf8)
        let trace = dir.appendingPathComponent("t.jsonl").path
        #expect(try kinetrace("synth", "--protocol", Self.declaration("osc-motion"), "--out", trace, "--duration", "10", "--seed", "2").status == 0)
        func jumps(_ arguments: String...) throws -> Int {
            let result = try kinetrace(["inspect", "--format", "json"] + arguments + [trace])
            #expect(result.status == 0, "\(result.stderr)")
            return (try Self.json(result.stdout)["decisions"] as? [String: Int])?["jump"] ?? 0
        }
        #expect(try jumps() > 0)
        // Read through the high declaration, the trace's own is refused (another digest), so convert it first.
        let pcap = dir.appendingPathComponent("t.pcap").path
        #expect(try kinetrace("convert", trace, pcap).status == 0)
        let highJumps = try Self.json(try kinetrace("inspect", "--format", "json", "--protocol", high.path, pcap).stdout)["decisions"] as? [String: Int]
        #expect((highJumps?["jump"] ?? 0) == 0, "\(highJumps ?? [:])")
        let given = try Self.json(try kinetrace("inspect", "--format", "json", "--protocol", high.path, "--threshold", "0.5", pcap).stdout)["decisions"] as? [String: Int]
        #expect((given?["jump"] ?? 0) == (try jumps()))
    }

    /// The host-model detector is the protocol's own rule: on MotionLink it finds exactly what the
    /// motionlink-v1 detector finds, compiled or declared, and on a declared protocol what its host decides.
    @Test func theHostModelDetectorIsTheProtocolsOwnRule() throws {
        func summary(_ arguments: String...) throws -> [String: Any] { try summary(arguments) }
        func summary(_ arguments: [String]) throws -> [String: Any] {
            let result = try kinetrace(["gestures", "eval", "--format", "json"] + arguments)
            #expect(result.status == 0 || result.status == 1, "\(result.stderr)")
            return try #require(try Self.json(result.stdout)["summary"] as? [String: Any])
        }
        let trace = Fixture.bundledTrace
        let rule = try summary("--detector", "threshold-refractory", trace)
        for extra in [[String](), ["--protocol", Fixture.packageRoot.appendingPathComponent("specs/protocols/motionlink-v1.json").path]] {
            let model = try summary(["--detector", "host-model"] + extra + [trace])
            for key in ["tp", "fp", "fn"] { #expect(model[key] as? Int == rule[key] as? Int, "\(key): \(model) vs \(rule)") }
        }
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let osc = dir.appendingPathComponent("osc.jsonl").path
        #expect(try kinetrace("synth", "--protocol", Self.declaration("osc-motion"), "--out", osc, "--duration", "30", "--seed", "6").status == 0)
        let decided = (try Self.json(try kinetrace("inspect", "--format", "json", osc).stdout)["decisions"] as? [String: Int])?["jump"] ?? 0
        let found = try summary("--detector", "host-model", osc)
        #expect(decided > 0 && (found["tp"] as? Int ?? 0) + (found["fp"] as? Int ?? 0) == decided, "\(found), \(decided) decided")
    }

    @Test func showAndVectorsExplainADeclaration() throws {
        let show = try kinetrace("protocol", "show", Self.declaration("ndjson-motion"))
        #expect(show.status == 0)
        for expected in ["TCP, records ending with \\n", "accel.y, number", "role user_acceleration.y", "latch of 400 ms", "ND-HOST-1"] {
            #expect(show.stdout.contains(expected), "missing \(expected) in\n\(show.stdout)")
        }
        let vectors = try kinetrace("protocol", "vectors", "--format", "json", Self.declaration("osc-motion"))
        let items = try #require(try Self.json(vectors.stdout)["vectors"] as? [[String: Any]])
        let verdicts = items.compactMap { $0["verdict"] as? String }
        #expect(verdicts.filter { $0 == "valid" }.count >= 2 && verdicts.contains("invalid_length") && verdicts.contains("malformed"), "\(verdicts)")
        // Each vector's hex is what a reader makes of it: decode the valid ones again.
        let osc = try DeclaredProtocol.read(Array(try Data(contentsOf: URL(fileURLWithPath: Self.declaration("osc-motion")))), path: "osc")
        for item in items {
            guard case .success(let bytes) = Hex.decode(item["hex"] as? String ?? "") else { Issue.record("bad hex"); continue }
            #expect((osc.facts(bytes).error?.code.name ?? "valid") == item["verdict"] as? String)
        }
    }
}

