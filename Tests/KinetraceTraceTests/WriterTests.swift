import Foundation
import Testing
@testable import KinetraceTrace
import KinetraceWire

/// TraceWriter: flushing (TR-WRITE-2), line framing (TR-WRITE-1), counts.
@Suite struct WriterTests {
    static func records(_ n: Int) -> [TraceRecord] {
        (0..<n).map { i in
            switch i % 3 {
            case 0: return Fixtures.message(Int64(i), length: i % 40)
            case 1: return Fixtures.label(Int64(i))
            default: return Fixtures.event(Int64(i))
            }
        }
    }

    static func fileSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
    }

    @Test func headerIsOnDiskAsSoonAsTheWriterExists() throws {
        let dir = TempDirectory()
        let path = dir.file("h.jsonl")
        let writer = try TraceWriter(path: path, header: Fixtures.header)
        #expect(dir.contents("h.jsonl") == TraceEncoder.line(for: Fixtures.header))
        let reader = try TraceReader(path: path)
        #expect(reader.header == Fixtures.header)
        #expect(try reader.next() == nil)
        #expect(writer.recordCount == 0)
        #expect(writer.path == path)
        #expect(writer.policy == .default)
        try writer.close()
    }

    @Test func everyRecordPolicyMakesEachRecordReadableAtOnce() throws {
        let dir = TempDirectory()
        let path = dir.file("every.jsonl")
        let writer = try TraceWriter(path: path, header: Fixtures.header, policy: .everyRecord)
        let reader = try TraceReader(path: path)
        var expectedSize = TraceEncoder.line(for: Fixtures.header).count
        for (i, record) in Self.records(30).enumerated() {
            try writer.write(record)
            expectedSize += TraceEncoder.line(for: record, as: MotionLinkV1()).count
            #expect(writer.recordCount == i + 1)
            #expect(Self.fileSize(path) == expectedSize)
            // A reader opened before close() sees the record immediately.
            #expect(try reader.next() == record, "record \(i)")
        }
        // And a fresh reader sees them all, still before close().
        let fresh = try TraceReader(path: path)
        #expect(try readAll(fresh) == Self.records(30))
        #expect(fresh.truncation == nil)
        try writer.close()
        #expect(try reader.next() == nil)
    }

    @Test func defaultPolicyBuffersUntilFlush() throws {
        let dir = TempDirectory()
        let path = dir.file("default.jsonl")
        let writer = try TraceWriter(path: path, header: Fixtures.header)
        let recs = Self.records(50)
        for r in recs { try writer.write(r) }
        #expect(writer.recordCount == 50)
        try writer.flush()
        #expect(try dir.contents("default.jsonl") == TraceEncoder.document(header: Fixtures.header, records: recs))
        let reader = try TraceReader(path: path)
        #expect(try readAll(reader) == recs)
        #expect(reader.truncation == nil)
        try writer.flush() // nothing pending: a no-op
        try writer.close()
        try writer.close() // twice is fine
        #expect(try dir.contents("default.jsonl") == TraceEncoder.document(header: Fixtures.header, records: recs))
    }

    @Test func nothingIsWrittenBeforeAFlushWithAnUnboundedPolicy() throws {
        let dir = TempDirectory()
        let path = dir.file("held.jsonl")
        let policy = TraceWriter.FlushPolicy(maxBufferedBytes: 1 << 20, maxDelayNs: .max)
        let writer = try TraceWriter(path: path, header: Fixtures.header, policy: policy)
        let headerSize = TraceEncoder.line(for: Fixtures.header).count
        for r in Self.records(20) { try writer.write(r) }
        #expect(Self.fileSize(path) == headerSize)
        #expect(try readAll(TraceReader(path: path)).isEmpty)
        try writer.close()
        #expect(try readAll(TraceReader(path: path)) == Self.records(20))
    }

    @Test func sizePolicyFlushesExactlyWhenTheBufferReachesTheLimit() throws {
        let dir = TempDirectory()
        let path = dir.file("size.jsonl")
        let limit = 1000
        let writer = try TraceWriter(path: path, header: Fixtures.header,
                                     policy: .init(maxBufferedBytes: limit, maxDelayNs: 0))
        var onDisk = TraceEncoder.line(for: Fixtures.header).count
        var pending = 0
        var flushes = 0
        for record in Self.records(60) {
            try writer.write(record)
            pending += TraceEncoder.line(for: record, as: MotionLinkV1()).count
            if pending >= limit { onDisk += pending; pending = 0; flushes += 1 }
            #expect(Self.fileSize(path) == onDisk)
        }
        #expect(flushes >= 3)
        try writer.close()
        #expect(Self.fileSize(path) == onDisk + pending)
    }

    @Test func defaultPolicyFlushesAfter64KiB() throws {
        let dir = TempDirectory()
        let path = dir.file("64k.jsonl")
        let writer = try TraceWriter(path: path, header: Fixtures.header)
        var total = 0
        var n = 0
        while total < 64 << 10 {
            let r = Fixtures.message(Int64(n), length: 100)
            try writer.write(r)
            total += TraceEncoder.line(for: r, as: MotionLinkV1()).count
            n += 1
        }
        // The write that crossed 64 KiB flushed everything so far.
        let reader = try TraceReader(path: path)
        #expect(try readAll(reader).count == n)
        try writer.close()
    }

    @Test func agedBufferIsFlushedByTheNextWrite() throws {
        let dir = TempDirectory()
        let path = dir.file("aged.jsonl")
        let writer = try TraceWriter(path: path, header: Fixtures.header,
                                     policy: .init(maxBufferedBytes: 1 << 20, maxDelayNs: 1_000_000))
        let recs = Self.records(2)
        try writer.write(recs[0])
        usleep(5_000)
        try writer.write(recs[1])
        // Either the first write flushed at once or the second found it 5 ms old:
        // the first record is on disk either way.
        let seen = try readAll(TraceReader(path: path))
        #expect(seen.first == recs[0])
        try writer.close()
        #expect(try readAll(TraceReader(path: path)) == recs)
    }

    @Test func releasingTheWriterFlushesIt() throws {
        let dir = TempDirectory()
        let path = dir.file("deinit.jsonl")
        do {
            let writer = try TraceWriter(path: path, header: Fixtures.header,
                                         policy: .init(maxBufferedBytes: 1 << 20, maxDelayNs: .max))
            for r in Self.records(5) { try writer.write(r) }
        }
        #expect(try readAll(TraceReader(path: path)) == Self.records(5))
    }

    @Test func writerTruncatesAnExistingFile() throws {
        let dir = TempDirectory()
        let path = dir.write("old.jsonl", [UInt8](repeating: 0x41, count: 10_000))
        let writer = try TraceWriter(path: path, header: Fixtures.header)
        try writer.write(Fixtures.label())
        try writer.close()
        #expect(try dir.contents("old.jsonl") == TraceEncoder.document(header: Fixtures.header, records: [Fixtures.label()]))
    }

    @Test func killedWriterLeavesATruncationNotAnError() throws {
        // Simulate a crash mid-write: the file holds a prefix of what was written.
        let dir = TempDirectory()
        let path = dir.file("killed.jsonl")
        let writer = try TraceWriter(path: path, header: Fixtures.header, policy: .everyRecord)
        for r in Self.records(10) { try writer.write(r) }
        try writer.close()
        let full = dir.contents("killed.jsonl")
        let cut = full.count - 17
        dir.write("killed.jsonl", Array(full[..<cut]))
        let reader = try TraceReader(path: path)
        #expect(try readAll(reader) == Array(Self.records(10).prefix(9)))
        #expect(reader.truncation?.line == 11)
        #expect(reader.truncation?.byteOffset == lineExtents(full).last!.start)
    }
}
