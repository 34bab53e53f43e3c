/// What a WebSocket peer said: data messages whole, control frames as they came.
package enum WebSocketEvent: Hashable, Sendable {
    /// A whole text or binary message, its fragments joined.
    case message(opcode: WebSocketOpcode, payload: [UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// The closing handshake: the status code if the frame had one, and the reason's bytes.
    case close(code: UInt16?, reason: [UInt8])
}

/// Joins fragmented data frames into messages (RFC 6455 section 5.4) within limits on a
/// message's size and its number of fragments, so a fragment flood ends the connection
/// rather than the memory.
package struct WebSocketMessageAssembler: Sendable {
    package let maximumMessageBytes: Int
    package let maximumFragments: Int
    private var opcode: WebSocketOpcode?
    private var payload: [UInt8] = []
    private var fragments = 0

    package init(maximumMessageBytes: Int, maximumFragments: Int) {
        precondition(maximumMessageBytes > 0 && maximumFragments > 0, "a message must be allowed at least one byte and one fragment")
        self.maximumMessageBytes = maximumMessageBytes
        self.maximumFragments = maximumFragments
    }

    /// True while a fragmented message has begun and not ended.
    package var inMessage: Bool { opcode != nil }

    /// What `frame`, which began at stream offset `offset`, completes; nil for a fragment that
    /// does not end its message.
    package mutating func take(_ frame: WebSocketFrame, offset: Int) throws(WebSocketError) -> WebSocketEvent? {
        switch frame.opcode {
        case .ping: return .ping(frame.payload)
        case .pong: return .pong(frame.payload)
        case .close:
            switch frame.payload.count {
            case 0: return .close(code: nil, reason: [])
            case 1: throw WebSocketError(.badClosePayload, offset: offset, "a close frame with a 1-byte payload (a status code takes 2)")
            default: return .close(code: UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]), reason: Array(frame.payload.dropFirst(2)))
            }
        case .continuation:
            guard let opcode else {
                throw WebSocketError(.unexpectedContinuation, offset: offset, "a continuation frame with no message begun")
            }
            try add(frame, offset: offset)
            guard frame.fin else { return nil }
            defer { reset() }
            return .message(opcode: opcode, payload: payload)
        default:  // text or binary: the reader refuses reserved opcodes
            guard opcode == nil else {
                throw WebSocketError(.unfinishedMessage, offset: offset, "a \(frame.opcode) frame begins a message before the last one ended")
            }
            if frame.fin {
                guard frame.payload.count <= maximumMessageBytes else {
                    throw WebSocketError(.messageTooLarge, offset: offset, "a message of \(frame.payload.count) bytes (at most \(maximumMessageBytes))")
                }
                return .message(opcode: frame.opcode, payload: frame.payload)
            }
            opcode = frame.opcode
            try add(frame, offset: offset)
            return nil
        }
    }

    private mutating func add(_ frame: WebSocketFrame, offset: Int) throws(WebSocketError) {
        fragments += 1
        guard fragments <= maximumFragments else {
            throw WebSocketError(.tooManyFragments, offset: offset, "a message in more than \(maximumFragments) fragments")
        }
        guard payload.count + frame.payload.count <= maximumMessageBytes else {
            throw WebSocketError(.messageTooLarge, offset: offset, "a message of more than \(maximumMessageBytes) bytes")
        }
        payload.append(contentsOf: frame.payload)
    }

    private mutating func reset() {
        opcode = nil
        payload = []
        fragments = 0
    }
}
