import KinetraceSupport
import KinetraceWire

/// Reads another source's records on a thread of its own, a bounded number of
/// batches ahead, so parsing and what the caller does with each record run on
/// two cores. The records, their order, the error that ends them and what the
/// source says at the end (truncation, unknown records) are the source's own.
///
/// The wrapped source belongs to the reading thread from `init` on: use it
/// only through this. A byte-stream source (`FramingRecordSource`) reports
/// unfinished streams that only it knows, so it is best left unwrapped.
package final class PrefetchingRecordSource: TraceRecordSource {
    package let source: String
    package let header: TraceHeader
    package let wireProtocol: any WireProtocol

    /// What the source said after reading a batch; the caller sees the one of the batch it is in.
    private struct Snapshot {
        var truncation: TraceTruncation?
        var unknownRecordCount = 0
        var readingNote: String?
        var bytesRead: (file: Int, uncompressed: Int)?
    }

    private enum Item {
        case record(TraceRecord, line: Int?)
        case snapshot(Snapshot)
        case failure(TraceError)
    }

    private let queue: BatchQueue<Item>
    private var thread: WorkerThread?
    private var batch: [Item] = []
    private var index = 0
    private var snapshot: Snapshot
    private var ended = false

    /// 1,024 records a batch, 8 batches ahead, and at most `bytesAhead` (32 MiB) of input waiting
    /// whatever the records' size: a trace line may be 16 MiB, and 8,192 of them must not be read ahead.
    package init(_ base: any TraceRecordSource, batchSize: Int = 1024, batchesAhead: Int = 8, bytesAhead: Int = 32 << 20) {
        precondition(batchSize > 0 && bytesAhead > 0)
        source = base.source
        header = base.header
        wireProtocol = base.wireProtocol
        snapshot = Snapshot(truncation: base.truncation, unknownRecordCount: base.unknownRecordCount,
                            readingNote: base.readingNote, bytesRead: base.bytesRead)
        let queue = BatchQueue<Item>(capacity: batchesAhead, maximumWeight: bytesAhead)
        self.queue = queue
        // A batch also ends at an eighth of the bytes allowed ahead, so that several always fit.
        let batchBytes = Swift.max(1, bytesAhead / 8)
        thread = WorkerThread {
            var items: [Item] = []
            items.reserveCapacity(batchSize + 2)
            var heldBytes = 0
            var readAtStart = base.bytesRead?.uncompressed ?? 0
            // A batch weighs the input it was read from, or its payloads where the source does not count bytes.
            // The snapshot comes before an ending error, so that the caller sees the source's state at the error.
            func handOver(ending failure: TraceError? = nil) -> Bool {
                let read = base.bytesRead
                items.append(.snapshot(Snapshot(truncation: base.truncation, unknownRecordCount: base.unknownRecordCount,
                                                readingNote: base.readingNote, bytesRead: read)))
                if let failure { items.append(.failure(failure)) }
                let readBytes = (read?.uncompressed ?? readAtStart) - readAtStart
                guard queue.put(items, weight: Swift.max(heldBytes, readBytes)) else { return false }
                items = []
                items.reserveCapacity(batchSize + 2)
                heldBytes = 0
                readAtStart = read?.uncompressed ?? readAtStart
                return true
            }
            var failure: TraceError?
            do throws(TraceError) {
                while let record = try base.next() {
                    items.append(.record(record, line: base.lastRecordLine))
                    heldBytes += Self.heldBytes(record)
                    let readBytes = (base.bytesRead?.uncompressed ?? readAtStart) - readAtStart
                    if items.count == batchSize || Swift.max(heldBytes, readBytes) >= batchBytes {
                        guard handOver() else { return }
                    }
                }
            } catch {
                failure = error
            }
            guard handOver(ending: failure) else { return }
            queue.finish()
        }
    }

    /// About what a record holds in memory: its payload and some for the rest.
    private static func heldBytes(_ record: TraceRecord) -> Int {
        if case .message(let message) = record { return 128 + message.payload.count }
        return 128
    }

    deinit {
        queue.cancel()
        thread?.join()
    }

    package func next() throws(TraceError) -> TraceRecord? {
        while !ended {
            if index == batch.count {
                guard let taken = queue.take() else {
                    ended = true
                    break
                }
                batch = taken
                index = 0
            }
            let item = batch[index]
            index += 1
            switch item {
            case .record(let record, let line):
                lastRecordLine = line
                return record
            case .snapshot(let state): snapshot = state
            case .failure(let error):
                ended = true
                throw error
            }
        }
        return nil
    }

    package private(set) var lastRecordLine: Int?
    package var truncation: TraceTruncation? { snapshot.truncation }
    package var unknownRecordCount: Int { snapshot.unknownRecordCount }
    package var readingNote: String? { snapshot.readingNote }
    package var bytesRead: (file: Int, uncompressed: Int)? { snapshot.bytesRead }
}
