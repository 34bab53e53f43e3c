import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace protocol show --format markdown`: the normative page generated from a declaration.
@Suite struct DeclarationPageTests {
    static let examples = ["osc-motion", "ndjson-motion"]

    func page(_ path: String) throws -> RunResult {
        try kinetrace(["protocol", "show", path, "--format", "markdown"])
    }

    /// The bundled pages are exactly what their declarations generate.
    @Test(arguments: examples)
    func theCommittedPageIsTheGeneratedOne(_ name: String) throws {
        let declaration = Fixture.packageRoot.appendingPathComponent("examples/protocols/\(name).json").path
        let result = try page(declaration)
        #expect(result.status == 0, "\(result.stderr)")
        let committed = try String(contentsOf: Fixture.packageRoot.appendingPathComponent("examples/protocols/\(name).md"), encoding: .utf8)
        #expect(result.stdout == committed, "regenerate: kinetrace protocol show examples/protocols/\(name).json --format markdown > examples/protocols/\(name).md")
    }

    /// Every requirement ID, message kind and field of the declaration is on the page, and every
    /// table row has as many cells as its header.
    @Test(arguments: examples + ["../../specs/protocols/motionlink-v1", "../../specs/protocols/keepcalm-json", "../../specs/protocols/attitude-stream"])
    func thePageSaysEverythingTheDeclarationDoes(_ name: String) throws {
        let url = Fixture.packageRoot.appendingPathComponent("examples/protocols/\(name).json").standardizedFileURL
        let result = try page(url.path)
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        for requirement in json["requirements"] as? [[String: Any]] ?? [] {
            let id = try #require(requirement["id"] as? String)
            #expect(result.stdout.contains("| \(id) |"), "\(id) missing from the page of \(name)")
        }
        for message in json["messages"] as? [[String: Any]] ?? [] {
            let kind = try #require(message["kind"] as? String)
            #expect(result.stdout.contains("`\(kind)`"), "kind \(kind)")
            for field in message["fields"] as? [[String: Any]] ?? [] {
                let fieldName = try #require(field["name"] as? String)
                #expect(result.stdout.contains("| `\(fieldName)` |"), "field \(fieldName) of \(kind)")
            }
        }
        Self.expectWellFormedTables(result.stdout)
    }

    /// Text from the declaration cannot break the page: a `|` stays inside its cell and `<` opens no HTML.
    @Test func hostileTextStaysInItsCell() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let source = Fixture.packageRoot.appendingPathComponent("examples/protocols/ndjson-motion.json")
        var text = try String(contentsOf: source, encoding: .utf8)
        let requirement = #""text": "A host jumps when accel.y > 0.5 g and it is not already jumping; a jump lasts 400 ms of the host's arrival clock.""#
        #expect(text.contains(requirement))
        text = text.replacingOccurrences(of: requirement, with: #""text": "a | b <script>alert(1)</script> | c""#)
        let hostile = dir.appendingPathComponent("hostile.json")
        try Data(text.utf8).write(to: hostile)
        let result = try page(hostile.path)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#"a \| b &lt;script>alert(1)&lt;/script> \| c"#), "\(result.stdout)")
        #expect(!result.stdout.contains("<script>"))
        Self.expectWellFormedTables(result.stdout)
    }

    /// A compiled protocol's page is its spec: asking for one is a usage error that says where it is.
    @Test func aCompiledProtocolPointsAtItsSpec() throws {
        let result = try page("motionlink-v1")
        #expect(result.status == 64)
        #expect(result.stderr.contains("specs/motionlink-v1.md") && result.stderr.contains("specs/protocols/motionlink-v1.json"), "\(result.stderr)")
    }

    /// Each table's rows have the header's number of cells (a `\|` is not a cell border).
    static func expectWellFormedTables(_ page: String) {
        func cells(_ line: Substring) -> Int {
            var count = 0, previous: Character = " "
            for ch in line { if ch == "|" && previous != "\\" { count += 1 }; previous = ch }
            return count
        }
        var header: Int?
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("|") else { header = nil; continue }
            if let header { #expect(cells(line) == header, "\(line)") } else { header = cells(line) }
        }
    }
}
