import KinetraceJSON
import KinetraceTrace

/// A network: a named set of replay impairments (specs/networks/README.md),
/// and optionally a default fan-out and stagger.
package struct ReplayNetwork: Hashable, Sendable {
    package static let formatVersion: Int64 = 1
    /// The longest stagger a network or `ReplayOptions` may ask for: an hour. Kept here, not
    /// in `ReplayOptions`, so parsing a network needs none of the planner (the fuzz target builds it alone).
    package static let maximumStaggerNs: Int64 = 3_600_000_000_000

    package var name: String
    package var description: String
    package var provenance: String
    /// What the numbers rest on: `measured` (fitted to a capture), `cited` (published figures),
    /// `assumed` (judgement) or `none` (no impairment); nil when the file does not say.
    package var basis: String?
    package static let bases = ["measured", "cited", "assumed", "none"]
    package var controllers: Int?
    package var staggerNs: Int64?
    package var impairments: Impairments

    package init(name: String, description: String = "", provenance: String = "", controllers: Int? = nil,
                staggerNs: Int64? = nil, impairments: Impairments = Impairments()) {
        self.name = name
        self.description = description
        self.provenance = provenance
        self.controllers = controllers
        self.staggerNs = staggerNs
        self.impairments = impairments
    }

    /// A bundled network by name (`BundledNetworks`), or nil.
    package static func bundled(_ name: String) -> ReplayNetwork? {
        guard let json = BundledNetworks.json[name] else { return nil }
        return try? parse(Array(json.utf8), source: "network \(name)")
    }

    /// Parses a network document. Strict: unknown members are errors, so a
    /// typo cannot silently leave an impairment out.
    package static func parse(_ bytes: [UInt8], source: String) throws(ReplayNetworkError) -> ReplayNetwork {
        let root: JSONValue
        switch JSONValue.parse(bytes) {
        case .success(let value): root = value
        case .failure(let error): throw ReplayNetworkError(source: source, line: error.line, message: error.message)
        }
        let lines = LineIndex(bytes)
        // Parsed values carry no positions, so errors point at the member's first mention.
        func fail(_ member: String, _ message: String) -> ReplayNetworkError {
            ReplayNetworkError(source: source, line: lines.line(of: "\"\(member)\""), message: "\(member): \(message)")
        }
        guard case .object(let top) = root else { throw ReplayNetworkError(source: source, line: 1, message: "a network is a JSON object") }
        // "kinetrace_profile" is the version member's name before networks were called networks (read for one minor version).
        let versionKey = top["kinetrace_network"] == nil && top["kinetrace_profile"] != nil ? "kinetrace_profile" : "kinetrace_network"
        try expectOnly(top, [versionKey, "name", "description", "provenance", "basis", "controllers", "stagger_ms", "delay",
                             "preserve_order", "loss", "duplicate", "reorder", "corrupt", "corrupt_bits", "truncate", "rate"],
                       in: "the network", fail)
        guard let version = top[versionKey]?.integerValue else {
            throw fail(versionKey, "required: the network format version, 1")
        }
        guard version == formatVersion else { throw fail(versionKey, "version \(version) is not supported (this is version 1)") }
        func string(_ key: String) throws(ReplayNetworkError) -> String {
            guard let value = top[key]?.stringValue, !value.isEmpty else { throw fail(key, "required: a non-empty string") }
            return value
        }
        func number(_ key: String, in object: [String: JSONValue], default value: Double? = nil) throws(ReplayNetworkError) -> Double {
            guard let member = object[key] else {
                if let value { return value }
                throw fail(key, "required: a number")
            }
            guard let number = member.doubleValue, number.isFinite else { throw fail(key, "must be a number") }
            return number
        }
        var network = ReplayNetwork(name: try string("name"), description: try string("description"), provenance: try string("provenance"))
        if top["basis"] != nil {
            let basis = try string("basis")
            guard bases.contains(basis) else { throw fail("basis", "must be one of \(bases.joined(separator: ", "))") }
            network.basis = basis
        }
        if let controllers = top["controllers"] {
            guard let n = controllers.integerValue, (1...65_536).contains(n) else { throw fail("controllers", "must be an integer from 1 to 65536") }
            network.controllers = Int(n)
        }
        if top["stagger_ms"] != nil {
            let ms = try number("stagger_ms", in: top)
            guard ms >= 0, ms <= Double(maximumStaggerNs / 1_000_000) else {
                throw fail("stagger_ms", "must be from 0 to \(maximumStaggerNs / 1_000_000) (an hour)")
            }
            network.staggerNs = Int64(ms * 1e6)
        }
        var i = Impairments()
        if let delay = top["delay"] {
            guard case .object(let d) = delay else { throw fail("delay", "must be an object with a \"distribution\"") }
            let kind = d["distribution"]?.stringValue ?? ""
            switch kind {
            case "constant":
                try expectOnly(d, ["distribution", "ms"], in: "a constant delay", fail)
                i.delay = .constant(ms: try number("ms", in: d))
            case "uniform":
                try expectOnly(d, ["distribution", "min_ms", "max_ms"], in: "a uniform delay", fail)
                i.delay = .uniform(minMs: try number("min_ms", in: d), maxMs: try number("max_ms", in: d))
            case "normal":
                try expectOnly(d, ["distribution", "mean_ms", "sd_ms", "min_ms", "max_ms"], in: "a normal delay", fail)
                i.delay = .normal(meanMs: try number("mean_ms", in: d), sdMs: try number("sd_ms", in: d),
                                  minMs: try number("min_ms", in: d, default: 0), maxMs: try number("max_ms", in: d, default: .infinity))
            case "pareto":
                try expectOnly(d, ["distribution", "scale_ms", "shape"], in: "a Pareto delay", fail)
                i.delay = .pareto(scaleMs: try number("scale_ms", in: d), shape: try number("shape", in: d))
            case "quantiles":
                try expectOnly(d, ["distribution", "points"], in: "a quantile delay", fail)
                guard case .array(let items) = d["points"] ?? .null else { throw fail("points", "must be an array of [p, ms] pairs") }
                var points: [QuantilePoint] = []
                for item in items {
                    guard case .array(let pair) = item, pair.count == 2, let p = pair[0].doubleValue, let ms = pair[1].doubleValue else {
                        throw fail("points", "each point is a [p, ms] pair of numbers")
                    }
                    points.append(QuantilePoint(p: p, ms: ms))
                }
                i.delay = .quantiles(points)
            default:
                throw fail("distribution", "must be constant, uniform, normal, pareto or quantiles")
            }
            if let problem = i.delay.problem { throw fail("delay", problem) }
        }
        if let preserve = top["preserve_order"] {
            guard case .bool(let value) = preserve else { throw fail("preserve_order", "must be true or false") }
            i.allowReordering = !value
        } else {
            i.allowReordering = false
        }
        if let loss = top["loss"] {
            guard case .object(let l) = loss else { throw fail("loss", "must be an object with a \"model\"") }
            switch l["model"]?.stringValue ?? "" {
            case "none":
                try expectOnly(l, ["model"], in: "no loss", fail)
            case "bernoulli":
                try expectOnly(l, ["model", "p"], in: "Bernoulli loss", fail)
                i.loss = .bernoulli(p: try number("p", in: l))
            case "gilbert-elliott":
                try expectOnly(l, ["model", "p", "r", "1-h", "1-k"], in: "Gilbert–Elliott loss", fail)
                i.loss = .gilbertElliott(p: try number("p", in: l), r: try number("r", in: l),
                                         lossInBad: try number("1-h", in: l), lossInGood: try number("1-k", in: l))
            default:
                throw fail("model", "must be none, bernoulli or gilbert-elliott")
            }
            if let problem = i.loss.problem { throw fail("loss", problem) }
        }
        i.duplicate = try number("duplicate", in: top, default: 0)
        i.reorder = try number("reorder", in: top, default: 0)
        i.corrupt = try number("corrupt", in: top, default: 0)
        i.truncate = try number("truncate", in: top, default: 0)
        if let bits = top["corrupt_bits"] {
            guard let n = bits.integerValue, (1...64).contains(n) else { throw fail("corrupt_bits", "must be an integer from 1 to 64") }
            i.corruptBits = Int(n)
        }
        if let rate = top["rate"] {
            guard case .array(let steps) = rate else { throw fail("rate", "must be an array of {\"from_s\", \"bits_per_s\"} steps") }
            for step in steps {
                guard case .object(let s) = step else { throw fail("rate", "each step is an object") }
                try expectOnly(s, ["from_s", "bits_per_s"], in: "a rate step", fail)
                let from = try number("from_s", in: s)
                guard from >= 0, from <= RateStep.latestStartS else { throw fail("from_s", "must be from 0 to \(Int(RateStep.latestStartS)) s") }
                i.rate.append(RateStep(fromNs: Int64(from * 1e9), bitsPerSecond: try number("bits_per_s", in: s)))
            }
        }
        if let problem = i.problem {
            let member = ["duplicate", "reorder", "corrupt", "truncate", "rate"].first { problem.contains($0) } ?? versionKey
            throw fail(member, problem)
        }
        network.impairments = i
        return network
    }

    private static func expectOnly(_ object: [String: JSONValue], _ allowed: Set<String>, in what: String,
                                   _ fail: (String, String) -> ReplayNetworkError) throws(ReplayNetworkError) {
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw fail(unknown, "not a member of \(what) (expected one of: \(allowed.sorted().joined(separator: ", ")))")
        }
    }
}

/// A network that could not be used: where, and why.
package struct ReplayNetworkError: Error, CustomStringConvertible, Sendable {
    package var source: String
    package var line: Int
    package var message: String
    package var description: String { "\(source):\(line): \(message)" }
}

/// Finds the line of a member's first mention, for error messages.
private struct LineIndex {
    let text: [UInt8]
    init(_ bytes: [UInt8]) { text = bytes }

    func line(of needle: String) -> Int {
        let pattern = Array(needle.utf8)
        guard pattern.count <= text.count else { return 1 }
        var line = 1
        for start in 0...(text.count - pattern.count) {
            if text[start] == 0x0A { line += 1 }
            if text[start] == pattern[0] && Array(text[start..<start + pattern.count]) == pattern { return line }
        }
        return 1
    }
}
