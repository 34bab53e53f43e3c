import KinetraceSupport
import KinetraceWire

extension ReplayInput {
    /// For a byte-stream protocol, each controller's recorded chunks re-cut into
    /// the writes `segmentation` plans (`StreamSegmenter`): the same bytes in the
    /// same order, each write due when its last byte was recorded. Controller c's
    /// random cuts come from `seed` derived by c, so they are reproducible.
    package func segmented(_ segmentation: Segmentation, seed: UInt64) throws(WireError) -> ReplayInput {
        var out = self
        out.messages = []
        out.segmentation = segmentation
        let root = SeededGenerator(seed: seed)
        var segmenters: [Int: StreamSegmenter] = [:]
        var last: [Int: Message] = [:]
        var counts: [Int: Int] = [:]
        func append(_ writes: [StreamWrite], like message: Message) {
            for write in writes {
                out.messages.append(Message(offsetNs: write.timeNs, controller: message.controller, payload: write.bytes,
                                            file: message.file, index: counts[message.file, default: 0]))
                counts[message.file, default: 0] += 1
            }
        }
        for message in messages {
            var segmenter = segmenters.removeValue(forKey: message.controller) ?? {
                var mixer = root.derived(UInt64(message.controller))
                return StreamSegmenter(segmentation, wireProtocol: wireProtocol, seed: mixer.next())
            }()
            let writes = try segmenter.append(message.payload, timeNs: message.offsetNs)
            segmenters[message.controller] = segmenter
            last[message.controller] = message
            append(writes, like: message)
        }
        for controller in segmenters.keys.sorted() {
            append(segmenters[controller]!.finish(), like: last[controller]!)
        }
        out.messages.sort { ($0.offsetNs, $0.file, $0.index) < ($1.offsetNs, $1.file, $1.index) }
        return out
    }
}

extension ReplayOptions {
    /// `problem`, and for a carrier that repairs delivery (TCP, named by `repairingCarrier`)
    /// the impairments it would repair: a lost, duplicated, reordered, corrupted or truncated
    /// write cannot reach a host through it, so replaying one would test nothing real (delay
    /// and rate limits apply).
    package func problem(repairingCarrier: String?) -> String? {
        if let problem { return problem }
        guard let repairingCarrier else { return nil }
        let i = impairments
        let repaired = [("loss", i.loss != .none), ("duplication", i.duplicate > 0), ("reordering", i.reorder > 0),
                        ("corruption", i.corrupt > 0), ("truncation", i.truncate > 0)].filter(\.1).map(\.0)
        guard repaired.isEmpty else {
            return "\(repairingCarrier), which repairs \(repaired.joined(separator: ", ")): only delay and rate limits apply"
        }
        return nil
    }
}
