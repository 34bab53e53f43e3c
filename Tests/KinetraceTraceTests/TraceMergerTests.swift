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
}
