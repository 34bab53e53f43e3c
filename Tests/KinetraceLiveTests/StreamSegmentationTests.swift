import KinetraceImpairment
import KinetraceSupport
import KinetraceTransport
import KinetraceWire
import Testing

/// The replay's segmentation planner: pure, so checked without sockets.
@Suite struct StreamSegmentationTests {
    /// A seeded stream of 40 records plus 5 stray bytes, in chunks of 1 to 40 bytes.
    static func chunks(seed: UInt64) -> [StreamWrite] {
        var generator = SeededGenerator(seed: seed)
        let bytes = (0..<(40 * 12 + 5)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        var out: [StreamWrite] = []
        var at = 0
        var time: Int64 = 1_000
        while at < bytes.count {
            let n = min(1 + Int(generator.next() % 40), bytes.count - at)
            out.append(StreamWrite(timeNs: time, bytes: Array(bytes[at..<at + n])))
            at += n
            time += 16_000_000
        }
        return out
    }

    @Test(arguments: Segmentation.allCases, [1, 2, 3] as [UInt64])
    func everyByteGoesOutOnceInOrderNeverBeforeItWasRecorded(_ segmentation: Segmentation, seed: UInt64) throws {
        let chunks = Self.chunks(seed: seed)
        let writes = try StreamSegmenter.plan(chunks, segmentation, wireProtocol: AttitudeStream(), seed: seed)
        #expect(writes.flatMap(\.bytes) == chunks.flatMap(\.bytes))
        #expect(writes.allSatisfy { !$0.bytes.isEmpty })
        #expect(zip(writes, writes.dropFirst()).allSatisfy { $0.timeNs <= $1.timeNs })
        // Each write is stamped with the chunk that held its last byte.
        var ends: [Int: Int64] = [:]
        var offset = 0
        for chunk in chunks { offset += chunk.bytes.count; ends[offset] = chunk.timeNs }
        var written = 0
        for write in writes {
            written += write.bytes.count
            let recorded = chunks.reduce(into: (0, Int64(0))) { acc, c in
                if acc.0 < written { acc = (acc.0 + c.bytes.count, c.timeNs) }
            }.1
            #expect(write.timeNs == recorded)
        }
        switch segmentation {
        case .recorded: #expect(writes == chunks)
        case .byte: #expect(writes.count == 40 * 12 + 5)
        case .record:
            #expect(writes.count == 41)
            #expect(writes.dropLast().allSatisfy { $0.bytes.count == 12 })
            #expect(writes.last?.bytes.count == 5)
        case .random:
            #expect(writes.allSatisfy { $0.bytes.count <= 64 })
        }
    }

    @Test func randomCutsComeFromTheSeedAloneNotTheRecordedChunks() throws {
        let a = Self.chunks(seed: 1)
        // The same bytes in one chunk.
        let whole = [StreamWrite(timeNs: 5, bytes: a.flatMap(\.bytes))]
        let cutsA = try StreamSegmenter.plan(a, .random, wireProtocol: AttitudeStream(), seed: 99).map(\.bytes.count)
        let cutsAgain = try StreamSegmenter.plan(a, .random, wireProtocol: AttitudeStream(), seed: 99).map(\.bytes.count)
        let cutsWhole = try StreamSegmenter.plan(whole, .random, wireProtocol: AttitudeStream(), seed: 99).map(\.bytes.count)
        let cutsOther = try StreamSegmenter.plan(a, .random, wireProtocol: AttitudeStream(), seed: 100).map(\.bytes.count)
        #expect(cutsA == cutsAgain)
        #expect(cutsA == cutsWhole)
        #expect(cutsA != cutsOther)
        // Cut points fall off the record grid somewhere (the point of the exercise).
        var offset = 0
        #expect(cutsA.contains { offset += $0; return offset % 12 != 0 })
    }

    @Test func anEmptyStreamPlansNoWrites() throws {
        for segmentation in Segmentation.allCases {
            #expect(try StreamSegmenter.plan([StreamWrite(timeNs: 1, bytes: [])], segmentation, wireProtocol: AttitudeStream()).isEmpty)
        }
    }
}
