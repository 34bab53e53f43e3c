import KinetraceSupport
import KinetraceWire

/// How a replayed byte stream is cut into writes (`--segmentation`): the
/// bytes and their order never change, only where one write ends and the
/// next begins, which is what a host's framing must not depend on.
package enum Segmentation: String, CaseIterable, Sendable, CustomStringConvertible {
    /// As the trace's chunks: each recorded write or captured segment is one write.
    case recorded
    /// One write per record, as the protocol's framer cuts the stream.
    case record
    /// Seeded random cut points, independent of the recorded chunks.
    case random
    /// One byte per write.
    case byte

    package var description: String { rawValue }
}

/// One write the segmenter planned: its bytes, and the time of the recorded
/// chunk holding its last byte (a byte is never sent before it was recorded).
package struct StreamWrite: Hashable, Sendable {
    package var timeNs: Int64
    package var bytes: [UInt8]
    package init(timeNs: Int64, bytes: [UInt8]) {
        self.timeNs = timeNs
        self.bytes = bytes
    }
}

/// Plans the writes that replay one direction of one connection, chunk by
/// chunk as the trace is read, without I/O or clocks: every byte goes out
/// exactly once and in order, whatever the segmentation, and `random` gives
/// the same cut points for the same seed (they depend on the seed and the
/// stream's bytes count alone, not on the recorded chunks).
package struct StreamSegmenter {
    package let segmentation: Segmentation
    /// Random writes are 1 to this many bytes long, uniformly.
    package let maximumRandomWrite: Int
    private var framer: any MessageFramer
    private var rng: SeededGenerator
    /// Bytes held back for the next random cut.
    private var pending: [UInt8] = []
    private var nextCut = 0
    private var lastTimeNs: Int64 = 0

    package init(_ segmentation: Segmentation, wireProtocol: any WireProtocol, seed: UInt64 = 1, maximumRandomWrite: Int = 64) {
        precondition(maximumRandomWrite > 0, "a write has at least one byte")
        self.segmentation = segmentation
        self.maximumRandomWrite = maximumRandomWrite
        framer = wireProtocol.makeFramer()
        rng = SeededGenerator(seed: seed)
        if segmentation == .random { nextCut = drawCut() }
    }

    private mutating func drawCut() -> Int { 1 + Int(rng.next() % UInt64(maximumRandomWrite)) }

    /// The writes that can be planned once `chunk`, recorded at `timeNs`, has arrived.
    /// Throws only for `record`, when the protocol's framer finds the stream broken.
    package mutating func append(_ chunk: [UInt8], timeNs: Int64) throws(WireError) -> [StreamWrite] {
        lastTimeNs = timeNs
        guard !chunk.isEmpty else { return [] }
        switch segmentation {
        case .recorded:
            return [StreamWrite(timeNs: timeNs, bytes: chunk)]
        case .byte:
            return chunk.map { StreamWrite(timeNs: timeNs, bytes: [$0]) }
        case .record:
            framer.append(chunk)
            var writes: [StreamWrite] = []
            while let message = try framer.next() { writes.append(StreamWrite(timeNs: timeNs, bytes: message.bytes)) }
            return writes
        case .random:
            pending += chunk
            var writes: [StreamWrite] = []
            var start = 0
            while pending.count - start >= nextCut {
                writes.append(StreamWrite(timeNs: timeNs, bytes: Array(pending[start..<start + nextCut])))
                start += nextCut
                nextCut = drawCut()
            }
            pending.removeFirst(start)
            return writes
        }
    }

    /// The stream ended: what is left (a partial record, the bytes short of a random cut).
    package mutating func finish() -> [StreamWrite] {
        switch segmentation {
        case .recorded, .byte:
            return []
        case .record:
            return framer.finish().map { [StreamWrite(timeNs: lastTimeNs, bytes: $0.bytes)] } ?? []
        case .random:
            defer { pending.removeAll() }
            return pending.isEmpty ? [] : [StreamWrite(timeNs: lastTimeNs, bytes: pending)]
        }
    }

    /// Plans a whole stream's writes from its recorded chunks.
    package static func plan(_ chunks: [StreamWrite], _ segmentation: Segmentation, wireProtocol: any WireProtocol,
                            seed: UInt64 = 1, maximumRandomWrite: Int = 64) throws(WireError) -> [StreamWrite] {
        var segmenter = StreamSegmenter(segmentation, wireProtocol: wireProtocol, seed: seed, maximumRandomWrite: maximumRandomWrite)
        var writes: [StreamWrite] = []
        for chunk in chunks { writes += try segmenter.append(chunk.bytes, timeNs: chunk.timeNs) }
        return writes + segmenter.finish()
    }
}
