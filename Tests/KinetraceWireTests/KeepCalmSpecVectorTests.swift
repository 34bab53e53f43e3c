import Foundation
import Testing
import KinetraceWire

/// The vectors of specs/keepcalm-json.md, read from the spec itself.
struct KeepCalmVector: CustomTestStringConvertible, Sendable {
    var name: String
    var expect: String
    var jump: Bool
    var canonical: Bool
    var bytes: [UInt8]
    var testDescription: String { name }

    static func all() throws -> [KeepCalmVector] {
        try SpecBlocks.read("specs/keepcalm-json.md", marker: "vector", fence: "json").map { block in
            KeepCalmVector(name: block.attributes["name"] ?? "?", expect: block.attributes["expect"] ?? "?",
                           jump: block.attributes["jump"] == "yes", canonical: block.attributes["canonical"] == "yes",
                           bytes: Array(block.lines.joined(separator: "\n").utf8))
        }
    }
}

/// Marked blocks of a spec: `<!-- marker: k=v … -->` followed by a fenced block.
enum SpecBlocks {
    struct Block {
        var attributes: [String: String]
        var lines: [String]
    }

    struct MalformedSpec: Error, CustomStringConvertible {
        var description: String
    }

    static func read(_ path: String, marker: String, fence: String) throws -> [Block] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let lines = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8).components(separatedBy: "\n")
        var blocks: [Block] = []
        let prefix = "<!-- \(marker):"
        for (i, line) in lines.enumerated() where line.hasPrefix(prefix) {
            var attributes: [String: String] = [:]
            for part in line.dropFirst(prefix.count).dropLast(4).split(separator: " ") {
                let kv = part.split(separator: "=", maxSplits: 1)
                if kv.count == 2 { attributes[String(kv[0])] = String(kv[1]) }
            }
            guard i + 1 < lines.count, lines[i + 1] == "```\(fence)" else {
                throw MalformedSpec(description: "\(path):\(i + 1): a \(marker) marker must be followed by a ```\(fence) block")
            }
            var body: [String] = []
            var j = i + 2
            while j < lines.count, lines[j] != "```" { body.append(lines[j]); j += 1 }
            guard j < lines.count else { throw MalformedSpec(description: "\(path):\(i + 1): unclosed block") }
            blocks.append(Block(attributes: attributes, lines: body))
        }
        return blocks
    }
}

@Suite struct KeepCalmSpecVectorTests {
    @Test func theSpecHoldsTheRequiredVectors() throws {
        let vectors = try KeepCalmVector.all()
        #expect(Set(vectors.map(\.name)).isSuperset(of: [
            "motion-canonical", "motion-reordered", "motion-threshold", "motion-nan-string", "motion-huge",
            "motion-lowercase-id", "motion-wrong-type", "motion-missing-z", "motion-duplicate-y", "not-json",
        ]))
        #expect(Set(vectors.map(\.expect)).isSuperset(of: ["valid", "malformed", "non_finite", "out_of_range"]))
    }

    @Test(arguments: try KeepCalmVector.all())
    func codecAgreesWithVector(_ vector: KeepCalmVector) throws {
        switch (vector.expect, KeepCalmJSON.decodeResult(vector.bytes)) {
        case ("valid", .success(let message)):
            if vector.canonical {
                #expect(KeepCalmJSON.encode(message) == vector.bytes, "the canonical form re-encodes to itself")
            }
            // Whatever the input form, the canonical encoding decodes to the same message.
            #expect(KeepCalmJSON.decodeResult(KeepCalmJSON.encode(message)) == .success(message))
        case (let reason, .failure(let error)):
            #expect(error.code.name == reason, "\(error)")
        case (_, let result):
            Issue.record("\(vector.name): expected \(vector.expect), got \(result)")
        }
    }

    @Test(arguments: try KeepCalmVector.all())
    func hostModelJumpsAsTheVectorSays(_ vector: KeepCalmVector) {
        var model = KeepCalmJSON.makeHostModel(rule: .default)
        let verdict = model.accept(KeepCalmJSON.facts(vector.bytes), from: 0, receivedNs: 1_000_000_000)
        #expect((verdict.decision?.name.description == "jump") == vector.jump)
        if vector.expect != "valid" { #expect(verdict == .dropped(reason: vector.expect)) }
    }
}
