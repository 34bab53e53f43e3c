import Foundation
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace protocol dissector` for the three seed protocols and the two example declarations:
/// the generated Lua, loaded into tshark, decodes each bundled capture (the examples' synthesised,
/// then written as pcap) as Kinetrace does, field by field and message by message, with the same
/// kind and verdict. Hand-crafted bad messages get the same verdicts and expert infos.
@Suite(.enabled(if: TShark.requirement.runs, "needs tshark (Debian package tshark); with CI set this fails instead"))
struct GeneratedDissectorTests {
    struct Subject: CustomTestStringConvertible, Sendable {
        var declaration: String
        /// A bundled capture, or nil to synthesise one from the declaration.
        var capture: String?
        var testDescription: String { URL(fileURLWithPath: declaration).lastPathComponent }
    }

    static let subjects = [
        Subject(declaration: "specs/protocols/motionlink-v1.json", capture: "captures/loopback-session.pcap"),
        Subject(declaration: "specs/protocols/keepcalm-json.json", capture: "captures/keepcalm-session.pcap"),
        Subject(declaration: "specs/protocols/attitude-stream.json", capture: "captures/attitude-session.pcap"),
        Subject(declaration: "examples/protocols/osc-motion.json", capture: nil),
        Subject(declaration: "examples/protocols/ndjson-motion.json", capture: nil),
        // A length prefix, CRC-16, padding, bytes, mixed byte orders and several kinds.
        Subject(declaration: "Fuzz/declarations/length-prefix-tcp.json", capture: nil),
    ]

    /// One message as Kinetrace decodes it: kind, fields as tshark prints them, verdict.
    struct Decoded: Equatable, CustomStringConvertible {
        var kind: String
        var fields: [String: String]
        var valid: Bool
        var description: String { "\(kind) \(valid ? "valid" : "invalid") \(fields.sorted { $0.key < $1.key })" }
    }

    /// Renders fields as tshark's -T fields does: integers in decimal, doubles to 15 significant digits.
    struct Collector: DecodedFieldVisitor {
        var decoded = Decoded(kind: "", fields: [:], valid: false)
        mutating func kind(_ name: String) { decoded.kind = name }
        mutating func field(_ name: String, _ value: UInt64) { decoded.fields[name] = String(value) }
        mutating func field(_ name: String, _ value: UInt32) { decoded.fields[name] = String(value) }
        mutating func field(_ name: String, _ value: Float32) { decoded.fields[name] = Self.g15(Double(value)) }
        mutating func field(_ name: String, _ value: Double) { decoded.fields[name] = Self.g15(value) }
        mutating func field(_ name: String, _ value: String) { decoded.fields[name] = value }
        mutating func field(_ name: String, _ value: Int64) { decoded.fields[name] = String(value) }
        static func g15(_ v: Double) -> String { String(format: "%.15g", v) }
    }

    static func root(_ path: String) -> String { Fixture.packageRoot.appendingPathComponent(path).path }

    /// Kinetrace's messages per direction of each conversation ("src>dst"), in order: datagrams as they are,
    /// a byte stream's chunks framed as a host frames them.
    static func kinetraceMessages(_ trace: String, _ p: DeclaredProtocol) throws -> [String: [Decoded]] {
        let reader = try TraceReader(path: trace)
        var streams: [String: [UInt8]] = [:], order: [String] = []
        var out: [String: [Decoded]] = [:]
        func decode(_ bytes: [UInt8]) -> Decoded {
            var c = Collector()
            bytes.withUnsafeBytes { p.describe($0, into: &c) }
            c.decoded.valid = p.facts(bytes).isValid
            return c.decoded
        }
        while let record = try reader.next() {
            guard case .message(let m) = record else { continue }
            let key = "\(m.source)>\(m.destination)"
            if p.transport == .datagram {
                out[key, default: []].append(decode(Array(m.payload)))
            } else {
                if streams[key] == nil { order.append(key) }
                streams[key, default: []] += Array(m.payload)
            }
        }
        for key in order {
            var framer = p.makeFramer()
            framer.append(streams[key]!)
            while let message = try? framer.next() { out[key, default: []].append(decode(message.bytes)) }
        }
        return out
    }

    /// tshark's messages per direction of each conversation, in order, with the generated dissector.
    static func tsharkMessages(_ pcap: String, lua: String, abbr: String, p: DeclaredProtocol, port: UInt16,
                               names: [String]) throws -> (messages: [String: [Decoded]], experts: [String]) {
        let transport = p.transport == .byteStream ? "tcp" : "udp"
        let columns = ["ip.src", "\(transport).srcport", "ip.dst", "\(transport).dstport", "\(abbr).kind", "\(abbr).valid", "_ws.expert.message"]
            + names.map { "\(abbr).\($0)" }
        var arguments = ["-r", pcap, "-X", "lua_script:\(lua)", "-d", "\(transport).port==\(port),\(abbr)", "-T", "fields",
                         "-E", "occurrence=a", "-E", "aggregator=|", "-E", "header=n"]
        if transport == .some("tcp") { arguments += ["-o", "tcp.desegment_tcp_streams:TRUE"] }
        for c in columns { arguments += ["-e", c] }
        let result = try run(URL(fileURLWithPath: try #require(TShark.executable("tshark"))), arguments, timeout: 120)
        try #require(result.status == 0, "tshark: \(result.stderr)")
        var out: [String: [Decoded]] = [:]
        var experts: [String] = []
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: true) {
            let cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard cells.count == columns.count, !cells[4].isEmpty else { continue }
            let key = "\(cells[0]):\(cells[1])>\(cells[2]):\(cells[3])"
            let kinds = cells[4].split(separator: "|").map(String.init)
            let valids = cells[5].split(separator: "|").map(String.init)
            experts += cells[6].split(separator: "|").map(String.init)
            var perField: [[String]] = []
            for cell in cells[7...] { perField.append(cell.isEmpty ? [] : cell.split(separator: "|", omittingEmptySubsequences: false).map(String.init)) }
            func has(_ kind: String, _ name: String) -> Bool {
                p.declared.kinds.first { $0.name == kind }?.fields.contains { $0.name == name } ?? false
            }
            for (k, kind) in kinds.enumerated() {
                var fields: [String: String] = [:]
                // A frame's messages each add their kind's fields: the field's n-th occurrence is the n-th message with it.
                for (n, name) in names.enumerated() where has(kind, name) {
                    let index = kinds[..<k].filter { has($0, name) }.count
                    if index < perField[n].count { fields[name] = perField[n][index] }
                }
                out[key, default: []].append(Decoded(kind: kind, fields: fields, valid: k < valids.count && valids[k] == "1"))
            }
        }
        return (out, experts)
    }

    @Test(arguments: subjects) func theGeneratedDissectorAgreesWithKinetrace(_ subject: Subject) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let declaration = Self.root(subject.declaration)
        let p = try DeclaredProtocol.read(Array(try Data(contentsOf: URL(fileURLWithPath: declaration))), path: declaration)
        let abbr = p.declared.name.replacingOccurrences(of: "-", with: "_")
        let lua = dir.appendingPathComponent("\(p.declared.name).lua").path
        let generated = try kinetrace("protocol", "dissector", declaration)
        #expect(generated.status == 0, "\(generated.stderr)")
        try Data(generated.stdout.utf8).write(to: URL(fileURLWithPath: lua))

        var pcap = subject.capture.map(Self.root) ?? ""
        if subject.capture == nil {
            let synthesised = dir.appendingPathComponent("s.jsonl").path
            pcap = dir.appendingPathComponent("s.pcap").path
            #expect(try kinetrace("synth", "--protocol", declaration, "--out", synthesised, "--duration", "6", "--seed", "26", "--controllers", "3").status == 0)
            #expect(try kinetrace("convert", synthesised, pcap).status == 0)
        }
        let trace = dir.appendingPathComponent("t.jsonl").path
        let converted = try kinetrace("convert", "--protocol", declaration, pcap, trace)
        #expect(converted.status == 0, "\(converted.stderr)")
        let ours = try Self.kinetraceMessages(trace, p)
        let total = ours.values.map(\.count).reduce(0, +)
        #expect(total > 20, "\(subject.testDescription): only \(total) messages")
        // The host's port: the one every conversation has at one end.
        var ports: [String: Int] = [:]
        for key in ours.keys { for end in key.split(separator: ">") { ports[String(end.split(separator: ":").last!), default: 0] += 1 } }
        let hostPort = try #require(ports.max { $0.value < $1.value }.flatMap { UInt16($0.key) })
        let names = Array(Set(p.declared.kinds.flatMap { $0.fields.filter { $0.type != .padding }.map(\.name) })).sorted()
        let theirs = try Self.tsharkMessages(pcap, lua: lua, abbr: abbr, p: p, port: hostPort, names: names)
        #expect(Set(theirs.messages.keys) == Set(ours.keys), "conversations: tshark \(theirs.messages.keys.sorted()), kinetrace \(ours.keys.sorted())")
        var compared = 0
        for (key, mine) in ours {
            let shown = theirs.messages[key] ?? []
            #expect(shown.count == mine.count, "\(key): tshark shows \(shown.count) messages, Kinetrace decodes \(mine.count)")
            for (k, (a, b)) in zip(mine, shown).enumerated() {
                // Kinetrace's fields are what describe renders; tshark shows those and the constants too.
                let shownFields = b.fields.filter { a.fields[$0.key] != nil }
                if a.kind != b.kind || a.valid != b.valid || shownFields != a.fields {
                    Issue.record("\(subject.testDescription) \(key) message \(k + 1): Kinetrace \(a), tshark \(b)")
                    break
                }
                compared += 1
            }
        }
        #expect(compared == total, "\(compared) of \(total) messages compared")
    }
}

/// Bad messages, one fault each, through the generated dissector: the same verdict and reason as
/// Kinetrace's codec, and an expert info for each invalid one.
@Suite(.enabled(if: TShark.requirement.runs, "needs tshark and text2pcap (Debian package tshark); with CI set this fails instead"))
struct GeneratedDissectorVerdictTests {
    static func replaced(_ bytes: [UInt8], _ old: String, _ new: String) -> [UInt8] {
        Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: old, with: new).utf8)
    }

    /// Valid samples and, from them, messages with one fault each.
    static func messages(_ p: DeclaredProtocol) -> [(String, [UInt8])] {
        let reading = MotionReading(userAcceleration: Vector3(0.25, 0.75, -0.5), rotationRate: Vector3(1, -2, 3), gravity: .zero, attitude: .zero)
        let good = p.sample(reading, timeMs: 1_795_000_000_123) ?? []
        var out: [(String, [UInt8])] = [("valid", good)]
        var far = reading
        far.userAcceleration = Vector3(0.25, 17, -0.5)
        far.rotationRate = Vector3(1, -2, 40)
        out.append(("out of range", p.sample(far, timeMs: 1_795_000_000_124) ?? []))
        switch p.declared.name {
        case "motionlink-v1":
            var bad = good
            bad[14] ^= 0x10
            out += [("check", bad), ("short", Array(good.dropLast())), ("long", good + [0])]
            var nan = reading
            nan.userAcceleration = Vector3(.nan, 0.75, 0)
            out.append(("not finite", p.sample(nan, timeMs: 1_795_000_000_125) ?? []))
        case "keepcalm-json":
            out += [("constant", replaced(good, "MotionData", "MotionDatb")), ("not JSON", Array(good.dropLast())),
                    ("repeated", replaced(good, "\"x\":", "\"x\":1,\"x\":")), ("string for a number", replaced(good, "\"z\":", "\"z\":\"1\",\"q\":")),
                    ("lowercase id", Array(String(decoding: good, as: UTF8.self).lowercased().replacingOccurrences(of: "motiondata", with: "MotionData")
                        .replacingOccurrences(of: "combined", with: "Combined").utf8))]
        default:
            var tags = good
            if let comma = tags.firstIndex(of: UInt8(ascii: ",")), tags[comma + 2] == UInt8(ascii: "f") { tags[comma + 2] = UInt8(ascii: "i") }
            out += [("type tag", tags), ("address", replaced(good, "/motion", "/motioX"))]
        }
        return out
    }

    @Test(arguments: ["specs/protocols/motionlink-v1.json", "specs/protocols/keepcalm-json.json", "examples/protocols/osc-motion.json"])
    func badMessagesGetKinetracesVerdictAndAnExpertInfo(_ path: String) throws {
        let file = Fixture.packageRoot.appendingPathComponent(path).path
        let p = try DeclaredProtocol.read(Array(try Data(contentsOf: URL(fileURLWithPath: file))), path: file)
        let abbr = p.declared.name.replacingOccurrences(of: "-", with: "_")
        var tshark = try TShark()
        let lua = tshark.directory.appendingPathComponent("d.lua")
        try Data(try kinetrace("protocol", "dissector", file).stdout.utf8).write(to: lua)
        let cases = Self.messages(p)
        let pcap = try tshark.capture(cases.map { Datagram(fromController: true, sourcePort: 40_000, destinationPort: p.defaultPort, payload: $0.1) })
        let output = try tshark.run("tshark", ["-r", pcap, "-X", "lua_script:\(lua.path)", "-T", "fields", "-E", "aggregator=|",
                                               "-e", "\(abbr).valid", "-e", "\(abbr).reason", "-e", "_ws.expert.message"])
        let rows = output.split(separator: "\n", omittingEmptySubsequences: false).prefix(cases.count).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(rows.count == cases.count)
        for ((label, bytes), row) in zip(cases, rows) {
            let reason = p.facts(bytes).error?.code.name
            #expect(row.count >= 3, "\(label): \(row)")
            guard row.count >= 3 else { continue }
            #expect(row[0] == (reason == nil ? "1" : "0"), "\(path) \(label): tshark valid \(row[0]), Kinetrace \(reason ?? "valid")")
            #expect(row[1] == (reason ?? ""), "\(path) \(label): tshark reason \(row[1]), Kinetrace \(reason ?? "none")")
            if reason != nil { #expect(!row[2].isEmpty, "\(path) \(label): no expert info") }
        }
    }

    /// A declaration is someone else's file: its strings (version, summary, a constant) carry quotes,
    /// backslashes, Lua comment and string brackets and calls, and stay data in the script.
    @Test func hostileStringsStayData() throws {
        var tshark = try TShark()
        let constant = #"a"b\c]]--[[x")os.exit(5)"#
        let declaration: [String: Any] = [
            "kinetrace_protocol": 1, "name": "hostile-strings", "version": #"1.0"); os.exit(3) --]] \"#,
            "summary": #"]] --[[ "quoted" \ os.exit(4)"#, "transport": ["kind": "udp", "default_port": 9300], "rate_hz": 10,
            "messages": [["kind": "motion", "direction": "controller_to_host", "encoding": "json", "max_length": 512,
                          "unknown_members": "allowed", "repeated_members": "malformed",
                          "members": [["path": "tag", "type": "string", "constant": constant],
                                      ["path": "v.y", "type": "number", "finite": true, "range": [-2, 2], "role": "user_acceleration.y"]]]],
        ]
        let file = tshark.directory.appendingPathComponent("hostile.json")
        try JSONSerialization.data(withJSONObject: declaration).write(to: file)
        let generated = try kinetrace("protocol", "dissector", file.path)
        #expect(generated.status == 0, "\(generated.stderr)")
        let lua = tshark.directory.appendingPathComponent("hostile.lua")
        try Data(generated.stdout.utf8).write(to: lua)
        let message = try JSONSerialization.data(withJSONObject: ["tag": constant, "v": ["y": 0.5]])
        let pcap = try tshark.capture([Datagram(fromController: true, sourcePort: 40_000, destinationPort: 9300, payload: Array(message))])
        let output = try tshark.run("tshark", ["-r", pcap, "-X", "lua_script:\(lua.path)", "-T", "fields",
                                               "-e", "hostile_strings.tag", "-e", "hostile_strings.y", "-e", "hostile_strings.valid"])
        #expect(output.split(separator: "\n").first.map(String.init) == "\(constant)\t0.5\t1", "\(output)")
    }
}
