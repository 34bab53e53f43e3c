import Foundation
import KinetraceTestSupport
import KinetraceTrace
import Testing

/// `kinetrace synth --persona`: the gesture-session synthesizer behind the CLI.
@Suite struct SynthUserCommandTests {
    @Test func writesSamplesFramesAndLabels() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("steering.jsonl").path
        let result = try kinetrace("synth", "--persona", "steering", "--duration", "10", "--motion-hz", "50", "--seed", "3", "--out", path)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("persona steering, seed 3"))
        // The header keeps its "user" member: traces written before personas were called personas read the same.
        let reader = try TraceReader(path: path)
        #expect(reader.header.extra["user"] == .string("steering"))
        var samples = 0, frames = 0, labels = 0
        while let record = try reader.next() {
            switch record {
            case .motion: samples += 1
            case .message: frames += 1
            case .label: labels += 1
            case .event: break
            }
        }
        #expect(samples == 500)
        #expect(frames == 100)
        #expect(labels > 0)
    }

    @Test func rejectsOptionsThatDoNotApply() throws {
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--motion-hz", "50").status == 64)
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--user", "steady", "--motion-hz", "0").status == 64)
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--user", "steady", "--motion-hz", "1001").status == 64)
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--user", "steady", "--corrupt", "0.1").status == 64)
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--user", "steady", "--script", "idle").status == 64)
        #expect(try kinetrace("synth", "--out", "/tmp/x", "--user", "nobody").status == 64)
    }
}
