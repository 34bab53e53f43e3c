import Foundation
import KinetraceSupport
import Testing
@testable import KinetraceTrace
import KinetraceWire

/// Reading ahead on another thread changes nothing the caller can see: the same
/// records in the same order, the same error after the same records, the same
/// truncation, unknown-record count and bytes read at the end.
@Suite struct PrefetchingRecordSourceTests {
    static func randomRecords(_ count: Int, seed: UInt64) -> [TraceRecord] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in RandomTrace.record(&rng) }
    }

    @Test(arguments: [1, 7, 1024])
    func theSameRecordsInTheSameOrder(batchSize: Int) throws {
        let records = Self.randomRecords(3_001, seed: 17)
        let document = try TraceEncoder.document(header: Fixtures.header, records: records)
        let ahead = PrefetchingRecordSource(try TraceReader(bytes: document), batchSize: batchSize, batchesAhead: 2)
        var got: [TraceRecord] = []
        while let record = try ahead.next() { got.append(record) }
        #expect(got == records)
        #expect(try ahead.next() == nil, "the end stays the end")
        #expect(ahead.truncation == nil)
        #expect(ahead.header == Fixtures.header)
    }

    /// A bad line in the middle: the records before it, then its error, word for word.
    @Test func aBadLineEndsTheRecordsWithTheSameError() throws {
        var lines = try TraceEncoder.document(header: Fixtures.header, records: Self.randomRecords(500, seed: 5))
            .split(separator: 0x0A, omittingEmptySubsequences: false).map { Array($0) }
        lines[301] = Array(#"{"kind":"msg","t_ns":"soon"}"#.utf8)
        let bad = Array(lines.joined(separator: [0x0A]))
        let plainReader = try TraceReader(bytes: bad)
        let plain = readUntilError(plainReader)
        let plainError = try #require(plain.error)
        #expect(plain.records.count == 300)

        let ahead = PrefetchingRecordSource(try TraceReader(bytes: bad), batchSize: 64, batchesAhead: 2)
        var got: [TraceRecord] = []
        var caught: TraceError?
        do throws(TraceError) {
            while let record = try ahead.next() { got.append(record) }
        } catch {
            caught = error
        }
        #expect(got == plain.records)
        #expect(caught?.description == plainError.description)
        #expect(try ahead.next() == nil, "after the error, the end")
        #expect(ahead.bytesRead?.uncompressed == plainReader.bytesRead?.uncompressed, "the source's state at the error")
        #expect(ahead.unknownRecordCount == plainReader.unknownRecordCount)
    }

    /// A file cut inside its last record: the truncation and the bytes read, as the plain reader says them.
    @Test func aCutFileReportsTheSameTruncationAndBytes() throws {
        let document = try TraceEncoder.document(header: Fixtures.header, records: Self.randomRecords(2_000, seed: 9))
        let cut = Array(document[..<(document.count - 10)])
        let dir = TempDirectory()
        let path = dir.write("cut.jsonl", cut)
        let plain = try TraceReader(path: path)
        let plainRecords = try readAll(plain)
        #expect(plain.truncation != nil)

        let ahead = PrefetchingRecordSource(try TraceReader(path: path), batchSize: 100, batchesAhead: 3)
        var got: [TraceRecord] = []
        while let record = try ahead.next() { got.append(record) }
        #expect(got == plainRecords)
        #expect(ahead.truncation == plain.truncation)
        #expect(ahead.unknownRecordCount == plain.unknownRecordCount)
        #expect(ahead.bytesRead?.file == plain.bytesRead?.file)
        #expect(ahead.bytesRead?.uncompressed == plain.bytesRead?.uncompressed)
    }

    /// A batch that would take the queue past its weight waits, unless the queue is empty.
    @Test func theQueueHoldsAtMostItsWeight() {
        let queue = BatchQueue<Int>(capacity: 8, maximumWeight: 100)
        #expect(queue.put([1], weight: 60))
        let second = DispatchSemaphore(value: 0)
        let producer = Thread {
            _ = queue.put([2], weight: 60)
            second.signal()
        }
        producer.start()
        #expect(second.wait(timeout: .now() + 0.1) == .timedOut, "60 + 60 is past 100: the producer waits")
        #expect(queue.take() == [1])
        #expect(second.wait(timeout: .now() + 5) == .success, "the weight taken off lets it in")
        #expect(queue.take() == [2])
        #expect(queue.put([3], weight: 500), "one batch heavier than the whole allowance still goes into an empty queue")
        #expect(queue.take() == [3])
    }

    /// Records of half a megabyte each, read ahead with 2 MiB allowed: all arrive, in order.
    @Test func bigRecordsArriveWithinTheByteAllowance() throws {
        let records: [TraceRecord] = (0..<20).map { n in
            .message(MessageRecord(timeNs: Int64(n), direction: .controllerToHost, source: Endpoint(host: "10.0.0.2", port: 5000),
                                   destination: Endpoint(host: "10.0.0.1", port: 47110),
                                   payload: [UInt8](repeating: UInt8(n), count: 512 << 10)))
        }
        let document = try TraceEncoder.document(header: Fixtures.header, records: records)
        let ahead = PrefetchingRecordSource(try TraceReader(bytes: document), bytesAhead: 2 << 20)
        var got: [TraceRecord] = []
        while let record = try ahead.next() { got.append(record) }
        #expect(got == records)
    }

    /// A caller that stops early lets the reading thread go: dropping the source returns.
    @Test func droppingItPartWayStopsTheReadingThread() throws {
        let document = try TraceEncoder.document(header: Fixtures.header, records: Self.randomRecords(5_000, seed: 3))
        var ahead: PrefetchingRecordSource? = PrefetchingRecordSource(try TraceReader(bytes: document), batchSize: 8, batchesAhead: 2)
        for _ in 0..<10 { #expect(try ahead?.next() != nil) }
        usleep(20_000)  // the reader fills its two batches and waits
        let started = SystemClock.monotonicNs()
        ahead = nil
        #expect(SystemClock.monotonicNs() - started < 5_000_000_000)
    }
}
