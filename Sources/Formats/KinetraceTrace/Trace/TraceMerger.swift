#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceJSON
import KinetraceWire

extension TraceError.Code {
    /// A record is further out of time order than a merge's reorder window allows.
    package static let outOfOrder = TraceError.Code("out_of_order")
}

/// Merges traces, each nearly in time order (the shard records of `replay
/// --shard K/N`), into one trace in time order, streaming, in memory bounded
/// by what the inputs record within the reorder window (at most
/// `maximumWaitingTotal` records) plus read buffers that share a fixed budget
/// (`readBudgetBytes`), so a thousand inputs cost what ten do.
///
/// Each input passes through a reorder buffer: a record is released once its
/// input has read a record at least `windowNs` later, or at the input's end.
/// A record older than one its input already released is out of order by more
/// than the window (it lies more than the window behind a record read before it
/// in its file): an `outOfOrder` error naming its file and line. Released
/// records are merged k ways by (time, input position, record position in
/// its file), so equal times keep the inputs' order and each file's order.
///
/// Two passes, both k-way over every input at once: `init` opens every input,
/// checks that the headers agree and merges every record once without writing
/// (counting them, finding truncations, reordering and crowded windows), so a
/// refused merge writes nothing and the merged header can say how many records
/// it holds; `write` reads them again and writes the merged trace.
package final class TraceMerger {
    /// The window `kinetrace merge` uses unless told: a second.
    package static let defaultWindowNs: Int64 = 1_000_000_000
    /// The windows a merge accepts: a millisecond to an hour.
    package static let windowRangeNs: ClosedRange<Int64> = 1_000_000...3_600_000_000_000

    package let paths: [String]
    package let windowNs: Int64
    /// Records one input may hold waiting in its reorder buffer (a record waits as 200 to 300 bytes).
    package let maximumWaiting: Int
    /// Records all inputs together may hold waiting: what bounds a merge's memory when files
    /// crowd their records into one window, however many files there are.
    package let maximumWaitingTotal: Int
    /// The default of both: a million records, which a second-long window of 100,000 controllers
    /// at 10 Hz (frames and acks) stays well inside.
    package static let defaultMaximumWaiting = 1 << 20
    /// The read buffers of all inputs together: 8 MiB, divided among the inputs (a megabyte
    /// each up to 8 inputs, 8 KiB each for a thousand, never under `TraceReader.minimumBufferBytes`).
    /// zlib's window and state, about 40 KB per gzip-compressed input, come on top.
    package static let readBudgetBytes = 8 << 20

    /// The read buffer each of `inputs` inputs gets.
    package static func bufferBytes(inputs: Int) -> Int {
        min(TraceReader.defaultBufferBytes, max(TraceReader.minimumBufferBytes, readBudgetBytes / max(inputs, 1)))
    }
    /// Every input's header, in the order of `paths`.
    package let headers: [TraceHeader]
    /// What the first pass found: records, truncations and reordering per input.
    package let scanned: TraceMergeSummary
    private let registry: ProtocolRegistry

    /// Opens every input, refuses headers that disagree, and reads every record once.
    ///
    /// The inputs must name one protocol, one clock and one capture point. A
    /// different protocol cannot be decoded alike; times on different clocks
    /// have no common order; and records observed at different points (a host's
    /// socket, a controller's) would pass for one observation under one header
    /// member. So any difference is refused (`protocolMismatch` or `badHeader`,
    /// naming both files) rather than one of them chosen or "unknown" written.
    package init(paths: [String], windowNs: Int64 = defaultWindowNs, maximumWaiting: Int = defaultMaximumWaiting,
                maximumWaitingTotal: Int = defaultMaximumWaiting, registry: ProtocolRegistry = .standard) throws(TraceError) {
        guard !paths.isEmpty else {
            throw TraceError(.badHeader, source: "<merge>", message: "nothing to merge: no input traces")
        }
        guard Self.windowRangeNs.contains(windowNs) else {
            throw TraceError(.badRecord, source: "<merge>",
                             message: "a reorder window of \(windowNs) ns is outside 1 ms to 1 hour")
        }
        self.paths = paths
        self.windowNs = windowNs
        self.maximumWaiting = Swift.max(1, maximumWaiting)
        self.maximumWaitingTotal = Swift.max(1, maximumWaitingTotal)
        self.registry = registry
        let inputs = try Self.open(paths, windowNs: windowNs, maximumWaiting: self.maximumWaiting,
                                   maximumWaitingTotal: self.maximumWaitingTotal, registry: registry)
        headers = inputs.map(\.reader.header)
        try Self.checkAgreement(paths: paths, headers: headers)
        // The same k-way merge as `write`, so a crowded window fails here, before anything is written.
        try Self.merge(inputs) { _ throws(TraceError) in }
        scanned = TraceMergeSummary(inputs: inputs.map(\.summary), recordsWritten: 0, windowNs: windowNs)
    }

    /// Every input opened, with its share of the read budget, behind its reorder buffer.
    private static func open(_ paths: [String], windowNs: Int64, maximumWaiting: Int, maximumWaitingTotal: Int,
                             registry: ProtocolRegistry) throws(TraceError) -> [OrderedInput] {
        let waiting = WaitingRecords(maximum: maximumWaitingTotal, inputs: paths.count)
        let bufferBytes = bufferBytes(inputs: paths.count)
        var inputs: [OrderedInput] = []
        inputs.reserveCapacity(paths.count)
        for (index, path) in paths.enumerated() {
            // An MCAP input holds one chunk in memory (a megabyte as Kinetrace writes them), whatever the budget.
            let reader: any TraceRecordSource = try MCAPTraceReader.hasMagic(path: path)
                ? try MCAPTraceReader(path: path, registry: registry)
                : try TraceReader(path: path, registry: registry, bufferBytes: bufferBytes)
            inputs.append(OrderedInput(reader: reader, index: index, windowNs: windowNs, maximumWaiting: maximumWaiting, waiting: waiting))
        }
        return inputs
    }

    /// Hands every record of `inputs` to `body` in merged order: (time, input, position in its file).
    private static func merge(_ inputs: [OrderedInput], _ body: (TraceRecord) throws(TraceError) -> Void) throws(TraceError) {
        var heads = MinimumHeap<Pending>()
        for input in inputs {
            if let head = try input.next() { heads.insert(head) }
        }
        while let head = heads.popMin() {
            try body(head.record)
            if let next = try inputs[head.input].next() { heads.insert(next) }
        }
    }

    private static func checkAgreement(paths: [String], headers: [TraceHeader]) throws(TraceError) {
        guard let first = headers.first, let firstPath = paths.first else { return }
        for (path, header) in zip(paths, headers).dropFirst() {
            if header.protocolID != first.protocolID {
                throw TraceError(.protocolMismatch, source: path, line: 1,
                                 message: "the header names protocol \"\(header.protocolID)\", but \(firstPath) names \"\(first.protocolID)\": traces of different protocols cannot be merged")
            }
            if header.declaration?.digest != first.declaration?.digest {
                let describe = { (h: TraceHeader) in h.declaration.map { "declared as \($0.digest)" } ?? "compiled" }
                throw TraceError(.protocolMismatch, source: path, line: 1,
                                 message: "protocol \"\(header.protocolID)\" is \(describe(header)) here but \(describe(first)) in \(firstPath): traces of different declarations cannot be merged")
            }
            if header.clock != first.clock {
                throw TraceError(.badHeader, source: path, line: 1,
                                 message: "the header's clock is \"\(header.clock)\", but \(firstPath)'s is \"\(first.clock)\": times on different clocks have no common order")
            }
            if header.capturePoint != first.capturePoint {
                throw TraceError(.badHeader, source: path, line: 1,
                                 message: "the header's capture point is \"\(header.capturePoint)\", but \(firstPath)'s is \"\(first.capturePoint)\": a merged trace has one capture point")
            }
        }
    }

    /// The merged trace's header: the inputs' protocol, clock and capture point,
    /// `tool` "kinetrace merge", notes counting records and files, and every
    /// input's header under `extra["shards"]`, in input order.
    package func mergedHeader(created: String) -> TraceHeader {
        let shards: [JSONValue] = zip(paths, zip(headers, scanned.inputs)).map { path, pair in
            let (header, input) = pair
            var shard: [String: JSONValue] = [
                "path": .string(path),
                "format": .string(TraceHeader.formatName),
                "version": .integer(Int64(header.major)),
                "minor": .integer(Int64(header.minor)),
                "created": .string(header.created),
                "tool": .string(header.tool),
                "profile": .string(header.protocolID.name),
                "capture_point": .string(header.capturePoint.name),
                "clock": .string(header.clock.name),
                "notes": .string(header.notes),
                "extra": .object(header.extra),
                "records": .integer(Int64(input.records)),
            ]
            if let truncation = input.truncation { shard["truncated_at_line"] = .integer(Int64(truncation.line)) }
            return .object(shard)
        }
        let first = headers[0]
        let total = scanned.totalRecords
        var merged = TraceHeader(
            created: created, tool: "kinetrace merge", protocolID: first.protocolID,
            capturePoint: first.capturePoint, clock: first.clock,
            notes: "\(total) record\(total == 1 ? "" : "s") merged in time order from \(paths.count) file\(paths.count == 1 ? "" : "s"): \(paths.joined(separator: ", "))",
            extra: ["shards": .array(shards), "merge_window_ns": .integer(windowNs)])
        merged.declaration = first.declaration
        return merged
    }

    /// Reads the inputs again and writes them merged to `path` under `header`
    /// (gzip-compressed as `TraceWriter` decides: `gzip`, else a `.gz` name).
    /// An input whose records differ in number from the first pass (changed
    /// meanwhile) fails with `badRecord`. On any failure after `path` was created, it is removed (when it is a regular file).
    package func write(to path: String, header: TraceHeader, gzip: Bool? = nil,
                      policy: TraceWriter.FlushPolicy = .default) throws(TraceError) -> TraceMergeSummary {
        let inputs = try Self.open(paths, windowNs: windowNs, maximumWaiting: maximumWaiting,
                                   maximumWaitingTotal: maximumWaitingTotal, registry: registry)
        // Only a regular file (or a new one) is removed on failure: never a device such as /dev/full.
        var existing = stat()
        let removable = stat(path, &existing) != 0 || existing.st_mode & S_IFMT == S_IFREG
        let writer = try TraceOutput.create(path: path, header: header, policy: policy, registry: registry, gzip: gzip)
        do throws(TraceError) {
            try Self.merge(inputs) { record throws(TraceError) in try writer.write(record) }
            try writer.close()
            let summaries = inputs.map(\.summary)
            for (summary, before) in zip(summaries, scanned.inputs) where summary.records != before.records {
                throw TraceError(.badRecord, source: summary.path,
                                 message: "changed while being merged: \(before.records) records on the first reading, \(summary.records) on the second")
            }
            return TraceMergeSummary(inputs: summaries, recordsWritten: writer.recordCount, windowNs: windowNs)
        } catch {
            // A merge that fails part way leaves no output behind: half a trace passes for a whole one.
            try? writer.close()
            if removable { unlink(path) }
            throw error
        }
    }
}

/// What a merge read and wrote.
package struct TraceMergeSummary: Hashable, Sendable {
    package struct Input: Hashable, Sendable {
        package var path: String
        package var records = 0
        /// Records of kinds this reader does not know: skipped, so not merged.
        package var unknownRecords = 0
        package var truncation: TraceTruncation?
        /// The largest amount by which a record came before one read ahead of it
        /// in its file (every such record was within the window, or the merge failed).
        package var largestReorderNs: Int64 = 0
        /// Where that record is.
        package var largestReorderLine: Int?
        package var firstNs: Int64?
        package var lastNs: Int64?

        package init(path: String) { self.path = path }
    }

    package var inputs: [Input]
    package var recordsWritten: Int
    package var windowNs: Int64

    package var totalRecords: Int { inputs.reduce(0) { $0 + $1.records } }
    package var firstNs: Int64? { inputs.compactMap(\.firstNs).min() }
    package var lastNs: Int64? { inputs.compactMap(\.lastNs).max() }
    /// The input with the largest reordering, if any record was reordered.
    package var largestReorder: Input? {
        inputs.filter { $0.largestReorderNs > 0 }.max { $0.largestReorderNs < $1.largestReorderNs }
    }
}

/// A record waiting in a merge, ordered by time, then input, then position in its file.
private struct Pending: Comparable {
    var record: TraceRecord
    var timeNs: Int64
    var input: Int
    var sequence: Int

    static func < (a: Pending, b: Pending) -> Bool {
        (a.timeNs, a.input, a.sequence) < (b.timeNs, b.input, b.sequence)
    }

    static func == (a: Pending, b: Pending) -> Bool {
        (a.timeNs, a.input, a.sequence) == (b.timeNs, b.input, b.sequence)
    }
}

/// A binary min-heap: the merge's heads and each input's reorder buffer.
private struct MinimumHeap<Element: Comparable> {
    private var elements: [Element] = []

    var count: Int { elements.count }
    var min: Element? { elements.first }

    mutating func insert(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard elements[child] < elements[parent] else { break }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popMin() -> Element? {
        guard !elements.isEmpty else { return nil }
        elements.swapAt(0, elements.count - 1)
        let smallest = elements.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < elements.count && elements[left] < elements[least] { least = left }
            if right < elements.count && elements[right] < elements[least] { least = right }
            guard least != parent else { break }
            elements.swapAt(parent, least)
            parent = least
        }
        return smallest
    }
}

/// The records waiting in every input's reorder buffer of one merge pass, and their limit.
private final class WaitingRecords {
    let maximum: Int
    let inputs: Int
    var count = 0

    init(maximum: Int, inputs: Int) {
        self.maximum = maximum
        self.inputs = inputs
    }
}

/// One input behind its reorder buffer: `next()` returns its records in time order.
private final class OrderedInput {
    let reader: any TraceRecordSource
    /// Records read so far: for an error's message, and the order of equal times.
    private var recordCount = 0
    let index: Int
    let windowNs: Int64
    let maximumWaiting: Int
    private let waiting: WaitingRecords
    private var pending = MinimumHeap<Pending>()
    private var latestReadNs: Int64?
    private var latestReadLine = 0
    private var atEnd = false
    private(set) var summary: TraceMergeSummary.Input

    init(reader: any TraceRecordSource, index: Int, windowNs: Int64, maximumWaiting: Int, waiting: WaitingRecords) {
        self.reader = reader
        self.index = index
        self.windowNs = windowNs
        self.maximumWaiting = maximumWaiting
        self.waiting = waiting
        summary = TraceMergeSummary.Input(path: reader.source)
    }

    func next() throws(TraceError) -> Pending? {
        while true {
            if let oldest = pending.min, atEnd || isReleasable(oldest.timeNs), let released = pending.popMin() {
                waiting.count -= 1
                if summary.firstNs == nil { summary.firstNs = released.timeNs }
                summary.lastNs = released.timeNs
                return released
            }
            if atEnd { return nil }
            guard let record = try reader.next() else {
                atEnd = true
                summary.records = recordCount
                summary.unknownRecords = reader.unknownRecordCount
                summary.truncation = reader.truncation
                continue
            }
            recordCount += 1
            try admit(record)
        }
    }

    /// Whether a record at `timeNs` is at least the window older than the latest read.
    private func isReleasable(_ timeNs: Int64) -> Bool {
        guard let latestReadNs else { return false }
        let (age, overflow) = latestReadNs.subtractingReportingOverflow(timeNs)
        return !overflow && age >= windowNs
    }

    private func admit(_ record: TraceRecord) throws(TraceError) {
        let timeNs = record.timeNs
        // A JSON Lines input names lines; an MCAP input has none, so its records are counted instead.
        let line = reader.lastRecordLine ?? recordCount
        if let latestReadNs, timeNs < latestReadNs {
            let (behind, overflow) = latestReadNs.subtractingReportingOverflow(timeNs)
            let lateness = overflow ? Int64.max : behind
            // Further back than the window is refused even when nothing later has been released
            // yet (a gap in the input): whether a merge fails must not hang on where its gaps fall.
            // Within the window it never comes after a released record (those are a window older
            // than the latest read).
            if lateness > windowNs {
                throw TraceError(.outOfOrder, source: reader.source, line: reader.lastRecordLine,
                                 message: "record \(recordCount) (t_ns \(timeNs)) is \(TraceMerger.describe(lateness)) out of time order, behind line \(latestReadLine) (t_ns \(latestReadNs)): more than the \(TraceMerger.describe(windowNs)) reorder window")
            }
            if lateness > summary.largestReorderNs {
                summary.largestReorderNs = lateness
                summary.largestReorderLine = line
            }
        } else {
            latestReadNs = timeNs
            latestReadLine = line
        }
        guard pending.count < maximumWaiting else {
            throw TraceError(.badRecord, source: reader.source, line: reader.lastRecordLine,
                             message: "more than \(maximumWaiting) records fall within one \(TraceMerger.describe(windowNs)) reorder window here: give a smaller --window or a larger --max-waiting")
        }
        guard waiting.count < waiting.maximum else {
            throw TraceError(.badRecord, source: reader.source, line: reader.lastRecordLine,
                             message: "more than \(waiting.maximum) records wait in the \(TraceMerger.describe(windowNs)) reorder windows of the \(waiting.inputs) inputs together here (\(pending.count) of them in this one): give a smaller --window, fewer inputs or a larger --max-waiting")
        }
        waiting.count += 1
        pending.insert(Pending(record: record, timeNs: timeNs, input: index, sequence: recordCount))
    }
}

extension TraceMerger {
    /// A duration to the microsecond, in ms below a second ("0.125 ms") and in s from one ("1.500 s"), without Foundation.
    package static func describe(_ duration: Int64) -> String {
        let micros = max(duration, 0) / 1000
        func thousandths(_ v: Int64) -> String {
            let s = String(v % 1000)
            return "\(v / 1000).\(String(repeating: "0", count: max(0, 3 - s.count)))\(s)"
        }
        return micros < 1_000_000 ? thousandths(micros) + " ms" : thousandths(micros / 1000) + " s"
    }
}
