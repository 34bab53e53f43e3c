/// Writes a trace: the header at once, then records through a buffer that
/// is flushed by size or age, so a killed writer leaves a readable file that
/// at worst ends in one truncated line (which readers tolerate).
public final class TraceWriter {
    public struct FlushPolicy: Hashable, Sendable {
        /// Flush once this many bytes are buffered.
        public var maxBufferedBytes: Int
        /// Flush on the first write after the oldest buffered byte is this old.
        /// Writers idle for longer should call `flush()` from their own timer.
        public var maxDelayNs: Int64

        public init(maxBufferedBytes: Int, maxDelayNs: Int64) {
            self.maxBufferedBytes = maxBufferedBytes
            self.maxDelayNs = maxDelayNs
        }

        public static let `default` = FlushPolicy(maxBufferedBytes: 64 << 10, maxDelayNs: 200_000_000)
        /// One write(2) per record: slowest, loses nothing but an in-flight record.
        public static let everyRecord = FlushPolicy(maxBufferedBytes: 0, maxDelayNs: 0)
    }

    public var path: String { file.path }
    public let policy: FlushPolicy
    public private(set) var recordCount = 0
    private let file: BufferedFile
    private var oldestPendingNs: Int64 = 0

    public init(path: String, header: TraceHeader, policy: FlushPolicy = .default) throws(TraceError) {
        self.policy = policy
        file = try BufferedFile(path: path, reserving: policy.maxBufferedBytes + 512)
        file.pending.append(contentsOf: TraceEncoder.line(for: header))
        try flush()
    }

    public func write(_ record: TraceRecord) throws(TraceError) {
        precondition(!file.isClosed, "TraceWriter used after close()")
        if file.pending.isEmpty, policy.maxDelayNs > 0 { oldestPendingNs = SystemClock.monotonicNs() }
        var out = JSONOutput()
        swap(&out.bytes, &file.pending)
        TraceEncoder.append(record, to: &out)
        swap(&out.bytes, &file.pending)
        recordCount += 1
        if file.pending.count >= policy.maxBufferedBytes
            || (policy.maxDelayNs > 0 && SystemClock.monotonicNs() - oldestPendingNs >= policy.maxDelayNs) {
            try flush()
        }
    }

    /// Hands everything buffered to the kernel.
    public func flush() throws(TraceError) { try file.flush() }

    /// Flushes and closes; further writes are a programming error.
    public func close() throws(TraceError) { try file.close() }
}

extension TraceEncoder {
    /// A whole trace in memory: header line then one line per record.
    public static func document(header: TraceHeader, records: some Sequence<TraceRecord>) -> [UInt8] {
        var out = JSONOutput()
        out.bytes = line(for: header)
        for record in records { append(record, to: &out) }
        return out.bytes
    }
}
