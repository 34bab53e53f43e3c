import Foundation
import KinetraceTestSupport
import Testing

/// Issue 24, finding 10: standard input works wherever a file does, as `-`, `/dev/stdin`, a
/// pipe (`<(cat t.jsonl)`) or a FIFO. Each was read up to three times (to sniff it, to find a
/// capture's port, to read it), so a FIFO blocked for ever in open() and a pipe was misread.
@Suite struct OnceReadInputTests {
    static func bundled(_ name: String) -> String { Fixture.packageRoot.appendingPathComponent("captures/\(name)").path }

    /// inspect's JSON without the field naming the input.
    func summary(_ stdout: String) throws -> NSDictionary {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])
        // The header's notes name the input, and a capture's header is stamped when read.
        return object.filter { !["source", "trace", "bytes", "header"].contains($0.key) } as NSDictionary
    }

    @Test(arguments: [("synthetic-session.jsonl", "motionlink-v1"), ("loopback-session.pcap", "motionlink-v1"),
                      ("keepcalm-session.pcap", "keepcalm-json")])
    func standardInputAsDashOrDevStdinReadsAsTheFileDoes(_ name: String, _ wireProtocol: String) throws {
        let path = Self.bundled(name)
        let direct = try KinetraceTestSupport.kinetrace(["inspect", path, "--protocol", wireProtocol, "--format", "json"])
        try #require(direct.status == 0, "\(direct.stderr)")
        // Through a pipe (cat |) and as a redirected file (<), each spelled - and /dev/stdin.
        for (script, spelling) in [("cat \"$1\" | \"$0\" inspect - --protocol \"$2\" --format json", "- from a pipe"),
                                   ("cat \"$1\" | \"$0\" inspect /dev/stdin --protocol \"$2\" --format json", "/dev/stdin from a pipe"),
                                   ("\"$0\" inspect - --protocol \"$2\" --format json < \"$1\"", "- from a file")] {
            let piped = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", script, try Fixture.binary.path, path, wireProtocol])
            #expect(piped.status == 0, "\(spelling): \(piped.stderr)")
            #expect(try summary(piped.stdout) == summary(direct.stdout), "\(name) through \(spelling) reads as the file does")
            #expect(!piped.stderr.contains("kinetrace-input-"), "messages name the input, not the private copy: \(piped.stderr)")
        }
    }

    /// A FIFO with a writer that opens it once: every command that reads a file reads it.
    @Test(arguments: [
        ["inspect", "FIFO"],
        ["convert", "FIFO", "OUT.pcap"],
        ["latency", "FIFO"],
        ["conform", "--capture", "FIFO"],
        ["gestures", "eval", "FIFO", "--detector", "threshold-refractory"],
        ["replay", "FIFO", "--to", "127.0.0.1:9", "--dry-run"],
    ])
    func aFIFOIsReadOnceAndWhole(_ arguments: [String]) throws {
        // conform's passive cases pass on the bundled loopback capture; the synthetic trace feeds the rest.
        let input = arguments[0] == "conform" ? Self.bundled("loopback-session.pcap") : Fixture.bundledTrace
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let fifo = dir.appendingPathComponent("in.fifo").path
        try #require(mkfifo(fifo, 0o600) == 0)
        // The writer opens the FIFO once and writes the whole trace, as `cat t > fifo` does.
        let writer = try Background(URL(fileURLWithPath: "/bin/sh"), ["-c", "cat \"$0\" > \"$1\"", input, fifo])
        let resolved = arguments.map { $0 == "FIFO" ? fifo : $0.replacingOccurrences(of: "OUT", with: dir.appendingPathComponent("out").path) }
        let result = try KinetraceTestSupport.kinetrace(resolved, timeout: 60)
        let written = try writer.wait(timeout: 10)
        #expect(written.status == 0, "the writer was not read to the end: \(written.stderr)")
        #expect(result.status == 0 || (arguments[0] == "gestures" && result.status == 1), "\(arguments): \(result.stderr)")
        #expect(!result.stderr.contains("error"), "\(arguments): \(result.stderr)")
        if arguments[0] == "convert" {
            let count = try run(URL(fileURLWithPath: "/usr/bin/env"), ["tcpdump", "-nn", "-r", dir.appendingPathComponent("out.pcap").path])
            #expect(count.stdout.split(separator: "\n").count == 1846, "every frame and ack of the bundled trace")
        }
    }

    /// The private copy lives in TMPDIR and is gone when the command ends, whether it succeeded or failed.
    /// Standard input named twice is one input read once: the second `-` finds the first's copy
    /// (it was registered as "standard input" and looked up as "-", so it re-read an empty stdin).
    @Test func standardInputNamedTwiceIsTheSameInput() throws {
        let path = Self.bundled("synthetic-session.jsonl")
        let result = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "cat \"$1\" | \"$0\" latency - - --format json",
                                                           try Fixture.binary.path, path])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let traces = try #require(report["traces"] as? [[String: Any]])
        #expect(traces.count == 2)
        let measures = traces.map { ($0["measures"] as? [Any])?.count ?? 0 }
        #expect(measures[0] > 0 && measures[0] == measures[1], "\(measures)")
    }

    @Test func thePrivateCopyIsRemovedOnSuccessAndOnError() throws {
        let tmp = try Fixture.temporaryDirectory()
        defer { Fixture.remove(tmp) }
        for (input, status) in [(try Data(contentsOf: URL(fileURLWithPath: Fixture.bundledTrace)), Int32(0)), (Data("garbage\n".utf8), 65)] {
            let result = try run(URL(fileURLWithPath: "/usr/bin/env"),
                                 ["TMPDIR=\(tmp.path)", "sh", "-c", "\"$0\" inspect - < \"$1\"", try Fixture.binary.path,
                                  try writeTemporary(input, in: tmp)])
            #expect(result.status == status, "\(result.stderr)")
            if status == 65 { #expect(result.stderr.contains("error: standard input: line 1"), "\(result.stderr)") }
            let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter { $0.hasPrefix("kinetrace-input-") }
            #expect(left.isEmpty, "left behind: \(left)")
        }
    }

    /// A device that never ends (/dev/zero) would be copied until the disk filled: refused, exit 66.
    @Test func anEndlessDeviceIsRefusedNotCopied() throws {
        for device in ["/dev/zero", "/dev/urandom"] {
            let result = try KinetraceTestSupport.kinetrace(["inspect", device])
            #expect(result.status == 66 && result.stderr.contains("\(device): is a device"), "\(result.stderr)")
        }
    }

    private func writeTemporary(_ data: Data, in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("input-\(UUID().uuidString)").path
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }
}
