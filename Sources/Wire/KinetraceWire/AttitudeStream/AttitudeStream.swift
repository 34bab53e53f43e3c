/// One record of the 3D mouse's stream (specs/attitude-stream.md): roll,
/// pitch and yaw in radians as little-endian float32, 12 bytes, nothing else.
package struct AttitudeRecord: Hashable, Sendable {
    package static let size = 12

    package var roll: Float32
    package var pitch: Float32
    package var yaw: Float32

    package init(roll: Float32, pitch: Float32, yaw: Float32) {
        self.roll = roll
        self.pitch = pitch
        self.yaw = yaw
    }

    /// Decodes and validates (AS-VALUE-*): 12 bytes, finite, roll and yaw in
    /// [−π, π], pitch in [−π/2, π/2] (CoreMotion's ranges, compared in float32),
    /// checked field by field so the error names the first bad one.
    @inlinable
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> AttitudeRecord {
        guard bytes.count == size else {
            throw WireError(.invalidLength, offset: bytes.count, expected: "a 12-byte record")
        }
        @inline(__always) func value(_ offset: Int) -> Float32 {
            Float32(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }
        let record = AttitudeRecord(roll: value(0), pitch: value(4), yaw: value(8))
        try check(record.roll, at: 0, within: piFloat32, "roll within [−π, π]")
        try check(record.pitch, at: 4, within: halfPiFloat32, "pitch within [−π/2, π/2]")
        try check(record.yaw, at: 8, within: piFloat32, "yaw within [−π, π]")
        return record
    }

    /// π and π/2 rounded to nearest in binary32, as CoreMotion's own limits are
    /// (Swift's `Float.pi` is rounded toward zero, one ulp inside).
    package static let piFloat32 = Float32(Double.pi)
    package static let halfPiFloat32 = Float32(Double.pi / 2)

    @inlinable @inline(__always)
    static func check(_ value: Float32, at offset: Int, within limit: Float32, _ expected: StaticString) throws(WireError) {
        guard value.isFinite else { throw WireError(.nonFinite, offset: offset, expected: "a finite float32") }
        guard abs(value) <= limit else { throw WireError(.outOfRange, offset: offset, expected: expected.description) }
    }

    package func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.size)
        for v in [roll, pitch, yaw] {
            let bits = v.bitPattern
            out.append(contentsOf: (0..<4).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) })
        }
        return out
    }
}

/// The 3D mouse (specs/attitude-stream.md): an iPhone writes its attitude
/// as 12-byte records back to back on a byte stream at 60 Hz, mapped to one
/// TCP connection per phone; the iPad cube applies each record it reads.
/// No header, timestamp, checksum or reply.
package struct AttitudeStream: CompiledWireProtocol {
    package init() {}

    package typealias Message = AttitudeRecord

    package static let id = ProtocolID("attitude-stream")
    package static let summary = "12-byte roll/pitch/yaw float32 records back to back on TCP at 60 Hz, no reply"
    package static let specification = "specs/attitude-stream.md"
    /// The digest of specs/protocols/NAME.json, this protocol declared (DeclarationSeedTests keeps them equal).
    package static let declarationDigest: String? = "sha256:f424ed05794c062aed9faa6168656761c5361146df662a5392805d3d3ebe0503"
    package static let transport = TransportKind.byteStream
    /// AS-TRANSPORT-2.
    package static let defaultPort: UInt16 = 47130
    /// AS-RATE-1: one record per display frame.
    package static let nominalRateHz = 60.0

    /// AS-FRAME-1: records are cut at 12-byte offsets from the stream's start, whatever the reads.
    package static func makeFramer() -> any MessageFramer { StreamFramer(FixedLengthRecords(length: AttitudeRecord.size)) }

    @inlinable
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> AttitudeRecord {
        try AttitudeRecord.decode(bytes)
    }

    package static func encode(_ message: AttitudeRecord) -> [UInt8] { message.encoded() }

    package static func facts(of message: AttitudeRecord) -> MessageFacts {
        MessageFacts(direction: .controllerToHost, motion: MotionReading(
            attitude: Vector3(Double(message.roll), Double(message.pitch), Double(message.yaw))))
    }

    package static func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts {
        do throws(WireError) { return facts(of: try decode(bytes)) } catch { return MessageFacts(invalid: error) }
    }

    /// The record of the reading's attitude (zero when it has none).
    package static func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]? {
        let a = reading.attitude ?? .zero
        return AttitudeRecord(roll: Float32(a.x), pitch: Float32(a.y), yaw: Float32(a.z)).encoded()
    }

    package static func makeHostModel(rule: GestureRule) -> any HostModel { AttitudeHostModel() }

    package static func hostRule(_ rule: GestureRule) -> String { "apply every valid record as the attitude; no reply" }

    package static let decodedShapes = [
        DecodedShape(kind: "attitude", numbers: ["roll", "pitch", "yaw"]),
        DecodedShape(kind: "unknown", fields: []),
    ]

    /// The three floats whenever there are 12 bytes, even non-finite or out of range.
    package static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) {
        let reader = ByteReader(bytes)
        guard bytes.count == AttitudeRecord.size else { return visitor.kind("unknown") }
        visitor.kind("attitude")
        visitor.field("roll", reader.getFloat32(at: 0)!)
        visitor.field("pitch", reader.getFloat32(at: 4)!)
        visitor.field("yaw", reader.getFloat32(at: 8)!)
    }
}

/// What the attitude host does (AS-HOST-*): it applies every valid record it
/// reads, in order, as the cube's rotation; invalid ones (non-finite, out of
/// range) are not applied and the connection stays open.
package struct AttitudeHostModel: HostModel {
    private var seen: [Bool] = []
    package private(set) var controllerCount = 0

    package init() {}

    package mutating func forget(_ controller: Int) {
        guard controller < seen.count, seen[controller] else { return }
        seen[controller] = false
        controllerCount -= 1
    }

    package mutating func accept(_ message: MessageFacts, from controller: Int, receivedNs: Int64) -> HostVerdict {
        if controller >= seen.count { seen.append(contentsOf: repeatElement(false, count: controller - seen.count + 1)) }
        if !seen[controller] {
            seen[controller] = true
            controllerCount += 1
        }
        if let error = message.error { return .dropped(reason: error.code.name) }
        guard message.direction == .controllerToHost, let a = message.motion?.attitude else { return .dropped(reason: "wrong_direction") }
        return .decided(HostDecision(name: "attitude", values: [a.x, a.y, a.z]))
    }
}
