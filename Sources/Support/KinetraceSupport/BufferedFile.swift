/// An output file with a write buffer: bytes accumulate in `pending` and go
/// to the kernel on `flush()`, when the owner decides (by size or age).
/// Shared by the trace and pcap writers.
package final class BufferedFile {
    package let path: String
    private let file: POSIXFile
    /// Bytes written but not yet flushed; owners append to it directly.
    package var pending: [UInt8] = []
    private var closed = false
    /// Bytes the kernel has taken by whole, successful flushes: what a reader finds
    /// in the file after a failed write, once `truncateToFlushed()` has cut the rest.
    package private(set) var flushedBytes: Int64 = 0

    package init(path: String, reserving capacity: Int) throws(FileError) {
        self.path = path
        file = try POSIXFile(path: path, mode: .createTruncate)
        pending.reserveCapacity(capacity)
    }

    deinit { try? close() }

    package var isClosed: Bool { closed }

    /// Hands everything pending to the kernel.
    package func flush() throws(FileError) {
        guard !pending.isEmpty else { return }
        let result: Result<Void, FileError> = pending.withUnsafeBytes { bytes in
            do throws(FileError) { try file.write(bytes); return .success(()) } catch { return .failure(error) }
        }
        if case .success = result { flushedBytes += Int64(pending.count) }
        pending.removeAll(keepingCapacity: true)
        try result.get()
    }

    /// After a failed flush: cuts the file back to `flushedBytes`, dropping a partly
    /// written tail, so the file ends where the last whole flush ended.
    package func truncateToFlushed() throws(FileError) {
        try file.truncate(to: flushedBytes)
    }

    /// Flushes and closes; idempotent.
    package func close() throws(FileError) {
        guard !closed else { return }
        closed = true
        defer { try? file.close() }
        try flush()
        try file.close()
    }
}
