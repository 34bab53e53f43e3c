/// MotionLink v1 (specs/motionlink-v1.md): 36-byte MotionFrames from the
/// controller, 20-byte HapticAcks from the host, one per UDP datagram.
/// The datagram's length alone says which kind it is.
package struct MotionLinkV1: CompiledWireProtocol {
    package init() {}

    package static let id = ProtocolID("motionlink-v1")
    package static let summary = "36-byte MotionFrames at 10 Hz over UDP, a 20-byte HapticAck per jump"
    package static let specification = "specs/motionlink-v1.md"
    /// The digest of specs/protocols/NAME.json, this protocol declared (DeclarationSeedTests keeps them equal).
    package static let declarationDigest: String? = "sha256:776ef6fd1434c6f1cffdd5aa619adc08598d77da117a2332fdedb178c7cb06d5"
    package static let transport = TransportKind.datagram
    /// ML-TRANSPORT-2: the host's default UDP port.
    package static let defaultPort: UInt16 = 47110
    /// ML-RATE-2: 10 Hz.
    package static let nominalRateHz = 10.0
    /// ML-ACK-RULE-1: a HapticAck per trigger.
    package static let hostReplies = true
    /// ML-FRAME-4: every frame carries `t_ms`.
    package static let samplesCarrySenderClock = true

    package enum Message: Hashable, Sendable {
        case frame(MotionFrame)
        case ack(HapticAck)
    }

    /// The kind a datagram of this length would be, if any (ML-TRANSPORT-4).
    @inlinable
    package static func kind(forLength length: Int) -> MessageKind? {
        switch length {
        case MotionFrame.size: return .frame
        case HapticAck.size: return .ack
        default: return nil
        }
    }

    @inlinable
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message {
        switch bytes.count {
        case MotionFrame.size: return .frame(try MotionFrame.decode(bytes))
        case HapticAck.size: return .ack(try HapticAck.decode(bytes))
        default:
            throw WireError(.invalidLength, offset: bytes.count, expected: "a 36-byte MotionFrame or a 20-byte HapticAck")
        }
    }

    @inlinable
    package static func encode(_ message: Message) -> [UInt8] {
        switch message {
        case .frame(let frame): return frame.encoded()
        case .ack(let ack): return ack.encoded()
        }
    }

    @inline(__always)
    package static func facts(of message: Message) -> MessageFacts {
        switch message {
        case .frame(let f):
            return MessageFacts(direction: .controllerToHost, senderTimeMs: f.tMs, motion: MotionReading(
                userAcceleration: Vector3(Double(f.ax), Double(f.ay), Double(f.az)),
                rotationRate: Vector3(Double(f.wx), Double(f.wy), Double(f.wz))))
        case .ack(let a):
            return MessageFacts(direction: .hostToController, echoTimeMs: a.echoTMs)
        }
    }

    /// Written out rather than left to the protocol's generic default: every engine calls it per message.
    package static func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts {
        do throws(WireError) { return facts(of: try decode(bytes)) } catch { return MessageFacts(invalid: error) }
    }

    /// A frame of the reading's user acceleration and rotation rate (zero where it has none).
    package static func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]? {
        frame(reading, timeMs: timeMs).encoded()
    }

    /// The frame `sample` sends.
    package static func frame(_ reading: MotionReading, timeMs: UInt64) -> MotionFrame {
        let a = reading.userAcceleration ?? .zero, w = reading.rotationRate ?? .zero
        return MotionFrame(tMs: timeMs, ax: Float(a.x), ay: Float(a.y), az: Float(a.z),
                           wx: Float(w.x), wy: Float(w.y), wz: Float(w.z))
    }

    package static func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]? {
        guard bytes.count == MotionFrame.size, var frame = try? MotionFrame.decode(bytes) else { return nil }
        frame.tMs = timeMs
        return frame.encoded()
    }

    package static func makeHostModel(rule: GestureRule) -> any HostModel { MotionLinkHostModel(rule: rule) }

    package static func hostRule(_ rule: GestureRule) -> String {
        "jump when ay > \(rule.threshold) g, then \(rule.refractoryMs) ms of frame time (t_ms) before the next; a HapticAck per jump"
    }

    /// The HapticAck a trigger owes: its frame's `t_ms` echoed, intensity and sharpness 1.0 (ML-ACK-4).
    package static func reply(to decision: HostDecision) -> [UInt8]? {
        guard decision.owesReply, let tMs = decision.sampleTimeMs else { return nil }
        return HapticAck(echoTMs: tMs).encoded()
    }

    package static let decodedShapes = [
        DecodedShape(kind: "frame", numbers: ["t_ms", "ax", "ay", "az", "wx", "wy", "wz", "check"]),
        DecodedShape(kind: "ack", numbers: ["echo_t_ms", "intensity", "sharpness", "check"]),
        DecodedShape(kind: "unknown", fields: []),
    ]

    /// The fields at their offsets whenever the length names a kind, even when the CRC fails.
    package static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) {
        let reader = ByteReader(bytes)
        switch kind(forLength: bytes.count) {
        case .frame:
            visitor.kind("frame")
            visitor.field("t_ms", reader.getInteger(at: 0, as: UInt64.self)!)
            visitor.field("ax", reader.getFloat32(at: 8)!)
            visitor.field("ay", reader.getFloat32(at: 12)!)
            visitor.field("az", reader.getFloat32(at: 16)!)
            visitor.field("wx", reader.getFloat32(at: 20)!)
            visitor.field("wy", reader.getFloat32(at: 24)!)
            visitor.field("wz", reader.getFloat32(at: 28)!)
            visitor.field("check", reader.getInteger(at: 32, as: UInt32.self)!)
        case .ack:
            visitor.kind("ack")
            visitor.field("echo_t_ms", reader.getInteger(at: 0, as: UInt64.self)!)
            visitor.field("intensity", reader.getFloat32(at: 8)!)
            visitor.field("sharpness", reader.getFloat32(at: 12)!)
            visitor.field("check", reader.getInteger(at: 16, as: UInt32.self)!)
        case nil:
            visitor.kind("unknown")
        }
    }
}

/// Which of the two message kinds a datagram is.
package enum MessageKind: String, Hashable, Sendable, CaseIterable {
    case frame
    case ack
}

/// What a conforming MotionLink v1 host does (ML-GESTURE-*, ML-ACK-RULE-1):
/// the gesture rule per controller, one HapticAck (intensity and sharpness
/// 1.0, ML-ACK-4) per trigger; acks sent to it are invalid (ML-VALID-3).
package struct MotionLinkHostModel: HostModel {
    package private(set) var tracker: GestureTracker<Int>

    package init(rule: GestureRule) { tracker = GestureTracker(rule: rule) }

    package var controllerCount: Int { tracker.controllerCount }

    package mutating func forget(_ controller: Int) { tracker.forget(controller) }

    package mutating func accept(_ message: MessageFacts, from controller: Int, receivedNs: Int64) -> HostVerdict {
        if let error = message.error { return .dropped(reason: error.code.name) }
        guard message.direction == .controllerToHost, let tMs = message.senderTimeMs,
              let ay = message.motion?.userAcceleration?.y else { return .dropped(reason: "wrong_direction") }
        switch tracker.accept(senderTimeMs: tMs, value: ay, from: controller, receivedNs: receivedNs) {
        case .stale: return .stale
        case .accepted: return .accepted
        case .trigger: return .decided(HostDecision(name: "jump", sampleTimeMs: tMs, owesReply: true))
        }
    }
}
