import CZlib
import CZstd
import KinetraceJSON
import KinetraceSupport
import KinetraceWire

/// How an MCAP trace's chunks are compressed.
package enum TraceCompression: String, Hashable, Sendable, CaseIterable {
    case none
    /// Zstandard at level 1: about three times smaller, still far faster to read than JSON Lines.
    case zstd
}

/// Writes a trace as MCAP (docs/guide/mcap.md): the trace header as a metadata
/// record, records as messages in chunks of about a megabyte, each followed by
/// its message indexes, and at `close()` a summary with a chunk index, so readers
/// seek by time. A flush ends the chunk in progress, so a killed writer leaves
/// every flushed record readable (a reader finds the file cut and says so).
package final class MCAPTraceWriter: TraceSink {
    package var path: String { file.path }
    package let policy: TraceWriter.FlushPolicy
    package let compression: TraceCompression
    package private(set) var recordCount = 0
    package private(set) var flushedRecordCount = 0
    package let wireProtocol: any WireProtocol

    /// A chunk is closed once its records reach this many bytes.
    package static let chunkBytes = 1 << 20

    private let file: BufferedFile
    private var writeFailure: TraceError?
    private var oldestPendingNs: Int64 = 0
    private let datagrams: Bool

    // The chunk in progress.
    private var chunk = MCAPOutput()
    private var chunkStartNs: UInt64 = .max
    private var chunkEndNs: UInt64 = 0
    private var chunkRecords = 0
    private var messageIndex: [UInt16: [(time: UInt64, offset: UInt64)]] = [:]

    // Channels and schemas: one per layout, declared in the data section before the first chunk that uses them.
    private var messageChannels: [String: UInt16] = [:]
    private var recentShapes: [(kind: String?, fields: [(name: String, type: MCAPDecodedFields.FieldType)], id: UInt16)] = []
    private var overflowChannel: UInt16?
    private var fixedChannels: [MCAPRecordKind: UInt16] = [:]
    private var layouts: [MCAPChannelLayout] = []
    private var undeclared: [UInt16] = []
    private var topicCopies: [String: Int] = [:]

    // For the summary.
    private var chunkIndexes: [[UInt8]] = []
    private var channelCounts: [UInt16: UInt64] = [:]
    private var firstNs: UInt64 = .max
    private var lastNs: UInt64 = 0
    private var metadataIndex: [UInt8] = []
    private var sequence: UInt32 = 0
    private var fields = MCAPDecodedFields()
    private var compressed: [UInt8] = []

    /// Creates the file and writes the magic, the MCAP header and the trace header.
    package init(path: String, header: TraceHeader, policy: TraceWriter.FlushPolicy = .default,
                registry: ProtocolRegistry = .standard, compression: TraceCompression = .none) throws(TraceError) {
        self.policy = policy
        self.compression = compression
        wireProtocol = try TraceEncoder.resolve(header, registry)
        datagrams = wireProtocol.transport == .datagram
        do throws(FileError) { file = try BufferedFile(path: path, reserving: Self.chunkBytes + (Self.chunkBytes >> 2)) }
        catch { throw TraceError(error) }
        var out = MCAPOutput()
        out.bytes = MCAP.magic
        let headerAt = out.open(.header)
        out.string(MCAP.profile)
        out.string(header.tool.isEmpty ? "kinetrace" : header.tool)
        out.close(record: headerAt)
        // The trace header as its JSON Lines text, so every member (and an embedded declaration) round-trips.
        var text = TraceEncoder.line(for: header)
        text.removeLast()
        let metadataStart = out.bytes.count
        let metadataAt = out.open(.metadata)
        out.string(MCAP.headerMetadataName)
        let map = out.openPrefix()
        out.string(MCAP.headerMetadataKey)
        out.string(String(decoding: text, as: UTF8.self))
        out.close(prefix: map)
        out.close(record: metadataAt)
        var index = MCAPOutput()
        let indexAt = index.open(.metadataIndex)
        index.u64(UInt64(metadataStart))
        index.u64(UInt64(out.bytes.count - metadataStart))
        index.string(MCAP.headerMetadataName)
        index.close(record: indexAt)
        metadataIndex = index.bytes
        file.pending = out.bytes
        try flushFile()
    }

    package func write(_ record: TraceRecord) throws(TraceError) {
        precondition(!file.isClosed, "MCAPTraceWriter used after close()")
        if chunkRecords == 0, policy.maxDelayNs > 0 { oldestPendingNs = SystemClock.monotonicNs() }
        let time = UInt64(clamping: record.timeNs)
        let channel: UInt16
        let recordAt = chunk.open(.message)
        let headAt = chunk.bytes.count
        chunk.u16(0)  // the channel, known once the data is built
        chunk.u32(sequence)
        chunk.u64(time)
        chunk.u64(time)
        switch record {
        case .message(let m):
            chunk.u8(m.direction == .controllerToHost ? 0 : 1)
            endpoint(m.source)
            endpoint(m.destination)
            m.payload.withUnsafeBytes { chunk.lengthPrefixed($0) }
            chunk.bool(m.rttNs != nil)
            chunk.i64(m.rttNs ?? 0)
            if datagrams {
                fields.reset()
                let error = m.payload.withUnsafeBytes { raw in
                    wireProtocol.describe(raw, into: &fields)
                    return wireProtocol.facts(raw).error
                }
                chunk.bool(error == nil)
                chunk.string(error?.code.name ?? "")
                let (id, withFields) = messageChannel()
                if withFields { chunk.bytes.append(contentsOf: fields.values.bytes) }
                channel = id
            } else {
                channel = fixedChannel(.message, .streamChunk)
            }
        case .label(let l):
            chunk.bool(l.controller != nil)
            chunk.string(l.controller?.description ?? "")
            chunk.string(l.gesture)
            chunk.bool(l.senderTimeMs != nil)
            chunk.u64(l.senderTimeMs ?? 0)
            chunk.bool(l.durationMs != nil)
            chunk.u64(l.durationMs ?? 0)
            channel = fixedChannel(.label, .label)
        case .event(let e):
            chunk.string(e.event)
            var json = JSONOutput()
            json.append(.object(e.data))
            json.bytes.withUnsafeBytes { chunk.lengthPrefixed($0) }
            channel = fixedChannel(.event, .event)
        case .motion(let m):
            endpoint(m.controller)
            chunk.u64(m.senderTimeMs)
            for v in [m.userAcceleration.x, m.userAcceleration.y, m.userAcceleration.z,
                      m.rotationRate.x, m.rotationRate.y, m.rotationRate.z] { chunk.f64(v) }
            chunk.bool(m.gravity != nil)
            for v in [m.gravity?.x ?? 0, m.gravity?.y ?? 0, m.gravity?.z ?? 0] { chunk.f64(v) }
            chunk.bool(m.attitude != nil)
            for v in [m.attitude?.w ?? 0, m.attitude?.x ?? 0, m.attitude?.y ?? 0, m.attitude?.z ?? 0] { chunk.f64(v) }
            channel = fixedChannel(.motion, .motion)
        }
        withUnsafeBytes(of: channel.littleEndian) { raw in chunk.bytes[headAt] = raw[0]; chunk.bytes[headAt + 1] = raw[1] }
        chunk.close(record: recordAt)
        messageIndex[channel, default: []].append((time, UInt64(recordAt - 1)))
        channelCounts[channel, default: 0] += 1
        chunkStartNs = min(chunkStartNs, time)
        chunkEndNs = max(chunkEndNs, time)
        firstNs = min(firstNs, time)
        lastNs = max(lastNs, time)
        sequence &+= 1
        chunkRecords += 1
        recordCount += 1
        if chunk.bytes.count >= min(Self.chunkBytes, max(policy.maxBufferedBytes, 1))
            || (policy.maxDelayNs > 0 && SystemClock.monotonicNs() - oldestPendingNs >= policy.maxDelayNs) {
            try flush()
        }
    }

    /// "host:port" or "[v6]:port", as the JSON Lines form writes it, without building the String.
    private func endpoint(_ endpoint: Endpoint) {
        var host = endpoint.host
        let lengthAt = chunk.bytes.count
        chunk.u32(0)
        let v6 = endpoint.isIPv6
        if v6 { chunk.u8(UInt8(ascii: "[")) }
        host.withUTF8 { chunk.bytes.append(contentsOf: $0) }
        if v6 { chunk.u8(UInt8(ascii: "]")) }
        chunk.u8(UInt8(ascii: ":"))
        var port = endpoint.port, digits: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0), count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat { raw[count] = UInt8(ascii: "0") + UInt8(port % 10); port /= 10; count += 1 } while port > 0
            for i in stride(from: count - 1, through: 0, by: -1) { chunk.bytes.append(raw[i]) }
        }
        chunk.close(prefix: lengthAt)
    }

    private func fixedChannel(_ kind: MCAPRecordKind, _ layout: MCAPChannelLayout) -> UInt16 {
        if let id = fixedChannels[kind] { return id }
        let id = declare(layout)
        fixedChannels[kind] = id
        return id
    }

    /// The channel for the message `fields` describes, and whether its decoded fields go in: a protocol's
    /// few shapes are found by comparing with the last ones seen, and past `maximumMessageChannels`
    /// shapes a message goes on `/msg` with its verdict only (a channel id is 16 bits).
    private func messageChannel() -> (UInt16, withFields: Bool) {
        for entry in recentShapes where entry.kind == fields.kind && fields.sameShape(entry.fields) { return (entry.id, true) }
        let signature = fields.signature
        let key = (fields.kind ?? "") + "\n" + signature
        if let id = messageChannels[key] {
            remember(id)
            return (id, true)
        }
        guard messageChannels.count < Self.maximumMessageChannels else {
            if overflowChannel == nil { overflowChannel = declare(.message(kind: nil, fields: "", copy: topicCopies["", default: 0])); topicCopies["", default: 0] += 1 }
            return (overflowChannel!, false)
        }
        let base = fields.kind ?? ""
        let copy = topicCopies[base, default: 0]
        topicCopies[base] = copy + 1
        let id = declare(.message(kind: fields.kind, fields: signature, copy: copy))
        messageChannels[key] = id
        remember(id)
        return (id, true)
    }

    private func remember(_ id: UInt16) {
        if recentShapes.count >= 8 { recentShapes.removeFirst() }
        recentShapes.append((fields.kind, fields.fields, id))
    }

    /// Message shapes (kinds and field lists) with a channel each, at most.
    static let maximumMessageChannels = 1024

    private func declare(_ layout: MCAPChannelLayout) -> UInt16 {
        let id = UInt16(layouts.count + 1)  // schema 0 means none: ids start at 1
        layouts.append(layout)
        undeclared.append(id)
        return id
    }

    /// A channel's schema and channel records (they share an id: one schema per channel).
    private func definitions(_ id: UInt16, into out: inout MCAPOutput) {
        schemaRecord(id, into: &out)
        channelRecord(id, into: &out)
    }

    private func schemaRecord(_ id: UInt16, into out: inout MCAPOutput) {
        let layout = layouts[Int(id) - 1]
        let schemaAt = out.open(.schema)
        out.u16(id)
        out.string(layout.schemaName)
        out.string("ros1msg")
        out.string(layout.schemaText)
        out.close(record: schemaAt)
    }

    private func channelRecord(_ id: UInt16, into out: inout MCAPOutput) {
        let layout = layouts[Int(id) - 1]
        let channelAt = out.open(.channel)
        out.u16(id)
        out.u16(id)
        out.string(layout.topic)
        out.string("ros1")
        let map = out.openPrefix()
        out.string(MCAPChannelLayout.recordKey)
        out.string(layout.kind.rawValue)
        out.close(prefix: map)
        out.close(record: channelAt)
    }

    /// Ends the chunk in progress: new channels' definitions, the chunk, its message indexes.
    private func closeChunk() throws(TraceError) {
        guard chunkRecords > 0 else { return }
        var out = MCAPOutput()
        swap(&out.bytes, &file.pending)
        for id in undeclared { definitions(id, into: &out) }
        undeclared.removeAll()
        let chunkStart = file.flushedBytes + Int64(out.bytes.count)
        let crc = chunk.bytes.withUnsafeBytes { UInt32(crc32(0, $0.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt($0.count))) }
        let stored: [UInt8]
        if compression == .zstd {
            let bound = ZSTD_compressBound(chunk.bytes.count)
            if compressed.count < bound { compressed = [UInt8](repeating: 0, count: bound) }
            let size = chunk.bytes.withUnsafeBytes { source in
                compressed.withUnsafeMutableBytes { ZSTD_compress($0.baseAddress, $0.count, source.baseAddress, source.count, 1) }
            }
            guard ZSTD_isError(size) == 0 else {
                swap(&out.bytes, &file.pending)
                throw TraceError(.io, source: path, message: "zstd cannot compress a chunk: \(String(cString: ZSTD_getErrorName(size)))")
            }
            stored = Array(compressed[0..<size])
        } else {
            stored = chunk.bytes
        }
        let chunkAt = out.open(.chunk)
        out.u64(chunkStartNs)
        out.u64(chunkEndNs)
        out.u64(UInt64(chunk.bytes.count))
        out.u32(crc)
        out.string(compression == .zstd ? "zstd" : "")
        out.u64(UInt64(stored.count))
        out.bytes.append(contentsOf: stored)
        out.close(record: chunkAt)
        let chunkLength = file.flushedBytes + Int64(out.bytes.count) - chunkStart
        // Message indexes, by channel, for readers that seek within a chunk.
        var indexOffsets: [(UInt16, UInt64)] = []
        let indexesStart = file.flushedBytes + Int64(out.bytes.count)
        for channel in messageIndex.keys.sorted() {
            indexOffsets.append((channel, UInt64(file.flushedBytes + Int64(out.bytes.count))))
            let at = out.open(.messageIndex)
            out.u16(channel)
            let entries = out.openPrefix()
            for entry in messageIndex[channel]! {
                out.u64(entry.time)
                out.u64(entry.offset)
            }
            out.close(prefix: entries)
            out.close(record: at)
        }
        let indexesLength = file.flushedBytes + Int64(out.bytes.count) - indexesStart
        swap(&out.bytes, &file.pending)
        var index = MCAPOutput()
        let at = index.open(.chunkIndex)
        index.u64(chunkStartNs)
        index.u64(chunkEndNs)
        index.u64(UInt64(chunkStart))
        index.u64(UInt64(chunkLength))
        let map = index.openPrefix()
        for (channel, offset) in indexOffsets {
            index.u16(channel)
            index.u64(offset)
        }
        index.close(prefix: map)
        index.u64(UInt64(indexesLength))
        index.string(compression == .zstd ? "zstd" : "")
        index.u64(UInt64(stored.count))
        index.u64(UInt64(chunk.bytes.count))
        index.close(record: at)
        chunkIndexes.append(index.bytes)
        chunk.bytes.removeAll(keepingCapacity: true)
        messageIndex.removeAll(keepingCapacity: true)
        chunkStartNs = .max
        chunkEndNs = 0
        chunkRecords = 0
    }

    /// Ends the chunk in progress and hands everything to the kernel.
    package func flush() throws(TraceError) {
        if let writeFailure { throw writeFailure }
        try closeChunk()
        try flushFile()
    }

    private func flushFile() throws(TraceError) {
        do throws(FileError) { try file.flush() } catch {
            writeFailure = TraceError(error)
            throw TraceError(error)
        }
        flushedRecordCount = recordCount
    }

    package func truncateToFlushed() throws(TraceError) {
        file.pending.removeAll()
        do throws(FileError) { try file.truncateToFlushed() } catch { throw TraceError(error) }
    }

    /// Writes the last chunk, the data end, the summary (schemas, channels, statistics,
    /// chunk indexes, the metadata index), the summary offsets, the footer and the magic.
    package func close() throws(TraceError) {
        if let writeFailure {
            file.pending.removeAll()
            chunk.bytes.removeAll()
            try? file.close()
            throw writeFailure
        }
        guard !file.isClosed else { return }
        try closeChunk()
        var out = MCAPOutput()
        swap(&out.bytes, &file.pending)
        for id in undeclared { definitions(id, into: &out) }
        undeclared.removeAll()
        let dataEnd = out.open(.dataEnd)
        out.u32(0)  // no data-section CRC: each chunk carries its own
        out.close(record: dataEnd)
        let base = file.flushedBytes
        let summaryStart = base + Int64(out.bytes.count)
        var groups: [(MCAP.Opcode, Int64, Int64)] = []
        func group(_ opcode: MCAP.Opcode, _ body: (inout MCAPOutput) -> Void) {
            let start = base + Int64(out.bytes.count)
            body(&out)
            let length = base + Int64(out.bytes.count) - start
            if length > 0 { groups.append((opcode, start, length)) }
        }
        let ids = layouts.indices.map { UInt16($0 + 1) }
        group(.schema) { out in for id in ids { schemaRecord(id, into: &out) } }
        group(.channel) { out in for id in ids { channelRecord(id, into: &out) } }
        group(.statistics) { out in
            let at = out.open(.statistics)
            out.u64(UInt64(recordCount))
            out.u16(UInt16(layouts.count))
            out.u32(UInt32(layouts.count))
            out.u32(0)
            out.u32(1)
            out.u32(UInt32(chunkIndexes.count))
            out.u64(recordCount == 0 ? 0 : firstNs)
            out.u64(recordCount == 0 ? 0 : lastNs)
            let map = out.openPrefix()
            for channel in channelCounts.keys.sorted() {
                out.u16(channel)
                out.u64(channelCounts[channel]!)
            }
            out.close(prefix: map)
            out.close(record: at)
        }
        group(.chunkIndex) { out in for index in chunkIndexes { out.bytes.append(contentsOf: index) } }
        group(.metadataIndex) { $0.bytes.append(contentsOf: metadataIndex) }
        let summaryOffsetStart = base + Int64(out.bytes.count)
        for (opcode, start, length) in groups {
            let at = out.open(.summaryOffset)
            out.u8(opcode.rawValue)
            out.u64(UInt64(start))
            out.u64(UInt64(length))
            out.close(record: at)
        }
        // The length is written now, not patched later: the summary's CRC covers it.
        out.u8(MCAP.Opcode.footer.rawValue)
        out.u64(20)
        out.u64(UInt64(summaryStart))
        out.u64(UInt64(summaryOffsetStart))
        // The summary's CRC covers it from its start through the footer's summary_offset_start.
        let crcStart = Int(summaryStart - base)
        let crc = out.bytes.withUnsafeBytes { raw in
            let covered = UnsafeRawBufferPointer(rebasing: raw[crcStart..<raw.count])
            return UInt32(crc32(0, covered.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(covered.count)))
        }
        out.u32(crc)
        out.bytes.append(contentsOf: MCAP.magic)
        swap(&out.bytes, &file.pending)
        do throws(FileError) { try file.close() } catch {
            writeFailure = TraceError(error)
            throw TraceError(error)
        }
        flushedRecordCount = recordCount
    }
}
