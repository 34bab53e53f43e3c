import Foundation
import KinetraceTestSupport
import Testing

/// Issue 27, part 8: the man pages `make install` writes (kinetrace-manual over
/// `kinetrace --experimental-dump-help`) are one per shown command, ASCII on disk, render
/// through man-db with every groff warning on and nothing on standard error, fit 80
/// columns, and keep the help's non-ASCII text (τ, →, σ, –, µ) instead of stripping it.
@Suite struct ManPageTests {
    /// man-db's own `man`: minimised Ubuntu images divert `man` to a stub and keep the real one as man.REAL.
    static let man: URL? = {
        let real = URL(fileURLWithPath: "/usr/bin/man.REAL")
        if FileManager.default.isExecutableFile(atPath: real.path) { return real }
        return try? Fixture.tool("man")
    }()
    static let manDB = Requirement("man (man-db; scripts/bootstrap installs it)", met: man != nil)

    /// `kinetrace-manual`, built next to `kinetrace` (`swift build --build-tests` builds both).
    static var generator: URL {
        get throws {
            let directory = try Fixture.binary.deletingLastPathComponent()
            let candidate = directory.appendingPathComponent("kinetrace-manual")
            guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
                throw FixtureError("kinetrace-manual not found next to kinetrace in \(directory.path); run `swift build --build-tests` first")
            }
            return candidate
        }
    }

    /// A command of the dump that gets a page: its page name and the text a user reads in its help.
    struct ShownCommand {
        let page: String
        let text: String
    }

    /// The shown commands of the dump, by walking it independently of the generator.
    static func shownCommands(_ command: [String: Any], path: [String] = []) -> [ShownCommand] {
        guard command["shouldDisplay"] as? Bool ?? true, let name = command["commandName"] as? String else { return [] }
        let here = path + [name]
        let arguments = (command["arguments"] as? [[String: Any]] ?? []).filter { $0["shouldDisplay"] as? Bool ?? true }
        let subcommands = (command["subcommands"] as? [[String: Any]] ?? []).filter { $0["shouldDisplay"] as? Bool ?? true }
        var texts = [command["abstract"], command["discussion"]].compactMap { $0 as? String }
        for argument in arguments {
            texts += ["abstract", "discussion", "valueName", "defaultValue"].compactMap { argument[$0] as? String }
            texts += argument["allValues"] as? [String] ?? []
        }
        texts += subcommands.compactMap { $0["abstract"] as? String }
        return [ShownCommand(page: here.joined(separator: ".") + ".1", text: texts.joined(separator: "\n"))]
            + subcommands.flatMap { shownCommands($0, path: here) }
    }

    /// The dump, and every page generated from it into a fresh directory (the caller removes it).
    static func generate() throws -> (directory: URL, dump: [String: Any]) {
        let dumped = try kinetrace("--experimental-dump-help")
        #expect(dumped.status == 0, "\(dumped.stderr)")
        let directory = try Fixture.temporaryDirectory()
        do {
            let dumpFile = directory.appendingPathComponent("dump.json")
            try dumped.stdout.write(to: dumpFile, atomically: true, encoding: .utf8)
            let pages = directory.appendingPathComponent("pages")
            let result = try run(try generator, ["--dump", dumpFile.path, "--output-directory", pages.path])
            #expect(result.status == 0 && result.stderr.isEmpty, "kinetrace-manual: status \(result.status): \(result.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(dumped.stdout.utf8))
            let dump = try #require((object as? [String: Any])?["command"] as? [String: Any], "the dump has no command")
            return (pages, dump)
        } catch {
            Fixture.remove(directory)
            throw error
        }
    }

    static func pageFiles(in directory: URL) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".1") })
    }

    /// What a user reads: man's output with any overstriking (X BACKSPACE X) taken out.
    static func plain(_ rendered: String) -> String {
        var out: [Character] = []
        for character in rendered {
            if character == "\u{8}" { _ = out.popLast() } else { out.append(character) }
        }
        return String(out)
    }

    static func nonASCII(_ text: String) -> Set<Character> {
        Set(text.filter { !$0.isASCII })
    }

    @Test func onePagePerShownCommandAllASCIIWithNoEmptyLine() throws {
        let (directory, dump) = try Self.generate()
        defer { Fixture.remove(directory.deletingLastPathComponent()) }
        let expected = Set(Self.shownCommands(dump).map(\.page))
        #expect(expected.contains("kinetrace.1") && expected.contains("kinetrace.replay.1") && expected.contains("kinetrace.gestures.eval.1"))
        #expect(try Self.pageFiles(in: directory) == expected)
        for page in expected.sorted() {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(page))
            #expect(!bytes.isEmpty && bytes.allSatisfy { $0 < 0x80 }, "\(page) is not pure ASCII")
            let text = String(decoding: bytes, as: UTF8.self)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(text.hasSuffix("\n") && !lines.contains { $0.trimmingCharacters(in: .whitespaces).isEmpty },
                    "\(page) has an empty input line")
            #expect(text.contains(".Sh NAME") && text.contains(".Sh SYNOPSIS") && text.contains(".Sh DESCRIPTION"), "\(page)")
        }
        // Hidden options (shouldDisplay false) are left out: replay's --profile, capture's --buffer-mib.
        let replay = try String(contentsOf: directory.appendingPathComponent("kinetrace.replay.1"), encoding: .utf8)
        #expect(!replay.contains("Fl Fl \\&profile") && replay.contains("Fl Fl \\&shard"))
    }

    @Test(.enabled(if: ManPageTests.manDB.runs, "needs man (man-db); with CI set this fails instead"))
    func everyPageRendersCleanlyInEightyColumnsAndKeepsItsNonASCIIText() throws {
        try Self.manDB.check()
        let man = try #require(Self.man)
        let (directory, dump) = try Self.generate()
        defer { Fixture.remove(directory.deletingLastPathComponent()) }
        let commands = Self.shownCommands(dump)
        var rendered: [String: String] = [:]
        for command in commands {
            let path = directory.appendingPathComponent(command.page).path
            // --warnings=w makes man-db run groff with -ww: every warning, on standard error.
            let result = try run(URL(fileURLWithPath: "/usr/bin/env"),
                                 ["-u", "MANOPT", "-u", "MANPAGER", "-u", "PAGER", "MANWIDTH=80", "LC_ALL=C.UTF-8",
                                  "MAN_KEEP_STDERR=1", man.path, "--warnings=w", "-l", path])
            #expect(result.status == 0, "man -l \(command.page): status \(result.status)")
            #expect(result.stderr.isEmpty, "man -l \(command.page) wrote to standard error: \(result.stderr)")
            let page = Self.plain(result.stdout)
            rendered[command.page] = page
            #expect(page.contains("SYNOPSIS"), "\(command.page) did not render: \(page.prefix(300))")
            for line in page.split(separator: "\n") where line.count > 80 {
                Issue.record("\(command.page): a rendered line of \(line.count) columns: \(line)")
            }
            // Every non-ASCII character of the command's help text reaches the reader.
            for character in Self.nonASCII(command.text).sorted() where !page.contains(character) {
                Issue.record("\(command.page) lost \(character) (U+\(String(character.unicodeScalars.first!.value, radix: 16, uppercase: true)))")
            }
        }
        // Samples, picked from the dump so they really exist; a whole word, so "controllerhost" cannot pass.
        let all = commands.map(\.text).joined(separator: "\n")
        let samples: [(String, Bool)] = [("controller→host", true), ("threshold τ", true), ("3σ", false), ("—", false), ("Gilbert–Elliott", false)]
        for (sample, required) in samples {
            let holders = commands.filter { $0.text.contains(sample) }
            #expect(!required || !holders.isEmpty, "the help no longer says \(sample): pick another sample")
            for holder in holders {
                let page = rendered[holder.page] ?? ""
                #expect(page.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains(sample),
                        "\(holder.page) does not show \(sample)")
            }
        }
        #expect(all.contains("τ") && all.contains("→"), "no τ or → left in the help to check")
        // The exit-status table, whole, in the root page's EXIT STATUS section.
        let root = try #require(rendered["kinetrace.1"])
        let exitStatus = try #require(root.range(of: "EXIT STATUS"), "kinetrace.1 has no EXIT STATUS section")
        let table = root[exitStatus.upperBound...]
        for code in ["0", "1", "64", "65", "66", "69", "73", "74", "75", "76", "77", "130"] {
            #expect(table.split(separator: "\n").contains { $0.split(separator: " ").first == Substring(code) },
                    "EXIT STATUS lacks \(code)")
        }
        // Cross-references: the root lists its commands, a command points back.
        #expect(root.contains("kinetrace.replay(1)") && root.contains("kinetrace.gestures(1)"))
        #expect(rendered["kinetrace.gestures.eval.1"]?.contains("kinetrace.gestures(1)") == true)
    }

    /// `kinetrace --help` in an 80-column terminal shows the exit-status table unwrapped:
    /// every row and continuation stays indented, and every code is there.
    @Test func exitStatusTableFitsEightyColumnsInHelp() throws {
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["COLUMNS=80", try Fixture.binary.path, "--help"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("Exit status") }, "no exit-status table in kinetrace --help")
        let rows = lines[(start + 1)...].prefix { !$0.isEmpty }
        #expect(rows.count >= 12)
        for row in rows {
            #expect(row.hasPrefix("  ") && row.count <= 80, "wrapped or too wide at 80 columns: \(row)")
        }
        let codes = rows.compactMap { $0.split(separator: " ").first.flatMap { Int($0) } }
        #expect(codes == [0, 1, 64, 65, 66, 69, 73, 74, 75, 76, 77, 130])
    }

    /// Text in the dump stays text: a line starting with a roff request, backslashes, quotes,
    /// a control character, mdoc macro names as words and as a command name are printed, not
    /// obeyed, and groff has nothing to warn about (docs/threat-model.md).
    @Test(.enabled(if: ManPageTests.manDB.runs, "needs man (man-db); with CI set this fails instead"))
    func hostileTextStaysText() throws {
        try Self.manDB.check()
        let man = try #require(Self.man)
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let dump = directory.appendingPathComponent("dump.json")
        try #"""
        {"command":{"commandName":"k","abstract":"Ar \"quoted\" \\fB No Op",
         "discussion":".TH INJECTED 1\n'br\n\\fI not italic \u0007 bell\n\n  .Sh LITERAL\n  'also",
         "arguments":[{"kind":"option","names":[{"kind":"long","name":"Ar"}],"valueName":"Op","abstract":".Sh FAKE",
                       "isOptional":false,"isRepeating":true,"defaultValue":"-x \"y\"","allValues":["a-b","\\e"]}],
         "subcommands":[{"commandName":"Xr","abstract":"\""}]}}
        """#.write(to: dump, atomically: true, encoding: .utf8)
        let pages = directory.appendingPathComponent("pages")
        let made = try run(try Self.generator, ["--dump", dump.path, "--output-directory", pages.path])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try Self.pageFiles(in: pages) == ["k.1", "k.Xr.1"])
        var rendered: [String: String] = [:]
        for page in ["k.1", "k.Xr.1"] {
            let bytes = try Data(contentsOf: pages.appendingPathComponent(page))
            #expect(bytes.allSatisfy { $0 < 0x80 }, "\(page) is not pure ASCII")
            let result = try run(URL(fileURLWithPath: "/usr/bin/env"),
                                 ["-u", "MANOPT", "MANWIDTH=80", "LC_ALL=C.UTF-8", "MAN_KEEP_STDERR=1", man.path, "--warnings=w", "-l",
                                  pages.appendingPathComponent(page).path])
            #expect(result.status == 0 && result.stderr.isEmpty, "man -l \(page): \(result.stderr)")
            rendered[page] = Self.plain(result.stdout)
        }
        let page = try #require(rendered["k.1"])
        for text in [#"Ar "quoted" \fB No Op"#, ".TH INJECTED 1", "'br", #"\fI not italic"#, ".Sh LITERAL", "'also", "--Ar Op ...",
                     ".Sh FAKE", #"(values: a-b, \e; default: -x "y")"#, "k.Xr(1)"] {
            #expect(page.contains(text), "k.1 does not show \(text) as text")
        }
        let headings = page.split(separator: "\n").filter { $0.first?.isUppercase == true && !$0.hasPrefix("K(1)") }
        #expect(headings == ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SUBCOMMANDS"], "\(headings)")
        #expect(rendered["k.Xr.1"]?.contains("k Xr") == true)
    }

    /// Errors are one line with the documented status: 64 usage, 65 a dump that is not one,
    /// 66 a dump that cannot be read, 73 a page that cannot be written.
    @Test func errorsAreOneLineWithTheirStatus() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        func write(_ name: String, _ text: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let out = directory.appendingPathComponent("out").path
        let good = try write("good.json", #"{"command":{"commandName":"k","abstract":"A \\ τ.","shouldDisplay":true}}"#)
        let blocker = try write("blocker", "a regular file")
        let cases: [(arguments: [String], status: Int32)] = [
            ([], 64),
            (["--dump", good], 64),
            (["--dump", good, "--output-directory", out, "--date", "2026-02-30"], 64),
            (["--dump", good, "--output-directory", out, "--bogus"], 64),
            (["--dump", directory.appendingPathComponent("missing.json").path, "--output-directory", out], 66),
            (["--dump", try write("empty.json", ""), "--output-directory", out], 65),
            (["--dump", try write("notjson.json", "man page"), "--output-directory", out], 65),
            (["--dump", try write("nocommand.json", #"{"command":{}}"#), "--output-directory", out], 65),
            (["--dump", try write("climb.json", #"{"command":{"commandName":"../k"}}"#), "--output-directory", out], 65),
            // A path under a regular file cannot be created, even by root.
            (["--dump", good, "--output-directory", blocker + "/pages"], 73),
        ]
        for (arguments, status) in cases {
            let result = try run(try Self.generator, arguments)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("kinetrace-manual: error: ") && result.stderr.filter { $0 == "\n" }.count == 1,
                    "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: out), "a failed run wrote pages")
        let result = try run(try Self.generator, ["--dump", good, "--output-directory", out, "--date", "2024-02-29"])
        #expect(result.status == 0, "\(result.stderr)")
        let page = try String(contentsOfFile: out + "/k.1", encoding: .utf8)
        #expect(page.contains(".Dd February 29, 2024") && page.contains("A \\e \\[u03C4]"), "\(page)")
    }
}
