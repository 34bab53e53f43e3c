import KinetraceTrace
import KinetraceWire

/// What a capture shows, arranged for the passive cases: every message in
/// capture order, per direction and controller, and its protocol.
///
/// The passive cases look at a capture more than once and out of order (an ack
/// is judged against the trigger before it, a rate per controller, a KeepCalm
/// id against every earlier one), so every message stays in memory: in columns,
/// not as one value per message, about 37 bytes plus the payload's own bytes per
/// message (73 for a MotionFrame). `Datagram` values are made on access.
public struct CaptureObservation: Sendable {
    public struct Datagram: Sendable {
        /// Position among the capture's messages (1-based, as people count).
        public var number: Int
        public var timeNs: Int64
        public var direction: Direction
        public var source: Endpoint
        public var destination: Endpoint
        public var payload: [UInt8]
        /// Why the reader could not trust these bytes as a message (a gap in a captured stream).
        public var framingError: WireError?

        public var controller: Endpoint { direction == .controllerToHost ? source : destination }

        public init(number: Int, timeNs: Int64, direction: Direction, source: Endpoint, destination: Endpoint, payload: [UInt8],
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
        public func describe(since startNs: Int64) -> String {
            let seconds = Double(timeNs - startNs) / 1e9
            let seconds3 = (seconds * 1000).rounded() / 1000
            return "#\(number) at \(seconds3) s \(direction == .controllerToHost ? "from" : "to") \(controller) (\(payload.count) bytes)"
        }
    }

    /// The messages in capture order, stored as columns. It reads and edits as an array of
    /// `Datagram` (tests build captures that way); an edit that replaces a range rebuilds.
    public struct Datagrams: RandomAccessCollection, MutableCollection, RangeReplaceableCollection, Sendable {
        var numbers: [Int] = []
        var times: [Int64] = []
        var towardHost: [Bool] = []
        var sources: [UInt32] = []
        var destinations: [UInt32] = []
        var payloadStarts: [Int] = []
        var payloadLengths: [UInt32] = []
        var bytes: [UInt8] = []
        /// Rare: only messages a stream reader could not frame.
        var framingErrors: [Int: WireError] = [:]
        var endpoints: [Endpoint] = []
        var endpointIDs: [Endpoint: UInt32] = [:]

        public init() {}

        public var startIndex: Int { 0 }
        public var endIndex: Int { times.count }

        mutating func id(of endpoint: Endpoint) -> UInt32 {
            if let known = endpointIDs[endpoint] { return known }
            let id = UInt32(endpoints.count)
            endpoints.append(endpoint)
            endpointIDs[endpoint] = id
            return id
        }

        public mutating func append(_ d: Datagram) {
            append(number: d.number, timeNs: d.timeNs, direction: d.direction, source: d.source, destination: d.destination,
                   payload: d.payload, framingError: d.framingError)
        }

        mutating func append<Bytes: Collection<UInt8>>(number: Int, timeNs: Int64, direction: Direction, source: Endpoint,
                                                      destination: Endpoint, payload: Bytes, framingError: WireError?) {
            if let framingError { framingErrors[times.count] = framingError }
            numbers.append(number)
            times.append(timeNs)
            towardHost.append(direction == .controllerToHost)
            sources.append(id(of: source))
            destinations.append(id(of: destination))
            payloadStarts.append(bytes.count)
            payloadLengths.append(UInt32(payload.count))
            bytes.append(contentsOf: payload)
        }

        public func direction(at i: Int) -> Direction { towardHost[i] ? .controllerToHost : .hostToController }
        public func timeNs(at i: Int) -> Int64 { times[i] }
        public func source(at i: Int) -> Endpoint { endpoints[Int(sources[i])] }
        public func destination(at i: Int) -> Endpoint { endpoints[Int(destinations[i])] }
        /// The controller's endpoint id: the source of a frame, the destination of a reply.
        func controllerID(at i: Int) -> UInt32 { towardHost[i] ? sources[i] : destinations[i] }
        public func framingError(at i: Int) -> WireError? { framingErrors.isEmpty ? nil : framingErrors[i] }
        /// The payload's bytes without copying them.
        public func withPayload<R>(at i: Int, _ body: (ArraySlice<UInt8>) throws -> R) rethrows -> R {
            try body(bytes[payloadStarts[i]..<payloadStarts[i] + Int(payloadLengths[i])])
        }

        public subscript(i: Int) -> Datagram {
            get {
                Datagram(number: numbers[i], timeNs: times[i], direction: direction(at: i), source: source(at: i),
                         destination: destination(at: i), payload: withPayload(at: i) { Array($0) }, framingError: framingError(at: i))
            }
            set {
                numbers[i] = newValue.number
                times[i] = newValue.timeNs
                towardHost[i] = newValue.direction == .controllerToHost
                sources[i] = id(of: newValue.source)
                destinations[i] = id(of: newValue.destination)
                framingErrors[i] = newValue.framingError
                // Edited payloads go to the end: the old bytes stay, unreferenced (edits are for tests).
                payloadStarts[i] = bytes.count
                payloadLengths[i] = UInt32(newValue.payload.count)
                bytes.append(contentsOf: newValue.payload)
            }
        }

        public mutating func replaceSubrange<C: Collection<Datagram>>(_ range: Range<Int>, with new: C) {
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

        public mutating func reserveCapacity(_ n: Int) {
            numbers.reserveCapacity(n); times.reserveCapacity(n); towardHost.reserveCapacity(n)
            sources.reserveCapacity(n); destinations.reserveCapacity(n)
            payloadStarts.reserveCapacity(n); payloadLengths.reserveCapacity(n)
        }
    }

    /// Some of the capture's messages, by position (frames, replies, one controller's):
    /// an index list over the columns, not copies.
    public struct Selection: RandomAccessCollection, Sendable {
        let all: Datagrams
        public internal(set) var positions: [Int]
        public var startIndex: Int { 0 }
        public var endIndex: Int { positions.count }
        public subscript(i: Int) -> Datagram { all[positions[i]] }
    }

    public var source: String
    public var wireProtocol: any WireProtocol.Type
    public var capturePoint: CapturePoint
    public var datagrams = Datagrams()
    /// Records of other kinds (labels, events) and packets the reader skipped.
    public var otherRecords = 0
    /// Byte streams that ended inside a message (a stream protocol's framing reader reports them).
    public var unfinished: [FramingRecordSource.Unfinished] = []
    /// The reader's events about streams (`stream_gap`, `stream_end`, …), in capture order.
    public var streamEvents: [EventRecord] = []
    public var truncation: TraceTruncation?

    public init(source: String, wireProtocol: any WireProtocol.Type, capturePoint: CapturePoint) {
        self.source = source
        self.wireProtocol = wireProtocol
        self.capturePoint = capturePoint
    }

    /// Stream events kept, at most: a hostile capture may hold millions of gaps. The
    /// passive cases count the rest (`streamEventsDropped`).
    public static let streamEventsKept = 100_000
    public var streamEventsDropped = 0

    /// Reads a whole capture (trace, pcap or pcapng through a record source).
    public static func read(_ input: any TraceRecordSource) throws(TraceError) -> CaptureObservation {
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
            observation.datagrams.append(number: observation.datagrams.count + 1, timeNs: m.timeNs, direction: m.direction,
                                         source: m.source, destination: m.destination, payload: m.payload, framingError: m.framingError)
        }
        observation.truncation = input.truncation
        if let framing = input as? FramingRecordSource { observation.unfinished = framing.unfinished }
        return observation
    }

    public var startNs: Int64 { datagrams.times.first ?? 0 }

    /// What the protocol makes of a datagram's bytes.
    public func facts(_ d: Datagram) -> MessageFacts {
        if let framingError = d.framingError { return MessageFacts(invalid: framingError) }
        return wireProtocol.facts(d.payload)
    }

    /// What the protocol makes of the message at a position, without making a `Datagram`.
    public func facts(at i: Int) -> MessageFacts {
        if let framingError = datagrams.framingError(at: i) { return MessageFacts(invalid: framingError) }
        return datagrams.withPayload(at: i) { slice in slice.withUnsafeBytes { wireProtocol.facts($0) } }
    }

    public var frames: Selection { selection(.controllerToHost) }
    public var replies: Selection { selection(.hostToController) }

    func selection(_ direction: Direction) -> Selection {
        let toward = direction == .controllerToHost
        var positions: [Int] = []
        for i in datagrams.indices where datagrams.towardHost[i] == toward { positions.append(i) }
        return Selection(all: datagrams, positions: positions)
    }

    /// Controller→host datagrams per controller, in capture order.
    public var framesByController: [Endpoint: Selection] {
        var byID: [UInt32: [Int]] = [:]
        for i in datagrams.indices where datagrams.towardHost[i] { byID[datagrams.sources[i], default: []].append(i) }
        var result: [Endpoint: Selection] = [:]
        for (id, positions) in byID { result[datagrams.endpoints[Int(id)]] = Selection(all: datagrams, positions: positions) }
        return result
    }
}
