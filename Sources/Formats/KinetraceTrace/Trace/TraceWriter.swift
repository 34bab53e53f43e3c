import KinetraceJSON
import KinetraceSupport
import KinetraceWire

/// Writes a trace: the header at once, then records through a buffer that
/// is flushed by size or age, so a killed writer leaves a readable file that
/// at worst ends in one truncated line (which readers tolerate).
package final class TraceWriter {
    package struct FlushPolicy: Hashable, Sendable {
        /// Flush once this many bytes are buffered.
        package var maxBufferedBytes: Int
        /// Flush on the first write after the oldest buffered byte is this old.
        /// Writers idle for longer should call `flush()` from their own timer.
        package var maxDelayNs: Int64

        package init(maxBufferedBytes: Int, maxDelayNs: Int64) {
            self.maxBufferedBytes = maxBufferedBytes
            self.maxDelayNs = maxDelayNs
        }

        package static let `default` = FlushPolicy(maxBufferedBytes: 64 << 10, maxDelayNs: 200_000_000)
        /// For writers of whole files (convert, synth): megabyte writes, and an MCAP trace's chunks of a megabyte.
        package static let bulk = FlushPolicy(maxBufferedBytes: 1 << 20, maxDelayNs: 1_000_000_000)
        /// One write(2) per record: slowest, loses nothing but an in-flight record.
        package static let everyRecord = FlushPolicy(maxBufferedBytes: 0, maxDelayNs: 0)
    }

    package var path: String { file.path }
    package let policy: FlushPolicy
    package private(set) var recordCount = 0
    /// Records that reached the file by whole, successful flushes (the rest may be lost after a failed write).
    package private(set) var flushedRecordCount = 0
    private let file: BufferedFile
    /// For a path ending in `.gz`: the gzip stream the buffered lines go through at each flush.
    private let gzip: GzipDeflater?
    private var oldestPendingNs: Int64 = 0
    /// The first failed flush; every later flush fails with it.
    private var writeFailure: TraceError?

    /// The protocol whose decoded fields message records carry.
    package let wireProtocol: any WireProtocol

    /// Creates the file and writes the header. A header naming a protocol
    /// `registry` does not know fails with `unknownProtocol`. `gzip`: compress
    /// (nil: when `path` ends in `.gz`).
    package init(path: String, header: TraceHeader, policy: FlushPolicy = .default,
                registry: ProtocolRegistry = .standard, gzip compress: Bool? = nil) throws(TraceError) {
        self.policy = policy
        wireProtocol = try TraceEncoder.resolve(header, registry)
        do throws(FileError) { file = try BufferedFile(path: path, reserving: policy.maxBufferedBytes + 512) }
        catch { throw TraceError(error) }
        if compress ?? path.hasSuffix(".gz") {
            guard let deflater = GzipDeflater() else { throw TraceError(.io, source: path, message: "zlib cannot start a gzip stream") }
            gzip = deflater
        } else {
            gzip = nil
        }
        file.pending.append(contentsOf: TraceEncoder.line(for: header))
        try flush()
    }

    package func write(_ record: TraceRecord) throws(TraceError) {
        precondition(!file.isClosed, "TraceWriter used after close()")
        if file.pending.isEmpty, policy.maxDelayNs > 0 { oldestPendingNs = SystemClock.monotonicNs() }
        var out = JSONOutput()
        swap(&out.bytes, &file.pending)
        TraceEncoder.append(record, as: wireProtocol, to: &out)
        swap(&out.bytes, &file.pending)
        recordCount += 1
        if file.pending.count >= policy.maxBufferedBytes
            || (policy.maxDelayNs > 0 && SystemClock.monotonicNs() - oldestPendingNs >= policy.maxDelayNs) {
            try flush()
        }
    }

    /// Hands everything buffered to the kernel (compressed, to a sync point, on a `.gz` path).
    package func flush() throws(TraceError) {
        // A failed flush drops what it held: a later one must not count those records as written.
        if let writeFailure { throw writeFailure }
        if let gzip { file.pending = gzip.compress(file.pending) }
        do throws(FileError) { try file.flush() } catch {
            writeFailure = TraceError(error)
            throw TraceError(error)
        }
        flushedRecordCount = recordCount
    }

    /// After a failed write: cuts the file back to the end of its last whole flush, so it
    /// holds exactly `flushedRecordCount` records (a gzip trace then lacks its trailer, as a killed writer's does).
    package func truncateToFlushed() throws(TraceError) {
        file.pending.removeAll()
        do throws(FileError) { try file.truncateToFlushed() } catch { throw TraceError(error) }
    }

    /// Flushes and closes; further writes are a programming error.
    package func close() throws(TraceError) {
        if let writeFailure {
            file.pending.removeAll()  // written after the failure: appending it past a torn tail would hide the tear
            try? file.close()
            throw writeFailure
        }
        if let gzip, !file.isClosed { file.pending = gzip.compress(file.pending, finish: true) }
        do throws(FileError) { try file.close() } catch { throw TraceError(error) }
        flushedRecordCount = recordCount
    }
}

extension TraceEncoder {
    /// A whole trace in memory: header line then one line per record.
    package static func document(header: TraceHeader, records: some Sequence<TraceRecord>,
                                registry: ProtocolRegistry = .standard) throws(TraceError) -> [UInt8] {
        let wireProtocol = try resolve(header, registry)
        var out = JSONOutput()
        out.bytes = line(for: header)
        for record in records { append(record, as: wireProtocol, to: &out) }
        return out.bytes
    }

    static func resolve(_ header: TraceHeader, _ registry: ProtocolRegistry) throws(TraceError) -> any WireProtocol {
        // A declared protocol travels in the header (TR-HEADER-8): its declaration renders its messages.
        if let declaration = header.declaration { return DeclaredProtocol(declaration, path: "<trace header>") }
        guard let known = registry[header.protocolID] else {
            throw TraceError(.unknownProtocol, source: "<header>",
                             message: "cannot write protocol \"\(header.protocolID)\": this kinetrace speaks \(registry.names.joined(separator: ", "))")
        }
        return known
    }
}
