import KinetraceJSON

/// A decision a host reports on the stdio adapter's observation channel
/// (record kind 0x03, SA-OBS-*): what it decided about a controller that
/// shows nowhere on the wire, such as a game's jump on screen. The payload
/// is one UTF-8 JSON object:
///
///     {"decision":"jump","t_ms":1767225600123,"values":[0.1,0.2,0.3]}
///
/// `decision` is required; `t_ms` (the sender stamp of the sample that
/// caused it) and `values` are optional; other members are ignored.
public struct Observation: Hashable, Sendable {
    public var decision: String
    public var sampleTimeMs: UInt64?
    public var values: [Double]

    public init(decision: String, sampleTimeMs: UInt64? = nil, values: [Double] = []) {
        self.decision = decision
        self.sampleTimeMs = sampleTimeMs
        self.values = values
    }

    public init(_ decision: HostDecision) {
        self.init(decision: decision.name, sampleTimeMs: decision.sampleTimeMs, values: decision.values)
    }

    /// The record payload: compact JSON, members in a fixed order.
    public func encoded() -> [UInt8] {
        var out = JSONOutput()
        out.raw("{\"decision\":")
        out.string(decision)
        if let sampleTimeMs { out.raw(",\"t_ms\":"); out.integer(sampleTimeMs) }
        if !values.isEmpty {
            out.raw(",\"values\":[")
            for (i, value) in values.enumerated() {
                if i > 0 { out.raw(",") }
                out.double(value)
            }
            out.raw("]")
        }
        out.raw("}")
        return out.bytes
    }

    /// Parses a payload; errors name the byte offset and what was expected (SA-OBS-2).
    public static func decode(_ payload: [UInt8]) throws(WireError) -> Observation {
        let value: JSONValue
        switch JSONValue.parse(payload) {
        case .success(let v): value = v
        case .failure(let e): throw WireError(.malformed, offset: e.offset, expected: "one JSON object: \(e.message)")
        }
        guard let members = value.objectValue else { throw WireError(.malformed, offset: 0, expected: "a JSON object") }
        guard let decision = members["decision"]?.stringValue, !decision.isEmpty else {
            throw WireError(.malformed, offset: 0, expected: "a non-empty \"decision\" string")
        }
        var observation = Observation(decision: decision)
        if let t = members["t_ms"] {
            guard let v = t.integerValue, v >= 0 else { throw WireError(.malformed, offset: 0, expected: "\"t_ms\" a non-negative integer") }
            observation.sampleTimeMs = UInt64(v)
        }
        if let vs = members["values"] {
            guard case .array(let items) = vs else { throw WireError(.malformed, offset: 0, expected: "\"values\" an array of numbers") }
            observation.values = try items.map { (item: JSONValue) throws(WireError) -> Double in
                guard let d = item.doubleValue, d.isFinite else {
                    throw WireError(.malformed, offset: 0, expected: "\"values\" an array of finite numbers")
                }
                return d
            }
        }
        return observation
    }
}
