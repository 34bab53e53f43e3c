import Foundation
import KinetraceTestSupport
import Testing

/// scripts/check-vocabulary (which `make test` runs) passes on the real tree, finds
/// each kind of protocol word planted in a generic file of a small tree, leaves a
/// protocol's own folder alone, and refuses a tree with nothing to check.
@Suite struct VocabularyCheckTests {
    static var script: URL { Fixture.packageRoot.appendingPathComponent("scripts/check-vocabulary") }

    func check(root: URL? = nil) throws -> RunResult {
        try run(Self.script, root.map { ["--root", $0.path] } ?? [])
    }

    /// A tree with one generic engine file holding `text`, a wire folder for the protocol
    /// `Proto`, and that protocol's own suite folder holding every forbidden word.
    func tree(generic text: String) throws -> URL {
        let root = try Fixture.temporaryDirectory()
        let files = [
            "Sources/Engines/KinetraceThing/Thing.swift": text,
            "Sources/Wire/KinetraceWire/Proto/Proto.swift": "struct Proto {}\n",
            "Sources/Engines/KinetraceThing/Suites/Proto/Cases.swift": "// MotionLink's ack echoes t_ms (ML-ACK-RULE-1)\n",
        ]
        for (path, body) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(body.utf8).write(to: url)
        }
        return root
    }

    @Test func realTreePasses() throws {
        let result = try check()
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(" 0 findings"), "\(result.stdout)")
        #expect(!result.stdout.contains(": 0 files"), "\(result.stdout)")
    }

    @Test(arguments: [
        ("let x = 1 // KeepCalm's sum", "names a built-in protocol", "KeepCalm"),
        ("let help = \"see motionlink-v1\"", "names a built-in protocol", "motionlink"),
        ("/// the attitude stream sends them", "names a built-in protocol", "attitude stream"),
        ("// as ML-GESTURE-2 says", "cites a protocol's requirement ID", "ML-G"),
        ("var unpairedAcks = 0", "says ack", "dAck"),
        ("let key = \"matched_acks\"", "says ack", "_ack"),
        ("// an ack per trigger", "says ack", "ack"),
        ("let tMs: UInt64 = 0", "says t_ms", "tMs"),
        ("data[\"t_ms\"] = 1", "says t_ms", "t_ms"),
    ])
    func plantedWordIsFound(line: String, why: String, matched: String) throws {
        let root = try tree(generic: "struct Thing {}\n\(line)\n")
        defer { Fixture.remove(root) }
        let result = try check(root: root)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let findings = result.stdout.split(separator: "\n").filter { $0.hasPrefix("check-vocabulary: Sources/") }
        #expect(findings.count == 1, "\(result.stdout)")
        #expect(findings.first?.hasPrefix("check-vocabulary: Sources/Engines/KinetraceThing/Thing.swift:2:") == true, "\(result.stdout)")
        #expect(findings.first?.contains(why) == true && findings.first?.contains("'\(matched)'") == true, "\(result.stdout)")
    }

    /// TCP's ACK, words that merely contain the letters, and the protocol's own folder pass.
    @Test func wordsThatAreNotTheProtocolsPass() throws {
        let root = try tree(generic: "struct Thing {}\n// the TCP ACK flag; a stack, a packet, feedback, tracking\nlet senderTimeMs = 0\n")
        defer { Fixture.remove(root) }
        let result = try check(root: root)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("check-vocabulary: 1 files, 3 lines checked, 1 protocol folders left out, 0 findings"), "\(result.stdout)")
    }

    @Test func treeWithNothingToCheckFails() throws {
        let root = try Fixture.temporaryDirectory()
        defer { Fixture.remove(root) }
        let result = try check(root: root)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("nothing to check"), "\(result.stderr)")
    }
}
