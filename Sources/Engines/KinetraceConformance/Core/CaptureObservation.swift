import KinetraceTrace
import KinetraceWire

/// What a capture shows, arranged for the passive cases: every message in
/// capture order, per direction and controller, and its protocol.
///
/// A capture held in memory, as the tests build them and `PassiveContext` judges
/// them (`conform --capture` does not: it judges in one pass as it reads,
/// `PassivePass`). Messages are kept in columns, not as one value per message:
/// 29 bytes plus the payload's own bytes per message (65 for a MotionFrame), in
/// chunks, so a column never doubles and copies as it grows. `Datagram` values
/// are made on access.
package struct CaptureObservation: Sendable {
    package struct Datagram: Sendable {
        /// Position among the capture's messages (1-based, as people count).
        package var number: Int
        package var timeNs: Int64
        package var direction: Direction
        package var source: Endpoint
        package var destination: Endpoint
        package var payload: [UInt8]
        /// Why the reader could not trust these bytes as a message (a gap in a captured stream).
        package var framingError: WireError?

        package var controller: Endpoint { direction == .controllerToHost ? source : destination }

        package init(number: Int, timeNs: Int64, direction: Direction, source: Endpoint, destination: Endpoint, payload: [UInt8],
                    framingError: WireError? = nil) {
            self.framingError = framingError
            self.number = number
            self.timeNs = timeNs
            self.direction = direction
            self.source = source
            self.destination = destination
            self.payload = payload
        }

        /// "#12 at 3.500 s from 10.0.0.2:50000 (36 bytes)", for evidence lines.
        package func describe(since startNs: Int64) -> String {
            let seconds = Double(timeNs - startNs) / 1e9
            let seconds3 = (seconds * 1000).rounded() / 1000
            return "#\(number) at \(seconds3) s \(direction == .controllerToHost ? "from" : "to") \(controller) (\(payload.count) bytes)"
        }
    }

    /// The messages in capture order, stored as columns. It reads and edits as an array of
    /// `Datagram` (tests build captures that way); an edit that replaces a range rebuilds.
    package struct Datagrams: RandomAccessCollection, MutableCollection, RangeReplaceableCollection, Sendable {
        /// Numbers that differ from position + 1 (only edits make them): most captures need none.
        var renumbered: [Int: Int] = [:]
        var times = ChunkedColumn<Int64>()
        var towardHost = ChunkedColumn<Bool>()
        var sources = ChunkedColumn<UInt32>()
        var destinations = ChunkedColumn<UInt32>()
        /// Where each payload is in `bytes`, and its length.
        var payloads = ChunkedColumn<PayloadBytes.Address>()
        var bytes = PayloadBytes()
        /// Rare: only messages a stream reader could not frame.
        var framingErrors: [Int: WireError] = [:]
        var endpoints: [Endpoint] = []
        var endpointIDs: [Endpoint: UInt32] = [:]

        package init() {}

        package var startIndex: Int { 0 }
        package var endIndex: Int { times.count }

        mutating func id(of endpoint: Endpoint) -> UInt32 {
            if let known = endpointIDs[endpoint] { return known }
            let id = UInt32(endpoints.count)
            endpoints.append(endpoint)
            endpointIDs[endpoint] = id
            return id
        }

        package mutating func append(_ d: Datagram) {
            append(number: d.number, timeNs: d.timeNs, direction: d.direction, source: d.source, destination: d.destination,
                   payload: d.payload, framingError: d.framingError)
        }

        mutating func append<Bytes: Collection<UInt8>>(number: Int, timeNs: Int64, direction: Direction, source: Endpoint,
                                                      destination: Endpoint, payload: Bytes, framingError: WireError?) {
            if let framingError { framingErrors[times.count] = framingError }
            if number != times.count + 1 { renumbered[times.count] = number }
            times.append(timeNs)
            towardHost.append(direction == .controllerToHost)
            sources.append(id(of: source))
            destinations.append(id(of: destination))
            payloads.append(bytes.append(payload))
        }

        func number(at i: Int) -> Int { renumbered.isEmpty ? i + 1 : renumbered[i] ?? i + 1 }

        package func direction(at i: Int) -> Direction { towardHost[i] ? .controllerToHost : .hostToController }
        package func timeNs(at i: Int) -> Int64 { times[i] }
        package func source(at i: Int) -> Endpoint { endpoints[Int(sources[i])] }
        package func destination(at i: Int) -> Endpoint { endpoints[Int(destinations[i])] }
        /// The controller's endpoint id: the source of a frame, the destination of a reply.
        func controllerID(at i: Int) -> UInt32 { towardHost[i] ? sources[i] : destinations[i] }
        package func framingError(at i: Int) -> WireError? { framingErrors.isEmpty ? nil : framingErrors[i] }
        /// The payload's bytes without copying them.
        package func withPayload<R>(at i: Int, _ body: (ArraySlice<UInt8>) throws -> R) rethrows -> R {
            try body(bytes[payloads[i]])
        }

        package subscript(i: Int) -> Datagram {
            get {
                Datagram(number: number(at: i), timeNs: times[i], direction: direction(at: i), source: source(at: i),
                         destination: destination(at: i), payload: withPayload(at: i) { Array($0) }, framingError: framingError(at: i))
            }
            set {
                renumbered[i] = newValue.number == i + 1 ? nil : newValue.number
                times[i] = newValue.timeNs
                towardHost[i] = newValue.direction == .controllerToHost
                sources[i] = id(of: newValue.source)
                destinations[i] = id(of: newValue.destination)
                framingErrors[i] = newValue.framingError
                // Edited payloads go to the end: the old bytes stay, unreferenced (edits are for tests).
                payloads[i] = bytes.append(newValue.payload)
            }
        }

        package mutating func replaceSubrange<C: Collection<Datagram>>(_ range: Range<Int>, with new: C) {
            if range.isEmpty, range.lowerBound == endIndex {
                for d in new { append(d) }
                return
            }
            var rebuilt = Datagrams()
            for i in 0..<range.lowerBound { rebuilt.append(self[i]) }
            for d in new { rebuilt.append(d) }
            for i in range.upperBound..<endIndex { rebuilt.append(self[i]) }
            self = rebuilt
        }

    }

    /// Some of the capture's messages, by position (frames, replies, one controller's):
    /// an index list over the columns, not copies.
    package struct Selection: RandomAccessCollection, Sendable {
        let all: Datagrams
        /// Positions in `all`: 4 bytes each (a capture past 4 G messages could not be held anyway).
        var positions: [UInt32]
        package var startIndex: Int { 0 }
        package var endIndex: Int { positions.count }
        package subscript(i: Int) -> Datagram { all[Int(positions[i])] }
        /// The message's position among all the capture's messages.
        package func position(_ i: Int) -> Int { Int(positions[i]) }
    }

    package var source: String
    package var wireProtocol: any WireProtocol
    package var capturePoint: CapturePoint
    package var datagrams = Datagrams()
    /// Records of other kinds (labels, events) and packets the reader skipped.
    package var otherRecords = 0
    /// Byte streams that ended inside a message (a stream protocol's framing reader reports them).
    package var unfinished: [FramingRecordSource.Unfinished] = []
    /// The reader's events about streams (`stream_gap`, `stream_end`, …), in capture order.
    package var streamEvents: [EventRecord] = []
    package var truncation: TraceTruncation?

    package init(source: String, wireProtocol: any WireProtocol, capturePoint: CapturePoint) {
        self.source = source
        self.wireProtocol = wireProtocol
        self.capturePoint = capturePoint
    }

    /// Stream events kept, at most: a hostile capture may hold millions of gaps. The
    /// passive cases count the rest (`streamEventsDropped`).
    package static let streamEventsKept = 100_000
    package var streamEventsDropped = 0

    /// Reads a whole capture (trace, pcap or pcapng through a record source).
    package static func read(_ input: any TraceRecordSource) throws(TraceError) -> CaptureObservation {
        var observation = CaptureObservation(source: input.source, wireProtocol: input.wireProtocol, capturePoint: input.header.capturePoint)
        while let record = try input.next() {
            guard case .message(let m) = record else {
                if case .event(let event) = record, event.event.hasPrefix("stream_") {
                    if observation.streamEvents.count < streamEventsKept {
                        observation.streamEvents.append(event)
                    } else {
                        observation.streamEventsDropped += 1
                    }
                }
                observation.otherRecords += 1
                continue
            }
            // Positions are 4 bytes wide (Selection): refuse, rather than wrap, past 4 G messages.
            guard observation.datagrams.count < Int(UInt32.max) else {
                throw TraceError(.badRecord, source: input.source, message: "more than 4,294,967,295 messages: too many to check in memory")
            }
            observation.datagrams.append(number: observation.datagrams.count + 1, timeNs: m.timeNs, direction: m.direction,
                                         source: m.source, destination: m.destination, payload: m.payload, framingError: m.framingError)
        }
        observation.truncation = input.truncation
        if let framing = input as? FramingRecordSource { observation.unfinished = framing.unfinished }
        return observation
    }

    package var startNs: Int64 { datagrams.times.first ?? 0 }

    /// What the protocol makes of a datagram's bytes.
    package func facts(_ d: Datagram) -> MessageFacts {
        if let framingError = d.framingError { return MessageFacts(invalid: framingError) }
        return wireProtocol.facts(d.payload)
    }

    /// What the protocol makes of the message at a position, without making a `Datagram`.
    package func facts(at i: Int) -> MessageFacts {
        if let framingError = datagrams.framingError(at: i) { return MessageFacts(invalid: framingError) }
        return datagrams.withPayload(at: i) { slice in slice.withUnsafeBytes { wireProtocol.facts($0) } }
    }

    package var frames: Selection { selection(.controllerToHost) }
    package var replies: Selection { selection(.hostToController) }

    func selection(_ direction: Direction) -> Selection {
        let toward = direction == .controllerToHost
        var positions: [UInt32] = []
        positions.reserveCapacity(datagrams.indices.reduce(0) { $0 + (datagrams.towardHost[$1] == toward ? 1 : 0) })
        for i in datagrams.indices where datagrams.towardHost[i] == toward { positions.append(UInt32(truncatingIfNeeded: i)) }
        return Selection(all: datagrams, positions: positions)
    }

    /// Controller→host datagrams per controller, in capture order.
    package var framesByController: [Endpoint: Selection] {
        // Counted first, so each list is allocated once at its size (no doubling and copying).
        var counts: [UInt32: Int] = [:]
        for i in datagrams.indices where datagrams.towardHost[i] { counts[datagrams.sources[i], default: 0] += 1 }
        var byID: [UInt32: [UInt32]] = counts.mapValues { count in
            var positions: [UInt32] = []
            positions.reserveCapacity(count)
            return positions
        }
        for i in datagrams.indices where datagrams.towardHost[i] {
            byID[datagrams.sources[i]]!.append(UInt32(truncatingIfNeeded: i))
        }
        var result: [Endpoint: Selection] = [:]
        for (id, positions) in byID { result[datagrams.endpoints[Int(id)]] = Selection(all: datagrams, positions: positions) }
        return result
    }
}

/// A column of values in fixed-size chunks: appending never copies what is
/// there (a standard array doubles and copies, so a capture of millions of
/// messages would briefly need three times a column).
struct ChunkedColumn<Element: Sendable>: Sendable {
    static var chunkShift: Int { 16 }
    static var chunkSize: Int { 1 << chunkShift }
    private var chunks: [[Element]] = []
    private(set) var count = 0

    mutating func append(_ value: Element) {
        if count & (Self.chunkSize - 1) == 0 {
            chunks.append([])
            chunks[chunks.count - 1].reserveCapacity(Self.chunkSize)
        }
        chunks[chunks.count - 1].append(value)
        count += 1
    }

    subscript(i: Int) -> Element {
        get { chunks[i >> Self.chunkShift][i & (Self.chunkSize - 1)] }
        set { chunks[i >> Self.chunkShift][i & (Self.chunkSize - 1)] = newValue }
    }

    var first: Element? { count == 0 ? nil : self[0] }
}

/// Payload bytes in 1 MiB chunks; a payload never spans two (a longer one gets a chunk of its own).
struct PayloadBytes: Sendable {
    struct Address: Sendable {
        var chunk: UInt32
        var offset: UInt32
        var length: UInt32
    }

    static let chunkSize = 1 << 20
    private var chunks: [[UInt8]] = []

    mutating func append<Bytes: Collection<UInt8>>(_ payload: Bytes) -> Address {
        let length = payload.count
        if chunks.isEmpty || chunks[chunks.count - 1].count + length > max(Self.chunkSize, chunks[chunks.count - 1].capacity) {
            chunks.append([])
            chunks[chunks.count - 1].reserveCapacity(max(Self.chunkSize, length))
        }
        let chunk = chunks.count - 1
        let offset = chunks[chunk].count
        chunks[chunk].append(contentsOf: payload)
        return Address(chunk: UInt32(truncatingIfNeeded: chunk), offset: UInt32(truncatingIfNeeded: offset), length: UInt32(truncatingIfNeeded: length))
    }

    subscript(address: Address) -> ArraySlice<UInt8> {
        let offset = Int(address.offset)
        return chunks[Int(address.chunk)][offset..<offset + Int(address.length)]
    }
}
