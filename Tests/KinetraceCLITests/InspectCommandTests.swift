import Foundation
import KinetraceTestSupport
import KinetraceAnalysis
import KinetraceTrace
import Testing

/// `kinetrace inspect` as a user runs it: a real process, real files.
@Suite struct InspectCommandTests {
    @Test func summarisesTheBundledTraceAsText() throws {
        let result = try kinetrace("inspect", Fixture.bundledTrace)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let out = result.stdout
        for expected in ["Format     kinetrace-trace 1.2, protocol motionlink-v1", "controller→host", "host→controller",
                         "Frame intervals", "sender clock   ", "Host (jump when ay > 0.5 g, then 400 ms of frame time (t_ms) before the next; a HapticAck per jump):", "crc_mismatch"] {
            #expect(out.contains(expected), "missing \(expected)")
        }
    }

    @Test func jsonAgreesWithTheLibrary() throws {
        let result = try kinetrace("inspect", "--format", "json", Fixture.bundledTrace)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let summary = try TraceSummarizer.summarize(try TraceReader(path: Fixture.bundledTrace))
        #expect(object["triggers"] as? Int == summary.triggers)
        #expect(object["replies_seen"] as? Int == summary.replies)
        #expect(object["matched_replies"] as? Int == summary.matchedReplies)
        let messages = try #require(object["messages"] as? [String: [String: Any]])
        #expect(messages["c2h"]?["total"] as? Int == summary.messages[.controllerToHost]?.total)
        #expect(messages["c2h"]?["invalid"] as? Int == summary.messages[.controllerToHost]?.invalid)
        #expect((object["controllers"] as? [Any])?.count == summary.controllers.count)
        // The bundled session is a healthy one: every trigger acked, nothing unexpected.
        #expect(summary.triggers > 0)
        #expect(summary.matchedReplies == summary.triggers)
        #expect(object["unexpected_replies"] as? Int == 0)
        let intervals = try #require((object["intervals_ms"] as? [String: [String: Any]])?["sender"])
        #expect(intervals["p50"] as? Double == 100)
    }

    @Test func ruleOptionsChangeTheVerdict() throws {
        let strict = try kinetrace("inspect", "--format", "json", "--threshold", "5", Fixture.bundledTrace)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(strict.stdout.utf8)) as? [String: Any])
        #expect(object["triggers"] as? Int == 0)
        #expect((object["unexpected_replies"] as? Int ?? 0) > 0)
    }

    @Test func missingFileExits66WithOneLine() throws {
        let result = try kinetrace("inspect", "/nonexistent/trace.jsonl")
        #expect(result.status == 66)
        #expect(result.stderr == "kinetrace: error: /nonexistent/trace.jsonl: cannot open: No such file or directory\n")
        #expect(result.stdout.isEmpty)
    }

    @Test func directoryExits66() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try kinetrace("inspect", dir.path)
        #expect(result.status == 66)
        #expect(result.stderr.hasPrefix("kinetrace: error: \(dir.path):"))
    }

    @Test func badUsageExits64() throws {
        #expect(try kinetrace("inspect", "--format", "xml", Fixture.bundledTrace).status == 64)
        #expect(try kinetrace("inspect").status == 64)
        #expect(try kinetrace("inspect", "--threshold", "nan", Fixture.bundledTrace).status == 64)
        #expect(try kinetrace("frobnicate").status == 64)
    }

    @Test func badDataExits65NamingTheLine() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var lines = try String(contentsOfFile: Fixture.bundledTrace, encoding: .utf8).split(separator: "\n").prefix(6).map(String.init)
        lines[3] = String(lines[3].dropLast(5))  // damage line 4 in the middle of the file
        let path = dir.appendingPathComponent("bad.jsonl").path
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try kinetrace("inspect", path)
        #expect(result.status == 65)
        #expect(result.stderr.hasPrefix("kinetrace: error: \(path): line 4, byte "))
        #expect(result.stderr.filter { $0 == "\n" }.count == 1)
    }

    @Test func wrongVersionExits65() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v2.jsonl").path
        try #"{"format":"kinetrace-trace","version":2}"#.appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try kinetrace("inspect", path)
        #expect(result.status == 65)
        #expect(result.stderr.contains("line 1"))
        #expect(result.stderr.contains("unsupported trace version 2"))
    }

    /// A trace of a protocol this build does not speak is refused in one line, exit 65, by
    /// every command that reads traces: never read as MotionLink v1.
    @Test func anUnknownProtocolExits65WithOneLine() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v9.jsonl").path
        // A valid MotionLink v1 session in every way but the protocol its header names.
        var text = try String(contentsOfFile: Fixture.bundledTrace, encoding: .utf8)
        text = text.replacingOccurrences(of: #""profile":"motionlink-v1""#, with: #""profile":"motionlink-v9""#)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("out.jsonl").path
        for command in [["inspect", path], ["latency", path], ["replay", path, "--dry-run"], ["conform", "--capture", path],
                        ["convert", path, out], ["gestures", "eval", "--detector", "threshold", path]] {
            let result = try kinetrace(command)
            #expect(result.status == 65, "\(command): \(result.stderr)")
            #expect(result.stderr == "kinetrace: error: \(path): line 1, byte 0: the header names protocol \"motionlink-v9\", which this kinetrace does not speak (it speaks attitude-stream, keepcalm-json, motionlink-v1)\n",
                    "\(command)")
            #expect(result.stdout.isEmpty, "\(command)")
        }
        // A protocol asked for by name that this build does not speak is bad usage.
        let usage = try kinetrace("inspect", Fixture.bundledTrace, "--protocol", "motionlink-v9")
        #expect(usage.status == 64)
    }

    @Test func truncatedTailIsReadWithAWarning() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Fixture.bundledTrace))
        let path = dir.appendingPathComponent("cut.jsonl").path
        try bytes.prefix(bytes.count - 40).write(to: URL(fileURLWithPath: path))
        let result = try kinetrace("inspect", "--format", "json", path)
        #expect(result.status == 0)
        #expect(result.stderr.contains("warning:"))
        #expect(result.stderr.contains("truncated at line"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["truncation"] is [String: Any])
    }

    /// Garbage of every shape gets a clean exit, never a crash or a hang.
    @Test(arguments: 0..<12)
    func garbageNeverCrashes(_ seed: Int) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
        func next() -> UInt8 { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return UInt8(truncatingIfNeeded: state) }
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Fixture.bundledTrace)).prefix(4000))
        // Odd seeds: flip random bytes of a real trace; even seeds: pure noise.
        if seed % 2 == 1 {
            for _ in 0..<(seed * 3) { bytes[Int(next()) * 15 % bytes.count] = next() }
        } else {
            bytes = (0..<(seed * 300)).map { _ in next() }
        }
        let path = dir.appendingPathComponent("garbage.jsonl").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let result = try kinetrace("inspect", path)
        #expect(!result.signalled, "crashed: \(result.stderr)")
        #expect([0, 65].contains(result.status), "status \(result.status): \(result.stderr)")
        if result.status == 65 {
            #expect(result.stderr.hasPrefix("kinetrace: error: "))
            #expect(result.stderr.filter { $0 == "\n" }.count == 1)
        }
    }
}
