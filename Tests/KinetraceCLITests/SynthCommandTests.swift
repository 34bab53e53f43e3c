import Foundation
import KinetraceTestSupport
import KinetraceTrace
import Testing

@Suite struct SynthCommandTests {
    @Test func sameSeedSameFile() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("a.jsonl").path, b = dir.appendingPathComponent("b.jsonl").path
        for path in [a, b] {
            let result = try kinetrace("synth", "--out", path, "--controllers", "2", "--duration", "10", "--seed", "77", "--corrupt", "0.05")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("seed 77"))
        }
        #expect(FileManager.default.contentsEqual(atPath: a, andPath: b))
    }

    @Test func rejectsNonsenseOptions() throws {
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--controllers", "0").status == 64)
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--corrupt", "2").status == 64)
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--duration", "-1").status == 64)
        #expect(try kinetrace("synth").status == 64)
    }

    @Test func unwritableOutputIsAnErrorNotACrash() throws {
        let result = try kinetrace("synth", "--out", "/nonexistent-dir/x.jsonl", "--duration", "1")
        #expect(result.status == 73)
        #expect(result.stderr.hasPrefix("kinetrace: error: /nonexistent-dir/x.jsonl: cannot create"))
    }

    /// A writer killed with SIGKILL mid-run leaves a file every reader accepts:
    /// complete records up to the kill, at most one truncated line.
    @Test func recordingSurvivesSIGKILL() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("killed.jsonl").path
        let process = Process()
        process.executableURL = try Fixture.binary
        process.arguments = ["synth", "--out", path, "--controllers", "200", "--duration", "86400", "--seed", "5"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(60)
        var size = 0
        while Date() < deadline, size < 2_000_000, process.isRunning {
            usleep(20_000)
            size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        }
        #expect(process.isRunning, "synth finished before it could be killed")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)

        let reader = try TraceReader(path: path)
        var records = 0
        while try reader.next() != nil { records += 1 }
        #expect(records > 1000)
        let inspect = try kinetrace("inspect", "--format", "json", path)
        #expect(inspect.status == 0, "\(inspect.stderr)")
    }
}
