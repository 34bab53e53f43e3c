import KinetraceWire

/// A stretch of a trace by time, as `--start` and `--end` give it: the records from
/// `startNs` up to (not including) `endNs` after the anchor, the input's first record
/// (or, for replay, its first controller→host message).
package struct TraceWindow: Hashable, Sendable {
    package enum Anchor: Hashable, Sendable {
        case firstRecord
        /// Replay's clock starts at the first message a controller sent.
        case firstControllerMessage
    }

    package var startNs: Int64
    package var endNs: Int64?
    package var anchor: Anchor

    package init(startNs: Int64 = 0, endNs: Int64? = nil, anchor: Anchor = .firstRecord) {
        self.startNs = startNs
        self.endNs = endNs
        self.anchor = anchor
    }

    /// Whether `record` starts the window's clock.
    package func isAnchor(_ record: TraceRecord) -> Bool {
        switch anchor {
        case .firstRecord: return true
        case .firstControllerMessage:
            if case .message(let m) = record { return m.direction == .controllerToHost }
            return false
        }
    }

    /// Whether a record `offsetNs` after the first is inside.
    @inline(__always) package func contains(offsetNs: Int64) -> Bool {
        offsetNs >= startNs && (endNs.map { offsetNs < $0 } ?? true)
    }

    /// Whether records from `lowNs` to `highNs` after the first may fall inside.
    package func overlaps(lowNs: Int64, highNs: Int64) -> Bool {
        highNs >= startNs && (endNs.map { lowNs < $0 } ?? true)
    }

    /// Everything: no window.
    package var isEverything: Bool { startNs <= 0 && endNs == nil }

    /// The error for a window that selected nothing (never an empty success): what it asked for
    /// and, when known, how far after the anchor the input's records reach.
    package func nothingSelected(in source: String, latestOffsetNs: Int64?) -> TraceError {
        func seconds(_ ns: Int64) -> String {
            let ms = ns / 1_000_000
            let fraction = String(ms % 1000)
            return "\(ms / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) s"
        }
        let asked = "--start \(seconds(startNs))" + (endNs.map { " to --end \(seconds($0))" } ?? "")
        let anchorName = anchor == .firstRecord ? "first record" : "first controller→host message"
        guard let latestOffsetNs else {
            return TraceError(.emptyWindow, source: source, message: "\(asked) selects nothing: the input has no \(anchorName) to count from")
        }
        return TraceError(.emptyWindow, source: source,
                          message: "\(asked) selects no record: the input's records reach \(seconds(max(latestOffsetNs, 0))) after its \(anchorName)")
    }
}

/// Any source cut to a window by reading and dropping: for inputs without an index
/// (JSON Lines, captures). `MCAPTraceReader` takes the window itself and seeks.
package final class WindowedRecordSource: TraceRecordSource {
    private let inner: any TraceRecordSource
    package let window: TraceWindow
    private var firstNs: Int64?
    private var latestNs: Int64?
    private var selected = 0
    private var reportedEmpty = false

    package init(_ inner: any TraceRecordSource, window: TraceWindow) {
        self.inner = inner
        self.window = window
    }

    package var source: String { inner.source }
    package var header: TraceHeader { inner.header }
    package var wireProtocol: any WireProtocol { inner.wireProtocol }
    package var truncation: TraceTruncation? { inner.truncation }
    package var unknownRecordCount: Int { inner.unknownRecordCount }
    package var readingNote: String? { inner.readingNote }
    package var bytesRead: (file: Int, uncompressed: Int)? { inner.bytesRead }
    package var lastRecordLine: Int? { inner.lastRecordLine }

    package func next() throws(TraceError) -> TraceRecord? {
        while let record = try inner.next() {
            if firstNs == nil, window.isAnchor(record) { firstNs = record.timeNs }
            latestNs = max(latestNs ?? record.timeNs, record.timeNs)
            // Before the anchor, a record is before the window's clock starts: outside it.
            guard let first = firstNs else { continue }
            if window.contains(offsetNs: record.timeNs - first) {
                selected += 1
                return record
            }
        }
        if selected == 0, !reportedEmpty {
            reportedEmpty = true
            throw window.nothingSelected(in: source, latestOffsetNs: firstNs.flatMap { first in latestNs.map { $0 - first } })
        }
        return nil
    }
}
