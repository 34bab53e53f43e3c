import KinetraceWire

/// A byte-stream protocol's records, which hold chunks of each connection's
/// stream as they were written or captured, presented as whole messages:
/// each direction of each connection goes through the protocol's framer,
/// and a message takes the time of the chunk that completed it. Labels and
/// events pass through. A stream that ends inside a message is reported in
/// `unfinished`, never dropped silently.
///
/// The `StreamEvent`s a capture reader writes are honoured: `stream_end`
/// closes the direction (so a new connection on the same four-tuple starts
/// afresh), and after a `stream_gap` where records start is lost for the
/// rest of the connection: the partial record before the gap and every
/// record after it come out with `framingError` `stream_gap`, invalid but
/// never dropped. Records after a gap are cut from the first byte after it.
package final class FramingRecordSource: TraceRecordSource {
    /// Bytes a stream ended with that never became a whole message.
    package struct Unfinished: Hashable, Sendable {
        package var source: Endpoint
        package var destination: Endpoint
        /// Stream offset of the first leftover byte.
        package var offset: Int
        package var bytes: Int

        package init(source: Endpoint, destination: Endpoint, offset: Int, bytes: Int) {
            self.source = source
            self.destination = destination
            self.offset = offset
            self.bytes = bytes
        }
    }

    package let base: any TraceRecordSource
    package private(set) var unfinished: [Unfinished] = []
    private var flows: [Flow: Framer] = [:]
    private var nextSerial = 0
    private var lastFlow: Flow?
    private var lastFramer: Framer?
    private var ready: [TraceRecord] = []
    private var readyHead = 0
    private var finished = false
    /// A stream that cannot be framed: thrown once the messages before it are out, and for ever after.
    private var failure: TraceError?

    private struct Flow: Hashable {
        var source: Endpoint
        var destination: Endpoint
    }

    /// Held by reference, so appending to a flow's framer never copies its buffer.
    private final class Framer {
        var framer: any MessageFramer
        var direction: Direction
        /// Creation order, so the end reports flows deterministically.
        let serial: Int
        /// Stream offset of the framer's offset 0 (past the last gap).
        var baseOffset = 0
        /// Set by a gap: every later record of the direction carries it.
        var gap: (offset: Int, missing: Int)?
        init(_ framer: any MessageFramer, direction: Direction, serial: Int) {
            self.framer = framer
            self.direction = direction
            self.serial = serial
        }

        func gapError(at offset: Int) -> WireError? {
            guard let gap else { return nil }
            return WireError(.streamGap, offset: offset,
                             expected: "a record cut where the stream's records start, lost at offset \(gap.offset) with \(gap.missing) bytes never captured")
        }
    }

    package init(_ base: any TraceRecordSource) { self.base = base }

    package var source: String { base.source }
    package var header: TraceHeader { base.header }
    package var wireProtocol: any WireProtocol { base.wireProtocol }
    package var truncation: TraceTruncation? { base.truncation }
    package var readingNote: String? { base.readingNote }
    package var bytesRead: (file: Int, uncompressed: Int)? { base.bytesRead }
    package var unknownRecordCount: Int { base.unknownRecordCount }

    package func next() throws(TraceError) -> TraceRecord? {
        while true {
            if readyHead < ready.count {
                defer {
                    readyHead += 1
                    if readyHead == ready.count { ready.removeAll(keepingCapacity: true); readyHead = 0 }
                }
                return ready[readyHead]
            }
            if let failure { throw failure }
            guard !finished else { return nil }
            guard let record = try base.next() else {
                finished = true
                for (flow, framer) in flows.sorted(by: { $0.value.serial < $1.value.serial }) { close(flow, framer) }
                flows = [:]
                lastFlow = nil
                lastFramer = nil
                return nil
            }
            guard case .message(let chunk) = record else {
                if case .event(let event) = record, event.event.hasPrefix("stream_") {
                    guard let streamEvent = StreamEvent(event) else {
                        guard [StreamEvent.startName, StreamEvent.gapName, StreamEvent.endName].contains(event.event) else { return record }
                        // Framing after it would be a guess: stop, as for an unframeable stream.
                        failure = TraceError(.badRecord, source: source,
                                             message: "a \(event.event) event without a valid source, destination and \(event.event == StreamEvent.startName ? "handshake" : event.event == StreamEvent.gapName ? "offset and missing_bytes" : "how and offset")")
                        continue
                    }
                    ready.append(record)
                    honour(streamEvent, timeNs: event.timeNs)
                    continue
                }
                return record
            }
            let flow = Flow(source: chunk.source, destination: chunk.destination)
            let framer: Framer
            if let lastFramer, lastFlow == flow {
                framer = lastFramer  // a run of one connection's chunks: no hashing
            } else {
                framer = self.framer(for: flow, direction: chunk.direction)
                lastFlow = flow
                lastFramer = framer
            }
            framer.direction = chunk.direction
            chunk.payload.withUnsafeBytes { framer.framer.append($0) }
            do throws(WireError) {
                while let message = try framer.framer.next() {
                    var framed = MessageRecord(timeNs: chunk.timeNs, direction: chunk.direction, source: chunk.source,
                                               destination: chunk.destination, payload: message.bytes.withUnsafeBytes { Payload(copying: $0) })
                    framed.framingError = framer.gapError(at: framer.baseOffset + message.offset)
                    ready.append(.message(framed))
                }
            } catch {
                failure = TraceError(.badRecord, source: source,
                                     message: "the stream from \(chunk.source) to \(chunk.destination) cannot be framed: byte \(error.offset): expected \(error.expected)")
            }
        }
    }

    private func framer(for flow: Flow, direction: Direction) -> Framer {
        if let known = flows[flow] { return known }
        let framer = Framer(wireProtocol.makeFramer(), direction: direction, serial: nextSerial)
        nextSerial += 1
        flows[flow] = framer
        return framer
    }

    /// The direction ended: what its framer holds is reported as unfinished.
    private func close(_ flow: Flow, _ framer: Framer) {
        if let rest = framer.framer.finish() {
            unfinished.append(Unfinished(source: flow.source, destination: flow.destination,
                                         offset: framer.baseOffset + rest.offset, bytes: rest.bytes.count))
        }
    }

    private func honour(_ event: StreamEvent, timeNs: Int64) {
        let flow = Flow(source: event.source, destination: event.destination)
        switch event {
        case .start:
            // A new connection: anything left of an old one on the same four-tuple ended unreported.
            if let old = flows[flow] {
                close(flow, old)
                forget(flow)
            }
        case .end:
            if let framer = flows[flow] {
                close(flow, framer)
                forget(flow)
            }
        case .gap(_, _, let offset, let missing):
            // A gap before any bytes: the direction is set by the first chunk after it.
            let framer = framer(for: flow, direction: .controllerToHost)
            if let partial = framer.framer.finish() {
                // The record the gap cut short: its bytes go on, marked, rather than vanish.
                var record = MessageRecord(timeNs: timeNs, direction: framer.direction, source: flow.source, destination: flow.destination,
                                           payload: partial.bytes)
                if framer.gap == nil { framer.gap = (offset, missing) }
                record.framingError = framer.gapError(at: framer.baseOffset + partial.offset)
                ready.append(.message(record))
            }
            if framer.gap == nil { framer.gap = (offset, missing) }
            framer.framer = wireProtocol.makeFramer()
            framer.baseOffset = offset + missing
        }
    }

    private func forget(_ flow: Flow) {
        flows[flow] = nil
        if lastFlow == flow {
            lastFlow = nil
            lastFramer = nil
        }
    }
}
