import Foundation
import KinetraceTestSupport
import Testing

/// scripts/check-layers (which `make test` runs before building) passes on the
/// real tree and fails on violations planted in a copy of its Sources/.
/// Run with --skip-package: fast, and no swift toolchain lock needed.
@Suite struct LayeringTests {
    static var script: URL { Fixture.packageRoot.appendingPathComponent("scripts/check-layers") }

    func checkLayers(root: URL? = nil) throws -> RunResult {
        try run(Self.script, (root.map { ["--root", $0.path] } ?? []) + ["--skip-package"])
    }

    /// Copies the real Sources/ into a fresh directory and appends `line` to the
    /// first Swift file (by path) of `target` (a path under Sources/); returns the
    /// copy's root and the planted file's path relative to it.
    func plant(_ line: String, in target: String) throws -> (root: URL, file: String) {
        let root = try Fixture.temporaryDirectory()
        do {
            try FileManager.default.copyItem(at: Fixture.packageRoot.appendingPathComponent("Sources"),
                                             to: root.appendingPathComponent("Sources"))
            let directory = root.appendingPathComponent("Sources/\(target)")
            let files = try FileManager.default.subpathsOfDirectory(atPath: directory.path)
                .filter { $0.hasSuffix(".swift") }.sorted()
            guard let first = files.first else { throw FixtureError("no Swift file under Sources/\(target)") }
            let handle = try FileHandle(forWritingTo: directory.appendingPathComponent(first))
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("\n\(line)\n".utf8))
            return (root, "Sources/\(target)/\(first)")
        } catch {
            Fixture.remove(root)
            throw error
        }
    }

    /// The violation lines about `file` (the checker names it as `file:line:`).
    func lines(about file: String, in result: RunResult) -> [Substring] {
        result.stdout.split(separator: "\n").filter { $0.hasPrefix("check-layers: \(file):") }
    }

    @Test func realTreePasses() throws {
        let result = try checkLayers()
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(" imports checked, 0 violations"), "\(result.stdout)")
        #expect(!result.stdout.contains(" 0 targets"), "\(result.stdout)")
    }

    @Test func upwardImportFails() throws {
        let (root, file) = try plant("import KinetraceTrace", in: "Wire/KinetraceWire")
        defer { Fixture.remove(root) }
        let result = try checkLayers(root: root)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let found = lines(about: file, in: result)
        #expect(found.contains { $0.contains("KinetraceWire (wire) imports KinetraceTrace (formats): upward import") },
                "\(result.stdout)")
    }

    @Test func sidewaysImportFails() throws {
        let (root, file) = try plant("import KinetraceReplay", in: "Engines/KinetraceAnalysis")
        defer { Fixture.remove(root) }
        let result = try checkLayers(root: root)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let found = lines(about: file, in: result)
        #expect(found.contains {
            $0.contains("KinetraceAnalysis (engines) imports KinetraceReplay (engines): same-layer import not in the allow-list")
        }, "\(result.stdout)")
    }

    @Test func foundationInFormatsFails() throws {
        let (root, file) = try plant("import Foundation", in: "Formats/KinetraceTrace")
        defer { Fixture.remove(root) }
        let result = try checkLayers(root: root)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let found = lines(about: file, in: result)
        #expect(found.contains { $0.contains("KinetraceTrace (formats) imports Foundation") }, "\(result.stdout)")
    }

    /// The JUnit writer imports nothing at all, not even a same-layer module or libc.
    @Test func theJUnitWriterStaysPure() throws {
        for (module, why) in [("KinetraceSupport", "same-layer import not in the allow-list"),
                              ("Glibc", "KinetraceJUnit is pure: it may use no module at all")] {
            let (root, file) = try plant("import \(module)", in: "Support/KinetraceJUnit")
            defer { Fixture.remove(root) }
            let result = try checkLayers(root: root)
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            #expect(lines(about: file, in: result).contains { $0.contains("KinetraceJUnit (support) imports \(module)") && $0.contains(why) },
                    "\(result.stdout)")
        }
    }

    /// Never green on nothing: a tree without Sources/ fails.
    @Test func emptyTreeFails() throws {
        let root = try Fixture.temporaryDirectory()
        defer { Fixture.remove(root) }
        let result = try checkLayers(root: root)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("no targets found"), "\(result.stdout)")
        #expect(result.stdout.contains("check-layers: 0 targets, 0 imports checked"), "\(result.stdout)")
    }
}
