import Foundation
import KinetraceTestSupport
import Testing

/// Issue 24, finding 12: a signal ends every command the same way, 130 for SIGINT and 143
/// for SIGTERM (128 + the signal's number, as `kinetrace --help` says), and an output file
/// left unfinished is removed, with a line saying so.
@Suite(.serialized) struct SignalExitTests {
    /// A gzip trace of 2,000,000 records (a few MB): long enough to work on that a signal
    /// always lands mid-run, even on a fast machine.
    static let longTrace: String = {
        let path = NSTemporaryDirectory() + "kinetrace-signal-test-\(getpid()).jsonl.gz"
        let result = try? run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import gzip, sys
            lines = open(sys.argv[1]).read().split("\\n")
            header, record = lines[0], next(l for l in lines if '"kind":"msg"' in l)
            with gzip.open(sys.argv[2], "wt", compresslevel=1) as out:
                out.write(header + "\\n")
                out.write((record + "\\n") * 2_000_000)
            """, Fixture.bundledTrace, path])
        precondition(result?.status == 0, "cannot make the long trace: \(result?.stderr ?? "")")
        return path
    }()

    func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }

    /// Starts `arguments`, waits until `ready` holds, sends `signal`, and returns how it ended.
    func interrupt(_ arguments: [String], with signal: Int32, when ready: () -> Bool) throws -> RunResult {
        let child = try Background(try Fixture.binary, arguments)
        try waitUntil("\(arguments[0]) under way", timeout: 60) { ready() || !child.process.isRunning }
        #expect(child.process.isRunning, "\(arguments[0]) ended before the signal: \(child.stderr)")
        return try child.stop(signal)
    }

    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func anInterruptedSynthExitsAsTheSignalSaysAndRemovesItsOutput(_ signal: Int32, _ status: Int32) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("s.jsonl").path
        let result = try interrupt(["synth", "-o", out, "--controllers", "100", "--duration", "100000"], with: signal) { size(out) > 200_000 }
        #expect(result.status == status && !result.signalled, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out), "half a session passes for a whole one")
        #expect(result.stderr.contains("interrupted: removed the unfinished \(out)"), "\(result.stderr)")
    }

    @Test func anInterruptedConvertRemovesItsOutput() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("c.pcap").path
        let result = try interrupt(["convert", Self.longTrace, out], with: SIGTERM) { size(out) > 100_000 }
        #expect(result.status == 143, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func anInterruptedMergeRemovesItsOutput() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("m.jsonl").path
        // 400,000 short event records in time order beside the bundled trace: merge's second pass writes for seconds.
        let events = dir.appendingPathComponent("events.jsonl").path
        let made = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import sys
            header = open(sys.argv[1]).readline()
            with open(sys.argv[2], "w") as out:
                out.write(header)
                out.writelines('{"kind":"event","t_ns":%d,"event":"tick"}\\n' % (1767225600000000000 + i * 1000) for i in range(400000))
            """, Fixture.bundledTrace, events])
        try #require(made.status == 0, "\(made.stderr)")
        let result = try interrupt(["merge", events, Fixture.bundledTrace, "-w", out], with: SIGTERM) { size(out) > 100_000 }
        #expect(result.status == 143, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(result.stderr.contains("interrupted: removed the unfinished \(out)"), "\(result.stderr)")
    }

    /// Readers that write no file exit as the signal says too (they exited 143 for SIGTERM while the help said 130).
    @Test(arguments: [["inspect"], ["latency"], ["conform", "--capture"]])
    func readersExitAsTheSignalSays(_ command: [String]) throws {
        for (signal, status) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
            let started = Date()
            let result = try interrupt(command + [Self.longTrace], with: signal) { Date().timeIntervalSince(started) > 0.5 }
            #expect(result.status == status && !result.signalled, "\(command) \(signal): \(result.stderr)")
        }
    }

    /// Commands that stop cleanly on a signal (replay finishes its record and summary) said 130 for SIGTERM too.
    @Test func anInterruptedReplayExitsAsTheSignalSays() throws {
        let host = try Background.kinetrace("host", "--port", "0")
        defer { _ = try? host.stop() }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        for (signal, status) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
            let started = Date()
            let result = try interrupt(["replay", Fixture.bundledTrace, "--to", "127.0.0.1:\(port)", "--loop", "0"], with: signal) {
                Date().timeIntervalSince(started) > 1
            }
            #expect(result.status == status && !result.signalled, "\(signal): \(result.stderr)")
        }
    }

    /// The help says what the commands do.
    @Test func theHelpNamesBothStatuses() throws {
        let help = try kinetrace("--help")
        #expect(help.stdout.contains("130  interrupted by SIGINT, 143 by SIGTERM"), "\(help.stdout)")
    }
}
