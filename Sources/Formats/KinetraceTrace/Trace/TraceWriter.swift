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

    public let path: String
    public let policy: FlushPolicy
    public private(set) var recordCount = 0
    private let file: POSIXFile
    private var pending: [UInt8] = []
    private var oldestPendingNs: Int64 = 0
    private var closed = false

    public init(path: String, header: TraceHeader, policy: FlushPolicy = .default) throws(TraceError) {
        self.path = path
        self.policy = policy
        file = try POSIXFile(path: path, mode: .createTruncate)
        pending.reserveCapacity(policy.maxBufferedBytes + 512)
        pending.append(contentsOf: TraceEncoder.line(for: header))
        try flush()
    }

    deinit { try? close() }

    public func write(_ record: TraceRecord) throws(TraceError) {
        precondition(!closed, "TraceWriter used after close()")
        if pending.isEmpty, policy.maxDelayNs > 0 { oldestPendingNs = SystemClock.monotonicNs() }
        var out = JSONOutput()
        swap(&out.bytes, &pending)
        TraceEncoder.append(record, to: &out)
        swap(&out.bytes, &pending)
        recordCount += 1
        if pending.count >= policy.maxBufferedBytes
            || (policy.maxDelayNs > 0 && SystemClock.monotonicNs() - oldestPendingNs >= policy.maxDelayNs) {
            try flush()
        }
    }

    /// Hands everything buffered to the kernel.
    public func flush() throws(TraceError) {
        guard !pending.isEmpty else { return }
        let result: Result<Void, TraceError> = pending.withUnsafeBytes { bytes in
            do throws(TraceError) { try file.write(bytes); return .success(()) } catch { return .failure(error) }
        }
        pending.removeAll(keepingCapacity: true)
        try result.get()
    }

    /// Flushes and closes; further writes are a programming error.
    public func close() throws(TraceError) {
        guard !closed else { return }
        closed = true
        defer { try? file.close() }
        try flush()
        try file.close()
    }
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
