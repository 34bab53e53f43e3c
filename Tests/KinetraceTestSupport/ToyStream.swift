import KinetraceWire

/// A toy byte-stream protocol, for tests that prove one plugs in without
/// touching the engines: 12-byte records back to back (u64 little-endian
/// stamp, u32 little-endian value), controller→host only.
package struct ToyStream: CompiledWireProtocol {
    package init() {}

    package struct Message: Hashable, Sendable {
        package var tMs: UInt64
        package var value: UInt32
        package init(tMs: UInt64, value: UInt32) {
            self.tMs = tMs
            self.value = value
        }
    }

    package static let id = ProtocolID("toy-stream-v1")
    package static let summary = "12-byte stamped records back to back on TCP (tests only)"
    package static let specification = "Tests/KinetraceTestSupport/ToyStream.swift"
    package static let transport = TransportKind.byteStream
    package static let defaultPort: UInt16 = 47200
    package static let nominalRateHz = 50.0
    package static let samplesCarrySenderClock = true
    package static let size = 12

    package static func makeFramer() -> any MessageFramer { StreamFramer(FixedLengthRecords(length: size)) }

    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message {
        guard bytes.count == size else { throw WireError(.invalidLength, offset: bytes.count, expected: "a 12-byte record") }
        var tMs: UInt64 = 0
        for i in (0..<8).reversed() { tMs = tMs << 8 | UInt64(bytes[i]) }
        var value: UInt32 = 0
        for i in (8..<12).reversed() { value = value << 8 | UInt32(bytes[i]) }
        return Message(tMs: tMs, value: value)
    }

    package static func encode(_ message: Message) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: message.tMs >> (8 * $0)) } + (0..<4).map { UInt8(truncatingIfNeeded: message.value >> (8 * $0)) }
    }

    package static func facts(of message: Message) -> MessageFacts {
        MessageFacts(direction: .controllerToHost, senderTimeMs: message.tMs)
    }

    package static func makeHostModel(rule: GestureRule) -> any HostModel { ToyHostModel() }

    package static let decodedShapes = [
        DecodedShape(kind: "record", numbers: ["t_ms", "value"]),
        DecodedShape(kind: "unknown", fields: []),
    ]

    package static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) {
        guard let message = try? decode(bytes) else { return visitor.kind("unknown") }
        visitor.kind("record")
        visitor.field("t_ms", message.tMs)
        visitor.field("value", message.value)
    }
}

/// Accepts everything, decides nothing.
package struct ToyHostModel: HostModel {
    private var seen: Set<Int> = []
    package init() {}
    package var controllerCount: Int { seen.count }
    package mutating func forget(_ controller: Int) { seen.remove(controller) }
    package mutating func accept(_ message: MessageFacts, from controller: Int, receivedNs: Int64) -> HostVerdict {
        seen.insert(controller)
        return .accepted
    }
}
