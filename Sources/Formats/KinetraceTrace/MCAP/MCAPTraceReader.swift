import CZlib
import CZstd
import KinetraceSupport
import KinetraceWire

/// Reads a trace written as MCAP (docs/guide/mcap.md), record by record, in the
/// order written. With a window, it reads only the chunks whose time range the
/// summary's chunk index says may hold records inside it.
///
/// Every length, offset and count read from the file is checked against the
/// file and the limits below before it is used; a bad one fails with the byte
/// offset of the MCAP record it is in. A file cut short (a writer killed before
/// its summary) reads to its last whole record and sets `truncation`.
package final class MCAPTraceReader: TraceRecordSource {
    package let source: String
    package private(set) var header: TraceHeader
    package private(set) var truncation: TraceTruncation?
    /// Messages on channels that carry no kinetrace record kind (another tool's topics), skipped.
    package private(set) var unknownRecordCount = 0
    package private(set) var readingNote: String?
    package var wireProtocol: any WireProtocol { resolvedProtocol }
    package var bytesRead: (file: Int, uncompressed: Int)? { (fileBytesRead, uncompressedBytesRead) }
    /// The chunks read so far and the chunks in the file (when its summary says).
    package private(set) var chunksRead = 0
    package private(set) var chunkCount: Int?
    /// The window being read, if any.
    package let window: TraceWindow?

    /// The largest chunk, compressed or not, and the largest other record: a bound on memory.
    package static let maxChunkBytes = 64 << 20
    package static let maxSummaryBytes = 64 << 20

    private let file: POSIXFile
    private let fileSize: Int
    private var resolvedProtocol: any WireProtocol
    private var fileBytesRead = 0
    private var uncompressedBytesRead = 0
    private var channels: [UInt16: MCAPRecordKind?] = [:]
    private var decoder = MCAPRecordDecoder()
    private var recordNumber = 0

    // Where the next records come from.
    private enum Plan {
        /// Data-section records one after another from an offset.
        case sequential(offset: Int)
        /// These chunks, from the summary's index.
        case indexed(chunks: [ChunkEntry], next: Int)
        case finished
    }
    private var plan: Plan
    private let dataEnd: Int
    private var windowBaseNs: Int64?
    /// For a window: records returned, the latest time seen or indexed, and whether its emptiness was said.
    private var selected = 0
    private var latestNs: Int64?
    private var reportedEmpty = false

    struct ChunkEntry {
        var startNs: UInt64, endNs: UInt64, offset: Int, length: Int
    }

    // The records of the chunk being read.
    private var records = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 8)
    private var recordsCount = 0
    private var cursor = 0
    private var chunkOffset = 0
    /// The time range the index gives the chunk in memory: a seek trusted it, so its messages must keep to it.
    private var indexedRange: ClosedRange<UInt64>?
    private var compressed = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 8)

    /// Opens the MCAP trace at `path` and reads its header (and its summary, when it has one).
    package init(path: String, registry: ProtocolRegistry = .standard, window: TraceWindow? = nil) throws(TraceError) {
        source = path
        self.window = window.flatMap { $0.isEverything ? nil : $0 }
        do throws(FileError) {
            file = try POSIXFile(path: path, mode: .read)
            fileSize = try file.size()
        } catch {
            throw TraceError(error)
        }
        header = TraceHeader(created: "", tool: "", capturePoint: .host, clock: .realtime)
        resolvedProtocol = registry[ProtocolRegistry.defaultID]!
        plan = .finished
        dataEnd = fileSize
        func bad(_ at: Int, _ message: String) -> TraceError { TraceError(.badHeader, source: path, byteOffset: at, message: message) }

        // Magic, then the MCAP header record.
        guard let magic = try readBytes(8, at: 0), magic == MCAP.magic else { throw bad(0, "not an MCAP file: it does not begin with MCAP's magic bytes") }
        var offset = 8
        guard let first = try readRecord(at: offset, limit: 1 << 20) else { throw bad(offset, "the MCAP file ends before its header record") }
        guard first.opcode == MCAP.Opcode.header.rawValue else { throw bad(offset, "the first MCAP record is not a header (opcode \(first.opcode))") }
        var input = MCAPInput(prefix(records, first.length))
        guard let profile = input.string() else { throw bad(offset, "the MCAP header's profile is not a string within the record") }
        guard profile == MCAP.profile else {
            throw bad(offset, "an MCAP file, but not a kinetrace trace: its profile is \(String(profile.prefix(64)).debugDescription), not \"\(MCAP.profile)\"")
        }
        offset += 9 + first.length

        // The trace header: a metadata record before any chunk or message.
        var found: TraceHeader?
        while found == nil {
            guard let record = try readRecord(at: offset, limit: 16 << 20) else {
                throw bad(offset, "the MCAP file ends before its \(MCAP.headerMetadataName) metadata record")
            }
            let body = prefix(records, record.length)
            switch MCAP.Opcode(rawValue: record.opcode) {
            case .metadata:
                var input = MCAPInput(body)
                guard let name = input.string(), let map = input.stringMap() else { throw bad(offset, "a metadata record is malformed") }
                if name == MCAP.headerMetadataName {
                    guard var text = map[MCAP.headerMetadataKey] else { throw bad(offset, "the trace header metadata has no \"\(MCAP.headerMetadataKey)\"") }
                    let parsed = text.withUTF8 { utf8 in
                        Result { () throws(TraceError) in
                            try TraceReader.header(UnsafeRawBufferPointer(utf8), complete: true, source: path, line: nil, byteOffset: offset)
                        }
                    }
                    found = try parsed.get()
                }
            case .schema, .channel:
                try define(record.opcode, body, at: offset)
            case .chunk, .message, .dataEnd:
                throw bad(offset, "the MCAP file has no \(MCAP.headerMetadataName) metadata record before its first chunk: it was not written as a kinetrace trace")
            default:
                break
            }
            offset += 9 + record.length
        }
        header = found!
        let declared = header.declaration.map { DeclaredProtocol($0, path: "\(path) (its header)") }
        guard let known = declared ?? registry[header.protocolID] else {
            throw TraceError(.unknownProtocol, source: path, byteOffset: 0,
                             message: "the header names protocol \"\(header.protocolID)\", which this kinetrace does not speak (it speaks \(registry.names.joined(separator: ", ")))")
        }
        resolvedProtocol = known
        let afterHeader = offset

        // The summary, when the writer lived to write one.
        let summary = try readSummary()
        if let summary {
            chunkCount = summary.count
            // A byte stream's chunks are cut anywhere: read them all, and let the window apply to messages.
            if let window = self.window, known.transport == .datagram, !summary.isEmpty {
                let ordered = summary
                plan = .indexed(chunks: ordered, next: 0)
                // The window counts from its anchor: the first record (or controller message) of the first chunks.
                latestNs = ordered.map { Int64(clamping: $0.endNs) }.max()
                if let firstNs = try anchorTime(ordered, window) {
                    windowBaseNs = firstNs
                    let kept = ordered.filter {
                        window.overlaps(lowNs: Int64(clamping: $0.startNs) - firstNs, highNs: Int64(clamping: $0.endNs) - firstNs)
                    }
                    plan = .indexed(chunks: kept, next: 0)
                } else {
                    plan = .finished  // nothing starts the window's clock: nothing is inside it
                }
                return
            }
        } else {
            readingNote = "\(path) has no MCAP summary (its writer did not finish): read from the start, without its index"
        }
        plan = .sequential(offset: afterHeader)
    }

    deinit {
        records.deallocate()
        compressed.deallocate()
    }

    // MARK: Records

    package func next() throws(TraceError) -> TraceRecord? {
        while true {
            if cursor < recordsCount, let record = try nextInChunk() {
                if let window {
                    if windowBaseNs == nil, window.isAnchor(record) { windowBaseNs = record.timeNs }
                    latestNs = max(latestNs ?? record.timeNs, record.timeNs)
                    guard let base = windowBaseNs, window.contains(offsetNs: record.timeNs - base) else { continue }
                    selected += 1
                }
                return record
            }
            if cursor < recordsCount { continue }
            guard try advance() else {
                if let window, selected == 0, !reportedEmpty {
                    reportedEmpty = true
                    throw window.nothingSelected(in: source, latestOffsetNs: windowBaseNs.flatMap { base in latestNs.map { $0 - base } })
                }
                return nil
            }
        }
    }

    /// The next message of the chunk in memory as a record; nil for a record that is not one (a schema, a foreign channel's message).
    private func nextInChunk() throws(TraceError) -> TraceRecord? {
        let all = UnsafeRawBufferPointer(rebasing: records[0..<recordsCount])
        let at = cursor
        func fail(_ message: String) -> TraceError {
            TraceError(.badRecord, source: source, byteOffset: chunkOffset,
                       message: "MCAP record at byte \(at) of the chunk's records: \(message)")
        }
        guard recordsCount - at >= 9 else { throw fail("the chunk's records end inside a record's opcode and length") }
        let opcode = all[at]
        let length = UInt64(littleEndian: all.loadUnaligned(fromByteOffset: at + 1, as: UInt64.self))
        guard length <= UInt64(recordsCount - at - 9) else { throw fail("its length (\(length)) runs past the end of the chunk") }
        let body = UnsafeRawBufferPointer(rebasing: all[(at + 9)..<(at + 9 + Int(length))])
        cursor = at + 9 + Int(length)
        switch MCAP.Opcode(rawValue: opcode) {
        case .message:
            guard body.count >= 22 else { throw fail("a message record shorter than its 22-byte head") }
            let channel = UInt16(littleEndian: body.loadUnaligned(fromByteOffset: 0, as: UInt16.self))
            let logTime = UInt64(littleEndian: body.loadUnaligned(fromByteOffset: 6, as: UInt64.self))
            guard let known = channels[channel] else { throw fail("a message on channel \(channel), which no channel record defines") }
            guard let kind = known else { unknownRecordCount += 1; return nil }
            guard logTime < UInt64(TraceRecord.timeRangeNs.upperBound) else {
                throw fail("log_time \(logTime) is outside \(TraceRecord.timeRangeText)")
            }
            if let indexedRange, !indexedRange.contains(logTime) {
                throw fail("log_time \(logTime) is outside the chunk's \(indexedRange.lowerBound)–\(indexedRange.upperBound) in the chunk index, which a seek trusted")
            }
            recordNumber += 1
            do throws(MCAPRecordDecoder.Failure) {
                return try decoder.record(kind, timeNs: Int64(logTime), data: UnsafeRawBufferPointer(rebasing: body[22...]))
            } catch {
                throw fail("byte \(error.offset) of the \(kind.rawValue) record's data: \(error.message)")
            }
        case .schema, .channel:
            try define(opcode, body, at: chunkOffset)
            return nil
        default:
            return nil  // MCAP allows record kinds a reader does not know
        }
    }

    /// Loads the next chunk (or loose message) into memory; false at the end.
    private func advance() throws(TraceError) -> Bool {
        recordsCount = 0
        cursor = 0
        indexedRange = nil
        switch plan {
        case .finished:
            return false
        case .indexed(let chunks, let next):
            guard next < chunks.count else { plan = .finished; return false }
            plan = .indexed(chunks: chunks, next: next + 1)
            let entry = chunks[next]
            guard let record = try readRecord(at: entry.offset, limit: Self.maxChunkBytes + 64, into: &compressed) else {
                throw TraceError(.badRecord, source: source, byteOffset: entry.offset, message: "the chunk index points past the end of the file")
            }
            guard record.opcode == MCAP.Opcode.chunk.rawValue else {
                throw TraceError(.badRecord, source: source, byteOffset: entry.offset, message: "the chunk index points at an MCAP record that is not a chunk (opcode \(record.opcode))")
            }
            try loadChunk(prefix(compressed, record.length), at: entry.offset)
            indexedRange = entry.startNs...entry.endNs
            return true
        case .sequential(let offset):
            var offset = offset
            while true {
                guard offset < dataEnd else {
                    // No data-end record: the writer stopped (was killed) after its last whole record.
                    truncation = TraceTruncation(line: recordNumber + 1, byteOffset: offset, droppedBytes: 0, unit: "MCAP record")
                    plan = .finished
                    return false
                }
                let remaining = dataEnd - offset
                guard remaining >= 9 else {
                    truncation = TraceTruncation(line: recordNumber + 1, byteOffset: offset, droppedBytes: remaining, unit: "MCAP record")
                    plan = .finished
                    return false
                }
                let (opcode, length) = try readHead(at: offset)
                guard length <= UInt64(remaining - 9) else {
                    truncation = TraceTruncation(line: recordNumber + 1, byteOffset: offset, droppedBytes: remaining, unit: "MCAP record")
                    plan = .finished
                    return false
                }
                let recordOffset = offset
                offset += 9 + Int(length)
                switch MCAP.Opcode(rawValue: opcode) {
                case .dataEnd, .footer:
                    plan = .finished
                    return false
                case .chunk:
                    guard length <= UInt64(Self.maxChunkBytes + 64) else {
                        throw TraceError(.badRecord, source: source, byteOffset: recordOffset, message: "a chunk of \(length) bytes, over the limit of \(Self.maxChunkBytes)")
                    }
                    _ = try readRecord(at: recordOffset, limit: Self.maxChunkBytes + 64, into: &compressed)
                    plan = .sequential(offset: offset)
                    try loadChunk(prefix(compressed, Int(length)), at: recordOffset)
                    return true
                case .message, .schema, .channel:
                    // Loose records outside chunks: read as a chunk of one.
                    guard length <= UInt64(Self.maxChunkBytes) else {
                        throw TraceError(.badRecord, source: source, byteOffset: recordOffset, message: "a record of \(length) bytes, over the limit of \(Self.maxChunkBytes)")
                    }
                    ensure(&records, 9 + Int(length))
                    guard try readFully(UnsafeMutableRawBufferPointer(rebasing: records[0..<(9 + Int(length))]), at: recordOffset) else {
                        throw TraceError(.io, source: source, byteOffset: recordOffset, message: "the file shrank while it was read")
                    }
                    recordsCount = 9 + Int(length)
                    chunkOffset = recordOffset
                    plan = .sequential(offset: offset)
                    return true
                default:
                    continue  // message indexes, metadata, attachments: nothing a record needs
                }
            }
        }
    }

    /// Checks a chunk record and puts its records, decompressed, in `records`.
    private func loadChunk(_ body: UnsafeRawBufferPointer, at offset: Int) throws(TraceError) {
        func bad(_ message: String) -> TraceError { TraceError(.badRecord, source: source, byteOffset: offset, message: "chunk: \(message)") }
        var input = MCAPInput(body)
        guard input.u64() != nil, input.u64() != nil, let uncompressedSize = input.u64(), let crc = input.u32(),
              let compression = input.string(), let storedSize = input.u64() else {
            throw bad("its head is cut short")
        }
        guard storedSize <= UInt64(input.remaining), let stored = input.slice(Int(storedSize)) else {
            throw bad("its records (\(storedSize) bytes) run past the end of the record")
        }
        guard uncompressedSize <= UInt64(Self.maxChunkBytes) else {
            throw bad("it says it holds \(uncompressedSize) bytes uncompressed, over the limit of \(Self.maxChunkBytes)")
        }
        let size = Int(uncompressedSize)
        ensure(&records, size)
        switch compression {
        case "":
            guard stored.count == size else { throw bad("uncompressed, but its records are \(stored.count) bytes and it says \(size)") }
            if size > 0 { records.baseAddress!.copyMemory(from: stored.baseAddress!, byteCount: size) }
        case "zstd":
            let produced = ZSTD_decompress(records.baseAddress, size, stored.baseAddress, stored.count)
            guard ZSTD_isError(produced) == 0 else { throw bad("zstd cannot decompress it: \(String(cString: ZSTD_getErrorName(produced)))") }
            guard produced == size else { throw bad("it decompresses to \(produced) bytes, not the \(size) it says") }
        default:
            throw bad("compressed with \(String(compression.prefix(32)).debugDescription), which this kinetrace does not read (it reads none and zstd)")
        }
        if crc != 0 {
            let actual = UInt32(crc32(0, records.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(size)))
            guard actual == crc else { throw bad("its records' CRC-32 is \(hex(actual)), not the \(hex(crc)) it says: the chunk is damaged") }
        }
        recordsCount = size
        cursor = 0
        chunkOffset = offset
        chunksRead += 1
        uncompressedBytesRead += size
    }

    private func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16) }

    /// Registers a schema or channel record. A channel's record kind is its `kinetrace_record` metadata; none is a foreign channel.
    private func define(_ opcode: UInt8, _ body: UnsafeRawBufferPointer, at offset: Int) throws(TraceError) {
        guard opcode == MCAP.Opcode.channel.rawValue else { return }
        var input = MCAPInput(body)
        guard let id = input.u16(), input.u16() != nil, input.string() != nil, input.string() != nil, let metadata = input.stringMap() else {
            throw TraceError(.badRecord, source: source, byteOffset: offset, message: "a channel record is malformed")
        }
        let kind = metadata[MCAPChannelLayout.recordKey].flatMap(MCAPRecordKind.init(rawValue:))
        if let existing = channels[id], existing != kind {
            throw TraceError(.badRecord, source: source, byteOffset: offset, message: "channel \(id) is defined twice, differently")
        }
        channels[id] = kind
    }

    // MARK: Summary

    /// The chunk index, from the summary the footer points at; nil when the file has no usable footer.
    private func readSummary() throws(TraceError) -> [ChunkEntry]? {
        let tail = MCAP.footerRecordBytes + 8
        guard fileSize >= 8 + tail else { return nil }
        let footerAt = fileSize - tail
        guard let footer = try readBytes(tail, at: footerAt) else { return nil }
        guard Array(footer[(tail - 8)...]) == MCAP.magic, footer[0] == MCAP.Opcode.footer.rawValue else { return nil }
        func bad(_ message: String) -> TraceError { TraceError(.badRecord, source: source, byteOffset: footerAt, message: "MCAP footer: \(message)") }
        let (summaryStart, summaryOffsetStart, summaryCRC) = footer.withUnsafeBytes { raw in
            (UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 9, as: UInt64.self)),
             UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 17, as: UInt64.self)),
             UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 25, as: UInt32.self)))
        }
        guard summaryStart != 0 else { return nil }
        let summaryEnd = summaryOffsetStart == 0 ? UInt64(footerAt) : summaryOffsetStart
        guard summaryStart >= 8, summaryStart <= summaryEnd, summaryEnd <= UInt64(footerAt) else {
            throw bad("its summary offsets (\(summaryStart), \(summaryOffsetStart)) are not inside the file")
        }
        let length = Int(summaryEnd - summaryStart)
        guard length <= Self.maxSummaryBytes else { throw bad("a summary of \(length) bytes, over the limit of \(Self.maxSummaryBytes)") }
        // The CRC runs from the summary's start through the footer's summary_offset_start.
        let covered = footerAt + 25 - Int(summaryStart)
        guard let summary = try readBytes(covered, at: Int(summaryStart)) else { return nil }
        if summaryCRC != 0 {
            let actual = summary.withUnsafeBytes { UInt32(crc32(0, $0.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt($0.count))) }
            guard actual == summaryCRC else { throw bad("the summary's CRC-32 is \(hex(actual)), not the \(hex(summaryCRC)) the footer says: the summary is damaged") }
        }
        var entries: [ChunkEntry] = []
        let parsed = summary.withUnsafeBytes { raw in Result { () throws(TraceError) in
            var input = MCAPInput(UnsafeRawBufferPointer(rebasing: raw[0..<length]))
            while input.remaining > 0 {
                let at = Int(summaryStart) + input.offset
                guard let opcode = input.u8(), let size = input.u64(), size <= UInt64(input.remaining), let body = input.slice(Int(size)) else {
                    throw TraceError(.badRecord, source: source, byteOffset: at, message: "a summary record runs past the summary's end")
                }
                switch MCAP.Opcode(rawValue: opcode) {
                case .schema, .channel:
                    try define(opcode, body, at: at)
                case .chunkIndex:
                    var index = MCAPInput(body)
                    guard let start = index.u64(), let end = index.u64(), let offset = index.u64(), let length = index.u64() else {
                        throw TraceError(.badRecord, source: source, byteOffset: at, message: "a chunk index record is cut short")
                    }
                    guard start <= end, offset >= 8, length >= 9, offset <= UInt64(fileSize), length <= UInt64(fileSize) - offset,
                          length <= UInt64(Self.maxChunkBytes + 64) else {
                        throw TraceError(.badRecord, source: source, byteOffset: at,
                                         message: "a chunk index names bytes \(offset)+\(length) and times \(start)–\(end), which this file cannot hold")
                    }
                    entries.append(ChunkEntry(startNs: start, endNs: end, offset: Int(offset), length: Int(length)))
                default:
                    break
                }
            }
        } }
        try parsed.get()
        // Chunks lie one after another in the data section: an index that repeats or overlaps one would read records twice.
        entries.sort { $0.offset < $1.offset }
        for (earlier, later) in zip(entries, entries.dropFirst()) where earlier.offset + earlier.length > later.offset {
            throw TraceError(.badRecord, source: source, byteOffset: Int(summaryStart),
                             message: "the chunk index names chunks at bytes \(earlier.offset) and \(later.offset) that overlap")
        }
        if let last = entries.last, last.offset + last.length > Int(summaryStart) {
            throw TraceError(.badRecord, source: source, byteOffset: Int(summaryStart),
                             message: "the chunk index names a chunk at byte \(last.offset) that runs into the summary")
        }
        return entries
    }

    /// The log time of the window's anchor (the first record, or the first controller→host message),
    /// read ahead from the first chunks; nil when no chunk holds one (the window is then empty).
    private func anchorTime(_ chunks: [ChunkEntry], _ window: TraceWindow) throws(TraceError) -> Int64? {
        // Read ahead, not read: the counters say what the records' reading takes.
        let saved = (plan, chunksRead, uncompressedBytesRead, unknownRecordCount, recordNumber)
        defer {
            (plan, chunksRead, uncompressedBytesRead, unknownRecordCount, recordNumber) = saved
            recordsCount = 0
            cursor = 0
        }
        for entry in chunks {
            plan = .indexed(chunks: [entry], next: 0)
            guard try advance() else { continue }
            while cursor < recordsCount {
                if let record = try nextInChunk(), window.isAnchor(record) { return record.timeNs }
            }
        }
        return nil
    }

    // MARK: File

    private func readFully(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(TraceError) -> Bool {
        do throws(FileError) {
            let whole = try file.readFully(into: buffer, at: offset)
            fileBytesRead += buffer.count
            return whole
        } catch {
            throw TraceError(error)
        }
    }

    private func prefix(_ buffer: UnsafeMutableRawBufferPointer, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[0..<count])
    }

    /// `count` bytes from `offset`, or nil when the file ends first.
    private func readBytes(_ count: Int, at offset: Int) throws(TraceError) -> [UInt8]? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 8)
        defer { buffer.deallocate() }
        guard try readFully(buffer, at: offset) else { return nil }
        return Array(buffer)
    }

    private func readHead(at offset: Int) throws(TraceError) -> (UInt8, UInt64) {
        guard let head = try readBytes(9, at: offset) else {
            throw TraceError(.io, source: source, byteOffset: offset, message: "the file shrank while it was read")
        }
        return head.withUnsafeBytes { ($0[0], UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 1, as: UInt64.self))) }
    }

    /// Reads the record at `offset` (its body into `buffer`, grown as needed); nil when the file ends inside its head.
    private func readRecord(at offset: Int, limit: Int, into buffer: inout UnsafeMutableRawBufferPointer) throws(TraceError) -> (opcode: UInt8, length: Int)? {
        guard fileSize - offset >= 9 else { return nil }
        let (opcode, length) = try readHead(at: offset)
        guard length <= UInt64(limit) else {
            throw TraceError(.badRecord, source: source, byteOffset: offset, message: "an MCAP record of \(length) bytes, over the limit of \(limit)")
        }
        guard length <= UInt64(fileSize - offset - 9) else {
            throw TraceError(.badRecord, source: source, byteOffset: offset, message: "an MCAP record of \(length) bytes runs past the end of the file")
        }
        ensure(&buffer, Int(length))
        guard try readFully(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(length)]), at: offset + 9) else {
            throw TraceError(.io, source: source, byteOffset: offset, message: "the file shrank while it was read")
        }
        return (opcode, Int(length))
    }

    private func readRecord(at offset: Int, limit: Int) throws(TraceError) -> (opcode: UInt8, length: Int)? {
        try readRecord(at: offset, limit: limit, into: &records)
    }

    private func ensure(_ buffer: inout UnsafeMutableRawBufferPointer, _ count: Int) {
        guard buffer.count < count else { return }
        buffer.deallocate()
        buffer = .allocate(byteCount: max(count, min(buffer.count * 2, Self.maxChunkBytes + 64)), alignment: 8)
    }
}

extension MCAPTraceReader {
    /// Whether the file at `path` begins with MCAP's magic bytes.
    package static func hasMagic(path: String) throws(TraceError) -> Bool {
        do throws(FileError) {
            let file = try POSIXFile(path: path, mode: .read)
            let magic = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
            defer { magic.deallocate() }
            let whole = try file.readFully(into: magic, at: 0)
            try file.close()
            return whole && magic.elementsEqual(MCAP.magic)
        } catch {
            throw TraceError(error)
        }
    }
}
