import Foundation
import KinetraceTestSupport
import Testing
@testable import KinetraceTrace

/// The merger's memory bound: an input that crowds more records into one reorder window
/// than `maximumWaiting` is refused, naming its line, instead of being held whole.
@Suite struct TraceMergerTests {
    func writeTrace(_ path: String, times: [Int64]) throws {
        let writer = try TraceWriter(path: path, header: Fixtures.header)
        for t in times { try writer.write(Fixtures.message(t)) }
        try writer.close()
    }

    @Test func aWindowCrowdedPastTheBoundIsRefused() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let crowded = dir.appendingPathComponent("crowded.jsonl").path
        // 50 records in the same millisecond, then one a second later.
        try writeTrace(crowded, times: Array(repeating: Fixtures.frameT, count: 50) + [Fixtures.frameT + 2_000_000_000])
        let error = #expect(throws: TraceError.self) { _ = try TraceMerger(paths: [crowded], maximumWaiting: 20) }
        #expect(error?.code == .badRecord)
        #expect(error?.line == 22, "the 21st record, after the header line")
        #expect(error?.message.contains("more than 20 records") == true, "\(String(describing: error))")
        // Within the bound the same file merges whole.
        let merger = try TraceMerger(paths: [crowded], maximumWaiting: 64)
        #expect(merger.scanned.totalRecords == 51)
    }

    @Test func recordsSpreadOverTimeNeverCrowd() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let spread = dir.appendingPathComponent("spread.jsonl").path
        // 1,000 records 10 ms apart: a 1 s window holds about 100 of them at a time.
        try writeTrace(spread, times: (0..<1000).map { Fixtures.frameT + Int64($0) * 10_000_000 })
        let merger = try TraceMerger(paths: [spread], maximumWaiting: 128)
        let out = dir.appendingPathComponent("out.jsonl").path
        let summary = try merger.write(to: out, header: merger.mergedHeader(created: "2026-11-25T00:00:00.000Z"))
        #expect(summary.recordsWritten == 1000)
    }

    /// Issue 24, finding 9: the limit on waiting records holds for all inputs together, not
    /// per input only: three files of 6 records at one instant each fit a bound of 10 alone,
    /// but not together, and the error names the input and line where the total passed it.
    @Test func theWaitingRecordsOfAllInputsTogetherAreBounded() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let paths = try ["a", "b", "c"].map { name in
            let path = dir.appendingPathComponent("\(name).jsonl").path
            try writeTrace(path, times: Array(repeating: Fixtures.frameT, count: 6) + [Fixtures.frameT + 2_000_000_000])
            return path
        }
        for path in paths { #expect(try TraceMerger(paths: [path], maximumWaiting: 10, maximumWaitingTotal: 10).scanned.totalRecords == 7) }
        let error = #expect(throws: TraceError.self) { _ = try TraceMerger(paths: paths, maximumWaiting: 10, maximumWaitingTotal: 10) }
        // a holds 6 once its later record released one; b's 5th record (line 6) would be the 11th waiting.
        #expect(error?.code == .badRecord && error?.source == paths[1] && error?.line == 6, "\(String(describing: error))")
        #expect(error?.message.contains("more than 10 records wait") == true && error?.message.contains("3 inputs together") == true,
                "\(String(describing: error))")
        #expect(error.map { !"\($0)".contains("\n") } == true)
        // Together they need 19: 18 at one instant, and c's later record read before one of them is released.
        let merger = try TraceMerger(paths: paths, maximumWaiting: 10, maximumWaitingTotal: 19)
        #expect(merger.scanned.totalRecords == 21)
    }

    /// The read buffers share a fixed budget: a megabyte each for a few inputs, 8 KiB each for a
    /// thousand, never under the reader's minimum.
    @Test func theReadBudgetIsDividedAmongTheInputs() {
        #expect(TraceMerger.bufferBytes(inputs: 1) == TraceReader.defaultBufferBytes)
        #expect(TraceMerger.bufferBytes(inputs: 1000) == TraceMerger.readBudgetBytes / 1000)
        #expect(TraceMerger.bufferBytes(inputs: 1_000_000) == TraceReader.minimumBufferBytes)
        #expect((1...100_000).allSatisfy { n in
            let each = TraceMerger.bufferBytes(inputs: n)
            return each * n <= max(TraceMerger.readBudgetBytes, n * TraceReader.minimumBufferBytes) && each >= TraceReader.minimumBufferBytes
        })
    }

    /// Many inputs, plain and gzip-compressed, each with its small share of the budget, merge
    /// into every record in time order.
    @Test func manyInputsMergeWithTheirShareOfTheBudget() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        var paths: [String] = []
        var expected: [Int64] = []
        for i in 0..<300 {
            let times = (0..<20).map { Fixtures.frameT + Int64($0 * 300 + i) * 1_000_000 }
            let path = dir.appendingPathComponent("in-\(i).jsonl\(i % 2 == 0 ? ".gz" : "")").path
            let writer = try TraceWriter(path: path, header: Fixtures.header)
            for t in times { try writer.write(Fixtures.message(t)) }
            try writer.close()
            paths.append(path)
            expected += times
        }
        let merger = try TraceMerger(paths: paths)
        let out = dir.appendingPathComponent("out.jsonl").path
        let summary = try merger.write(to: out, header: merger.mergedHeader(created: "2026-11-25T00:00:00.000Z"))
        #expect(summary.recordsWritten == 6000)
        let reader = try TraceReader(path: out)
        var times: [Int64] = []
        while let record = try reader.next() { times.append(record.timeNs) }
        #expect(times == expected.sorted())
    }
}
