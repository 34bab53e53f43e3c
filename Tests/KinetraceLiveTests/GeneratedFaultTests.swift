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

    /// specs/protocols/motionlink-v1.json renamed, so it is a declared protocol, not the compiled one: written once per
    /// run inside the build folder (ignored by git, rewritten each run), so no test leaves it behind in /tmp.
    static let replyingCopy: String = {
        let source = Fixture.packageRoot.appendingPathComponent("specs/protocols/motionlink-v1.json")
        let dir = Fixture.packageRoot.appendingPathComponent(".build/kinetrace-test-fixtures")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("motionlink-declared.json")
        let text = (try? String(contentsOf: source, encoding: .utf8))?.replacingOccurrences(of: "\"name\": \"motionlink-v1\"", with: "\"name\": \"motionlink-declared\"") ?? ""
        try? Data(text.utf8).write(to: file)
        return file.path
    }()

    static func url(_ path: String) -> URL { path.hasPrefix("/") ? URL(fileURLWithPath: path) : Fixture.packageRoot.appendingPathComponent(path) }

    /// One faulty host and the cases of one declaration's suite that name its fault: one conform run judges them all.
    struct Trial: CustomTestStringConvertible, Sendable {
        var declaration: String
        var caseIDs: [String]
        var fault: GeneratedFault
        var testDescription: String { "\(URL(fileURLWithPath: declaration).lastPathComponent) ← \(fault): \(caseIDs.joined(separator: ", "))" }
    }

    static func derived(_ path: String) throws -> [any DerivedActiveCase] {
        let url = Self.url(path)
        let declared = try DeclaredProtocol.read(Array(try Data(contentsOf: url)), path: url.path)
        // The suite conform runs: a built-in protocol's declaration gets its built-in suite, derived cases and all.
        let suite = try #require(ConformanceSuite.suite(for: declared))
        return suite.activeCases.compactMap { $0 as? any DerivedActiveCase }
    }

    static let trials: [Trial] = declarations.flatMap { path in
        var byFault: [(GeneratedFault, [String])] = []
        for c in (try? derived(path)) ?? [] {
            for fault in c.faults {
                if let k = byFault.firstIndex(where: { $0.0 == fault }) { byFault[k].1.append(c.info.id) } else { byFault.append((fault, [c.info.id])) }
            }
        }
        return byFault.map { Trial(declaration: path, caseIDs: $0.1, fault: $0.0) }
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
                                    "\(trial.caseIDs) name \(mutation), which changes nothing in \(trial.declaration)")
            let file = dir.appendingPathComponent("mutated.json")
            try Data(text.utf8).write(to: file)
            declaration = file.path
        case .host(let name):
            extra = ["--fault", name]
        }
        return ([try Fixture.binary.path, "host", "--stdio", "--observe", "--protocol", declaration] + extra).map { "'\($0)'" }.joined(separator: " ")
    }

    /// Every case that names the fault FAILs against a host that has it.
    @Test(arguments: trials) func theFaultFailsEachCaseThatNamesIt(_ trial: Trial) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let host = try Self.faultyHost(trial, in: dir)
        let declaration = Self.url(trial.declaration).path
        let run = try kinetrace(["conform", "--protocol", declaration, "--exec", host, "--format", "json"] + trial.caseIDs.flatMap { ["--cases", $0] },
                                timeout: 120)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stderr)")
        let cases = report["cases"] as? [[String: Any]] ?? []
        for id in trial.caseIDs {
            let result = try #require(cases.first { $0["id"] as? String == id }, "\(id) missing from \(report)")
            #expect(result["verdict"] as? String == "FAIL", "\(trial.testDescription): \(id) \(result)")
        }
        #expect(run.status == 1, "\(run.stderr)")
    }

    /// The trials cover every (case, fault) pair the derived cases name.
    @Test func theTrialsCoverEveryNamedFault() throws {
        let pairs = Self.trials.reduce(0) { $0 + $1.caseIDs.count }
        let named = try Self.declarations.reduce(0) { total, path in try total + Self.derived(path).reduce(0) { $0 + $1.faults.count } }
        #expect(pairs == named && pairs >= 90, "\(pairs) pairs in trials, \(named) named")
    }
}
