import KinetraceSupport

/// A trace could not be read or written. Carries where (file, line, byte
/// offset) and what was expected, so the CLI can print one precise line.
public struct TraceError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        // The file codes are FileError's, so `init(_: FileError)` keeps the code a file failure had.
        /// The file does not exist.
        public static let notFound = Code(FileError.Code.notFound.name)
        /// The file exists but cannot be opened for reading (permissions, a directory).
        public static let unreadable = Code(FileError.Code.unreadable.name)
        /// An output file cannot be created (no such directory, no permission).
        public static let cannotCreate = Code(FileError.Code.cannotCreate.name)
        /// The operating system refused a read or write.
        public static let io = Code(FileError.Code.io.name)
        /// A line is not valid JSON.
        public static let syntax = Code("syntax")
        /// The first line is not a kinetrace trace header.
        public static let badHeader = Code("bad_header")
        /// The header's major version is not one this reader knows.
        public static let unsupportedVersion = Code("unsupported_version")
        /// Valid JSON, but a record lacks a field or has one of the wrong type.
        public static let badRecord = Code("bad_record")
        /// A line is longer than the reader's limit.
        public static let lineTooLong = Code("line_too_long")
        /// The header names a wire protocol this build does not speak.
        public static let unknownProtocol = Code("unknown_protocol")
        /// The input holds another protocol's traffic than the one asked for.
        public static let protocolMismatch = Code("protocol_mismatch")
        /// A capture holds none of the protocol's messages (another port, another protocol).
        public static let noMessages = Code("no_messages")
    }

    public var code: Code
    /// The file, or a name for in-memory input.
    public var source: String
    /// 1-based line, when the error is inside the file's content.
    public var line: Int?
    /// Byte offset from the start of the file.
    public var byteOffset: Int?
    public var message: String

    public init(_ code: Code, source: String, line: Int? = nil, byteOffset: Int? = nil, message: String) {
        self.code = code
        self.source = source
        self.line = line
        self.byteOffset = byteOffset
        self.message = message
    }

    /// A file that could not be opened, read or written, as a trace error of the same code.
    public init(_ error: FileError) {
        self.init(Code(error.code.name), source: error.path, message: error.message)
    }

    public var description: String {
        var location = source
        if let line { location += ": line \(line)" }
        if let byteOffset { location += line == nil ? ": byte \(byteOffset)" : ", byte \(byteOffset)" }
        return "\(location): \(message)"
    }
}

/// The file ended inside a record: what a crash mid-write leaves. Readers
/// stop at the last complete record and report this instead of failing.
public struct TraceTruncation: Hashable, Sendable, CustomStringConvertible {
    /// The incomplete line's (or packet's) number and file offset.
    public var line: Int
    public var byteOffset: Int
    /// Bytes of the incomplete record that were dropped.
    public var droppedBytes: Int
    /// What `line` counts: "line" in traces, "packet" in captures.
    public var unit: String
    /// For a gzip-compressed file cut short: the file offset where its gzip stream ends without
    /// its trailer (`line` and `byteOffset` then count the decompressed text).
    public var compressedEnd: Int?

    public init(line: Int, byteOffset: Int, droppedBytes: Int, unit: String = "line", compressedEnd: Int? = nil) {
        self.line = line
        self.byteOffset = byteOffset
        self.droppedBytes = droppedBytes
        self.unit = unit
        self.compressedEnd = compressedEnd
    }

    public var description: String {
        guard let compressedEnd else {
            return "truncated at \(unit) \(line) (byte \(byteOffset)): dropped an incomplete record of \(droppedBytes) bytes"
        }
        let cut = "truncated compressed input: the gzip stream ends without its trailer at byte offset \(compressedEnd) of the file"
        // Cut at a flush point, the text ends between lines: nothing of a record is dropped, but whatever followed is lost.
        guard droppedBytes > 0 else { return "\(cut), before \(unit) \(line) (byte \(byteOffset) of the decompressed text)" }
        return "\(cut), inside \(unit) \(line) (byte \(byteOffset) of the decompressed text): dropped an incomplete record of \(droppedBytes) bytes"
    }
}
