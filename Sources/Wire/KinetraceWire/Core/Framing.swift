/// Cuts one direction of one connection into messages as its bytes arrive,
/// in the shape of SwiftNIO's `ByteToMessageDecoder`: bytes go in as they
/// come (one datagram, or whatever one read or segment of a stream gave),
/// whole messages come out, a partial one waits for more, and `finish`
/// (NIO's `decodeLast`) reports what the end of the stream left over.
package protocol MessageFramer {
    /// Adds what arrived.
    mutating func append(_ bytes: UnsafeRawBufferPointer)
    /// The next whole message, nil when more bytes are needed. A stream whose
    /// framing is broken throws, with the stream offset.
    mutating func next() throws(WireError) -> FramedMessage?
    /// The input ended: the bytes that never became a whole message, if any.
    mutating func finish() -> FramedMessage?
}

/// One message's bytes and where they began in the stream (the datagram's number for datagrams).
package struct FramedMessage: Hashable, Sendable {
    package var bytes: [UInt8]
    package var offset: Int
    package init(bytes: [UInt8], offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }
}

extension MessageFramer {
    package mutating func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }
}

/// Datagram protocols: every datagram is one message, whatever its length.
package struct DatagramFramer: MessageFramer {
    private var queue: [[UInt8]] = []
    private var head = 0
    private var count = 0

    package init() {}

    package mutating func append(_ bytes: UnsafeRawBufferPointer) { queue.append(Array(bytes)) }

    package mutating func next() throws(WireError) -> FramedMessage? {
        guard head < queue.count else { return nil }
        defer {
            head += 1
            count += 1
            if head == queue.count { queue.removeAll(keepingCapacity: true); head = 0 }
        }
        return FramedMessage(bytes: queue[head], offset: count)
    }

    package mutating func finish() -> FramedMessage? { nil }
}

/// How long the record at the front of a byte stream is.
package protocol RecordBoundary {
    /// The length of the record starting at `bytes[0]` (stream offset `offset`),
    /// nil when more bytes are needed to tell; throws when the stream cannot be a
    /// sequence of records.
    /// Mutating so a boundary that searches (a delimiter) remembers how far it looked,
    /// and a record trickled in byte by byte costs linear time, not quadratic.
    mutating func recordLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int?
}

/// Records of one fixed length, back to back with nothing between them.
package struct FixedLengthRecords: RecordBoundary, Sendable {
    package let length: Int
    package init(length: Int) {
        precondition(length > 0, "a record has at least one byte")
        self.length = length
    }
    package func recordLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int? {
        bytes.count >= length ? length : nil
    }
}

/// Byte-stream protocols: a buffer that keeps the partial record between
/// appends and cuts whole records by `Boundary`, whatever the chunking.
package struct StreamFramer<Boundary: RecordBoundary>: MessageFramer {
    package private(set) var boundary: Boundary
    /// The longest record accepted: a peer that never completes a record
    /// (or a boundary that would wait forever) cannot make the buffer grow past it.
    package let maximumRecordLength: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// Stream offset of the next byte `next` looks at.
    package private(set) var offset = 0

    package init(_ boundary: Boundary, maximumRecordLength: Int = 1 << 20) {
        precondition(maximumRecordLength > 0, "a record has at least one byte")
        self.boundary = boundary
        self.maximumRecordLength = maximumRecordLength
    }

    /// Bytes received that do not yet form a whole record.
    package var pendingBytes: Int { buffer.count - start }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }

    package mutating func next() throws(WireError) -> FramedMessage? {
        let available = buffer.count - start
        guard available > 0 else { return nil }
        // withUnsafeBytes cannot forward a typed error, so carry it out in a Result.
        var measuring = boundary
        let measured: Result<Int?, WireError> = buffer.withUnsafeBytes { raw in
            do throws(WireError) {
                return .success(try measuring.recordLength(UnsafeRawBufferPointer(rebasing: raw[start...]), at: offset))
            } catch { return .failure(error) }
        }
        boundary = measuring
        guard let length = try measured.get() else {
            if available > maximumRecordLength {
                throw WireError(.invalidLength, offset: offset, expected: "a record within \(maximumRecordLength) bytes, \(available) received without one")
            }
            return nil
        }
        guard length > 0, length <= maximumRecordLength else {
            throw WireError(.invalidLength, offset: offset, expected: "a record length from 1 to \(maximumRecordLength), found \(length)")
        }
        guard length <= available else { return nil }
        let message = FramedMessage(bytes: Array(buffer[start..<start + length]), offset: offset)
        start += length
        offset += length
        // Compact once the consumed prefix dominates, so memory stays bounded by the partial record.
        if start > 65_536 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return message
    }

    package mutating func finish() -> FramedMessage? {
        guard pendingBytes > 0 else { return nil }
        defer {
            offset += pendingBytes
            buffer.removeAll()
            start = 0
        }
        return FramedMessage(bytes: Array(buffer[start...]), offset: offset)
    }
}

extension StreamFramer: Sendable where Boundary: Sendable {}
