/// One RFC 6455 frame (section 5.2), its payload unmasked.
package struct WebSocketFrame: Hashable, Sendable {
    package var fin: Bool
    /// RSV1–RSV3 as the header's bits 0x70; Kinetrace negotiates no extension, so a peer may set none.
    package var reservedBits: UInt8
    package var opcode: WebSocketOpcode
    /// The masking key the sender used (a client must mask, a server must not).
    package var maskingKey: [UInt8]?
    package var payload: [UInt8]

    package init(fin: Bool = true, opcode: WebSocketOpcode, maskingKey: [UInt8]? = nil, payload: [UInt8], reservedBits: UInt8 = 0) {
        self.fin = fin
        self.reservedBits = reservedBits
        self.opcode = opcode
        self.maskingKey = maskingKey
        self.payload = payload
    }

    /// The frame's bytes on the wire: header, then the payload masked with `maskingKey` if any.
    package func encoded() -> [UInt8] {
        var bytes = WebSocketFrame.header(fin: fin, opcode: opcode, payloadLength: payload.count, maskingKey: maskingKey, reservedBits: reservedBits)
        bytes.reserveCapacity(bytes.count + payload.count)
        if let key = maskingKey, key.count == 4 {
            for (index, byte) in payload.enumerated() { bytes.append(byte ^ key[index & 3]) }
        } else {
            bytes.append(contentsOf: payload)
        }
        return bytes
    }

    /// A frame header (2 to 14 bytes): the shortest length encoding, as RFC 6455 section 5.2 requires.
    package static func header(fin: Bool, opcode: WebSocketOpcode, payloadLength: Int, maskingKey: [UInt8]?, reservedBits: UInt8 = 0) -> [UInt8] {
        precondition(payloadLength >= 0, "a payload length is never negative")
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (reservedBits & 0x70) | opcode.rawValue]
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        if payloadLength < 126 {
            bytes.append(maskBit | UInt8(payloadLength))
        } else if payloadLength <= 0xFFFF {
            bytes.append(maskBit | 126)
            bytes.append(UInt8(payloadLength >> 8))
            bytes.append(UInt8(payloadLength & 0xFF))
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((UInt64(payloadLength) >> UInt64(shift)) & 0xFF)) }
        }
        if let key = maskingKey { bytes.append(contentsOf: key.prefix(4)) }
        return bytes
    }
}

/// A frame's opcode (RFC 6455 section 5.2): four bits.
package struct WebSocketOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt8
    package init?(rawValue: UInt8) {
        guard rawValue < 16 else { return nil }
        self.rawValue = rawValue
    }
    private init(_ value: UInt8) { rawValue = value }

    package static let continuation = WebSocketOpcode(0x0)
    package static let text = WebSocketOpcode(0x1)
    package static let binary = WebSocketOpcode(0x2)
    package static let close = WebSocketOpcode(0x8)
    package static let ping = WebSocketOpcode(0x9)
    package static let pong = WebSocketOpcode(0xA)

    /// Control frames (close, ping, pong and the reserved 0xB–0xF) have the high bit set.
    package var isControl: Bool { rawValue & 0x8 != 0 }
    /// The six opcodes RFC 6455 defines; the others are reserved, and a frame with one fails the connection.
    package var isDefined: Bool { [0x0, 0x1, 0x2, 0x8, 0x9, 0xA].contains(rawValue) }

    package var description: String {
        switch rawValue {
        case 0x0: return "continuation"
        case 0x1: return "text"
        case 0x2: return "binary"
        case 0x8: return "close"
        case 0x9: return "ping"
        case 0xA: return "pong"
        default: return "reserved opcode 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// Why bytes are not a WebSocket stream Kinetrace accepts, and where: `offset` counts bytes
/// from the first frame byte of that direction of the connection.
package struct WebSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let name: String
        /// The close code RFC 6455 section 7.4.1 gives for it.
        package let closeCode: UInt16
        private init(_ name: String, _ closeCode: UInt16) {
            self.name = name
            self.closeCode = closeCode
        }
        package var description: String { name }

        package static let frameTooLarge = Code("frame_too_large", 1009)
        package static let messageTooLarge = Code("message_too_large", 1009)
        package static let tooManyFragments = Code("too_many_fragments", 1009)
        package static let reservedBits = Code("reserved_bits", 1002)
        package static let reservedOpcode = Code("reserved_opcode", 1002)
        package static let fragmentedControl = Code("fragmented_control_frame", 1002)
        package static let controlTooLong = Code("control_frame_too_long", 1002)
        package static let unexpectedContinuation = Code("unexpected_continuation", 1002)
        package static let unfinishedMessage = Code("data_frame_inside_message", 1002)
        package static let unmasked = Code("unmasked_client_frame", 1002)
        package static let masked = Code("masked_server_frame", 1002)
        package static let badClosePayload = Code("bad_close_payload", 1002)
        /// The HTTP upgrade (section 4): too long, or not an upgrade to WebSocket.
        package static let handshakeTooLong = Code("handshake_too_long", 1002)
        package static let badHandshake = Code("bad_handshake", 1002)
    }

    package var code: Code
    package var offset: Int
    package var detail: String

    package init(_ code: Code, offset: Int, _ detail: String) {
        self.code = code
        self.offset = offset
        self.detail = detail
    }

    package var description: String { "byte \(offset): \(detail)" }
}
