import KinetraceSupport

/// A trace could not be read or written. Carries where (file, line, byte
/// offset) and what was expected, so the CLI can print one precise line.
package struct TraceError: Error, Hashable, Sendable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let name: String
        package init(_ name: String) { self.name = name }
        package var description: String { name }

        // The file codes are FileError's, so `init(_: FileError)` keeps the code a file failure had.
        /// The file does not exist.
        package static let notFound = Code(FileError.Code.notFound.name)
        /// The file exists but cannot be opened for reading (permissions, a directory).
        package static let unreadable = Code(FileError.Code.unreadable.name)
        /// An output file cannot be created (no such directory, no permission).
        package static let cannotCreate = Code(FileError.Code.cannotCreate.name)
        /// The operating system refused a read or write.
        package static let io = Code(FileError.Code.io.name)
        /// A line is not valid JSON.
        package static let syntax = Code("syntax")
        /// The first line is not a kinetrace trace header.
        package static let badHeader = Code("bad_header")
        /// The header's major version is not one this reader knows.
        package static let unsupportedVersion = Code("unsupported_version")
        /// Valid JSON, but a record lacks a field or has one of the wrong type.
        package static let badRecord = Code("bad_record")
        /// A line is longer than the reader's limit.
        package static let lineTooLong = Code("line_too_long")
        /// The header names a wire protocol this build does not speak.
        package static let unknownProtocol = Code("unknown_protocol")
        /// The input holds another protocol's traffic than the one asked for.
        package static let protocolMismatch = Code("protocol_mismatch")
        /// A capture holds none of the protocol's messages (another port, another protocol).
        package static let noMessages = Code("no_messages")
        /// `--start` and `--end` selected no record.
        package static let emptyWindow = Code("empty_window")
    }

    package var code: Code
    /// The file, or a name for in-memory input.
    package var source: String
    /// 1-based line, when the error is inside the file's content.
    package var line: Int?
    /// Byte offset from the start of the file.
    package var byteOffset: Int?
    package var message: String

    package init(_ code: Code, source: String, line: Int? = nil, byteOffset: Int? = nil, message: String) {
        self.code = code
        self.source = source
        self.line = line
        self.byteOffset = byteOffset
        self.message = message
    }

    /// A file that could not be opened, read or written, as a trace error of the same code.
    package init(_ error: FileError) {
        self.init(Code(error.code.name), source: error.path, message: error.message)
    }

    package var description: String {
        var location = source
        if let line { location += ": line \(line)" }
        if let byteOffset { location += line == nil ? ": byte \(byteOffset)" : ", byte \(byteOffset)" }
        return "\(location): \(message)"
    }
}

/// The file ended inside a record: what a crash mid-write leaves. Readers
/// stop at the last complete record and report this instead of failing.
package struct TraceTruncation: Hashable, Sendable, CustomStringConvertible {
    /// The incomplete line's (or packet's) number and file offset.
    package var line: Int
    package var byteOffset: Int
    /// Bytes of the incomplete record that were dropped.
    package var droppedBytes: Int
    /// What `line` counts: "line" in traces, "packet" in captures.
    package var unit: String
    /// For a gzip-compressed file cut short: the file offset where its gzip stream ends without
    /// its trailer (`line` and `byteOffset` then count the decompressed text).
    package var compressedEnd: Int?

    package init(line: Int, byteOffset: Int, droppedBytes: Int, unit: String = "line", compressedEnd: Int? = nil) {
        self.line = line
        self.byteOffset = byteOffset
        self.droppedBytes = droppedBytes
        self.unit = unit
        self.compressedEnd = compressedEnd
    }

    package var description: String {
        guard let compressedEnd else {
            return "truncated at \(unit) \(line) (byte \(byteOffset)): dropped an incomplete record of \(droppedBytes) bytes"
        }
        let cut = "truncated compressed input: the gzip stream ends without its trailer at byte offset \(compressedEnd) of the file"
        // Cut at a flush point, the text ends between lines: nothing of a record is dropped, but whatever followed is lost.
        guard droppedBytes > 0 else { return "\(cut), before \(unit) \(line) (byte \(byteOffset) of the decompressed text)" }
        return "\(cut), inside \(unit) \(line) (byte \(byteOffset) of the decompressed text): dropped an incomplete record of \(droppedBytes) bytes"
    }
}
