import KinetraceWire

/// A toy byte-stream protocol, for tests that prove one plugs in without
/// touching the engines: 12-byte records back to back (u64 little-endian
/// stamp, u32 little-endian value), controller→host only.
public struct ToyStream: CompiledWireProtocol {
    public init() {}

    public struct Message: Hashable, Sendable {
        public var tMs: UInt64
        public var value: UInt32
        public init(tMs: UInt64, value: UInt32) {
            self.tMs = tMs
            self.value = value
        }
    }

    public static let id = ProtocolID("toy-stream-v1")
    public static let summary = "12-byte stamped records back to back on TCP (tests only)"
    public static let specification = "Tests/KinetraceTestSupport/ToyStream.swift"
    public static let transport = TransportKind.byteStream
    public static let defaultPort: UInt16 = 47200
    public static let nominalRateHz = 50.0
    public static let samplesCarrySenderClock = true
    public static let size = 12

    public static func makeFramer() -> any MessageFramer { StreamFramer(FixedLengthRecords(length: size)) }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message {
        guard bytes.count == size else { throw WireError(.invalidLength, offset: bytes.count, expected: "a 12-byte record") }
        var tMs: UInt64 = 0
        for i in (0..<8).reversed() { tMs = tMs << 8 | UInt64(bytes[i]) }
        var value: UInt32 = 0
        for i in (8..<12).reversed() { value = value << 8 | UInt32(bytes[i]) }
        return Message(tMs: tMs, value: value)
    }

    public static func encode(_ message: Message) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: message.tMs >> (8 * $0)) } + (0..<4).map { UInt8(truncatingIfNeeded: message.value >> (8 * $0)) }
    }

    public static func facts(of message: Message) -> MessageFacts {
        MessageFacts(direction: .controllerToHost, senderTimeMs: message.tMs)
    }

    public static func makeHostModel(rule: GestureRule) -> any HostModel { ToyHostModel() }

    public static let decodedShapes = [
        DecodedShape(kind: "record", numbers: ["t_ms", "value"]),
        DecodedShape(kind: "unknown", fields: []),
    ]

    public static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) {
        guard let message = try? decode(bytes) else { return visitor.kind("unknown") }
        visitor.kind("record")
        visitor.field("t_ms", message.tMs)
        visitor.field("value", message.value)
    }
}

/// Accepts everything, decides nothing.
public struct ToyHostModel: HostModel {
    private var seen: Set<Int> = []
    public init() {}
    public var controllerCount: Int { seen.count }
    public mutating func forget(_ controller: Int) { seen.remove(controller) }
    public mutating func accept(_ message: MessageFacts, from controller: Int, receivedNs: Int64) -> HostVerdict {
        seen.insert(controller)
        return .accepted
    }
}
