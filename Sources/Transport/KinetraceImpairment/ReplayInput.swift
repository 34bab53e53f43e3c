import KinetraceTrace
import KinetraceSupport
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
