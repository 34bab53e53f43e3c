import Foundation
import KinetraceTestSupport
import Testing

/// Shell completion offers the values a user would otherwise look up: detector names and
/// the bundled networks (issue 16, item 5).
@Suite struct CompletionTests {
    @Test func bashCompletionOffersDetectors() throws {
        let script = try kinetrace("--generate-completion-script", "bash")
        #expect(script.status == 0, "\(script.stderr)")
        let detectorCase = try #require(script.stdout.range(of: "'--detector')"), "no --detector case in the bash script")
        let afterDetector = script.stdout[detectorCase.upperBound...].prefix(400)
        for name in ["threshold", "threshold-latch", "threshold-refractory", "badger-jump", "badger-duck", "badger-tilt", "attitude-tilt"] {
            #expect(afterDetector.contains("'\(name)'"), "\(name) offered after --detector")
        }
        #expect(script.stdout.contains("---completion replay -- --network"), "--network completes through the binary")
    }

    /// The binary answers the script's question with the bundled networks, then JSON files in the directory.
    @Test func networkCompletionNamesTheBundledNetworks() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        try "{}".write(to: dir.appendingPathComponent("stadium.json"), atomically: true, encoding: .utf8)
        try "x".write(to: dir.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        // The shell runs the completion in the user's directory, with the words typed so far
        // (the word being completed, the cursor's place in it, then the words).
        let result = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd \"$1\" && exec \"$2\" ---completion replay -- --network 3 0 kinetrace replay --network ''", "sh",
                                                           dir.path, try Fixture.binary.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n") == ["crowded-event", "harsh", "lab-5ghz", "perfect", "stadium.json"])
    }
}
