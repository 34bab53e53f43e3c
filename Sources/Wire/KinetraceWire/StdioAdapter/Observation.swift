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
package struct Observation: Hashable, Sendable {
    package var decision: String
    package var sampleTimeMs: UInt64?
    package var values: [Double]

    package init(decision: String, sampleTimeMs: UInt64? = nil, values: [Double] = []) {
        self.decision = decision
        self.sampleTimeMs = sampleTimeMs
        self.values = values
    }

    package init(_ decision: HostDecision) {
        self.init(decision: decision.name.description, sampleTimeMs: decision.sampleTimeMs, values: decision.values)
    }

    /// The record payload: compact JSON, members in a fixed order.
    package func encoded() -> [UInt8] {
        var out = JSONOutput()
        out.raw("{\"decision\":")
        out.string(decision)
        if let sampleTimeMs { out.raw(",\"t_ms\":"); out.integer(sampleTimeMs) }
        // SA-OBS-2 allows finite numbers only; values are optional, so a decision on a non-finite value (a
        // declaration without "finite") is reported without them rather than as an observation that breaks the framing.
        if !values.isEmpty, values.allSatisfy(\.isFinite) {
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
    package static func decode(_ payload: [UInt8]) throws(WireError) -> Observation {
        guard String(validating: payload, as: UTF8.self) != nil else {
            throw WireError(.malformed, offset: 0, expected: "UTF-8 text")
        }
        let parsed: Result<Observation, WireError> = payload.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try parse(raw)) } catch { return .failure(error) }
        }
        return try parsed.get()
    }

    /// Read with the pull scanner rather than as a `JSONValue`, so `t_ms` keeps all 64 bits.
    private static func parse(_ raw: UnsafeRawBufferPointer) throws(WireError) -> Observation {
        var scanner = JSONScanner(raw)
        func fail(_ expected: String, at offset: Int? = nil) -> WireError {
            WireError(.malformed, offset: offset ?? scanner.index, expected: expected)
        }
        var decision: String?, sampleTimeMs: UInt64?, values: [Double] = []
        do {
            guard scanner.peek() == UInt8(ascii: "{") else { throw fail("a JSON object") }
            try scanner.beginObject()
            var first = true
            while let key = try scanner.nextKey(first: &first) {
                scanner.skipWhitespace()
                let at = scanner.index
                if key.equals("decision") {
                    guard scanner.peek() == UInt8(ascii: "\""), let text = try? scanner.readString(), !text.isEmpty else {
                        throw fail("\"decision\" a non-empty string", at: at)
                    }
                    decision = text
                } else if key.equals("t_ms") {
                    guard let byte = scanner.peek(), byte == UInt8(ascii: "-") || JSONScanner.isASCIIDigit(byte),
                          let t = try? scanner.readUInt64("t_ms") else {
                        throw fail("\"t_ms\" an integer from 0 to 18446744073709551615", at: at)
                    }
                    sampleTimeMs = t
                } else if key.equals("values") {
                    values = try numbers(&scanner)
                } else {
                    try scanner.skipValue()
                }
            }
            try scanner.expectEnd()
        } catch let error as WireError {
            throw error
        } catch let error as JSONScanner.SyntaxError {
            throw WireError(.malformed, offset: error.offset, expected: "one JSON object: \(error.message)")
        } catch {
            throw fail("one JSON object")
        }
        guard let decision else { throw fail("a \"decision\" member", at: 0) }
        return Observation(decision: decision, sampleTimeMs: sampleTimeMs, values: values)
    }

    /// An array of finite numbers.
    private static func numbers(_ scanner: inout JSONScanner) throws(WireError) -> [Double] {
        let bad = WireError(.malformed, offset: scanner.index, expected: "\"values\" an array of finite numbers")
        var out: [Double] = []
        do {
            guard scanner.peek() == UInt8(ascii: "[") else { throw bad }
            try scanner.expect(UInt8(ascii: "["), "'['")
            if scanner.peek() == UInt8(ascii: "]") {
                scanner.index += 1
                return out
            }
            while true {
                guard let byte = scanner.peek(), byte == UInt8(ascii: "-") || JSONScanner.isASCIIDigit(byte) else { throw bad }
                let value = try scanner.readDouble("a value")
                guard value.isFinite else { throw bad }
                out.append(value)
                if scanner.peek() == UInt8(ascii: ",") { scanner.index += 1; continue }
                try scanner.expect(UInt8(ascii: "]"), "',' or ']'")
                return out
            }
        } catch let error as WireError {
            throw error
        } catch let error as JSONScanner.SyntaxError {
            throw WireError(.malformed, offset: error.offset, expected: "one JSON object: \(error.message)")
        } catch {
            throw bad
        }
    }
}
