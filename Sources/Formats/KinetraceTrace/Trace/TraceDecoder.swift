import KinetraceJSON
import KinetraceWire

/// Parses record lines. Known members are matched byte-wise and informative
/// ones (`decoded`, `valid`, …) are skipped without being built; any member
/// order, whitespace and escapes are accepted (TR-READ-1).
struct TraceDecoder {
    struct Failure: Error {
        var code: TraceError.Code
        var offset: Int
        var message: String

        init(_ code: TraceError.Code, at offset: Int, _ message: String) {
            self.code = code
            self.offset = offset
            self.message = message
        }

        init(_ error: JSONScanner.SyntaxError) { self.init(.syntax, at: error.offset, error.message) }
    }

    private enum Kind { case message, label, event, motion, unknown }

    /// The v1 members of a record, as found so far.
    private struct Fields {
        var kind: Kind?
        var timeNs: Int64?
        var direction: Direction?
        var source: Endpoint?, destination: Endpoint?, controller: Endpoint?
        var payload: Payload?
        var rttNs: Int64?
        var senderTimeMs: UInt64?, durationMs: UInt64?
        var gesture: String?, event: String?
        var data: [String: JSONValue]?
        var userAcceleration: Vector3?, rotationRate: Vector3?, gravity: Vector3?
        var attitude: MotionSampleRecord.Attitude?
        /// Index into the protocol's shapes of the `"msg"` kind, for predicting `"decoded"`'s members.
        var shape: Int?
    }

    var endpoints: EndpointCache
    let shapes: CanonicalShapes

    /// A decoder for messages of `wireProtocol` (nil: before the header names one), remembering
    /// up to `endpointSlots` parsed endpoints.
    init(_ wireProtocol: (any WireProtocol)?, endpointSlots: Int = EndpointCache.defaultSlotCount) {
        shapes = CanonicalShapes(wireProtocol?.decodedShapes ?? [])
        endpoints = EndpointCache(slots: endpointSlots)
    }

    /// The record on `line`, or nil for a record kind this reader does not
    /// know (skipped for forward compatibility, TR-READ-4).
    mutating func record(_ line: UnsafeRawBufferPointer) throws(Failure) -> TraceRecord? {
        if let message = canonicalMessage(line) { return .message(message) }
        return try generalRecord(line)
    }

    /// The general parser: any valid JSON, any member order.
    mutating func generalRecord(_ line: UnsafeRawBufferPointer) throws(Failure) -> TraceRecord? {
        var scanner = JSONScanner(line)
        var fields = Fields()
        // A member whose value is valid JSON of the wrong type or range. It
        // matters only if the record's kind is one this reader knows, and the
        // kind may come later in the line, so the verdict waits.
        var misfit: Failure?
        do throws(JSONScanner.SyntaxError) {
            try scanner.beginObject()
            var first = true
            var predicted = 0
            // Writers emit members in one order; predicting it skips scanning each name.
            while let key = try Self.nextKey(&scanner, first: &first, predicted: &predicted) {
                scanner.skipWhitespace()
                let at = scanner.index
                do throws(Failure) {
                    try read(key, into: &fields, from: &scanner, at: at)
                } catch {
                    scanner.index = at
                    try scanner.skipValue()  // throws if the value is not JSON at all
                    if misfit == nil { misfit = Failure(.badRecord, at: error.offset, error.message) }
                }
            }
            try scanner.expectEnd()
        } catch {
            throw Failure(error)
        }
        return try build(fields, misfit: misfit)
    }

    /// Member names in the order TraceEncoder writes a message.
    private static let messageOrder: [StaticString] = ["kind", "t_ns", "dir", "src", "dst", "len", "payload", "msg", "decoded", "valid"]

    @inline(__always)
    private static func nextKey(_ scanner: inout JSONScanner, first: inout Bool, predicted: inout Int) throws(JSONScanner.SyntaxError) -> JSONKey? {
        if predicted < messageOrder.count, let key = scanner.matchKey(messageOrder[predicted], first: &first) {
            predicted += 1
            return key
        }
        return try scanner.nextKey(first: &first)
    }

    private mutating func read(_ key: JSONKey, into f: inout Fields, from scanner: inout JSONScanner, at: Int) throws(Failure) {
        do {
            if key.equals("kind") {
                let token = try scanner.readStringToken()
                if token.equals("msg") { f.kind = .message }
                else if token.equals("label") { f.kind = .label }
                else if token.equals("event") { f.kind = .event }
                else if token.equals("motion") { f.kind = .motion }
                else { f.kind = .unknown }
            } else if key.equals("t_ns") {
                let at = scanner.index
                let timeNs = try scanner.readInt64("t_ns")
                guard TraceRecord.timeRangeNs.contains(timeNs) else {
                    throw JSONScanner.SyntaxError(offset: at, message: "t_ns \(timeNs) is outside \(TraceRecord.timeRangeText)")
                }
                f.timeNs = timeNs
            } else if key.equals("dir") {
                let token = try scanner.readStringToken()
                if token.equals("c2h") { f.direction = .controllerToHost }
                else if token.equals("h2c") { f.direction = .hostToController }
                else { throw Failure(.badRecord, at: at, "\"dir\" must be \"c2h\" or \"h2c\", found \"\(token.string)\"") }
            } else if key.equals("src") {
                f.source = try endpoint(&scanner, "src")
            } else if key.equals("dst") {
                f.destination = try endpoint(&scanner, "dst")
            } else if key.equals("payload") {
                f.payload = try hex(&scanner)
            } else if key.equals("rtt_ns") {
                f.rttNs = try scanner.readInt64("rtt_ns")
            } else if key.equals("controller") {
                f.controller = try endpoint(&scanner, "controller")
            } else if key.equals("gesture") {
                f.gesture = try scanner.readString()
            } else if key.equals("t_ms") {
                f.senderTimeMs = try scanner.readUInt64("t_ms")
            } else if key.equals("duration_ms") {
                f.durationMs = try scanner.readUInt64("duration_ms")
            } else if key.equals("event") {
                f.event = try scanner.readString()
            } else if key.equals("msg") {
                // Informative (TR-MSG-1); noted only to predict "decoded"'s member order.
                if scanner.peek() == UInt8(ascii: "\"") {
                    let token = try scanner.readStringToken()
                    f.shape = shapes.fieldNames.firstIndex { token.equals(utf8: $0.kind) }
                } else {
                    try scanner.skipValue()
                }
            } else if key.equals("decoded") {
                // Informative (TR-MSG-1): checked to be JSON, not read.
                if scanner.peek() == UInt8(ascii: "{") {
                    try scanner.skipObject(predicting: f.shape.map { shapes.fieldNames[$0].names } ?? [])
                } else {
                    try scanner.skipValue()
                }
            } else if key.equals("user_accel") {
                f.userAcceleration = try vector(&scanner, "user_accel", at: at)
            } else if key.equals("rotation_rate") {
                f.rotationRate = try vector(&scanner, "rotation_rate", at: at)
            } else if key.equals("gravity") {
                f.gravity = try vector(&scanner, "gravity", at: at)
            } else if key.equals("attitude") {
                let q = try numbers(&scanner, "attitude", count: 4, at: at)
                f.attitude = MotionSampleRecord.Attitude(w: q[0], x: q[1], y: q[2], z: q[3])
            } else if key.equals("data") {
                guard case .object(let members) = try scanner.readValue() else {
                    throw Failure(.badRecord, at: at, "\"data\" must be an object")
                }
                f.data = members
            } else {
                try scanner.skipValue()
            }
        } catch let failure as Failure {
            throw failure
        } catch let error as JSONScanner.SyntaxError {
            throw Failure(error)
        } catch {
            throw Failure(.syntax, at: at, "\(error)")
        }
    }

    private func build(_ f: Fields, misfit: Failure?) throws(Failure) -> TraceRecord? {
        func missing(_ name: String, _ what: String) -> Failure {
            Failure(.badRecord, at: 0, "\(what) record lacks \"\(name)\"")
        }
        guard let kind = f.kind else { throw misfit ?? Failure(.badRecord, at: 0, "record lacks \"kind\"") }
        if case .unknown = kind { return nil }
        if let misfit { throw misfit }
        switch kind {
        case .message:
            guard let timeNs = f.timeNs else { throw missing("t_ns", "msg") }
            guard let direction = f.direction else { throw missing("dir", "msg") }
            guard let source = f.source else { throw missing("src", "msg") }
            guard let destination = f.destination else { throw missing("dst", "msg") }
            guard let payload = f.payload else { throw missing("payload", "msg") }
            return .message(MessageRecord(timeNs: timeNs, direction: direction, source: source,
                                          destination: destination, payload: payload, rttNs: f.rttNs))
        case .label:
            guard let timeNs = f.timeNs else { throw missing("t_ns", "label") }
            guard let gesture = f.gesture else { throw missing("gesture", "label") }
            return .label(LabelRecord(timeNs: timeNs, controller: f.controller, gesture: gesture,
                                      senderTimeMs: f.senderTimeMs, durationMs: f.durationMs))
        case .event:
            guard let timeNs = f.timeNs else { throw missing("t_ns", "event") }
            guard let event = f.event else { throw missing("event", "event") }
            return .event(EventRecord(timeNs: timeNs, event: event, data: f.data ?? [:]))
        case .motion:
            guard let timeNs = f.timeNs else { throw missing("t_ns", "motion") }
            guard let controller = f.controller else { throw missing("controller", "motion") }
            guard let senderTimeMs = f.senderTimeMs else { throw missing("t_ms", "motion") }
            guard let userAcceleration = f.userAcceleration else { throw missing("user_accel", "motion") }
            guard let rotationRate = f.rotationRate else { throw missing("rotation_rate", "motion") }
            return .motion(MotionSampleRecord(timeNs: timeNs, controller: controller, senderTimeMs: senderTimeMs, userAcceleration: userAcceleration,
                                              rotationRate: rotationRate, gravity: f.gravity, attitude: f.attitude))
        case .unknown:
            return nil
        }
    }

    private func vector(_ scanner: inout JSONScanner, _ name: String, at: Int) throws(Failure) -> Vector3 {
        let v = try numbers(&scanner, name, count: 3, at: at)
        return Vector3(v[0], v[1], v[2])
    }

    /// An array of exactly `count` finite numbers, read in place (no JSONValue per element:
    /// a device-motion trace holds millions of them).
    private func numbers(_ scanner: inout JSONScanner, _ name: String, count: Int, at: Int) throws(Failure) -> [Double] {
        let found: [Double]?
        do throws(JSONScanner.SyntaxError) { found = try Self.finiteNumbers(&scanner, name, count: count) } catch { throw Failure(error) }
        guard let found else { throw Failure(.badRecord, at: at, "\"\(name)\" must be an array of \(count) finite numbers") }
        return found
    }

    /// nil when the value is JSON of another shape (the caller skips it and reports the member).
    private static func finiteNumbers(_ scanner: inout JSONScanner, _ name: String, count: Int) throws(JSONScanner.SyntaxError) -> [Double]? {
        guard scanner.peek() == UInt8(ascii: "[") else { return nil }
        try scanner.expect(UInt8(ascii: "["), "'['")
        var out: [Double] = []
        out.reserveCapacity(count)
        while out.count < count {
            guard let byte = scanner.peek(), byte == UInt8(ascii: "-") || JSONScanner.isASCIIDigit(byte) else { return nil }
            let value = try scanner.readDouble(name)
            guard value.isFinite else { return nil }
            out.append(value)
            if out.count < count {
                guard scanner.peek() == UInt8(ascii: ",") else { return nil }
                try scanner.expect(UInt8(ascii: ","), "','")
            }
        }
        guard scanner.peek() == UInt8(ascii: "]") else { return nil }
        try scanner.expect(UInt8(ascii: "]"), "']'")
        return out
    }

    mutating func endpoint(_ scanner: inout JSONScanner, _ name: String) throws(Failure) -> Endpoint {
        scanner.skipWhitespace()
        let at = scanner.index
        let token: JSONKey
        do throws(JSONScanner.SyntaxError) { token = try scanner.readStringToken() } catch { throw Failure(error) }
        let parsed = token.escaped ? Endpoint(token.string) : endpoints.endpoint(for: token.raw)
        guard let parsed else {
            throw Failure(.badRecord, at: at, "\"\(name)\" must be ADDRESS:PORT or [ADDRESS]:PORT, found \"\(token.string)\"")
        }
        return parsed
    }

    func hex(_ scanner: inout JSONScanner) throws(Failure) -> Payload {
        scanner.skipWhitespace()
        let at = scanner.index
        let token: JSONKey
        do throws(JSONScanner.SyntaxError) { token = try scanner.readStringToken() } catch { throw Failure(error) }
        switch token.escaped {
        case false:
            let slice = token.raw
            guard slice.count % 2 == 0 else {
                throw Failure(.badRecord, at: at, "\"payload\" must be an even number of hex digits")
            }
            return try Payload(count: slice.count / 2) { (out: UnsafeMutableRawBufferPointer) throws(Failure) in
                // Pointers, not indices: this loop runs over every payload byte of a trace.
                guard let digits = slice.baseAddress?.assumingMemoryBound(to: UInt8.self),
                      let bytes = out.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
                var bad = false
                HexTable.values.withUnsafeBufferPointer { table in
                    let table = table.baseAddress!
                    var invalid: UInt8 = 0
                    for i in 0..<out.count {
                        let hi = table[Int(digits[2 &* i])], lo = table[Int(digits[2 &* i &+ 1])]
                        invalid |= hi | lo
                        bytes[i] = hi &<< 4 | lo
                    }
                    bad = invalid >= 0x10
                }
                guard bad else { return }
                // Find the first bad digit to name it.
                let table = HexTable.values
                let i = (0..<slice.count).first { table[Int(digits[$0])] >= 0x10 } ?? 0
                throw Failure(.badRecord, at: at + 1 + (i & ~1), "\"payload\" holds a non-hex character")
            }
        case true:
            let text = token.string
            // Escaped hex is legal JSON, if odd; decode it the slow way.
            guard !text.contains(where: \.isWhitespace), case .success(let bytes) = Hex.decode(text) else {
                throw Failure(.badRecord, at: at, "\"payload\" must be hex digits")
            }
            return Payload(bytes)
        }
    }
}

/// Hex digit values by byte; 0xFF for a non-digit.
enum HexTable {
    static let values: [UInt8] = (0..<256).map { Hex.nibble(UInt8($0)) ?? 0xFF }
}

/// One record line parsed on its own, for formats that carry trace records inside
/// their own containers (a pcapng packet comment).
package enum TraceLine {
    /// The record on `line` (nil: a record kind this reader does not know), or why it is not one.
    package static func record(_ line: [UInt8], wireProtocol: any WireProtocol) -> Result<TraceRecord?, TraceError> {
        var decoder = TraceDecoder(wireProtocol)
        return line.withUnsafeBytes { raw in
            do throws(TraceDecoder.Failure) {
                return .success(try decoder.generalRecord(raw))
            } catch {
                return .failure(TraceError(error.code, source: "record", message: "byte \(error.offset): \(error.message)"))
            }
        }
    }
}
