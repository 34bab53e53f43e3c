import KinetraceTrace
import KinetraceWire

/// What a capture shows, arranged for the passive cases: every message in
/// capture order, per direction and controller, and its protocol.
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

    public var source: String
    public var wireProtocol: any WireProtocol.Type
    public var capturePoint: CapturePoint
    public var datagrams: [Datagram] = []
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

    /// Reads a whole capture (trace, pcap or pcapng through a record source).
    public static func read(_ input: any TraceRecordSource) throws(TraceError) -> CaptureObservation {
        var observation = CaptureObservation(source: input.source, wireProtocol: input.wireProtocol, capturePoint: input.header.capturePoint)
        while let record = try input.next() {
            guard case .message(let m) = record else {
                if case .event(let event) = record, event.event.hasPrefix("stream_") { observation.streamEvents.append(event) }
                observation.otherRecords += 1
                continue
            }
            observation.datagrams.append(Datagram(
                number: observation.datagrams.count + 1, timeNs: m.timeNs, direction: m.direction, source: m.source,
                destination: m.destination, payload: Array(m.payload)))
            observation.datagrams[observation.datagrams.count - 1].framingError = m.framingError
        }
        observation.truncation = input.truncation
        if let framing = input as? FramingRecordSource { observation.unfinished = framing.unfinished }
        return observation
    }

    public var startNs: Int64 { datagrams.first?.timeNs ?? 0 }

    /// What the protocol makes of a datagram's bytes.
    public func facts(_ d: Datagram) -> MessageFacts {
        if let framingError = d.framingError { return MessageFacts(invalid: framingError) }
        return wireProtocol.facts(d.payload)
    }

    public var frames: [Datagram] { datagrams.filter { $0.direction == .controllerToHost } }
    public var replies: [Datagram] { datagrams.filter { $0.direction == .hostToController } }

    /// Controller→host datagrams per controller, in capture order.
    public var framesByController: [Endpoint: [Datagram]] { Dictionary(grouping: frames, by: \.controller) }
}
