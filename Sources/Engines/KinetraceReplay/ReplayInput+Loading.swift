import KinetraceImpairment
import KinetracePcap
import KinetraceTrace
import KinetraceSupport
import KinetraceWire

extension ReplayInput {
    /// Reads every input. Each input's clock starts at its own first
    /// controller→host message, so sessions recorded at different times
    /// play together; controllers stay distinct per input. Every input must
    /// hold `wireProtocol` (nil: whatever the first one holds). `window` cuts each input by time
    /// from its own first record (an MCAP trace seeks to it through its index).
    package static func load(paths: [String], wireProtocol: (any WireProtocol)? = nil, port: UInt16? = nil,
                             window: TraceWindow? = nil) throws(TraceError) -> ReplayInput {
        var chosen = wireProtocol
        var input: ReplayInput?
        for (file, path) in paths.enumerated() {
            let source = try TraceInput.open(path: path, wireProtocol: chosen, port: port, window: window)
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
