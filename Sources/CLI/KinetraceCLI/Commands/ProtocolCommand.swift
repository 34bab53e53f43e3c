import ArgumentParser
import KinetraceJSON
import KinetraceWire

/// `kinetrace protocol`: the protocols this run knows, and declaration files.
struct ProtocolCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "protocol",
        abstract: "List, check, explain and give test vectors for wire protocols, compiled or declared in a file.",
        discussion: """
            A protocol is declared in one JSON file (specs/protocol-declaration-v1.md); every command takes \
            --protocol FILE, or --protocol NAME found as NAME.json on --protocol-path and KINETRACE_PROTOCOL_PATH.
            """,
        subcommands: [ProtocolList.self, ProtocolCheck.self, ProtocolShow.self, ProtocolVectors.self, ProtocolDissector.self])
}

/// `kinetrace protocol dissector NAME|FILE`.
struct ProtocolDissector: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dissector",
        abstract: "Write a Wireshark Lua dissector generated from a protocol's declaration.",
        discussion: """
            The dissector registers the declared port, reassembles TCP framings across segments, names every \
            field so that it can be filtered (NAME.FIELD, hyphens in NAME written as underscores) and shows a \
            failed check, a constant that differs and a value outside its range or not finite as expert info. \
            Load it with tshark -X lua_script:FILE, or copy it into Wireshark's Lua plugins folder.
            """)

    @Argument(help: ArgumentHelp("A protocol name or declaration file.", valueName: "name|file"))
    var name: String

    @Option(name: .customLong("protocol-path"), help: ArgumentHelp("A directory to search for NAME.json; repeatable.", valueName: "dir"))
    var searchPath: [String] = []

    func run() throws {
        let p = try resolveOrExit(name)
        // A compiled protocol's dissector is made from the declaration it carries.
        guard let d = p.declaration ?? (type(of: p) as? any CompiledWireProtocol.Type)?.builtInDeclaration?.declared else {
            throw ValidationError("\(p.id) carries no declaration to make a dissector from.")
        }
        try writeOutput(LuaDissector.source(d), to: nil)
    }
}

/// `kinetrace protocol list`.
struct ProtocolList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the compiled protocols and the declarations found on the protocol path.")

    @Option(name: .customLong("protocol-path"), help: ArgumentHelp("A directory to search for declarations (NAME.json); repeatable, before \(ProtocolCatalog.environmentVariable).", valueName: "dir"))
    var searchPath: [String] = []

    @OptionGroup var summaryFormat: SummaryFormatOptions

    func run() throws {
        let compiled = ProtocolRegistry.standard.protocols
        let declared = ProtocolCatalog.declaredOnSearchPath()
        switch summaryFormat.format {
        case .text:
            for p in compiled { print("\(p.id)  compiled  \(p.summary)") }
            for entry in declared {
                switch entry.result {
                case .success(let p): print("\(p.id)  \(entry.path)  \(p.summary)")
                case .failure(let f): print("-  \(entry.path)  not valid: \(f.message)")
                }
            }
        case .json:
            var items: [JSONValue] = compiled.map { .object(["name": .string($0.id.name), "source": .string("compiled"), "summary": .string($0.summary)]) }
            for entry in declared {
                switch entry.result {
                case .success(let p):
                    items.append(.object(["name": .string(p.id.name), "source": .string(entry.path), "summary": .string(p.summary),
                                          "digest": .string(p.declared.digest)]))
                case .failure(let f):
                    items.append(.object(["source": .string(entry.path), "error": .string(f.message)]))
                }
            }
            print(JSONValue.object(["protocols": .array(items)]).jsonText)
        }
        if declared.contains(where: { if case .failure = $0.result { return true } else { return false } }) { throw ExitStatus.dataError }
    }
}

/// `kinetrace protocol check FILE`.
struct ProtocolCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a declaration file: one line with its name and digest, or the first error as FILE:LINE:COLUMN (exit 65).")

    @Argument(help: ArgumentHelp("The declaration file.", valueName: "file"), completion: .file(extensions: ["json"]))
    var file: String

    func run() throws {
        do throws(ProtocolCatalog.Failure) {
            let p = try ProtocolCatalog.read(path: file)
            print("\(file): \(p.id) \(p.declared.version): \(p.declared.kinds.count) message kind\(p.declared.kinds.count == 1 ? "" : "s"), \(p.declared.requirements.count) requirement\(p.declared.requirements.count == 1 ? "" : "s"), \(p.declared.digest)")
        } catch {
            printError(error.message)
            throw error.status
        }
    }
}

/// `kinetrace protocol show NAME|FILE`.
struct ProtocolShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Say what a protocol's declaration means: transport, message layouts, roles, host behaviour and requirements.")

    @Argument(help: ArgumentHelp("A protocol name or declaration file.", valueName: "name|file"))
    var name: String

    @Option(name: .customLong("protocol-path"), help: ArgumentHelp("A directory to search for NAME.json; repeatable.", valueName: "dir"))
    var searchPath: [String] = []

    enum PageFormat: String, ExpressibleByArgument, CaseIterable {
        case text, markdown
    }

    @Option(help: ArgumentHelp("text for people, or markdown: a normative page (layout tables, ranges, roles, host behaviour, requirement table) to publish beside the declaration.", valueName: "format"))
    var format: PageFormat = .text

    func run() throws {
        let p = try resolveOrExit(name)
        guard let d = p.declaration else {
            if format == .markdown {
                throw ValidationError("\(p.id) is compiled into kinetrace, and its page is its spec (\(p.specification)); give its declaration file (specs/protocols/\(p.id).json) to generate one.")
            }
            print("\(p.id): compiled into kinetrace (\(p.summary)); its declaration is specs/protocols/\(p.id).json and its spec \(p.specification).")
            return
        }
        if format == .markdown {
            print(DeclarationPage.markdown(d, source: name.hasSuffix(".json") ? String(name.split(separator: "/").last ?? Substring(name)) : "\(d.name).json"), terminator: "")
            return
        }
        print("\(d.name) \(d.version): \(d.summary)")
        if !d.specification.isEmpty { print("Specification  \(d.specification)") }
        print("Digest         \(d.digest)")
        let transport: String
        switch d.framing {
        case .datagram: transport = "UDP, one message per datagram"
        case .fixedLength(let n): transport = "TCP, records of \(n) bytes back to back"
        case .lengthPrefix(let w, let big, let o, let counts, let max):
            transport = "TCP, a \(w)-byte \(big ? "big" : "little")-endian length at offset \(o)\(counts ? " counting itself" : ""), records up to \(max) bytes"
        case .delimiter(let delimiter, let max):
            transport = "TCP, records ending with \(delimiter.map { $0 == 0x0A ? "\\n" : $0 == 0x0D ? "\\r" : String(UnicodeScalar($0)) }.joined()), up to \(max) bytes"
        }
        print("Transport      \(transport); default port \(d.defaultPort); \(d.rateHz) samples/s")
        if let unit = d.senderClockUnit { print("Sender clock   \(unit.rawValue) since the \(d.senderClockEpoch ?? "unix") epoch") }
        if let own = d.ownVector { print("Own vector     \(own.name): \(own.summary)\(own.sumOf.isEmpty ? "" : " (made as the sum of " + own.sumOf.map { VectorSlot.standardNames[$0.rawValue] }.joined(separator: " and ") + ")")") }
        for kind in d.kinds {
            print("")
            print("Message \(kind.name) (\(kind.direction == .controllerToHost ? "controller → host" : "host → controller"), \(kind.encoding.name)\(kind.requirement.map { ", \($0)" } ?? ""))")
            switch kind.encoding {
            case .binary(let length): print("  \(length) bytes")
            case .json(let max, let unknown, let repeated): print("  JSON object of at most \(max) bytes; unknown members \(unknown ? "ignored" : "refused"); a repeated member: \(repeated.rawValue)")
            case .text(let separator, let max): print("  a text line of at most \(max) bytes, fields separated by \"\(String(decoding: separator, as: UTF8.self))\"")
            case .osc(let address, let bundles): print("  OSC 1.0 message at \(address)\(bundles ? ", also inside bundles" : "")")
            }
            for f in kind.fields {
                var parts: [String] = []
                if case .binary = kind.encoding { parts.append("@\(f.offset)") }
                if !f.path.isEmpty { parts.append(f.path.joined(separator: ".")) }
                parts.append(f.type.rawValue)
                if let c = f.constant { parts.append("= \(constantText(c))") }
                if let check = f.check { parts.append("\(check.algorithm.rawValue) of bytes \(check.from)..<\(check.to)") }
                if f.finite { parts.append("finite") }
                if let r = f.range { parts.append("in [\(r.lowerBound), \(r.upperBound)]") }
                if let role = f.role { parts.append("role \(role)") }
                if let format = f.format { parts.append("format \(format)") }
                if !f.required { parts.append("optional") }
                if let req = f.requirement { parts.append(req) }
                print("  \(f.name): " + parts.joined(separator: ", "))
            }
        }
        print("")
        if let host = d.host {
            switch host.behaviour {
            case .apply: print("Host           applies every valid sample: decision \(host.decision)")
            case .threshold(let q, let above, let ms, let sender, let stale, let resync):
                print("Host           decision \(host.decision) when \(q) > \(above); then \(sender ? "a refractory window of \(ms) ms on the sender's clock" : "a latch of \(ms) ms on the host's arrival clock")\(stale ? "; stale samples ignored, resync after \(resync) ms" : "")")
            }
            if !host.decisionValues.isEmpty { print("               values: \(host.decisionValues.map(\.description).joined(separator: ", "))") }
            if let r = host.replyKind { print("Reply          \(d.kinds[r].name)\(host.replyDeadlineMs.map { " within \($0) ms" } ?? "")\(host.replyRequirement.map { " (\($0))" } ?? "")") }
        } else {
            print("Host           no behaviour declared: a host is judged on what it reads only")
        }
        if !d.requirements.isEmpty {
            print("")
            print("Requirements")
            let width = d.requirements.map(\.id.count).max() ?? 0
            for r in d.requirements { print("  \(r.id.padding(toLength: width, withPad: " ", startingAt: 0))  \(r.level.padding(toLength: 6, withPad: " ", startingAt: 0))  \(r.text)") }
        }
    }

    func constantText(_ v: DeclaredValue) -> String {
        switch v {
        case .string(let s): return "\"\(s)\""
        case .bytes(let b): return Hex.encode(b)
        case .bool(let b): return b ? "true" : "false"
        default: return v.double.map { $0 == $0.rounded() && abs($0) < 1e15 ? String(Int64($0)) : String($0) } ?? ""
        }
    }
}

/// `kinetrace protocol vectors NAME|FILE`: messages a host's own tests can use.
struct ProtocolVectors: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vectors",
        abstract: "Print valid and invalid sample messages of a protocol as hex, each with what a reader must make of it.",
        discussion: "Each line: valid or the invalid reason, the kind, the hex bytes, and what the vector shows. Made deterministically from the declaration, so the same file gives the same vectors.")

    @Argument(help: ArgumentHelp("A protocol name or declaration file.", valueName: "name|file"))
    var name: String

    @Option(name: .customLong("protocol-path"), help: ArgumentHelp("A directory to search for NAME.json; repeatable.", valueName: "dir"))
    var searchPath: [String] = []

    @OptionGroup var summaryFormat: SummaryFormatOptions

    func run() throws {
        let p = try resolveOrExit(name)
        var vectors: [(String, [UInt8])] = []
        let stamp: UInt64 = 1_767_225_600_000
        let readings: [(String, MotionReading)] = [
            ("a sample at rest", MotionReading(userAcceleration: .zero, rotationRate: .zero, gravity: Vector3(0, -1, 0), attitude: .zero)),
            ("a sample above the threshold", MotionReading(userAcceleration: Vector3(0.1, p.defaultRule.threshold + 0.25, -0.05), rotationRate: Vector3(0.01, 0.02, 0.03),
                                                          gravity: Vector3(0, -1, 0), attitude: Vector3(0.5, -0.25, 1.0))),
        ]
        for (what, reading) in readings { if let bytes = p.sample(reading, timeMs: stamp) { vectors.append((what, bytes)) } }
        if let first = vectors.first?.1 {
            // Mutations a host must reject: cut short, one byte flipped in each quarter, one byte more.
            vectors.append(("cut one byte short", Array(first.dropLast())))
            vectors.append(("one byte more", first + [0]))
            for q in 0..<4 where !first.isEmpty {
                var flipped = first
                let at = min(first.count - 1, q * first.count / 4 + first.count / 8)
                flipped[at] ^= 0x20
                vectors.append(("byte \(at) flipped", flipped))
            }
            vectors.append(("empty", []))
        }
        if let reply = p.reply(to: HostDecision(name: "reply", sampleTimeMs: stamp, owesReply: true)) { vectors.append(("the reply a trigger at the first sample's stamp owes", reply)) }
        guard !vectors.isEmpty else {
            printError("\(p.id): the protocol declares no controller_to_host kind to make samples of")
            throw ExitStatus.dataError
        }
        var items: [JSONValue] = []
        for (what, bytes) in vectors {
            let facts = p.facts(bytes)
            var kind = KindFinder()
            bytes.withUnsafeBytes { p.describe($0, into: &kind) }
            let verdict = facts.error.map(\.code.name) ?? "valid"
            switch summaryFormat.format {
            case .text: print("\(verdict)  \(kind.name)  \(Hex.encode(bytes))  \(what)")
            case .json:
                items.append(.object(["verdict": .string(verdict), "kind": .string(kind.name), "hex": .string(Hex.encode(bytes)), "what": .string(what)]))
            }
        }
        if summaryFormat.format == .json { print(JSONValue.object(["protocol": .string(p.id.name), "vectors": .array(items)]).jsonText) }
    }

    private struct KindFinder: DecodedFieldVisitor {
        var name = "unknown"
        mutating func kind(_ name: String) { self.name = name }
        mutating func field(_ name: String, _ value: UInt64) {}
        mutating func field(_ name: String, _ value: UInt32) {}
        mutating func field(_ name: String, _ value: Float32) {}
        mutating func field(_ name: String, _ value: Double) {}
        mutating func field(_ name: String, _ value: String) {}
    }
}

/// The protocol a subcommand's argument names, or its one-line error and exit status.
func resolveOrExit(_ argument: String) throws -> any WireProtocol {
    do throws(ProtocolCatalog.Failure) {
        return try ProtocolCatalog.resolve(argument)
    } catch {
        printError(error.message)
        throw error.status
    }
}
