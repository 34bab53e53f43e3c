import Foundation
import KinetraceTestSupport
import Testing

/// Issue 16, item 1: never green on nothing. A capture's host port is inferred from the
/// protocol's valid messages when --port is not given, and said; a capture that yields none
/// of the protocol's messages is a one-line error naming the ports seen, exit 65, whatever
/// the command.
@Suite struct NothingReadTests {
    static func capture(_ name: String) -> String { Fixture.packageRoot.appendingPathComponent("captures/\(name)").path }

    /// The bundled loopback capture's host listened on port 41448, not MotionLink's 47110.
    @Test func theBundledCaptureWorksWithoutAPortAndSaysWhichItInferred() throws {
        let result = try kinetrace(["inspect", Self.capture("loopback-session.pcap"), "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("note: ") && result.stderr.contains("host port 41448, inferred from the first 1000 valid motionlink-v1 messages"),
                "\(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let messages = try #require(summary["messages"] as? [String: [String: Any]])
        #expect(messages["c2h"]?["valid"] as? Int == 1800 && messages["h2c"]?["valid"] as? Int == 60, "every message read: \(messages)")
        let conform = try kinetrace(["conform", "--capture", Self.capture("loopback-session.pcap")])
        #expect(conform.status == 0 && conform.stdout.contains("11 pass"), "\(conform.stdout) \(conform.stderr)")
    }

    /// A byte-stream protocol's port is found by framing each connection's first bytes.
    @Test func aStreamProtocolsPortIsInferredFromItsConnections() throws {
        let result = try kinetrace(["inspect", Self.capture("attitude-session.pcap"), "--protocol", "attitude-stream"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("host port 39081, inferred from the first 1000 valid attitude-stream messages"), "\(result.stderr)")
    }

    /// The wrong --port: the error names the ports seen and the one the protocol's messages go to.
    @Test func aWrongPortIsADataErrorThatNamesTheRightOne() throws {
        let result = try kinetrace(["inspect", Self.capture("loopback-session.pcap"), "--port", "47110"])
        #expect(result.status == 65)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(result.stderr)")
        #expect(result.stderr.contains("no motionlink-v1 messages to or from UDP port 47110 in 1860 packets"), "\(result.stderr)")
        #expect(result.stderr.contains("UDP ports seen: 41448 (1860 packets)") && result.stderr.contains("give --port 41448"), "\(result.stderr)")
    }

    /// KeepCalm traffic read as MotionLink: nothing of the protocol, so every command that reads
    /// a capture exits 65 instead of reporting on nothing.
    @Test(arguments: [
        ["inspect", "CAPTURE"],
        ["convert", "CAPTURE", "OUT.jsonl"],
        ["latency", "CAPTURE"],
        ["gestures", "eval", "CAPTURE", "--detector", "threshold-refractory"],
        ["conform", "--capture", "CAPTURE"],
        ["replay", "CAPTURE", "--dry-run"],
    ])
    func everyCommandRefusesACaptureWithoutTheProtocol(_ template: [String]) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let arguments = template.map {
            $0 == "CAPTURE" ? Self.capture("keepcalm-session.pcap") : $0 == "OUT.jsonl" ? dir.appendingPathComponent("out.jsonl").path : $0
        }
        let result = try kinetrace(arguments)
        #expect(result.status == 65, "\(template[0]): \(result.status) \(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("no motionlink-v1 messages") && result.stderr.contains("none of them carrying a valid motionlink-v1 message"),
                "\(template[0]): \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.jsonl").path), "a failed convert leaves no output")
    }

    /// A conversion that fails part way, on a bad record, removes what it had written.
    @Test func aConversionThatFailsLeavesNoOutput() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let good = try String(contentsOf: Fixture.packageRoot.appendingPathComponent("captures/loopback-session.jsonl"), encoding: .utf8)
        var lines = good.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        lines.insert("{\"t_ns\": \"not a number\"}", at: min(500, lines.count))
        let input = dir.appendingPathComponent("bad.jsonl"), output = dir.appendingPathComponent("out.pcap")
        try (lines.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)
        let result = try kinetrace(["convert", input.path, output.path])
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("line 501"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }
}
