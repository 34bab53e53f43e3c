import KinetraceJSON
import KinetraceWire

/// The fast path for message lines exactly as `TraceEncoder` writes them:
/// the fixed parts are compared as literals and only the variable parts are
/// parsed. It returns nil at the first byte that differs from that layout
/// (whitespace, another member order, an escape, a non-finite float), and
/// the general parser then reads the line, so any valid JSON still parses
/// (TR-READ-1). It accepts only exact valid JSON, so it can never accept a
/// line the general parser would reject; `CanonicalFastPathTests` checks
/// that the two agree. The `"msg"`/`"decoded"` literals come from the
/// protocol's `decodedShapes`.
extension TraceDecoder {
    mutating func canonicalMessage(_ line: UnsafeRawBufferPointer) -> MessageRecord? {
        var s = JSONScanner(line)
        // Out of range falls back to the general parser, which names the error.
        guard s.consume(#"{"kind":"msg","t_ns":"#), let timeNs = try? s.readInt64("t_ns"), TraceRecord.timeRangeNs.contains(timeNs) else { return nil }
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
        guard shapes.skip(&s) else { return nil }
        if !s.consume(#","valid":true}"#) {
            guard s.consume(#","valid":false,"reason":"#), let reason = try? s.readStringToken(), !reason.escaped,
                  s.consume("}") else { return nil }
        }
        guard (try? s.expectEnd()) != nil else { return nil }
        return MessageRecord(timeNs: timeNs, direction: direction, source: source, destination: destination,
                             payload: payload, rttNs: rttNs)
    }

    private mutating func plainEndpoint(_ s: inout JSONScanner) -> Endpoint? {
        guard let token = try? s.readStringToken(), !token.escaped else { return nil }
        return endpoints.endpoint(for: token.raw)
    }
}

/// A protocol's rendered shapes as the literal bytes the writer puts
/// between the variable parts: `,"msg":"frame","decoded":{"t_ms":`, then
/// `,"ax":` and so on, built once per reader.
final class CanonicalShapes: @unchecked Sendable {  // immutable after init
    private struct Shape {
        /// `,"msg":"KIND"` alone when the kind has no fields; else through the first field's name and colon.
        var opening: UnsafeRawBufferPointer
        /// The literals before each later field, with their types; the first field's type is `firstType`.
        var firstType: DecodedShape.FieldType?
        var rest: [(literal: UnsafeRawBufferPointer, type: DecodedShape.FieldType)]
    }

    private let storage: UnsafeMutableRawBufferPointer
    private let list: [Shape]
    /// Each kind's field names, for the general parser's member-order prediction.
    let fieldNames: [(kind: [UInt8], names: [[UInt8]])]

    init(_ shapes: [DecodedShape]) {
        func text(_ s: String) -> [UInt8] { Array(s.utf8) }
        var literals: [[UInt8]] = []
        for shape in shapes {
            var opening = Array(#","msg":""#.utf8) + text(shape.kind) + [UInt8(ascii: "\"")]
            if let first = shape.fields.first {
                opening += Array(#","decoded":{""#.utf8) + text(first.name) + Array("\":".utf8)
            }
            literals.append(opening)
            for field in shape.fields.dropFirst() { literals.append(Array(",\"".utf8) + text(field.name) + Array("\":".utf8)) }
        }
        storage = .allocate(byteCount: max(1, literals.reduce(0) { $0 + $1.count }), alignment: 8)
        var cursor = 0
        var pieces: [UnsafeRawBufferPointer] = []
        for literal in literals {
            let piece = UnsafeMutableRawBufferPointer(rebasing: storage[cursor..<cursor + literal.count])
            literal.withUnsafeBytes { piece.copyMemory(from: $0) }
            pieces.append(UnsafeRawBufferPointer(piece))
            cursor += literal.count
        }
        var next = 0
        var list: [Shape] = []
        for shape in shapes {
            let opening = pieces[next]
            next += 1
            var rest: [(UnsafeRawBufferPointer, DecodedShape.FieldType)] = []
            for field in shape.fields.dropFirst() {
                rest.append((pieces[next], field.type))
                next += 1
            }
            list.append(Shape(opening: opening, firstType: shape.fields.first?.type, rest: rest))
        }
        self.list = list
        fieldNames = shapes.map { (Array($0.kind.utf8), $0.fields.map { Array($0.name.utf8) }) }
    }

    deinit { storage.deallocate() }

    /// Consumes the `"msg"` and `"decoded"` members of one of the shapes, exactly as written.
    @inline(__always)
    func skip(_ s: inout JSONScanner) -> Bool {
        for shape in list where s.consume(shape.opening) {
            guard let firstType = shape.firstType else { return true }
            guard Self.value(&s, firstType) else { return false }
            for (literal, type) in shape.rest {
                guard s.consume(literal), Self.value(&s, type) else { return false }
            }
            return s.consume("}")
        }
        return false
    }

    @inline(__always)
    private static func value(_ s: inout JSONScanner, _ type: DecodedShape.FieldType) -> Bool {
        switch type {
        case .number: return (try? s.readNumberToken()) != nil
        case .string: return (try? s.readStringToken()) != nil
        }
    }
}
