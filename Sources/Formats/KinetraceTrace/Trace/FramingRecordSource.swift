import KinetraceWire

/// A byte-stream protocol's records, which hold chunks of each connection's
/// stream as they were written or captured, presented as whole messages:
/// each direction of each connection goes through the protocol's framer,
/// and a message takes the time of the chunk that completed it. Labels and
/// events pass through. A stream that ends inside a message is reported in
/// `unfinished`, never dropped silently.
public final class FramingRecordSource: TraceRecordSource {
    /// Bytes a stream ended with that never became a whole message.
    public struct Unfinished: Hashable, Sendable {
        public var source: Endpoint
        public var destination: Endpoint
        /// Stream offset of the first leftover byte.
        public var offset: Int
        public var bytes: Int

        public init(source: Endpoint, destination: Endpoint, offset: Int, bytes: Int) {
            self.source = source
            self.destination = destination
            self.offset = offset
            self.bytes = bytes
        }
    }

    public let base: any TraceRecordSource
    public private(set) var unfinished: [Unfinished] = []
    private var flows: [Flow: Framer] = [:]
    private var flowOrder: [Flow] = []
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
        init(_ framer: any MessageFramer) { self.framer = framer }
    }

    public init(_ base: any TraceRecordSource) { self.base = base }

    public var source: String { base.source }
    public var header: TraceHeader { base.header }
    public var wireProtocol: any WireProtocol.Type { base.wireProtocol }
    public var truncation: TraceTruncation? { base.truncation }
    public var unknownRecordCount: Int { base.unknownRecordCount }

    public func next() throws(TraceError) -> TraceRecord? {
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
                for flow in flowOrder {
                    if let rest = flows[flow]!.framer.finish() {
                        unfinished.append(Unfinished(source: flow.source, destination: flow.destination,
                                                     offset: rest.offset, bytes: rest.bytes.count))
                    }
                }
                return nil
            }
            guard case .message(let chunk) = record else { return record }
            let flow = Flow(source: chunk.source, destination: chunk.destination)
            let framer: Framer
            if let known = flows[flow] {
                framer = known
            } else {
                framer = Framer(wireProtocol.makeFramer())
                flows[flow] = framer
                flowOrder.append(flow)
            }
            chunk.payload.withUnsafeBytes { framer.framer.append($0) }
            do throws(WireError) {
                while let message = try framer.framer.next() {
                    ready.append(.message(MessageRecord(timeNs: chunk.timeNs, direction: chunk.direction, source: chunk.source,
                                                        destination: chunk.destination, payload: message.bytes)))
                }
            } catch {
                failure = TraceError(.badRecord, source: source,
                                     message: "the stream from \(chunk.source) to \(chunk.destination) cannot be framed: byte \(error.offset): expected \(error.expected)")
            }
        }
    }
}
