#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceJSON
import KinetraceSupport
import KinetraceWire

/// Streams a trace file record by record in constant memory (one read
/// buffer, grown only for a line longer than it).
///
/// - A different major version or a malformed header fails on line 1.
/// - Unknown members and unknown record kinds are skipped (minor versions add them).
/// - A last line cut short by a crash ends the stream and sets `truncation`.
/// - Any other bad line fails with its line number and byte offset.
package final class TraceReader {
    package let source: String
    package private(set) var header: TraceHeader
    /// Set when the file ended inside a record.
    package private(set) var truncation: TraceTruncation?
    /// Records returned so far.
    package private(set) var recordCount = 0
    /// Records of kinds this reader does not know, skipped.
    package private(set) var unknownRecordCount = 0
    /// The number of the last line read: after `next()` returns a record, that record's line.
    package var lastLineNumber: Int { lineNumber }
    /// Lines longer than this are rejected rather than buffered without bound.
    package static let maxLineBytes = 16 << 20

    private let file: POSIXFile?
    /// A gzip-compressed trace's stream, read instead of `file` (found by its magic bytes, not its name).
    private var gzip: GzipInput?
    private var decoder = TraceDecoder(nil, endpointSlots: 1)
    private var buffer: UnsafeMutableRawBufferPointer
    /// The buffer's size when no long line has grown it; it goes back to this after one.
    private let baseCapacity: Int
    /// The read buffer's size now (tests: it returns to `baseCapacity` after a long line).
    var readBufferBytes: Int { buffer.count }
    private var start = 0
    private var end = 0
    private var atEOF = false
    private var bufferFileOffset = 0
    private var lineNumber = 0
    /// A byte-stream protocol's messages are chunks of connections, found by their endpoints.
    private var messagesNameConnections = false
    private var connectionEndpoints = ConnectionEndpointCheck()

    /// The wire protocol the header names, as `registry` knows it.
    package var wireProtocol: any WireProtocol { resolvedProtocol! }
    private var resolvedProtocol: (any WireProtocol)?

    /// The read buffer unless told: a megabyte.
    package static let defaultBufferBytes = 1 << 20
    /// The smallest read buffer: a merge of thousands of inputs divides its budget among them.
    package static let minimumBufferBytes = 4 << 10

    /// Opens and reads the header of the trace at `path`. A header naming a
    /// protocol `registry` does not know fails with `unknownProtocol`.
    /// `bufferBytes` is the read buffer (at least `minimumBufferBytes`; a longer line grows it),
    /// and a quarter of it, up to 64 KiB, a gzip-compressed trace's compressed buffer.
    package convenience init(path: String, registry: ProtocolRegistry = .standard, bufferBytes: Int = defaultBufferBytes) throws(TraceError) {
        let bufferBytes = min(max(bufferBytes, Self.minimumBufferBytes), Self.maxLineBytes)
        let file: POSIXFile
        let magic = UnsafeMutableRawBufferPointer.allocate(byteCount: 2, alignment: 1)
        defer { magic.deallocate() }
        var count = 0
        do throws(FileError) {
            file = try POSIXFile(path: path, mode: .read)
            // Up to two bytes (a short read just means a shorter file).
            while count < 2 {
                let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: magic[count...]))
                if n == 0 { break }
                count += n
            }
        } catch {
            throw TraceError(error)
        }
        let first = Array(magic.prefix(count))
        // gzip or not by content, so a compressed trace reads whatever it is named.
        let gzip = GzipInput.isGzip(first)
            ? try GzipInput(file: file, path: path, initial: first, bufferBytes: min(bufferBytes / 4, GzipInput.defaultBufferBytes))
            : nil
        try self.init(file: file, gzip: gzip, source: path, initial: gzip == nil ? first : [], capacity: bufferBytes, registry: registry)
    }

    /// Reads a trace held in memory; `name` is used in errors.
    package convenience init(bytes: [UInt8], name: String = "<memory>", registry: ProtocolRegistry = .standard) throws(TraceError) {
        try self.init(file: nil, gzip: nil, source: name, initial: bytes, capacity: bytes.count, registry: registry)
    }

    private init(file: POSIXFile?, gzip: GzipInput?, source: String, initial: [UInt8], capacity: Int,
                 registry: ProtocolRegistry) throws(TraceError) {
        self.file = file
        self.gzip = gzip
        self.source = source
        let capacity = max(capacity, initial.count, 1)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
        initial.withUnsafeBytes { buffer.copyMemory(from: $0) }
        self.buffer = buffer
        baseCapacity = capacity
        end = initial.count
        atEOF = file == nil
        header = TraceHeader(created: "", tool: "", capturePoint: .host, clock: .realtime)
        header = try readHeader()
        let declared = header.declaration.map { DeclaredProtocol($0, path: "\(source) (its header)") }
        guard let known = declared ?? registry[header.protocolID] else {
            throw TraceError(.unknownProtocol, source: source, line: 1, byteOffset: 0,
                             message: "the header names protocol \"\(header.protocolID)\", which this kinetrace does not speak (it speaks \(registry.names.joined(separator: ", ")))")
        }
        resolvedProtocol = known
        // A reader given a small buffer (one of a merge's many inputs) keeps a small endpoint cache too.
        decoder = TraceDecoder(known, endpointSlots: file == nil ? EndpointCache.defaultSlotCount : capacity / 4096)
        messagesNameConnections = known.transport == .byteStream
    }

    deinit { buffer.deallocate() }

    /// Bytes taken from the file, and the trace text they held (more for a gzip-compressed trace).
    package var bytesRead: (file: Int, uncompressed: Int)? {
        let text = bufferFileOffset + end
        return (gzip?.compressedOffset ?? text, text)
    }

    /// The next record, or nil at the end (check `truncation` then).
    package func next() throws(TraceError) -> TraceRecord? {
        while let line = try nextLine() {
            if isBlank(line.bytes) { continue }
            do throws(TraceDecoder.Failure) {
                if let record = try decoder.record(line.bytes) {
                    if messagesNameConnections, case .message(let message) = record,
                       let why = connectionEndpoints.problem(message.source, message.destination) {
                        // Glued to any stream, these bytes would make records that never existed.
                        throw TraceDecoder.Failure(.badRecord, at: 0, why)
                    }
                    recordCount += 1
                    return record
                }
                unknownRecordCount += 1
            } catch {
                // Only a syntax error can be a cut: a complete JSON object missing a member is a real error.
                if !line.complete && error.code == .syntax {
                    truncation = TraceTruncation(line: line.number, byteOffset: line.offset, droppedBytes: line.bytes.count,
                                                 compressedEnd: gzip?.truncated == true ? gzip?.compressedOffset : nil)
                    return nil
                }
                throw TraceError(error.code, source: source, line: line.number,
                                 byteOffset: line.offset + error.offset, message: error.message)
            }
        }
        // A gzip stream cut between lines loses whatever came after, unseen: still a cut.
        if let gzip, gzip.truncated {
            if truncation == nil {
                truncation = TraceTruncation(line: lineNumber + 1, byteOffset: bufferFileOffset + start, droppedBytes: 0)
            }
            truncation?.compressedEnd = gzip.compressedOffset
        }
        return nil
    }

    /// Reads every remaining record, calling `body` for each.
    package func forEach(_ body: (TraceRecord) throws(TraceError) -> Void) throws(TraceError) {
        while let record = try next() { try body(record) }
    }

    // MARK: Header

    private func readHeader() throws(TraceError) -> TraceHeader {
        // Capture files first: pcapng's magic begins with "\n", so look before splitting lines.
        while end - start < 4 && !atEOF { try refill() }
        if end - start >= 4 {
            let magic = UInt32(littleEndian: UnsafeRawPointer(buffer.baseAddress! + start).loadUnaligned(as: UInt32.self))
            if [0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1, 0x0A0D_0D0A].contains(magic) {
                // libpcap reads no gzip, so a compressed capture is refused with the way round it.
                throw TraceError(.badHeader, source: source, line: 1, byteOffset: 0, message: gzip == nil
                    ? "this is a pcap/pcapng capture, not a trace: convert it with `kinetrace convert`"
                    : "this is a gzip-compressed pcap/pcapng capture, which kinetrace does not read compressed: decompress it first (gunzip) and give the capture itself")
            }
            // MCAP's magic begins 0x89 'M' 'C' 'A'; read here only when gzip hid it from the MCAP reader.
            if magic == 0x4143_4D89 {
                throw TraceError(.badHeader, source: source, line: 1, byteOffset: 0, message: gzip == nil
                    ? "this begins like MCAP but not with the magic bytes of MCAP major version 0, the one kinetrace reads"
                    : "this is a gzip-compressed MCAP trace, which kinetrace does not read compressed: decompress it (gunzip), or write it with --compression zstd, which MCAP readers understand")
            }
        }
        guard let line = try nextLine() else {
            throw TraceError(.badHeader, source: source, line: 1, byteOffset: 0,
                             message: "empty file: expected a kinetrace trace header")
        }
        return try Self.header(line.bytes, complete: line.complete, source: source)
    }

    /// Parses a header line's text (also an MCAP trace's header metadata), naming `source` in errors.
    static func header(_ bytes: UnsafeRawBufferPointer, complete: Bool, source: String, line: Int? = 1, byteOffset: Int = 0) throws(TraceError) -> TraceHeader {
        func bad(_ message: String, _ code: TraceError.Code = .badHeader) -> TraceError {
            TraceError(code, source: source, line: line, byteOffset: byteOffset, message: message)
        }
        var scanner = JSONScanner(bytes)
        let value: JSONValue
        do throws(JSONScanner.SyntaxError) {
            value = try scanner.readValue()
            try scanner.expectEnd()
        } catch {
            let why = complete ? error.message : "header is truncated"
            throw TraceError(.badHeader, source: source, line: line, byteOffset: byteOffset + error.offset,
                             message: "not a kinetrace trace header: \(why)")
        }
        guard var members = value.objectValue else { throw bad("not a kinetrace trace: line 1 is not a JSON object") }
        guard let format = members["format"]?.stringValue else {
            throw bad("not a kinetrace trace: the header has no \"format\"")
        }
        guard format == TraceHeader.formatName else {
            throw bad("not a kinetrace trace: \"format\" is \"\(format)\", expected \"\(TraceHeader.formatName)\"")
        }
        guard let major = members["version"]?.integerValue else {
            throw bad("the header's \"version\" must be an integer")
        }
        guard major == Int64(TraceHeader.currentMajor) else {
            throw bad("unsupported trace version \(major): this reader reads major version \(TraceHeader.currentMajor)",
                      .unsupportedVersion)
        }
        func headerProtocol(_ profile: String?, _ named: String?) throws(TraceError) -> ProtocolID {
            if let profile, let named, profile != named {
                throw bad("the header's \"profile\" (\"\(profile)\") and \"protocol\" (\"\(named)\") name different protocols")
            }
            // Headers before the member was written name no protocol: MotionLink v1 was the only one.
            return ProtocolID(named ?? profile ?? ProtocolRegistry.defaultID.name)
        }
        func text(_ key: String) throws(TraceError) -> String? {
            guard let value = members[key] else { return nil }
            guard let s = value.stringValue else { throw bad("the header's \"\(key)\" must be a string") }
            return s
        }
        var header = TraceHeader(
            created: try text("created") ?? "",
            tool: try text("tool") ?? "",
            protocolID: try headerProtocol(text("profile"), text("protocol")),
            capturePoint: CapturePoint(try text("capture_point") ?? "unknown"),
            clock: ClockSource(try text("clock") ?? "unknown"),
            notes: try text("notes") ?? "")
        header.major = Int(major)
        header.minor = Int(members["minor"]?.integerValue ?? 0)
        // A declared protocol travels with the trace; its digest must match it (TR-HEADER-8).
        let declarationText = try text("protocol_declaration"), digest = try text("protocol_digest")
        if declarationText != nil || digest != nil {
            guard let declarationText, let digest else {
                throw bad("the header has one of \"protocol_declaration\" and \"protocol_digest\" without the other")
            }
            let declaration: ProtocolDeclaration
            do throws(DeclarationError) {
                declaration = try ProtocolDeclaration.read(Array(declarationText.utf8), source: "protocol_declaration")
            } catch {
                throw bad("the header's protocol declaration is not valid: \(error)")
            }
            // PD-TRACE-2: written in canonical form, so the digest names exactly the text that is there.
            guard declaration.canonicalText == declarationText else {
                throw bad("the header's protocol declaration is not in canonical form (specs/protocol-declaration-v1.md, PD-CANON-1)")
            }
            guard declaration.digest == digest else {
                throw bad("the header's \"protocol_digest\" (\(digest)) does not match its protocol declaration (\(declaration.digest)): the declaration was changed")
            }
            guard declaration.name == header.protocolID.name else {
                throw bad("the header names protocol \"\(header.protocolID)\" but embeds the declaration of \"\(declaration.name)\"")
            }
            header.declaration = declaration
        }
        for key in ["format", "version", "minor", "created", "tool", "profile", "protocol", "capture_point", "clock", "notes",
                    "protocol_declaration", "protocol_digest"] {
            members[key] = nil
        }
        header.extra = members
        return header
    }

    // MARK: Lines

    private struct Line {
        var bytes: UnsafeRawBufferPointer
        var number: Int
        var offset: Int
        /// False for a last line with no newline.
        var complete: Bool
    }

    private func nextLine() throws(TraceError) -> Line? {
        while true {
            if start < end, let newline = memchr(buffer.baseAddress! + start, 0x0A, end - start) {
                let lineEnd = buffer.baseAddress!.distance(to: newline)
                let line = Line(bytes: UnsafeRawBufferPointer(rebasing: buffer[start..<lineEnd]),
                                number: lineNumber + 1, offset: bufferFileOffset + start, complete: true)
                lineNumber += 1
                start = lineEnd + 1
                return line
            }
            if atEOF {
                guard start < end else { return nil }
                let line = Line(bytes: UnsafeRawBufferPointer(rebasing: buffer[start..<end]),
                                number: lineNumber + 1, offset: bufferFileOffset + start, complete: false)
                lineNumber += 1
                start = end
                return line
            }
            try refill()
        }
    }

    /// Moves the unread tail to the front, grows the buffer if one line fills
    /// it, and reads more from the file.
    private func refill() throws(TraceError) {
        guard let file else { atEOF = true; return }
        if start > 0 {
            let pending = end - start
            if pending > 0 { memmove(buffer.baseAddress!, buffer.baseAddress! + start, pending) }
            bufferFileOffset += start
            start = 0
            end = pending
        }
        if end == buffer.count {
            guard buffer.count < Self.maxLineBytes else {
                throw TraceError(.lineTooLong, source: source, line: lineNumber + 1, byteOffset: bufferFileOffset,
                                 message: "line is longer than \(Self.maxLineBytes) bytes")
            }
            let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: min(buffer.count * 2, Self.maxLineBytes), alignment: 8)
            bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0..<end]))
            buffer.deallocate()
            buffer = bigger
        } else if buffer.count > baseCapacity, end <= baseCapacity / 2 {
            // The long line is behind us: give its memory back, or a merge of 1,000 inputs that
            // each once held a 16 MiB line would keep 16 GB.
            let smaller = UnsafeMutableRawBufferPointer.allocate(byteCount: baseCapacity, alignment: 8)
            smaller.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0..<end]))
            buffer.deallocate()
            buffer = smaller
        }
        let n: Int
        let space = UnsafeMutableRawBufferPointer(rebasing: buffer[end...])
        if let gzip {
            n = try gzip.read(into: space)
        } else {
            do throws(FileError) { n = try file.read(into: space) } catch { throw TraceError(error) }
        }
        if n == 0 { atEOF = true } else { end += n }
    }

    private func isBlank(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
    }
}

/// Whether a byte-stream message's endpoints name a connection: an IPv4 or IPv6
/// address and a port from 1 to 65535 each. Anything else ("unknown:0", a host
/// name) cannot say which stream the bytes belong to. Recently seen good pairs
/// are remembered, so a trace's few connections are checked once each.
struct ConnectionEndpointCheck {
    private var known: Set<Endpoint> = []

    mutating func problem(_ source: Endpoint, _ destination: Endpoint) -> String? {
        for (name, endpoint) in [("src", source), ("dst", destination)] where !known.contains(endpoint) {
            guard endpoint.port != 0, Self.isIPAddress(endpoint.host) else {
                return "a byte-stream message must name its connection, but its \(name) \"\(endpoint)\" is not an IPv4 or IPv6 address "
                    + "with a port from 1 to 65535: its bytes belong to no stream that can be framed"
            }
            if known.count >= 4096 { known.removeAll(keepingCapacity: true) }
            known.insert(endpoint)
        }
        return nil
    }

    static func isIPAddress(_ host: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, host, &storage) == 1 || inet_pton(AF_INET6, host, &storage) == 1
    }
}
