import KinetracePcap
import KinetraceTrace
import KinetraceSupport
import KinetraceTransport
import KinetraceWire

/// What a replay sends: the controller→host messages of one or more inputs
/// (traces, pcaps, pcapngs) of one protocol, each tagged with its source
/// controller. Host messages, labels and events are left out (the host under
/// test answers for itself) but counted.
package struct ReplayInput: Sendable {
    package struct Message: Hashable, Sendable {
        /// Offset from its input's first controller→host message, ns.
        package var offsetNs: Int64
        /// Index into `controllers`.
        package var controller: Int
        package var payload: [UInt8]
        /// Which input file, and the message's position among its messages.
        package var file: Int
        package var index: Int

        package init(offsetNs: Int64, controller: Int, payload: [UInt8], file: Int = 0, index: Int) {
            self.offsetNs = offsetNs
            self.controller = controller
            self.payload = payload
            self.file = file
            self.index = index
        }
    }

    /// The protocol of every message.
    package var wireProtocol: any WireProtocol
    /// Controller→host messages, by offset (stable: ties keep file order).
    package var messages: [Message]
    /// Source controllers in first-seen order; one socket each on replay.
    package var controllers: [Endpoint]
    package var paths: [String]
    /// How each input was read, for people (a capture's inferred host port).
    package var readingNotes: [String] = []
    /// Records not replayed: host→controller messages, labels, events.
    package var skippedRecords = 0
    /// Inputs that ended inside a record (read up to it).
    package var truncations: [String: TraceTruncation] = [:]
    /// For a byte-stream protocol, how `messages` were cut into writes (`segmented`); nil: as recorded.
    package var segmentation: Segmentation?

    package init(wireProtocol: any WireProtocol, messages: [Message], controllers: [Endpoint], paths: [String] = []) {
        self.wireProtocol = wireProtocol
        self.messages = messages
        self.controllers = controllers
        self.paths = paths
    }

    /// Reads every input. Each input's clock starts at its own first
    /// controller→host message, so sessions recorded at different times
    /// play together; controllers stay distinct per input. Every input must
    /// hold `wireProtocol` (nil: whatever the first one holds).
    package static func load(paths: [String], wireProtocol: (any WireProtocol)? = nil, port: UInt16? = nil) throws(TraceError) -> ReplayInput {
        var chosen = wireProtocol
        var input: ReplayInput?
        for (file, path) in paths.enumerated() {
            let source = try TraceInput.open(path: path, wireProtocol: chosen, port: port)
            chosen = source.wireProtocol
            if input == nil { input = ReplayInput(wireProtocol: source.wireProtocol, messages: [], controllers: [], paths: paths) }
            if let note = source.readingNote { input!.readingNotes.append(note) }
            try read(source, file: file, into: &input!)
        }
        guard var input else {
            return ReplayInput(wireProtocol: chosen ?? ProtocolRegistry.standard[ProtocolRegistry.defaultID]!, messages: [], controllers: [])
        }
        // Captures can hold packets slightly out of order (per-CPU queues); sending order is time order.
        input.messages.sort { ($0.offsetNs, $0.file, $0.index) < ($1.offsetNs, $1.file, $1.index) }
        return input
    }

    private static func read(_ source: any TraceRecordSource, file: Int, into input: inout ReplayInput) throws(TraceError) {
        let path = source.source
        var controllerIndex: [Endpoint: Int] = [:]
        var firstNs: Int64?
        var index = 0
        while let record = try source.next() {
            guard case .message(let message) = record, message.direction == .controllerToHost else {
                input.skippedRecords += 1
                continue
            }
            let controller: Int
            if let known = controllerIndex[message.source] {
                controller = known
            } else {
                controller = input.controllers.count
                controllerIndex[message.source] = controller
                input.controllers.append(message.source)
            }
            let first = firstNs ?? message.timeNs
            firstNs = first
            input.messages.append(Message(offsetNs: message.timeNs - first, controller: controller,
                                          payload: Array(message.payload), file: file, index: index))
            index += 1
        }
        if let truncation = source.truncation { input.truncations[path] = truncation }
    }

    /// The offset of the last message, ns.
    package var spanNs: Int64 { messages.last.map { $0.offsetNs - (messages.first?.offsetNs ?? 0) } ?? 0 }

    /// The median gap between one controller's consecutive messages (the
    /// frame period: 100 ms for 10 Hz), or nil with fewer than two per controller.
    package var medianPeriodNs: Int64? {
        var last: [Int: Int64] = [:]
        var gaps: [Int64] = []
        for message in messages {
            if let previous = last[message.controller], message.offsetNs > previous { gaps.append(message.offsetNs - previous) }
            last[message.controller] = message.offsetNs
        }
        guard !gaps.isEmpty else { return nil }
        gaps.sort()
        return gaps[gaps.count / 2]
    }
}

/// One-way delays measured in a trace, for an empirical delay distribution.
package enum MeasuredDelays {
    /// Half of each round trip a controller recorded (`rtt_ns` on the replies it
    /// received), in ms: the one-way latency, assuming a symmetric path.
    package static func oneWayMs(path: String, wireProtocol: (any WireProtocol)? = nil, port: UInt16? = nil) throws(TraceError) -> [Double] {
        let source = try TraceInput.open(path: path, wireProtocol: wireProtocol, port: port)
        var delays: [Double] = []
        while let record = try source.next() {
            if case .message(let message) = record, let rtt = message.rttNs, rtt >= 0 {
                delays.append(Double(rtt) / 2e6)
            }
        }
        return delays
    }
}
