/// Reads RFC 6455 frames from one direction of a connection, bytes appended as they come.
/// A frame's length is checked as soon as its header is whole, so a peer announcing a huge
/// frame is refused before any of it is held: the buffer never exceeds one frame's header and
/// `maximumPayloadBytes`.
package struct WebSocketFrameReader: Sendable {
    /// Who wrote the bytes: a client must mask every frame, a server must mask none (section 5.1).
    package enum Sender: Sendable { case client, server }

    package let sender: Sender
    package let maximumPayloadBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// Stream offset of `buffer[start]`.
    private var consumed = 0
    private var failed: WebSocketError?

    package init(sender: Sender, maximumPayloadBytes: Int) {
        precondition(maximumPayloadBytes >= 125, "a reader must take a whole control frame")
        self.sender = sender
        self.maximumPayloadBytes = maximumPayloadBytes
    }

    /// Offset of the next byte not yet read as part of a frame.
    package var offset: Int { consumed }
    /// Bytes held that are not yet a whole frame.
    package var pendingBytes: Int { buffer.count - start }

    package mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or nil until more bytes come. After an error every call throws it
    /// again: a WebSocket stream cannot be resynchronised.
    package mutating func next() throws(WebSocketError) -> WebSocketFrame? {
        if let failed { throw failed }
        do throws(WebSocketError) {
            return try parse()
        } catch {
            failed = error
            throw error
        }
    }

    private func byte(_ index: Int) -> UInt8? {
        start + index < buffer.count ? buffer[start + index] : nil
    }

    private mutating func parse() throws(WebSocketError) -> WebSocketFrame? {
        guard let first = byte(0), let second = byte(1) else { return nil }
        let frameOffset = consumed
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F), opcode.isDefined else {
            throw WebSocketError(.reservedOpcode, offset: frameOffset, "reserved opcode 0x\(String(first & 0x0F, radix: 16))")
        }
        let fin = first & 0x80 != 0
        guard first & 0x70 == 0 else {
            throw WebSocketError(.reservedBits, offset: frameOffset, "reserved bits 0x\(String(first & 0x70, radix: 16)) set with no extension negotiated")
        }
        let masked = second & 0x80 != 0
        switch (sender, masked) {
        case (.client, false): throw WebSocketError(.unmasked, offset: frameOffset, "a client's \(opcode) frame is not masked")
        case (.server, true): throw WebSocketError(.masked, offset: frameOffset, "a server's \(opcode) frame is masked")
        default: break
        }
        var headerLength = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard let high = byte(2), let low = byte(3) else { return nil }
            length = UInt64(high) << 8 | UInt64(low)
            headerLength = 4
        } else if length == 127 {
            guard byte(9) != nil else { return nil }
            length = 0
            for index in 2..<10 { length = length << 8 | UInt64(byte(index)!) }
            headerLength = 10
            guard length >> 63 == 0 else {
                throw WebSocketError(.frameTooLarge, offset: frameOffset, "a 64-bit length with its most significant bit set")
            }
        }
        if opcode.isControl {
            guard fin else { throw WebSocketError(.fragmentedControl, offset: frameOffset, "a fragmented \(opcode) frame") }
            guard length <= 125 else {
                throw WebSocketError(.controlTooLong, offset: frameOffset, "a \(opcode) frame of \(length) bytes (control frames carry at most 125)")
            }
        }
        guard length <= UInt64(maximumPayloadBytes) else {
            throw WebSocketError(.frameTooLarge, offset: frameOffset, "a \(opcode) frame of \(length) bytes (at most \(maximumPayloadBytes))")
        }
        var key: [UInt8]?
        if masked {
            guard byte(headerLength + 3) != nil else { return nil }
            key = Array(buffer[(start + headerLength)..<(start + headerLength + 4)])
            headerLength += 4
        }
        let payloadLength = Int(length)
        // The header's bytes are all held; subtracting them cannot overflow, adding a length up
        // to a maximum of Int.max to them could.
        guard pendingBytes - headerLength >= payloadLength else { return nil }
        let payloadStart = start + headerLength
        var payload = Array(buffer[payloadStart..<(payloadStart + payloadLength)])
        if let key {
            for index in payload.indices { payload[index] ^= key[index & 3] }
        }
        start += headerLength + payloadLength
        consumed += headerLength + payloadLength
        return WebSocketFrame(fin: fin, opcode: opcode, maskingKey: key, payload: payload)
    }
}
