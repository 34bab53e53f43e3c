import KinetraceWire

/// Parses one record line. Known members are matched byte-wise and
/// informative ones (`decoded`, `valid`, …) are skipped unbuilt; any member
/// order, whitespace and escapes are accepted.
enum TraceDecoder {
    /// A record, or nil for a record kind this reader does not know (skipped
    /// for forward compatibility, TR-READ-4).
    struct Failure: Error {
        var code: TraceError.Code
        var offset: Int
        var message: String
    }

    static func record(_ line: UnsafeRawBufferPointer) throws(Failure) -> TraceRecord? {
        var scanner = JSONScanner(line)
        var kind: JSONKey?
        var timeNs: Int64?
        var direction: Direction?
        var source: Endpoint?, destination: Endpoint?, controller: Endpoint?
        var payload: [UInt8]?
        var rttNs: Int64?, tMs: Int64?, durationMs: Int64?
        var gesture: String?, event: String?
        var data: [String: JSONValue]?
        var tMsAt = 0, durationAt = 0

        do {
            try scanner.beginObject()
            var first = true
            while let key = try scanner.nextKey(first: &first) {
                let at = scanner.index
                if key.equals("kind") { kind = .decoded(try scanner.readString()) }
                else if key.equals("t_ns") { timeNs = try scanner.readInt64("t_ns") }
                else if key.equals("dir") {
                    let token = try scanner.readStringToken()
                    if token.equals("c2h") { direction = .controllerToHost }
                    else if token.equals("h2c") { direction = .hostToController }
                    else { throw Failure(code: .badRecord, offset: at, message: "\"dir\" must be \"c2h\" or \"h2c\", found \"\(token.string)\"") }
                }
                else if key.equals("src") { source = try endpoint(&scanner, "src") }
                else if key.equals("dst") { destination = try endpoint(&scanner, "dst") }
                else if key.equals("payload") { payload = try hex(&scanner) }
                else if key.equals("rtt_ns") { rttNs = try scanner.readInt64("rtt_ns") }
                else if key.equals("controller") { controller = try endpoint(&scanner, "controller") }
                else if key.equals("gesture") { gesture = try scanner.readString() }
                else if key.equals("t_ms") { tMsAt = at; tMs = try scanner.readInt64("t_ms") }
                else if key.equals("duration_ms") { durationAt = at; durationMs = try scanner.readInt64("duration_ms") }
                else if key.equals("event") { event = try scanner.readString() }
                else if key.equals("data") {
                    guard case .object(let members) = try scanner.readValue() else {
                        throw Failure(code: .badRecord, offset: at, message: "\"data\" must be an object")
                    }
                    data = members
                }
                else { try scanner.skipValue() }
            }
            try scanner.expectEnd()
        } catch let error as JSONScanner.SyntaxError {
            throw Failure(code: .syntax, offset: error.offset, message: error.message)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(code: .syntax, offset: scanner.index, message: "\(error)")
        }

        func missing(_ name: String, _ what: String) -> Failure {
            Failure(code: .badRecord, offset: 0, message: "\(what) record lacks \"\(name)\"")
        }
        func nonNegative(_ value: Int64?, _ name: String, at offset: Int) throws(Failure) -> UInt64? {
            guard let value else { return nil }
            guard value >= 0 else { throw Failure(code: .badRecord, offset: offset, message: "\"\(name)\" must not be negative") }
            return UInt64(value)
        }

        guard let kind else { throw Failure(code: .badRecord, offset: 0, message: "record lacks \"kind\"") }
        guard let timeNs else { throw missing("t_ns", kind.string) }
        if kind.equals("msg") {
            guard let direction else { throw missing("dir", "msg") }
            guard let source else { throw missing("src", "msg") }
            guard let destination else { throw missing("dst", "msg") }
            guard let payload else { throw missing("payload", "msg") }
            return .message(MessageRecord(timeNs: timeNs, direction: direction, source: source,
                                          destination: destination, payload: payload, rttNs: rttNs))
        }
        if kind.equals("label") {
            guard let gesture else { throw missing("gesture", "label") }
            return .label(LabelRecord(timeNs: timeNs, controller: controller, gesture: gesture,
                                      tMs: try nonNegative(tMs, "t_ms", at: tMsAt),
                                      durationMs: try nonNegative(durationMs, "duration_ms", at: durationAt)))
        }
        if kind.equals("event") {
            guard let event else { throw missing("event", "event") }
            return .event(EventRecord(timeNs: timeNs, event: event, data: data ?? [:]))
        }
        return nil
    }

    private static func endpoint(_ scanner: inout JSONScanner, _ name: String) throws(Failure) -> Endpoint {
        let at = scanner.index
        let text: String
        do throws(JSONScanner.SyntaxError) { text = try scanner.readString() } catch {
            throw Failure(code: .syntax, offset: error.offset, message: error.message)
        }
        guard let endpoint = Endpoint(text) else {
            throw Failure(code: .badRecord, offset: at, message: "\"\(name)\" must be ADDRESS:PORT or [ADDRESS]:PORT, found \"\(text)\"")
        }
        return endpoint
    }

    private static func hex(_ scanner: inout JSONScanner) throws(Failure) -> [UInt8] {
        let at = scanner.index
        let token: JSONKey
        do throws(JSONScanner.SyntaxError) { token = try scanner.readStringToken() } catch {
            throw Failure(code: .syntax, offset: error.offset, message: error.message)
        }
        switch token {
        case .raw(let slice):
            guard slice.count % 2 == 0 else {
                throw Failure(code: .badRecord, offset: at, message: "\"payload\" must be an even number of hex digits")
            }
            var bytes = [UInt8](repeating: 0, count: slice.count / 2)
            for i in 0..<bytes.count {
                guard let hi = hexNibble(slice[2 * i]), let lo = hexNibble(slice[2 * i + 1]) else {
                    throw Failure(code: .badRecord, offset: at + 1 + 2 * i, message: "\"payload\" holds a non-hex character")
                }
                bytes[i] = hi << 4 | lo
            }
            return bytes
        case .decoded(let text):
            // Escaped hex is legal JSON if odd; decode it the slow way.
            guard case .success(let bytes) = Hex.decode(text), !text.contains(" ") else {
                throw Failure(code: .badRecord, offset: at, message: "\"payload\" must be hex digits")
            }
            return bytes
        }
    }
}
