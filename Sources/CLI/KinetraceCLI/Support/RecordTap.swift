import KinetraceTrace
import KinetraceWire

/// Another source's records, unchanged, each shown to `onRecord` as it passes, and the
/// first and last capture times seen: so a reader that consumes a source itself (gesture
/// scoring) can still tell where the trace starts, and a caller can see what it skips.
final class RecordTap: TraceRecordSource {
    private let base: any TraceRecordSource
    private let onRecord: ((TraceRecord) -> Void)?
    /// The first record's capture time: where "seconds since the trace's start" count from.
    private(set) var firstNs: Int64?
    /// The greatest capture time seen.
    private(set) var lastNs: Int64?
    private(set) var records = 0

    init(_ base: any TraceRecordSource, onRecord: ((TraceRecord) -> Void)? = nil) {
        self.base = base
        self.onRecord = onRecord
    }

    var source: String { base.source }
    var header: TraceHeader { base.header }
    var wireProtocol: any WireProtocol { base.wireProtocol }
    var truncation: TraceTruncation? { base.truncation }
    var unknownRecordCount: Int { base.unknownRecordCount }
    var readingNote: String? { base.readingNote }
    var bytesRead: (file: Int, uncompressed: Int)? { base.bytesRead }
    var lastRecordLine: Int? { base.lastRecordLine }

    func next() throws(TraceError) -> TraceRecord? {
        guard let record = try base.next() else { return nil }
        let t = record.timeNs
        if firstNs == nil { firstNs = t }
        if lastNs.map({ t > $0 }) ?? true { lastNs = t }
        records += 1
        onRecord?(record)
        return record
    }
}
