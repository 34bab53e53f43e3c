import KinetraceHash

/// A protocol declared in a file (specs/protocol-declaration-v1.md), read and
/// checked: every value range-checked where it is read, unknown members
/// refused, nothing executed. Immutable, so one value serves every thread.
package final class ProtocolDeclaration: Sendable, CustomStringConvertible {
    package let name: String
    package let version: String
    package let summary: String
    package let specification: String
    package let framing: DeclaredFraming
    package let defaultPort: UInt16
    package let rateHz: Double
    package let senderClockUnit: ClockUnit?
    package let senderClockEpoch: String?
    package let ownVector: OwnVector?
    package let kinds: [DeclaredKind]
    package let host: DeclaredHost?
    package let requirements: [DeclaredRequirement]
    /// The declaration re-serialised canonically (PD-CANON-1): what a trace header embeds.
    package let canonicalText: String
    /// `sha256:` and the lower-case hex SHA-256 of `canonicalText`.
    package let digest: String

    package var transport: TransportKind { framing == .datagram ? .datagram : .byteStream }
    package var description: String { "\(name) (\(digest))" }

    /// The declaration language's major version this build reads.
    package static let languageVersion = 1
    package static let maximumKinds = 16
    package static let maximumFields = 64
    package static let maximumRequirements = 512
    package static let maximumRecordLength = 1 << 20

    init(name: String, version: String, summary: String, specification: String, framing: DeclaredFraming, defaultPort: UInt16,
         rateHz: Double, senderClockUnit: ClockUnit?, senderClockEpoch: String?, ownVector: OwnVector?, kinds: [DeclaredKind],
         host: DeclaredHost?, requirements: [DeclaredRequirement], canonicalText: String) {
        self.name = name
        self.version = version
        self.summary = summary
        self.specification = specification
        self.framing = framing
        self.defaultPort = defaultPort
        self.rateHz = rateHz
        self.senderClockUnit = senderClockUnit
        self.senderClockEpoch = senderClockEpoch
        self.ownVector = ownVector
        self.kinds = kinds
        self.host = host
        self.requirements = requirements
        self.canonicalText = canonicalText
        self.digest = "sha256:" + SHA256.hex(Array(canonicalText.utf8))
    }

    /// Reads and checks a declaration; `source` names it in errors (a path, or `<trace header>`).
    package static func read(_ bytes: [UInt8], source: String) throws(DeclarationError) -> ProtocolDeclaration {
        let parsed: Result<ProtocolDeclaration, DeclarationError> = bytes.withUnsafeBytes { raw in
            func located(_ offset: Int, _ message: String) -> DeclarationError {
                let (line, column) = DeclarationDocumentReader.position(of: offset, in: raw)
                return DeclarationError(source: source, line: line, column: column, message: oneLine(message))
            }
            let root: DeclarationNode
            do throws(DeclarationDocumentReader.Failure) {
                root = try DeclarationDocumentReader.read(raw)
            } catch {
                return .failure(located(error.offset, "expected \(error.message)"))
            }
            do throws(DeclarationReader.Failure) {
                var reader = DeclarationReader()
                return .success(try reader.declaration(root))
            } catch {
                return .failure(located(error.offset, error.message))
            }
        }
        return try parsed.get()
    }

    /// The kind named `name`.
    package func kind(named name: String) -> Int? { kinds.firstIndex { $0.name == name } }

    /// The requirement with `id`.
    package func requirement(_ id: String) -> DeclaredRequirement? { requirements.first { $0.id == id } }
}

/// A message that quotes the file stays one line (PD-FILE-4): control characters are shown escaped.
func oneLine(_ message: String) -> String {
    var out = ""
    for scalar in message.unicodeScalars {
        switch scalar {
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}":
            out += "\\u{" + String(scalar.value, radix: 16) + "}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}

/// Turns the document tree into a checked declaration.
struct DeclarationReader {
    struct Failure: Error {
        var offset: Int
        var message: String
    }

    private var citations: [(id: String, offset: Int)] = []

    /// An object's members, each taken at most once; what is left over is refused (PD-FILE-3).
    struct Members {
        var members: [(name: String, nameOffset: Int, value: DeclarationNode)]
        var taken: Set<String> = []
        let offset: Int
        let context: String

        init(_ node: DeclarationNode, _ context: String) throws(Failure) {
            guard case .object(let members, let offset) = node else {
                throw Failure(offset: node.offset, message: "\(context) must be an object, found \(node.typeName)")
            }
            self.members = members
            self.offset = offset
            self.context = context
        }

        mutating func optional(_ name: String) -> DeclarationNode? {
            taken.insert(name)
            return members.first { $0.name == name }?.value
        }

        mutating func required(_ name: String) throws(Failure) -> DeclarationNode {
            guard let node = optional(name) else { throw Failure(offset: offset, message: "\(context) needs member \"\(name)\"") }
            return node
        }

        /// Refuses members nobody asked for: a typo must not silently change nothing.
        func finish() throws(Failure) {
            if let stray = members.first(where: { !taken.contains($0.name) }) {
                throw Failure(offset: stray.nameOffset, message: "\(context) has no member \"\(stray.name)\"")
            }
        }
    }

    // MARK: Value readers

    static func string(_ node: DeclarationNode, _ what: String, maxBytes: Int = 4096, pattern: ((String) -> Bool)? = nil,
                       patternText: String = "", controlCharacters: Bool = false) throws(Failure) -> String {
        guard case .string(let s, let offset) = node else { throw Failure(offset: node.offset, message: "\(what) must be a string, found \(node.typeName)") }
        guard s.utf8.count <= maxBytes else { throw Failure(offset: offset, message: "\(what) must be at most \(maxBytes) bytes") }
        if let pattern, !pattern(s) { throw Failure(offset: offset, message: "\(what) must be \(patternText), found \"\(s)\"") }
        // PD-FILE-2: no control character but tab, line feed and carriage return, except in a delimiter or separator.
        guard controlCharacters || !s.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" && $0 != "\r" && $0 != "\t" }) else {
            throw Failure(offset: offset, message: "\(what) must not hold control characters")
        }
        return s
    }

    static func number(_ node: DeclarationNode, _ what: String, in range: ClosedRange<Double>) throws(Failure) -> Double {
        guard case .number(let text, let offset) = node, let value = Double(text) else {
            throw Failure(offset: node.offset, message: "\(what) must be a number, found \(node.typeName)")
        }
        guard value.isFinite, range.contains(value) else {
            throw Failure(offset: offset, message: "\(what) must be from \(Self.show(range.lowerBound)) to \(Self.show(range.upperBound)), found \(text)")
        }
        return value
    }

    static func integer(_ node: DeclarationNode, _ what: String, in range: ClosedRange<Int>) throws(Failure) -> Int {
        guard case .number(let text, let offset) = node else {
            throw Failure(offset: node.offset, message: "\(what) must be an integer, found \(node.typeName)")
        }
        guard let value = Int(text) else { throw Failure(offset: offset, message: "\(what) must be an integer, found \(text)") }
        guard range.contains(value) else {
            throw Failure(offset: offset, message: "\(what) must be from \(range.lowerBound) to \(range.upperBound), found \(text)")
        }
        return value
    }

    static func bool(_ node: DeclarationNode, _ what: String) throws(Failure) -> Bool {
        guard case .bool(let b, _) = node else { throw Failure(offset: node.offset, message: "\(what) must be true or false, found \(node.typeName)") }
        return b
    }

    static func array(_ node: DeclarationNode, _ what: String, count: ClosedRange<Int>) throws(Failure) -> [DeclarationNode] {
        guard case .array(let elements, let offset) = node else { throw Failure(offset: node.offset, message: "\(what) must be an array, found \(node.typeName)") }
        guard count.contains(elements.count) else {
            throw Failure(offset: offset, message: "\(what) must have \(count.lowerBound) to \(count.upperBound) elements, found \(elements.count)")
        }
        return elements
    }

    static func oneOf(_ node: DeclarationNode, _ what: String, _ choices: [String]) throws(Failure) -> String {
        let s = try string(node, what)
        guard choices.contains(s) else {
            throw Failure(offset: node.offset, message: "\(what) must be one of \(choices.map { "\"\($0)\"" }.joined(separator: ", ")), found \"\(s)\"")
        }
        return s
    }

    /// The values an integer type holds, as doubles (exact for every width but 64, where it is the nearest below).
    static func integerLimits(_ type: ScalarType) -> ClosedRange<Double>? {
        switch type {
        case .u8: return 0...255
        case .u16: return 0...65_535
        case .u32: return 0...4_294_967_295
        case .u64: return 0...18_446_744_073_709_549_568
        case .i8: return -128...127
        case .i16: return -32_768...32_767
        case .i32: return -2_147_483_648...2_147_483_647
        case .i64, .integer: return -9_223_372_036_854_775_808...9_223_372_036_854_774_784
        default: return nil
        }
    }

    static func show(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v) }

    static func isIdentifier(_ s: String, maxLength: Int, hyphen: Bool) -> Bool {
        let bytes = Array(s.utf8)
        guard (1...maxLength).contains(bytes.count), bytes[0] >= 0x61, bytes[0] <= 0x7A else { return false }
        return bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == (hyphen ? 0x2D : 0x5F) }
    }

    static func isRequirementID(_ s: String) -> Bool {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 2, s.utf8.count <= 64 else { return false }
        for (i, part) in parts.enumerated() {
            guard !part.isEmpty, part.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else { return false }
            if i == 0, let first = part.utf8.first, !(0x41...0x5A).contains(first) { return false }
        }
        return true
    }

    mutating func citation(_ members: inout Members) throws(Failure) -> String? {
        guard let node = members.optional("requirement") else { return nil }
        let id = try Self.string(node, "\"requirement\"", pattern: Self.isRequirementID, patternText: "a requirement ID such as ABC-RULE-1")
        citations.append((id, node.offset))
        return id
    }

    // MARK: The declaration

    mutating func declaration(_ root: DeclarationNode) throws(Failure) -> ProtocolDeclaration {
        var top = try Members(root, "the declaration")
        let language = try Self.integer(try top.required("kinetrace_protocol"), "\"kinetrace_protocol\"", in: 1...Int.max)
        guard language == ProtocolDeclaration.languageVersion else {
            throw Failure(offset: top.optional("kinetrace_protocol")!.offset,
                          message: "declaration language \(language) is newer than this build reads (\(ProtocolDeclaration.languageVersion))")
        }
        let name = try Self.string(try top.required("name"), "\"name\"",
                                   pattern: { Self.isIdentifier($0, maxLength: 63, hyphen: true) }, patternText: "lower-case letters, digits and '-', starting with a letter, at most 63")
        let version = try Self.string(try top.required("version"), "\"version\"", maxBytes: 32)
        let summary = try Self.string(try top.required("summary"), "\"summary\"", maxBytes: 200)
        let specification = try top.optional("specification").map { n throws(Failure) in try Self.string(n, "\"specification\"", maxBytes: 256) } ?? ""
        let rateHz = try Self.number(try top.required("rate_hz"), "\"rate_hz\"", in: 0.001...10_000)

        var transport = try Members(try top.required("transport"), "\"transport\"")
        let kind = try Self.oneOf(try transport.required("kind"), "\"transport.kind\"", ["udp", "tcp"])
        let port = UInt16(try Self.integer(try transport.required("default_port"), "\"default_port\"", in: 1...65_535))
        var framing = DeclaredFraming.datagram
        if let framingNode = transport.optional("framing") {
            guard kind == "tcp" else { throw Failure(offset: framingNode.offset, message: "\"framing\" applies to \"tcp\" only: a UDP datagram is one message") }
            framing = try Self.framing(framingNode)
        } else if kind == "tcp" {
            throw Failure(offset: transport.offset, message: "a \"tcp\" transport needs \"framing\": fixed_length, length_prefix or delimiter")
        }
        try transport.finish()

        var clockUnit: ClockUnit?, clockEpoch: String?
        if let clockNode = top.optional("sender_clock") {
            var clock = try Members(clockNode, "\"sender_clock\"")
            clockUnit = ClockUnit(rawValue: try Self.oneOf(try clock.required("unit"), "\"sender_clock.unit\"", ["s", "ms", "us", "ns"]))
            clockEpoch = try Self.oneOf(try clock.required("epoch"), "\"sender_clock.epoch\"", ["unix", "arbitrary"])
            try clock.finish()
        }

        var ownVector: OwnVector?
        if let vectorsNode = top.optional("vectors") {
            let list = try Self.array(vectorsNode, "\"vectors\"", count: 1...1)
            if let first = list.first {
                var v = try Members(first, "a vector")
                let vname = try Self.string(try v.required("name"), "\"vectors[0].name\"",
                                            pattern: { Self.isIdentifier($0, maxLength: 32, hyphen: false) && !VectorSlot.standardNames.contains($0) },
                                            patternText: "a new lower-case name (not a standard vector's)")
                let vsummary = try Self.string(try v.required("summary"), "\"summary\"", maxBytes: 200)
                var sumOf: [VectorSlot] = []
                do {
                    for element in try Self.array(try v.required("sum_of"), "\"sum_of\"", count: 1...4) {
                        let n = try Self.oneOf(element, "a \"sum_of\" vector", VectorSlot.standardNames)
                        sumOf.append(VectorSlot(rawValue: VectorSlot.standardNames.firstIndex(of: n)!)!)
                    }
                }
                try v.finish()
                ownVector = OwnVector(name: vname, summary: vsummary, sumOf: sumOf)
            }
        }
        self.ownVector = ownVector

        var kinds: [DeclaredKind] = []
        for node in try Self.array(try top.required("messages"), "\"messages\"", count: 1...ProtocolDeclaration.maximumKinds) {
            let k = try messageKind(node)
            guard !kinds.contains(where: { $0.name == k.name }) else { throw Failure(offset: node.offset, message: "kind \"\(k.name)\" is declared twice") }
            kinds.append(k)
        }
        if let mixed = kinds.first(where: { $0.encoding.name != kinds[0].encoding.name }) {
            throw Failure(offset: top.offset, message: "every kind has one encoding (\(kinds[0].encoding.name)); kind \"\(mixed.name)\" is \(mixed.encoding.name)")
        }
        try Self.checkKindsDistinct(kinds, at: top.offset)
        if case .lengthPrefix(_, _, let offset, _, _) = framing, offset > 0 {
            // The bytes before the prefix belong to the body: every kind must have them.
            for k in kinds {
                guard case .binary(let length) = k.encoding, length >= offset else {
                    throw Failure(offset: top.offset, message: "a length prefix at offset \(offset) needs binary kinds of at least \(offset) bytes; kind \"\(k.name)\" is not one")
                }
            }
        }
        if case .fixedLength(let n) = framing {
            for k in kinds { if case .binary(let length) = k.encoding, length != n {
                throw Failure(offset: top.offset, message: "kind \"\(k.name)\" is \(length) bytes but the framing's fixed_length is \(n)")
            } }
        }
        let usesSenderTime = kinds.contains { $0.field(withRole: .senderTime) != nil || $0.field(withRole: .echoTime) != nil }
        if usesSenderTime && clockUnit == nil {
            throw Failure(offset: top.offset, message: "a field has role sender_time or echo_time, so the declaration needs \"sender_clock\"")
        }
        if !usesSenderTime, let unit = clockUnit {
            throw Failure(offset: top.offset, message: "\"sender_clock\" (\(unit.rawValue)) is declared but no field has role sender_time")
        }

        var host: DeclaredHost?
        if let hostNode = top.optional("host") { host = try self.host(hostNode, kinds: kinds, hasSenderClock: clockUnit != nil) }

        var requirements: [DeclaredRequirement] = []
        if let requirementsNode = top.optional("requirements") {
            for node in try Self.array(requirementsNode, "\"requirements\"", count: 1...ProtocolDeclaration.maximumRequirements) {
                var r = try Members(node, "a requirement")
                let id = try Self.string(try r.required("id"), "\"id\"", pattern: Self.isRequirementID, patternText: "a requirement ID such as ABC-RULE-1")
                let level = try Self.oneOf(try r.required("level"), "\"level\"", ["MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "INFO"])
                let text = try Self.string(try r.required("text"), "\"text\"", maxBytes: 2048)
                try r.finish()
                guard !requirements.contains(where: { $0.id == id }) else { throw Failure(offset: node.offset, message: "requirement \(id) is listed twice") }
                requirements.append(DeclaredRequirement(id: id, level: level, text: text))
            }
            for cited in citations where !requirements.contains(where: { $0.id == cited.id }) {
                throw Failure(offset: cited.offset, message: "requirement \(cited.id) is cited but not listed in \"requirements\"")
            }
        }
        try top.finish()
        return ProtocolDeclaration(name: name, version: version, summary: summary, specification: specification, framing: framing,
                                   defaultPort: port, rateHz: rateHz, senderClockUnit: clockUnit, senderClockEpoch: clockEpoch,
                                   ownVector: ownVector, kinds: kinds, host: host, requirements: requirements,
                                   canonicalText: CanonicalJSON.text(root))
    }

    private var ownVector: OwnVector?

    static func framing(_ node: DeclarationNode) throws(Failure) -> DeclaredFraming {
        var f = try Members(node, "\"framing\"")
        let maxRecord = ProtocolDeclaration.maximumRecordLength
        var result: DeclaredFraming?
        if let n = f.optional("fixed_length") {
            result = .fixedLength(try integer(n, "\"fixed_length\"", in: 1...65_536))
        }
        if let n = f.optional("length_prefix") {
            guard result == nil else { throw Failure(offset: n.offset, message: "\"framing\" takes one of fixed_length, length_prefix and delimiter") }
            var p = try Members(n, "\"length_prefix\"")
            let width = try integer(try p.required("width"), "\"width\"", in: 1...8)
            guard [1, 2, 4, 8].contains(width) else { throw Failure(offset: n.offset, message: "\"width\" must be 1, 2, 4 or 8") }
            let order = try oneOf(try p.required("byte_order"), "\"byte_order\"", ["big", "little"])
            let offset = try p.optional("offset").map { n throws(Failure) in try integer(n, "\"offset\"", in: 0...64) } ?? 0
            let countsItself = try p.optional("counts_itself").map { n throws(Failure) in try bool(n, "\"counts_itself\"") } ?? false
            let maximum = try integer(try p.required("max_length"), "\"max_length\"", in: (offset + width + 1)...maxRecord)
            try p.finish()
            result = .lengthPrefix(width: width, bigEndian: order == "big", offset: offset, countsItself: countsItself, maximumLength: maximum)
        }
        if let n = f.optional("delimiter") {
            guard result == nil else { throw Failure(offset: n.offset, message: "\"framing\" takes one of fixed_length, length_prefix and delimiter") }
            let d = Array(try string(n, "\"delimiter\"", controlCharacters: true).utf8)
            guard (1...8).contains(d.count) else { throw Failure(offset: n.offset, message: "\"delimiter\" must be 1 to 8 bytes") }
            let maximum = try integer(try f.required("max_length"), "\"max_length\"", in: (d.count + 1)...maxRecord)
            result = .delimiter(d, maximumLength: maximum)
        } else if let n = f.optional("max_length") {
            throw Failure(offset: n.offset, message: "\"max_length\" belongs with \"delimiter\" (a length_prefix has its own)")
        }
        try f.finish()
        guard let result else { throw Failure(offset: node.offset, message: "\"framing\" needs fixed_length, length_prefix or delimiter") }
        return result
    }

    // MARK: Message kinds

    mutating func messageKind(_ node: DeclarationNode) throws(Failure) -> DeclaredKind {
        var m = try Members(node, "a message kind")
        let name = try Self.string(try m.required("kind"), "\"kind\"",
                                   pattern: { Self.isIdentifier($0, maxLength: 32, hyphen: false) && $0 != "unknown" },
                                   patternText: "lower-case letters, digits and '_', starting with a letter, and not \"unknown\" (what a trace calls bytes of no kind)")
        let context = "kind \"\(name)\""
        let direction: Direction = try Self.oneOf(try m.required("direction"), "\"direction\"", ["controller_to_host", "host_to_controller"]) == "controller_to_host"
            ? .controllerToHost : .hostToController
        let encodingName = try Self.oneOf(try m.required("encoding"), "\"encoding\"", ["binary", "json", "text", "osc"])
        let requirement = try citation(&m)
        var fields: [DeclaredField] = []
        let encoding: DeclaredEncoding
        switch encodingName {
        case "binary":
            let order = try m.optional("byte_order").map { n throws(Failure) in try Self.oneOf(n, "\"byte_order\"", ["big", "little"]) }
            var offset = 0
            for f in try Self.array(try m.required("fields"), "\(context)'s \"fields\"", count: 1...ProtocolDeclaration.maximumFields) {
                var field = try self.field(f, encoding: "binary", defaultOrder: order)
                field.offset = offset
                offset += field.size
                fields.append(field)
            }
            for field in fields {
                if let check = field.check {
                    guard check.to <= offset, check.from < check.to else {
                        throw Failure(offset: node.offset, message: "\(context): the check in \"\(field.name)\" covers bytes \(check.from)..<\(check.to) of a \(offset)-byte message")
                    }
                    guard !(check.from..<check.to).overlaps(field.offset..<(field.offset + field.size)) else {
                        throw Failure(offset: node.offset, message: "\(context): the check in \"\(field.name)\" covers its own bytes")
                    }
                }
            }
            encoding = .binary(length: offset)
        case "json":
            let maximum = try m.optional("max_length").map { n throws(Failure) in try Self.integer(n, "\"max_length\"", in: 2...ProtocolDeclaration.maximumRecordLength) } ?? 4096
            let unknown = try m.optional("unknown_members").map { n throws(Failure) in try Self.oneOf(n, "\"unknown_members\"", ["allowed", "refused"]) } ?? "allowed"
            let repeated = try m.optional("repeated_members").map { n throws(Failure) in try Self.oneOf(n, "\"repeated_members\"", ["malformed", "first", "last"]) } ?? "malformed"
            for f in try Self.array(try m.required("members"), "\(context)'s \"members\"", count: 1...ProtocolDeclaration.maximumFields) {
                fields.append(try field(f, encoding: "json", defaultOrder: nil))
            }
            // A path may not run through a leaf ("a" and "a.b" both declared).
            for f in fields {
                for g in fields where g.path.count > f.path.count && Array(g.path.prefix(f.path.count)) == f.path {
                    throw Failure(offset: node.offset, message: "\(context): member \"\(f.path.joined(separator: "."))\" is a value and a container of \"\(g.path.joined(separator: "."))\"")
                }
                if fields.filter({ $0.path == f.path }).count > 1 {
                    throw Failure(offset: node.offset, message: "\(context): member \"\(f.path.joined(separator: "."))\" is declared twice")
                }
            }
            encoding = .json(maximumLength: maximum, unknownAllowed: unknown == "allowed", repeated: RepeatedMembers(rawValue: repeated)!)
        case "text":
            let separator = Array(try Self.string(try m.required("separator"), "\"separator\"", controlCharacters: true).utf8)
            guard (1...8).contains(separator.count), !separator.contains(0x0A) else {
                throw Failure(offset: node.offset, message: "\(context): \"separator\" must be 1 to 8 bytes without a newline")
            }
            let maximum = try m.optional("max_length").map { n throws(Failure) in try Self.integer(n, "\"max_length\"", in: 1...ProtocolDeclaration.maximumRecordLength) } ?? 4096
            for f in try Self.array(try m.required("fields"), "\(context)'s \"fields\"", count: 1...ProtocolDeclaration.maximumFields) {
                fields.append(try field(f, encoding: "text", defaultOrder: nil))
            }
            encoding = .text(separator: separator, maximumLength: maximum)
        default:
            let address = try Self.string(try m.required("address"), "\"address\"", maxBytes: 256,
                                          pattern: { $0.hasPrefix("/") && !$0.unicodeScalars.contains { " #*,?[]{}".unicodeScalars.contains($0) || !$0.isASCII } },
                                          patternText: "an OSC address: '/' then ASCII without space # * , ? [ ] { }")
            let bundles = try m.optional("bundles").map { n throws(Failure) in try Self.oneOf(n, "\"bundles\"", ["allowed", "refused"]) } ?? "allowed"
            for f in try Self.array(try m.required("arguments"), "\(context)'s \"arguments\"", count: 0...ProtocolDeclaration.maximumFields) {
                fields.append(try field(f, encoding: "osc", defaultOrder: nil))
            }
            encoding = .osc(address: address, bundlesAllowed: bundles == "allowed")
        }
        try m.finish()
        var names = Set<String>()
        for f in fields where f.isRendered {
            guard names.insert(f.name).inserted else { throw Failure(offset: node.offset, message: "\(context): field name \"\(f.name)\" is used twice") }
        }
        for role in Set(fields.compactMap(\.role)) where fields.filter({ $0.role == role }).count > 1 {
            throw Failure(offset: node.offset, message: "\(context): role \(role) is given to two fields")
        }
        return DeclaredKind(name: name, direction: direction, encoding: encoding, fields: fields, requirement: requirement)
    }

    static let oscTypes: [String: ScalarType] = ["i": .i32, "f": .f32, "d": .f64, "s": .string, "b": .bytes, "t": .u64, "T": .boolean, "F": .boolean]

    mutating func field(_ node: DeclarationNode, encoding: String, defaultOrder: String?) throws(Failure) -> DeclaredField {
        var m = try Members(node, encoding == "json" ? "a member" : encoding == "osc" ? "an argument" : "a field")
        var path: [String] = []
        let name: String
        if encoding == "json" {
            let pathText = try Self.string(try m.required("path"), "\"path\"", maxBytes: 256)
            path = pathText.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard (1...8).contains(path.count), path.allSatisfy({ !$0.isEmpty }) else {
                throw Failure(offset: node.offset, message: "\"path\" must be 1 to 8 member names joined by '.', found \"\(pathText)\"")
            }
            name = try m.optional("name").map { n throws(Failure) in
                try Self.string(n, "\"name\"", pattern: { Self.isIdentifier($0, maxLength: 32, hyphen: false) }, patternText: "lower-case letters, digits and '_'")
            } ?? path.last!
            guard Self.isIdentifier(name, maxLength: 32, hyphen: false) else {
                throw Failure(offset: node.offset, message: "member \"\(pathText)\" needs a \"name\" of lower-case letters, digits and '_' for its decoded field")
            }
        } else {
            name = try Self.string(try m.required("name"), "\"name\"", pattern: { Self.isIdentifier($0, maxLength: 32, hyphen: false) }, patternText: "lower-case letters, digits and '_', starting with a letter")
        }
        let typeNode = try m.required("type")
        let type: ScalarType
        switch encoding {
        case "binary":
            type = ScalarType(rawValue: try Self.oneOf(typeNode, "\"type\"", ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64", "bytes", "padding"]))!
        case "json":
            type = ScalarType(rawValue: try Self.oneOf(typeNode, "\"type\"", ["number", "integer", "string", "boolean"]))!
        case "text":
            type = ScalarType(rawValue: try Self.oneOf(typeNode, "\"type\"", ["number", "integer", "string"]))!
        default:
            type = Self.oscTypes[try Self.oneOf(typeNode, "\"type\"", ["i", "f", "d", "s", "b", "t", "T", "F"])]!
        }
        var field = DeclaredField(name: name, type: type)
        field.path = path
        if encoding == "osc", case .string(let tag, _) = typeNode, tag == "T" || tag == "F" { field.constant = .bool(tag == "T") }
        field.requirement = try citation(&m)
        if encoding == "binary" {
            if type == .bytes || type == .padding {
                field.size = try Self.integer(try m.required("length"), "\"length\"", in: 1...4096)
            } else {
                field.size = type.fixedSize!
            }
            let order = try m.optional("byte_order").map { n throws(Failure) in try Self.oneOf(n, "\"byte_order\"", ["big", "little"]) } ?? defaultOrder
            if field.size > 1 && type != .bytes && type != .padding {
                guard let order else { throw Failure(offset: node.offset, message: "field \"\(name)\" needs a \"byte_order\" (on the field or its kind)") }
                field.bigEndian = order == "big"
            }
            if let c = m.optional("check") {
                var check = try Members(c, "\"check\"")
                let algorithm = CheckAlgorithm(rawValue: try Self.oneOf(try check.required("algorithm"), "\"algorithm\"", ["crc32", "crc16_ccitt", "sum8", "xor8"]))!
                let from = try Self.integer(try check.required("from"), "\"from\"", in: 0...1_000_000)
                let to = try Self.integer(try check.required("to"), "\"to\"", in: 0...1_000_000)
                try check.finish()
                guard type == algorithm.fieldType else {
                    throw Failure(offset: c.offset, message: "a \(algorithm.rawValue) check is held in a \(algorithm.fieldType.rawValue) field, \"\(name)\" is \(type.rawValue)")
                }
                field.check = DeclaredCheck(algorithm: algorithm, from: from, to: to)
            }
        } else if encoding == "json" {
            field.required = try m.optional("required").map { n throws(Failure) in try Self.bool(n, "\"required\"") } ?? true
        }
        if let f = m.optional("format") {
            guard type == .string, encoding == "json" else { throw Failure(offset: f.offset, message: "\"format\" applies to JSON string members") }
            field.format = try Self.oneOf(f, "\"format\"", ["uuid", "uuid_upper"])
        }
        if let c = m.optional("constant") {
            guard field.check == nil, type != .padding else { throw Failure(offset: c.offset, message: "a check or padding field cannot also be a constant") }
            guard !type.isFloat else { throw Failure(offset: c.offset, message: "a float cannot be a constant (compare integers, strings or bytes)") }
            field.constant = try Self.constant(c, type: type, size: field.size)
        }
        if let f = m.optional("finite") {
            field.finite = try Self.bool(f, "\"finite\"")
            guard type.isFloat || !field.finite else { throw Failure(offset: f.offset, message: "\"finite\" applies to float fields") }
        }
        if let r = m.optional("range") {
            guard type.isNumeric else { throw Failure(offset: r.offset, message: "\"range\" applies to numeric fields") }
            let bounds = try Self.array(r, "\"range\"", count: 2...2)
            var lo = try Self.number(bounds[0], "the range's minimum", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude)
            var hi = try Self.number(bounds[1], "the range's maximum", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude)
            guard lo <= hi else { throw Failure(offset: r.offset, message: "\"range\" must be [minimum, maximum] with minimum ≤ maximum") }
            if type == .f32 {
                // A float32 host compares in float32 (PD-RANGE-2).
                lo = Double(Float32(lo))
                hi = Double(Float32(hi))
            }
            field.range = lo...hi
        }
        if let r = m.optional("role") {
            let role = try self.role(r)
            // As written: an own vector's axis by its declared name.
            let written: String = { if case .string(let text, _) = r { return text } else { return role.description } }()
            switch role {
            case .senderTime, .echoTime:
                guard type.isNumeric else { throw Failure(offset: r.offset, message: "role \(written) needs a numeric field") }
            case .motion:
                // Integers would need a scale to mean g or rad/s, which the language cannot say yet.
                guard type.isFloat else { throw Failure(offset: r.offset, message: "role \(written) needs a float field (f32, f64, number, OSC f or d)") }
            case .messageID, .controllerID:
                break
            }
            field.role = role
        }
        try m.finish()
        return field
    }

    func role(_ node: DeclarationNode) throws(Failure) -> FieldRole {
        let text = try Self.string(node, "\"role\"", maxBytes: 64)
        switch text {
        case "sender_time": return .senderTime
        case "echo_time": return .echoTime
        case "controller_id": return .controllerID
        case "message_id": return .messageID
        default: break
        }
        let parts = text.split(separator: ".").map(String.init)
        if parts.count == 2, let axis = ["x", "y", "z"].firstIndex(of: parts[1]) {
            if let standard = VectorSlot.standardNames.firstIndex(of: parts[0]) { return .motion(VectorSlot(rawValue: standard)!, axis: axis) }
            if parts[0] == ownVector?.name { return .motion(.own, axis: axis) }
        }
        let own = ownVector.map { ", \($0.name).x" } ?? ""
        throw Failure(offset: node.offset, message: "\"role\" must be sender_time, echo_time, controller_id, message_id or a motion axis such as user_acceleration.y\(own), found \"\(text)\"")
    }

    static func constant(_ node: DeclarationNode, type: ScalarType, size: Int) throws(Failure) -> DeclaredValue {
        switch type {
        case .string:
            return .string(try string(node, "\"constant\""))
        case .boolean:
            return .bool(try bool(node, "\"constant\""))
        case .bytes:
            let hex = try string(node, "\"constant\"", maxBytes: 8192)
            guard hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
                  case .success(let bytes) = Hex.decode(hex), bytes.count == size else {
                throw Failure(offset: node.offset, message: "\"constant\" of a \(size)-byte field must be \(2 * size) lower-case hex digits")
            }
            return .bytes(bytes)
        case .f32, .f64, .number:
            let v = try number(node, "\"constant\"", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude)
            return type == .f32 ? .float32(Float32(v)) : .float64(v)
        default:
            guard case .number(let text, _) = node else { throw Failure(offset: node.offset, message: "\"constant\" must be an integer") }
            let bits = (type.fixedSize ?? 8) * 8
            if type.isSigned {
                guard let v = Int64(text), bits == 64 || (v >= -(Int64(1) << (bits - 1)) && v < (Int64(1) << (bits - 1))) else {
                    throw Failure(offset: node.offset, message: "\"constant\" must be an integer that fits \(type.rawValue), found \(text)")
                }
                return .signed(v)
            }
            guard let v = UInt64(text), bits == 64 || v < (UInt64(1) << bits) else {
                throw Failure(offset: node.offset, message: "\"constant\" must be an integer that fits \(type.rawValue), found \(text)")
            }
            return .unsigned(v)
        }
    }

    /// Two kinds in the same direction and encoding must be told apart by length, constants or address.
    static func checkKindsDistinct(_ kinds: [DeclaredKind], at offset: Int) throws(Failure) {
        for (i, a) in kinds.enumerated() {
            for b in kinds[(i + 1)...] where a.encoding.name == b.encoding.name {
                let distinct: Bool
                switch (a.encoding, b.encoding) {
                case (.binary(let la), .binary(let lb)):
                    distinct = la != lb || zip(a.fields, b.fields).contains { fa, fb in
                        fa.offset == fb.offset && fa.size == fb.size && fa.constant != nil && fb.constant != nil && fa.constant != fb.constant
                    }
                case (.osc(let aa, _), .osc(let ab, _)):
                    distinct = aa != ab
                default:
                    distinct = a.fields.contains { fa in
                        b.fields.contains { fb in
                            fa.path == fb.path && fa.name == fb.name && fa.constant != nil && fb.constant != nil && fa.constant != fb.constant
                        }
                    }
                }
                guard distinct else {
                    throw Failure(offset: offset, message: "kinds \"\(a.name)\" and \"\(b.name)\" cannot be told apart: give them different lengths, constants or addresses")
                }
            }
        }
    }

    // MARK: Host behaviour

    mutating func host(_ node: DeclarationNode, kinds: [DeclaredKind], hasSenderClock: Bool) throws(Failure) -> DeclaredHost {
        var h = try Members(node, "\"host\"")
        let behaviourName = try Self.oneOf(try h.required("behaviour"), "\"behaviour\"", ["threshold", "apply"])
        let decision = try Self.string(try h.required("decision"), "\"decision\"", pattern: { Self.isIdentifier($0, maxLength: 32, hyphen: false) }, patternText: "lower-case letters, digits and '_'")
        let requirement = try citation(&h)
        let samples = kinds.filter { $0.direction == .controllerToHost }
        func carried(_ role: FieldRole, _ at: Int) throws(Failure) {
            guard samples.contains(where: { $0.field(withRole: role) != nil }) else {
                throw Failure(offset: at, message: "no controller_to_host kind has a field with role \(role)")
            }
        }
        var values: [FieldRole] = []
        if let v = h.optional("decision_values") {
            for element in try Self.array(v, "\"decision_values\"", count: 1...8) {
                let role = try self.role(element)
                guard case .motion = role else { throw Failure(offset: element.offset, message: "\"decision_values\" are motion roles") }
                try carried(role, element.offset)
                values.append(role)
            }
        }
        let behaviour: DeclaredHost.Behaviour
        if behaviourName == "threshold" {
            let quantityNode = try h.required("quantity")
            let quantity = try role(quantityNode)
            guard case .motion = quantity else { throw Failure(offset: quantityNode.offset, message: "\"quantity\" must be a motion role such as user_acceleration.y") }
            try carried(quantity, quantityNode.offset)
            let above = try Self.number(try h.required("above"), "\"above\"", in: -1e6...1e6)
            var w = try Members(try h.required("window"), "\"window\"")
            let ms = UInt64(try Self.integer(try w.required("ms"), "\"window.ms\"", in: 0...3_600_000))
            let clockNode = try w.required("clock")
            let clock = try Self.oneOf(clockNode, "\"window.clock\"", ["sender", "arrival"])
            try w.finish()
            if clock == "sender" { guard hasSenderClock else { throw Failure(offset: clockNode.offset, message: "a window on the sender's clock needs a field with role sender_time") } }
            var ignoreStale = false, resync: UInt64 = 0
            if let s = h.optional("stale") {
                guard clock == "sender" else { throw Failure(offset: s.offset, message: "\"stale\" applies to a window on the sender's clock") }
                var stale = try Members(s, "\"stale\"")
                ignoreStale = try Self.bool(try stale.required("ignore"), "\"stale.ignore\"")
                resync = try stale.optional("resync_ms").map { n throws(Failure) in UInt64(try Self.integer(n, "\"resync_ms\"", in: 0...3_600_000)) } ?? 0
                try stale.finish()
            }
            behaviour = .threshold(quantity: quantity, above: above, windowMs: ms, senderClock: clock == "sender", ignoreStale: ignoreStale, resyncMs: resync)
        } else {
            guard !values.isEmpty else { throw Failure(offset: h.offset, message: "an \"apply\" host needs \"decision_values\": the motion roles each decision reports") }
            behaviour = .apply
        }
        var replyKind: Int?, replyFields: [String: Double] = [:], deadline: Double?, replyRequirement: String?
        if let r = h.optional("reply") {
            var reply = try Members(r, "\"reply\"")
            let kindNode = try reply.required("kind")
            let kindName = try Self.string(kindNode, "\"reply.kind\"")
            guard let index = kinds.firstIndex(where: { $0.name == kindName && $0.direction == .hostToController }) else {
                throw Failure(offset: kindNode.offset, message: "\"reply.kind\" must name a host_to_controller kind, found \"\(kindName)\"")
            }
            replyKind = index
            deadline = try Self.number(try reply.required("deadline_ms"), "\"deadline_ms\"", in: 0.001...3_600_000)
            replyRequirement = try citation(&reply)
            if let fieldsNode = reply.optional("fields") {
                let fieldMembers = try Members(fieldsNode, "\"reply.fields\"")
                for member in fieldMembers.members {
                    guard let field = kinds[index].fields.first(where: { $0.name == member.name }), field.type.isNumeric, field.check == nil, field.role == nil else {
                        throw Failure(offset: member.nameOffset, message: "\"reply.fields\": \"\(member.name)\" is not a plain numeric field of kind \"\(kindName)\"")
                    }
                    let value = try Self.number(member.value, "reply field \"\(member.name)\"", in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude)
                    if let range = field.range, !range.contains(value) {
                        throw Failure(offset: member.value.offset, message: "reply field \"\(member.name)\" is outside its range")
                    }
                    if let limits = Self.integerLimits(field.type) {
                        guard value == value.rounded(), value >= limits.lowerBound, value <= limits.upperBound else {
                            throw Failure(offset: member.value.offset, message: "reply field \"\(member.name)\" of type \(field.type.rawValue) must be an integer from \(Self.show(limits.lowerBound)) to \(Self.show(limits.upperBound))")
                        }
                    } else if field.type == .f32, abs(value) > Double(Float32.greatestFiniteMagnitude) {
                        throw Failure(offset: member.value.offset, message: "reply field \"\(member.name)\" does not fit a float32")
                    }
                    replyFields[member.name] = value
                }
            }
            try reply.finish()
            guard kinds[index].field(withRole: .echoTime) == nil || hasSenderClock else {
                throw Failure(offset: r.offset, message: "a reply that echoes a sender_time needs samples that carry one")
            }
        }
        try h.finish()
        return DeclaredHost(behaviour: behaviour, decision: decision, decisionValues: values, replyKind: replyKind, replyFields: replyFields,
                            replyDeadlineMs: deadline, requirement: requirement, replyRequirement: replyRequirement)
    }
}
