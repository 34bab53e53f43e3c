import KinetraceWire

/// The fast path for message lines exactly as `TraceEncoder` writes them:
/// the fixed parts are compared as literals and only the variable parts are
/// parsed. It returns nil at the first byte that differs from that layout
/// (whitespace, another member order, an escape, a non-finite float), and
/// the general parser then reads the line, so any valid JSON still parses
/// (TR-READ-1). It accepts only exact valid JSON, so it can never accept a
/// line the general parser would reject; `CanonicalFastPathTests` checks
/// that the two agree.
extension TraceDecoder {
    mutating func canonicalMessage(_ line: UnsafeRawBufferPointer) -> MessageRecord? {
        var s = JSONScanner(line)
        guard s.consume(#"{"kind":"msg","t_ns":"#), let timeNs = try? s.readInt64("t_ns") else { return nil }
        let direction: Direction
        if s.consume(#","dir":"c2h","src":"#) {
            direction = .controllerToHost
        } else if s.consume(#","dir":"h2c","src":"#) {
            direction = .hostToController
        } else {
            return nil
        }
        guard let source = plainEndpoint(&s), s.consume(#","dst":"#), let destination = plainEndpoint(&s),
              s.consume(#","len":"#), (try? s.readNumberToken()) != nil,
              s.consume(#","payload":"#), let payload = try? hex(&s) else { return nil }
        var rttNs: Int64?
        if s.consume(#","rtt_ns":"#) {
            guard let rtt = try? s.readInt64("rtt_ns") else { return nil }
            rttNs = rtt
        }
        if s.consume(#","msg":"frame","decoded":{"t_ms":"#) {
            guard Self.numbers(&s, after: [#","ax":"#, #","ay":"#, #","az":"#, #","wx":"#, #","wy":"#, #","wz":"#, #","check":"#])
            else { return nil }
        } else if s.consume(#","msg":"ack","decoded":{"echo_t_ms":"#) {
            guard Self.numbers(&s, after: [#","intensity":"#, #","sharpness":"#, #","check":"#]) else { return nil }
        } else if !s.consume(#","msg":"unknown""#) {
            return nil
        }
        if !s.consume(#","valid":true}"#) {
            guard s.consume(#","valid":false,"reason":"#), let reason = try? s.readStringToken(), !reason.escaped,
                  s.consume("}") else { return nil }
        }
        guard (try? s.expectEnd()) != nil else { return nil }
        return MessageRecord(timeNs: timeNs, direction: direction, source: source, destination: destination,
                             payload: payload, rttNs: rttNs)
    }

    /// A number, then for each literal the literal and a number, then '}'.
    private static func numbers(_ s: inout JSONScanner, after literals: [StaticString]) -> Bool {
        guard (try? s.readNumberToken()) != nil else { return false }
        for literal in literals {
            guard s.consume(literal), (try? s.readNumberToken()) != nil else { return false }
        }
        return s.consume("}")
    }

    private mutating func plainEndpoint(_ s: inout JSONScanner) -> Endpoint? {
        guard let token = try? s.readStringToken(), !token.escaped else { return nil }
        return endpoints.endpoint(for: token.raw)
    }
}
