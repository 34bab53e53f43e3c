import KinetraceWire

/// Anything that writes trace records: JSON Lines (`TraceWriter`) or MCAP
/// (`MCAPTraceWriter`). Commands that write traces hold a sink made by
/// `TraceOutput.create`, so every one of them writes either form.
package protocol TraceSink: AnyObject {
    var path: String { get }
    /// The protocol whose decoded fields message records carry.
    var wireProtocol: any WireProtocol { get }
    var recordCount: Int { get }
    /// Records that reached the file by whole, successful flushes.
    var flushedRecordCount: Int { get }
    func write(_ record: TraceRecord) throws(TraceError)
    /// Hands everything buffered to the kernel.
    func flush() throws(TraceError)
    /// After a failed write: cuts the file back to the end of its last whole flush.
    func truncateToFlushed() throws(TraceError)
    /// Flushes and closes; further writes are a programming error.
    func close() throws(TraceError)
}

extension TraceWriter: TraceSink {}

/// The two forms of a trace, chosen by the file's name.
package enum TraceOutput {
    package enum Form: String, Hashable, Sendable {
        /// JSON Lines (`.jsonl`, gzip-compressed as `.jsonl.gz`): the readable, versioned form.
        case jsonLines = "jsonl"
        /// MCAP (`.mcap`): indexed, chunked, optionally zstd-compressed.
        case mcap
    }

    /// MCAP for a name ending in `.mcap` (any case), JSON Lines otherwise.
    package static func form(forPath path: String) -> Form {
        path.lowercased().hasSuffix(".mcap") ? .mcap : .jsonLines
    }

    /// Creates the trace at `path` in the form its name asks for (or `form`, for a numbered rotation
    /// of a template). `compression` applies to MCAP; JSON Lines is gzip-compressed by a `.gz` name
    /// (or `gzip`), and asking it for zstd is an error.
    package static func create(path: String, header: TraceHeader, policy: TraceWriter.FlushPolicy = .default,
                              registry: ProtocolRegistry = .standard, compression: TraceCompression = .none,
                              form: Form? = nil, gzip: Bool? = nil) throws(TraceError) -> any TraceSink {
        switch form ?? self.form(forPath: path) {
        case .mcap:
            return try MCAPTraceWriter(path: path, header: header, policy: policy, registry: registry, compression: compression)
        case .jsonLines:
            guard compression == .none else {
                throw TraceError(.cannotCreate, source: path,
                                 message: "zstd compression is for MCAP traces (.mcap); a JSON Lines trace is compressed by naming it .jsonl.gz")
            }
            return try TraceWriter(path: path, header: header, policy: policy, registry: registry, gzip: gzip)
        }
    }
}
