import KinetraceWire

/// Anything that yields trace records in time order: a trace file, or a
/// capture file read as one (KinetracePcap). Commands that read traces take
/// a source, so they read pcap and pcapng directly too.
package protocol TraceRecordSource: AnyObject {
    /// The file, for messages.
    var source: String { get }
    var header: TraceHeader { get }
    /// The wire protocol of its messages.
    var wireProtocol: any WireProtocol { get }
    /// The next record, or nil at the end.
    func next() throws(TraceError) -> TraceRecord?
    /// Set when the input ended inside a record.
    var truncation: TraceTruncation? { get }
    /// Records (or packets) skipped because this version does not know their kind.
    var unknownRecordCount: Int { get }
    /// What a person should know about how the input was read (a capture's inferred host port).
    var readingNote: String? { get }
    /// Bytes read so far: from the file, and after decompression (the same for a plain file); nil when not counted.
    var bytesRead: (file: Int, uncompressed: Int)? { get }
    /// The line of a trace the last record `next()` returned was read from; nil when the source does not count lines.
    var lastRecordLine: Int? { get }
}

extension TraceRecordSource {
    package var readingNote: String? { nil }
    package var bytesRead: (file: Int, uncompressed: Int)? { nil }
    package var lastRecordLine: Int? { nil }
}

extension TraceReader: TraceRecordSource {
    package var lastRecordLine: Int? { lastLineNumber }
}
