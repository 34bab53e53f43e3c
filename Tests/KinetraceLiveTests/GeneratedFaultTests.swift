import Foundation
import KinetraceConformance
import KinetraceTestSupport
import KinetraceWire
import Testing

/// Every case a suite derives from a declaration can fail: for each, and each fault it names, a
/// host with that fault (the reference host run on a mutated declaration, or with `--fault`) is
/// judged by the unmodified declaration's suite, and that case FAILs. A derived case no fault can
/// fail would check nothing.
/// The trials run in parallel: each asserts a FAIL, which a loaded machine cannot turn into a PASS.
@Suite struct GeneratedFaultTests {
    /// The declarations whose derived suites are proven here.
    static let declarations = ["examples/protocols/osc-motion.json", "examples/protocols/ndjson-motion.json",
                               "specs/protocols/keepcalm-json.json", "specs/protocols/attitude-stream.json",
                               // Length-prefixed binary over TCP with a CRC-16, an apply host: the framing and check the others lack.
                               "Fuzz/declarations/length-prefix-tcp.json",
                               // MotionLink v1's declaration under another name: a declared protocol whose decisions are replies.
                               replyingCopy]

    /// specs/protocols/motionlink-v1.json renamed, so it is a declared protocol, not the compiled one (written once per run).
    static let replyingCopy: String = {
        let source = Fixture.packageRoot.appendingPathComponent("specs/protocols/motionlink-v1.json")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kinetrace-generated-faults-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("motionlink-declared.json")
        let text = (try? String(contentsOf: source, encoding: .utf8))?.replacingOccurrences(of: "\"name\": \"motionlink-v1\"", with: "\"name\": \"motionlink-declared\"") ?? ""
        try? Data(text.utf8).write(to: file)
        return file.path
    }()

    static func url(_ path: String) -> URL { path.hasPrefix("/") ? URL(fileURLWithPath: path) : Fixture.packageRoot.appendingPathComponent(path) }

    struct Trial: CustomTestStringConvertible, Sendable {
        var declaration: String
        var caseID: String
        var fault: GeneratedFault
        var testDescription: String { "\(URL(fileURLWithPath: declaration).lastPathComponent) \(caseID) ← \(fault)" }
    }

    static func derived(_ path: String) throws -> [any DerivedActiveCase] {
        let url = Self.url(path)
        let declared = try DeclaredProtocol.read(Array(try Data(contentsOf: url)), path: url.path)
        // The suite conform runs: a built-in protocol's declaration gets its built-in suite, derived cases and all.
        let suite = try #require(ConformanceSuite.suite(for: declared))
        return suite.activeCases.compactMap { $0 as? any DerivedActiveCase }
    }

    static let trials: [Trial] = declarations.flatMap { path in
        ((try? derived(path)) ?? []).flatMap { c in c.faults.map { Trial(declaration: path, caseID: c.info.id, fault: $0) } }
    }

    @Test func everyDerivedCaseNamesAFault() throws {
        for path in Self.declarations {
            let cases = try Self.derived(path)
            #expect(cases.count >= 7, "\(path): \(cases.map(\.info.id))")
            for c in cases { #expect(!c.faults.isEmpty, "\(path) \(c.info.id) names no fault that fails it") }
        }
    }

    /// The reference host built with the fault, as a command the stdio adapter runs.
    static func faultyHost(_ trial: Trial, in dir: URL) throws -> String {
        let original = Self.url(trial.declaration)
        var declaration = original.path
        var extra: [String] = []
        switch trial.fault {
        case .declaration(let mutation):
            let text = try #require(mutation.apply(to: Array(try Data(contentsOf: original))),
                                    "\(trial.caseID) names \(mutation), which changes nothing in \(trial.declaration)")
            let file = dir.appendingPathComponent("mutated.json")
            try Data(text.utf8).write(to: file)
            declaration = file.path
        case .host(let name):
            extra = ["--fault", name]
        }
        return ([try Fixture.binary.path, "host", "--stdio", "--observe", "--protocol", declaration] + extra).map { "'\($0)'" }.joined(separator: " ")
    }

    @Test(arguments: trials) func theFaultFailsItsCase(_ trial: Trial) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let host = try Self.faultyHost(trial, in: dir)
        let declaration = Self.url(trial.declaration).path
        let run = try kinetrace(["conform", "--protocol", declaration, "--exec", host, "--cases", trial.caseID, "--format", "json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stderr)")
        let result = try #require((report["cases"] as? [[String: Any]])?.first { $0["id"] as? String == trial.caseID }, "\(report)")
        #expect(result["verdict"] as? String == "FAIL", "\(trial.testDescription): \(result)")
        #expect(run.status == 1, "\(run.stderr)")
    }
}
