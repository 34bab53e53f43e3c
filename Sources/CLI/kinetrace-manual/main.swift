// kinetrace-manual: one mdoc(7) page per command, from `kinetrace --experimental-dump-help`.
//
//   kinetrace --experimental-dump-help | kinetrace-manual --dump - --output-directory DIR
//   kinetrace-manual --dump FILE --output-directory DIR [--date YYYY-MM-DD]
//
// Pages are named like the command path: kinetrace.1, kinetrace.replay.1,
// kinetrace.gestures.eval.1. They are ASCII only (every other character is the groff
// escape \[uXXXX], so nothing is lost), have no empty input line, and keep the help's
// preformatted blocks (lines indented by two or more spaces) as literal displays when
// they fit an 80-column terminal; a two-column table too wide for that becomes a tagged
// list whose text wraps. Hidden commands and options are left out.
//
// Exit status: 0 pages written; 64 bad usage; 65 a dump that is not valid (or names a
// command that cannot name a page); 66 a dump that cannot be read; 73 a page or the
// output directory that cannot be written. Every error is one line on standard error.
//
// Foundation only: the dump is read with Codable structs of our own, holding only the
// members used here.
import Foundation

// MARK: - The dump (only what a page needs)

struct HelpDump: Decodable {
    let command: CommandInfo
}

struct CommandInfo: Decodable {
    let commandName: String
    let abstract: String?
    let discussion: String?
    let shouldDisplay: Bool?
    let arguments: [ArgumentInfo]?
    let subcommands: [CommandInfo]?

    var isShown: Bool { shouldDisplay ?? true }
    var shownArguments: [ArgumentInfo] { (arguments ?? []).filter(\.isShown) }
    var shownSubcommands: [CommandInfo] { (subcommands ?? []).filter(\.isShown) }
}

struct ArgumentInfo: Decodable {
    enum Kind: String, Decodable { case positional, option, flag }
    struct Name: Decodable {
        enum Kind: String, Decodable { case long, short, longWithSingleDash }
        let kind: Kind
        let name: String
    }
    let kind: Kind
    let names: [Name]?
    let valueName: String?
    let abstract: String?
    let discussion: String?
    let defaultValue: String?
    let allValues: [String]?
    let isOptional: Bool
    let isRepeating: Bool
    let shouldDisplay: Bool?

    var isShown: Bool { shouldDisplay ?? true }
}

// MARK: - Failing

enum Status: Int32 {
    case usage = 64, dataError = 65, noInput = 66, cannotCreate = 73
}

struct Failure: Error {
    let status: Status
    let message: String
    init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// A message made safe for one terminal line: control characters shown, not acted on.
func oneLine(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        switch scalar.value {
        case 0x0A: out += "\\n"
        case 0x0D: out += "\\r"
        case 0x09: out += "\\t"
        case 0..<0x20, 0x7F, 0x80..<0xA0: out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}

// MARK: - Command line

struct Options {
    var dump: String
    var outputDirectory: String
    var date: (year: Int, month: Int, day: Int)
}

let usage = "usage: kinetrace-manual --dump FILE|- --output-directory DIR [--date YYYY-MM-DD]"

/// The page date when --date is not given: a constant, so the pages are reproducible.
/// `make install` passes the date of the newest git commit instead.
let defaultDate = (year: 2026, month: 1, day: 1)

func parseDate(_ text: String) -> (year: Int, month: Int, day: Int)? {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
          parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
          let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
          (1...12).contains(month), (1...31).contains(day) else { return nil }
    let lengths = [31, (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    guard day <= lengths[month - 1] else { return nil }
    return (year, month, day)
}

/// Returns nil for --help.
func parseOptions(_ arguments: [String]) throws -> Options? {
    var values: [String: String] = [:]
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        if argument == "-h" || argument == "--help" { return nil }
        var name = argument, value: String?
        if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
            name = String(argument[..<equals])
            value = String(argument[argument.index(after: equals)...])
        }
        guard ["--dump", "--output-directory", "--date"].contains(name) else {
            throw Failure(.usage, "unknown argument '\(oneLine(argument))'; \(usage)")
        }
        if value == nil {
            guard index < arguments.count else { throw Failure(.usage, "\(name) needs a value; \(usage)") }
            value = arguments[index]
            index += 1
        }
        guard values[name] == nil else { throw Failure(.usage, "\(name) given twice; \(usage)") }
        guard let given = value, !given.isEmpty else { throw Failure(.usage, "\(name) needs a value; \(usage)") }
        values[name] = given
    }
    guard let dump = values["--dump"] else { throw Failure(.usage, "--dump is required; \(usage)") }
    guard let directory = values["--output-directory"] else { throw Failure(.usage, "--output-directory is required; \(usage)") }
    var date = defaultDate
    if let text = values["--date"] {
        guard let parsed = parseDate(text) else { throw Failure(.usage, "--date '\(oneLine(text))' is not a date YYYY-MM-DD") }
        date = parsed
    }
    return Options(dump: dump, outputDirectory: directory, date: date)
}

// MARK: - Reading the dump

/// The largest dump read (today's is about 100 KB).
let maximumDumpBytes = 16 << 20
/// The deepest command nesting accepted (kinetrace's is 2).
let maximumDepth = 16

func readDump(_ path: String) throws -> Data {
    let shown = path == "-" ? "standard input" : oneLine(path)
    func fail(_ status: Status = .noInput) -> Failure {
        Failure(status, "cannot read the dump \(shown): \(String(cString: strerror(errno)))")
    }
    let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw fail() }
    defer { if path != "-" { close(fd) } }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n >= 0 else { throw fail() }
        if n == 0 { break }
        data.append(contentsOf: buffer[0..<n])
        guard data.count <= maximumDumpBytes else {
            throw Failure(.dataError, "the dump \(shown) is over \(maximumDumpBytes >> 20) MiB: not a help dump")
        }
    }
    guard !data.isEmpty else { throw Failure(.dataError, "the dump \(shown) is empty: give it kinetrace --experimental-dump-help's output") }
    return data
}

func decodeDump(_ data: Data, from path: String) throws -> CommandInfo {
    let shown = path == "-" ? "standard input" : oneLine(path)
    do {
        return try JSONDecoder().decode(HelpDump.self, from: data).command
    } catch let error as DecodingError {
        func place(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? "the top" : path
        }
        let why: String
        switch error {
        case .typeMismatch(let type, let context): why = "\(place(context)) is not \(type == String.self ? "a string" : type == Bool.self ? "a boolean" : "\(type)")"
        case .valueNotFound(_, let context): why = "\(place(context)) is null"
        case .keyNotFound(let key, let context): why = "\(place(context)) lacks '\(oneLine(key.stringValue))'"
        case .dataCorrupted(let context):
            let detail = context.underlyingError.map { String(describing: $0) } ?? context.debugDescription
            why = "\(place(context)): \(oneLine(detail))"
        @unknown default: why = oneLine(String(describing: error))
        }
        throw Failure(.dataError, "the dump \(shown) is not a help dump: \(why)")
    } catch {
        throw Failure(.dataError, "the dump \(shown) is not a help dump: \(oneLine(String(describing: error)))")
    }
}

// MARK: - roff text

/// Escapes text for a roff text line or a quoted macro argument: the page stays ASCII
/// (every other character is \[uXXXX]), a backslash is \e, a control character shows as
/// U+FFFD, a tab is a space, and the hyphens of an option (--plot-format, -s) are \- so
/// they print as the ASCII hyphen-minus a user types and no line breaks inside one.
func roff(_ text: String, quoted: Bool = false, literalHyphens: Bool = false) -> String {
    var out = ""
    var inOption = false
    var previous: Unicode.Scalar = " "
    let scalars = Array(text.unicodeScalars)
    for (index, scalar) in scalars.enumerated() {
        let next = index + 1 < scalars.count ? scalars[index + 1] : " "
        if scalar == "-" {
            let startsWord = !(isWordScalar(previous) || previous == "-")
            if startsWord && (next == "-" || isLetter(next)) { inOption = true }
        } else if !(isWordScalar(scalar)) {
            inOption = false
        }
        switch scalar {
        case "\\": out += "\\e"
        case "-": out += inOption || literalHyphens ? "\\-" : "-"
        case "\"" where quoted: out += "\\(dq"
        case "\t": out += " "
        default:
            let value = scalar.value
            if value < 0x20 || value == 0x7F || (0x80..<0xA0).contains(value) {
                out += "\\[uFFFD]"
            } else if value < 0x80 {
                out.unicodeScalars.append(scalar)
            } else {
                let hex = String(value, radix: 16, uppercase: true)
                out += "\\[u\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex)]"
            }
        }
        previous = scalar
    }
    return out
}

func isLetter(_ scalar: Unicode.Scalar) -> Bool {
    ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
}

func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
    isLetter(scalar) || ("0"..."9").contains(scalar) || scalar == "_"
}

/// A text line: a leading `.` or `'` would make it a request, so it gets \& first.
func textLine(_ text: String) -> String {
    let escaped = roff(text)
    return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
}

/// One word as an mdoc macro argument: \& in front, so that no word is taken for a
/// macro name (Ar, No, Op…) or a delimiter, and its hyphens as \-.
func word(_ text: String) -> String {
    "\\&" + roff(text, literalHyphens: true).replacingOccurrences(of: " ", with: "\\ ")
}

/// Free text as one quoted mdoc macro argument.
func quotedArgument(_ text: String) -> String {
    "\"\\&" + roff(text, quoted: true) + "\""
}

// MARK: - Discussion text as blocks

enum Block {
    case paragraph(String)
    /// Lines indented by two or more spaces, their common indentation removed.
    case preformatted([String])
}

func blocks(of text: String) -> [Block] {
    var result: [Block] = []
    var paragraph: [String] = []
    var preformatted: [String] = []
    func flush() {
        if !paragraph.isEmpty {
            result.append(.paragraph(paragraph.joined(separator: " ")))
            paragraph = []
        }
        if !preformatted.isEmpty {
            let indent = preformatted.filter { !$0.allSatisfy { $0 == " " } }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
            result.append(.preformatted(preformatted.map { String($0.dropFirst(indent)) }))
            preformatted = []
        }
    }
    for raw in text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false) {
        var line = String(raw)
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty {
            flush()
        } else if line.hasPrefix("  ") || line.hasPrefix("\t") {
            if !paragraph.isEmpty { flush() }
            line = expandingTabs(line)
            preformatted.append(String(line.reversed().drop { $0 == " " }.reversed()))
        } else {
            if !preformatted.isEmpty { flush() }
            paragraph.append(trimmed)
        }
    }
    flush()
    return result
}

/// Tabs as spaces to the next multiple of 8, as a terminal shows them.
func expandingTabs(_ line: String) -> String {
    var out = ""
    var column = 0
    for character in line {
        if character == "\t" {
            let spaces = 8 - column % 8
            out += String(repeating: " ", count: spaces)
            column += spaces
        } else {
            out.append(character)
            column += 1
        }
    }
    return out
}

/// Where the columns of an 80-column page go: mdoc indents the body 5n and
/// `-offset indent` another 6n.
let pageWidth = 80, bodyIndent = 5, displayIndent = 6

func columns(_ line: String) -> Int { line.unicodeScalars.count }

/// A table of two columns: a term, two or more spaces, its text; a line indented to the
/// text column continues the entry above. Nil when the lines are not such a table.
func table(_ lines: [String]) -> [(term: String, text: String)]? {
    var entries: [(term: String, text: String)] = []
    var textColumn: Int?
    for line in lines {
        let indent = line.prefix { $0 == " " }.count
        if indent > 0 {
            guard let column = textColumn, indent == column, !entries.isEmpty else { return nil }
            entries[entries.count - 1].text += " " + line.trimmingCharacters(in: .whitespaces)
            continue
        }
        guard let gap = line.range(of: "  ") else { return nil }
        let term = String(line[..<gap.lowerBound])
        let rest = line[gap.lowerBound...]
        let text = rest.drop { $0 == " " }
        let column = columns(term) + (rest.count - text.count)
        guard !text.isEmpty, textColumn == nil || textColumn == column else { return nil }
        textColumn = column
        entries.append((term, String(text)))
    }
    return entries.count >= 2 ? entries : nil
}

/// A block as mdoc lines. `indent` is how far the surrounding text already is from the body.
func render(_ block: Block, indent: Int = 0) -> [String] {
    switch block {
    case .paragraph(let text):
        return [textLine(text)]
    case .preformatted(let lines):
        let widest = lines.map(columns).max() ?? 0
        let literal = lines.map { line -> String in
            let escaped = roff(line)
            return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
        }
        if bodyIndent + indent + displayIndent + widest <= pageWidth {
            return [".Bd -literal -offset indent"] + literal + [".Ed"]
        }
        if let entries = table(lines) {
            let width = (entries.map { columns($0.term) }.max() ?? 0) + 2
            var out = [".Bl -tag -width \(width)n -offset indent -compact"]
            for entry in entries {
                out.append(".It \(word(entry.term))")
                out.append(textLine(entry.text))
            }
            return out + [".El"]
        }
        return [".Bd -literal"] + literal + [".Ed"]
    }
}

/// Blocks as mdoc lines, with .Pp between paragraphs (a display or list spaces itself).
func render(_ blocks: [Block], indent: Int = 0) -> [String] {
    var out: [String] = []
    var previous: Block?
    for block in blocks {
        if case .paragraph = block, case .paragraph = previous { out.append(".Pp") }
        if case .paragraph = block, case .preformatted = previous { out.append(".Pp") }
        out += render(block, indent: indent)
        previous = block
    }
    return out
}

/// Splits out an exit-status table: a paragraph starting "Exit status" and the
/// preformatted block right after it. Returns the rest and the exit-status blocks.
func splitExitStatus(_ all: [Block]) -> (rest: [Block], exitStatus: [Block]) {
    for (index, block) in all.enumerated() {
        guard case .paragraph(let text) = block, text.lowercased().hasPrefix("exit status"),
              index + 1 < all.count, case .preformatted = all[index + 1] else { continue }
        var rest = all
        rest.removeSubrange(index...(index + 1))
        return (rest, [all[index], all[index + 1]])
    }
    return (all, [])
}

// MARK: - Pages

struct Page {
    let fileName: String
    let text: String
}

let months = ["January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December"]

/// A command name becomes part of a file name: letters, digits, `-` and `_` only.
func checkName(_ name: String, path: [String]) throws {
    let allowed = name.unicodeScalars.allSatisfy { isWordScalar($0) || $0 == "-" }
    guard !name.isEmpty, name.count <= 64, allowed, !name.hasPrefix("-") else {
        let place = (path + [name]).map(oneLine).joined(separator: " ")
        throw Failure(.dataError, "the dump names a command '\(place)' that cannot name a page (letters, digits, - and _ only)")
    }
}

struct Generator {
    let date: (year: Int, month: Int, day: Int)
    /// The root's exit-status blocks, if its discussion has them.
    var rootExitStatus: [Block] = []
    var pages: [Page] = []

    init(date: (year: Int, month: Int, day: Int)) { self.date = date }

    mutating func run(_ root: CommandInfo) throws {
        try checkName(root.commandName, path: [])
        rootExitStatus = splitExitStatus(blocks(of: root.discussion ?? "")).exitStatus
        try walk(root, path: [root.commandName], depth: 0)
    }

    private mutating func walk(_ command: CommandInfo, path: [String], depth: Int) throws {
        guard depth <= maximumDepth else {
            throw Failure(.dataError, "the dump nests commands more than \(maximumDepth) deep")
        }
        let fileName = path.joined(separator: ".") + ".1"
        guard !pages.contains(where: { $0.fileName == fileName }) else {
            throw Failure(.dataError, "the dump names the command '\(path.joined(separator: " "))' twice")
        }
        pages.append(Page(fileName: fileName, text: page(command, path: path)))
        for child in command.shownSubcommands {
            try checkName(child.commandName, path: path)
            try walk(child, path: path + [child.commandName], depth: depth + 1)
        }
    }

    private func page(_ command: CommandInfo, path: [String]) -> String {
        let pageName = path.joined(separator: ".")
        let fullName = path.joined(separator: " ")
        var lines: [String] = [
            ".\\\" \(pageName).1: made by kinetrace-manual from `\(path[0]) --experimental-dump-help`; do not edit.",
            ".Dd \(months[date.month - 1]) \(date.day), \(date.year)",
            ".Dt \(roff(pageName.uppercased(), literalHyphens: true)) 1",
            ".Os \(word(path[0]))",
            // groff's mdoc hyphenates words at line ends (pro-tocol); option and protocol names read better whole.
            ".nr doc-hyphen-flags 0",
            ".Sh NAME",
            // One word (the space unbreakable): mdoc parses the name again at each bare .Nm.
            ".Nm \(word(fullName))",
        ]
        var summary = (command.abstract ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "\n", with: " ")
        if summary.hasSuffix(".") && !summary.hasSuffix("..") { summary.removeLast() }
        lines.append(".Nd \(quotedArgument(summary.isEmpty ? fullName : summary))")

        let arguments = command.shownArguments
        let subcommands = command.shownSubcommands
        lines.append(".Sh SYNOPSIS")
        lines.append(".Nm")
        for argument in arguments {
            let usage = synopsis(argument)
            lines.append(argument.isOptional || argument.kind == .flag ? ".Op \(usage)" : ".\(usage)")
        }
        if !subcommands.isEmpty { lines.append(".Ar subcommand") }

        let (description, exitStatus) = splitExitStatus(blocks(of: command.discussion ?? ""))
        lines.append(".Sh DESCRIPTION")
        if description.isEmpty {
            lines.append(textLine(command.abstract ?? fullName))
        } else {
            lines += render(description)
        }

        if !arguments.isEmpty {
            lines.append(".Sh OPTIONS")
            lines.append(".Bl -tag -width 6n")
            for argument in arguments {
                lines.append(".It \(synopsis(argument, allNames: true))")
                lines += explanation(argument)
            }
            lines.append(".El")
        }

        if !subcommands.isEmpty {
            lines.append(".Sh SUBCOMMANDS")
            lines.append(".Bl -tag -width 6n")
            for child in subcommands {
                lines.append(".It Xr \(word((path + [child.commandName]).joined(separator: "."))) 1")
                if let abstract = child.abstract, !abstract.isEmpty { lines.append(textLine(abstract)) }
            }
            lines.append(".El")
        }

        if !exitStatus.isEmpty {
            lines.append(".Sh EXIT STATUS")
            lines += render(exitStatus)
        } else if path.count > 1 && !rootExitStatus.isEmpty {
            lines.append(".Sh EXIT STATUS")
            lines.append("See")
            lines.append(".Xr \(word(path[0])) 1 .")
        }

        if path.count > 1 {
            lines.append(".Sh SEE ALSO")
            let ancestors = (1..<path.count).map { path[..<$0].joined(separator: ".") }
            for (index, name) in ancestors.enumerated() {
                lines.append(".Xr \(word(name)) 1" + (index < ancestors.count - 1 ? " ," : ""))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `Fl Fl name Ar value`, `Ar input No ...`; with allNames every name, comma-separated.
    private func synopsis(_ argument: ArgumentInfo, allNames: Bool = false) -> String {
        let value = word(argument.valueName ?? "value") + (argument.isRepeating ? " No \\&..." : "")
        if argument.kind == .positional { return "Ar \(value)" }
        let names = argument.names ?? []
        let chosen = allNames ? names : Array((names.first { $0.kind == .long } ?? names.first).map { [$0] } ?? [])
        var parts = chosen.map { name -> String in
            switch name.kind {
            case .long: return "Fl Fl \(word(name.name))"
            case .short, .longWithSingleDash: return "Fl \(word(name.name))"
            }
        }.joined(separator: " , ")
        if parts.isEmpty { parts = "Ar \(word(argument.valueName ?? "value"))" }
        if argument.kind == .option { parts += " Ar \(value)" }
        return parts
    }

    /// An option's abstract, discussion, values and default.
    private func explanation(_ argument: ArgumentInfo) -> [String] {
        var parts: [Block] = []
        if let abstract = argument.abstract?.trimmingCharacters(in: .whitespacesAndNewlines), !abstract.isEmpty {
            parts += blocks(of: abstract)
        }
        if let discussion = argument.discussion, !discussion.isEmpty { parts += blocks(of: discussion) }
        // As --help shows them, after the text; the values are words a user types, so their hyphens are \-.
        var notes: [String] = []
        if let values = argument.allValues, !values.isEmpty {
            notes.append("values: " + values.map { roff($0, literalHyphens: true) }.joined(separator: ", "))
        }
        if let value = argument.defaultValue, !value.isEmpty { notes.append("default: " + roff(value, literalHyphens: true)) }
        var lines = render(parts, indent: displayIndent)
        if !notes.isEmpty {
            let note = "(" + notes.joined(separator: "; ") + ")"
            switch parts.last {
            case .paragraph?: lines[lines.count - 1] += " " + note
            case .preformatted?: lines += [".Pp", note]
            case nil: lines.append(note)
            }
        }
        return lines
    }
}

// MARK: - Writing

func writePages(_ pages: [Page], to directory: String) throws {
    try makeDirectory(directory)
    for page in pages {
        try writeFile(Array(page.text.utf8), to: directory.hasSuffix("/") ? directory + page.fileName : directory + "/" + page.fileName)
    }
}

/// mkdir -p: each missing directory on the way, 0755.
func makeDirectory(_ path: String) throws {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return }
    let parent = (path as NSString).deletingLastPathComponent
    if !parent.isEmpty && parent != path { try makeDirectory(parent) }
    guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
        throw Failure(.cannotCreate, "cannot create the output directory \(oneLine(path)): \(String(cString: strerror(errno)))")
    }
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw Failure(.cannotCreate, "cannot create the output directory \(oneLine(path)): a file that is not a directory is there")
    }
}

/// Writes the whole file, checking every write and the close.
func writeFile(_ bytes: [UInt8], to path: String) throws {
    func fail() -> Failure {
        Failure(.cannotCreate, "cannot write \(oneLine(path)): \(String(cString: strerror(errno)))")
    }
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw fail() }
    var written = 0
    while written < bytes.count {
        let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else {
            let failure = fail()
            close(fd)
            throw failure
        }
        written += n
    }
    guard close(fd) == 0 else { throw fail() }
}

// MARK: - Main

do {
    guard let options = try parseOptions(Array(CommandLine.arguments.dropFirst())) else {
        print(usage)
        print("Writes one man page per command of `kinetrace --experimental-dump-help` (FILE, or - for standard input) into DIR.")
        exit(0)
    }
    let root = try decodeDump(try readDump(options.dump), from: options.dump)
    var generator = Generator(date: options.date)
    try generator.run(root)
    try writePages(generator.pages, to: options.outputDirectory)
} catch let failure as Failure {
    FileHandle.standardError.write(Data("kinetrace-manual: error: \(oneLine(failure.message))\n".utf8))
    exit(failure.status.rawValue)
} catch {
    FileHandle.standardError.write(Data("kinetrace-manual: error: \(oneLine(String(describing: error)))\n".utf8))
    exit(Status.dataError.rawValue)
}
