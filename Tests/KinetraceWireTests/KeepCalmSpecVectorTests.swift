import Foundation
import Testing
import KinetraceWire

/// The vectors of specs/keepcalm-json.md, read from the spec itself.
struct KeepCalmVector: CustomTestStringConvertible, Sendable {
    var name: String
    var expect: String
    var jump: Bool
    var canonical: Bool
    /// Where the error is, when the vector says (`offset=`).
    var offset: Int?
    var bytes: [UInt8]
    var testDescription: String { name }

    static func all() throws -> [KeepCalmVector] {
        // JSON text as is; bytes that are not UTF-8 (KC-MSG-6) in hex.
        try SpecBlocks.read("specs/keepcalm-json.md", marker: "vector", fences: ["json", "hex"]).map { block in
            KeepCalmVector(name: block.attributes["name"] ?? "?", expect: block.attributes["expect"] ?? "?",
                           jump: block.attributes["jump"] == "yes", canonical: block.attributes["canonical"] == "yes",
                           offset: block.attributes["offset"].flatMap { Int($0) },
                           bytes: block.fence == "hex" ? try Hex.decode(block.lines.joined(separator: "\n")).get()
                                                       : Array(block.lines.joined(separator: "\n").utf8))
        }
    }
}

/// Marked blocks of a spec: `<!-- marker: k=v … -->` followed by a fenced block.
enum SpecBlocks {
    struct Block {
        var attributes: [String: String]
        var fence: String
        var lines: [String]
    }

    struct MalformedSpec: Error, CustomStringConvertible {
        var description: String
    }

    static func read(_ path: String, marker: String, fence: String) throws -> [Block] {
        try read(path, marker: marker, fences: [fence])
    }

    /// Blocks fenced with any of `fences`; each says which.
    static func read(_ path: String, marker: String, fences: [String]) throws -> [Block] {
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
            guard i + 1 < lines.count, let fence = fences.first(where: { lines[i + 1] == "```\($0)" }) else {
                throw MalformedSpec(description: "\(path):\(i + 1): a \(marker) marker must be followed by a ```\(fences.joined(separator: " or ```")) block")
            }
            var body: [String] = []
            var j = i + 2
            while j < lines.count, lines[j] != "```" { body.append(lines[j]); j += 1 }
            guard j < lines.count else { throw MalformedSpec(description: "\(path):\(i + 1): unclosed block") }
            blocks.append(Block(attributes: attributes, fence: fence, lines: body))
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
            "motion-escaped", "motion-duplicate-unknown", "motion-duplicate-escaped-name", "motion-lone-surrogate",
            "motion-overlong-utf8", "motion-surrogate-utf8",
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
            if let offset = vector.offset { #expect(error.offset == offset, "\(error)") }
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
