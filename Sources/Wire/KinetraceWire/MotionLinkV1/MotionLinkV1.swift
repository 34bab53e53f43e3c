/// MotionLink v1 (specs/motionlink-v1.md): 36-byte MotionFrames from the
/// controller, 20-byte HapticAcks from the host, one per UDP datagram.
/// The datagram's length alone says which kind it is.
public enum MotionLinkV1: WireProfile {
    public static let id = WireProfileID.motionLinkV1
    /// ML-TRANSPORT-2: the host's default UDP port.
    public static let defaultPort: UInt16 = 47110

    public enum Message: Hashable, Sendable {
        case frame(MotionFrame)
        case ack(HapticAck)
    }

    /// The kind a datagram of this length would be, if any (ML-TRANSPORT-4).
    @inlinable
    public static func kind(forLength length: Int) -> MessageKind? {
        switch length {
        case MotionFrame.size: return .frame
        case HapticAck.size: return .ack
        default: return nil
        }
    }

    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message {
        switch bytes.count {
        case MotionFrame.size: return .frame(try MotionFrame.decode(bytes))
        case HapticAck.size: return .ack(try HapticAck.decode(bytes))
        default:
            throw WireError(.invalidLength, offset: bytes.count, expected: "a 36-byte MotionFrame or a 20-byte HapticAck")
        }
    }

    @inlinable
    public static func encode(_ message: Message) -> [UInt8] {
        switch message {
        case .frame(let frame): return frame.encoded()
        case .ack(let ack): return ack.encoded()
        }
    }
}

extension WireProfileID {
    public static let motionLinkV1 = WireProfileID("motionlink-v1")
}

/// Which of the two message kinds a datagram is.
public enum MessageKind: String, Hashable, Sendable, CaseIterable {
    case frame
    case ack
}
