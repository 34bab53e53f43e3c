import HeapModule
import KinetraceTrace

/// Records generated out of time order, handed back in time order; records with
/// the same time keep the order they were generated in, so output is deterministic.
struct RecordQueue {
    private struct Pending: Comparable {
        var timeNs: Int64
        var sequence: Int
        var record: TraceRecord
        static func < (a: Pending, b: Pending) -> Bool { (a.timeNs, a.sequence) < (b.timeNs, b.sequence) }
        static func == (a: Pending, b: Pending) -> Bool { (a.timeNs, a.sequence) == (b.timeNs, b.sequence) }
    }

    private var heap = Heap<Pending>()
    private var sequence = 0

    mutating func insert(_ record: TraceRecord) {
        heap.insert(Pending(timeNs: record.timeNs, sequence: sequence, record: record))
        sequence += 1
    }

    /// The earliest record's time, if any.
    var earliestNs: Int64? { heap.min?.timeNs }

    mutating func removeEarliest() -> TraceRecord? { heap.isEmpty ? nil : heap.removeMin().record }
}
