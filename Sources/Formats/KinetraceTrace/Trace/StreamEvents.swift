import KinetraceJSON

/// The events a reader of captured byte streams puts in a trace beside the
/// stream's bytes, so framing, conformance and inspect know where each
/// direction of each connection began and ended and which bytes were never
/// captured. Every one names its direction by `source` and `destination`
/// (endpoint text, `10.0.0.1:47130` or `[::1]:47130`).
///
/// - `stream_start`: `handshake` (true: the SYN was seen, so offset 0 is the
///   first byte after it; false: the capture began mid-stream and offset 0 is
///   the first byte seen, so where records start is a guess).
/// - `stream_gap`: `offset` (stream offset of the first missing byte) and
///   `missing_bytes`. Every later record of that direction is unrecoverable.
/// - `stream_end`: `how` (a `StreamEnd`) and `offset` (the stream's length,
///   missing bytes included).
package enum StreamEvent: Hashable, Sendable {
    case start(source: Endpoint, destination: Endpoint, handshake: Bool)
    case gap(source: Endpoint, destination: Endpoint, offset: Int, missingBytes: Int)
    case end(source: Endpoint, destination: Endpoint, how: StreamEnd, offset: Int)

    package static let startName = "stream_start"
    package static let gapName = "stream_gap"
    package static let endName = "stream_end"
    /// The largest offset or byte count an event may name (an exabyte): more is a malformed event.
    package static let maximumOffset: Int64 = 1 << 60

    package var source: Endpoint {
        switch self {
        case .start(let s, _, _), .gap(let s, _, _, _), .end(let s, _, _, _): return s
        }
    }

    package var destination: Endpoint {
        switch self {
        case .start(_, let d, _), .gap(_, let d, _, _), .end(_, let d, _, _): return d
        }
    }

    /// The trace event at `timeNs`.
    package func record(timeNs: Int64) -> EventRecord {
        var data: [String: JSONValue] = ["source": .string(source.description), "destination": .string(destination.description)]
        let name: String
        switch self {
        case .start(_, _, let handshake):
            name = Self.startName
            data["handshake"] = .bool(handshake)
        case .gap(_, _, let offset, let missing):
            name = Self.gapName
            data["offset"] = .integer(Int64(offset))
            data["missing_bytes"] = .integer(Int64(missing))
        case .end(_, _, let how, let offset):
            name = Self.endName
            data["how"] = .string(how.rawValue)
            data["offset"] = .integer(Int64(offset))
        }
        return EventRecord(timeNs: timeNs, event: name, data: data)
    }

    /// The stream event an event record holds; nil for other events and for
    /// stream events whose data is malformed (a hand-edited trace).
    package init?(_ event: EventRecord) {
        guard event.event.hasPrefix("stream_"),
              let sourceText = event.data["source"]?.stringValue, let source = Endpoint(sourceText),
              let destinationText = event.data["destination"]?.stringValue, let destination = Endpoint(destinationText)
        else { return nil }
        // Offsets and byte counts of a real stream stay far below 2^60, so their sums cannot overflow.
        func count(_ key: String) -> Int? {
            guard let value = event.data[key]?.integerValue, value >= 0, value <= Self.maximumOffset else { return nil }
            return Int(value)
        }
        switch event.event {
        case Self.startName:
            guard case .bool(let handshake)? = event.data["handshake"] else { return nil }
            self = .start(source: source, destination: destination, handshake: handshake)
        case Self.gapName:
            guard let offset = count("offset"), let missing = count("missing_bytes"), missing > 0 else { return nil }
            self = .gap(source: source, destination: destination, offset: offset, missingBytes: missing)
        case Self.endName:
            guard let how = event.data["how"]?.stringValue.flatMap(StreamEnd.init(rawValue:)), let offset = count("offset") else { return nil }
            self = .end(source: source, destination: destination, how: how, offset: offset)
        default:
            return nil
        }
    }
}

/// How one direction of a captured TCP connection ended.
package enum StreamEnd: String, Hashable, Sendable, CaseIterable {
    /// Its sender closed it (FIN), every byte before the FIN delivered or reported missing.
    case fin
    /// Either side reset the connection (RST).
    case rst
    /// The capture ended with it still open.
    case captureEnd = "capture_end"
    /// A SYN opened a new connection on the same four-tuple without a FIN or RST seen.
    case reused
    /// Dropped to keep the number of tracked connections bounded.
    case evicted
}
