/// The KeepCalm game as shipped (specs/keepcalm-json.md): MultipeerKit's
/// JSON envelope around a `MotionData` payload, ten a second, one message
/// per UDP datagram in Kinetrace's mapping of MultipeerConnectivity. No
/// timestamp, checksum or reply: the host's jump shows only on screen, so
/// conformance judges it through the stdio adapter's observation channel.
package struct KeepCalmJSON: CompiledWireProtocol {
    package init() {}

    package typealias Message = KeepCalmMotion

    package static let id = ProtocolID("keepcalm-json")
    package static let summary = "MultipeerKit JSON MotionData at 10 Hz, one message per UDP datagram, no reply"
    package static let specification = "specs/keepcalm-json.md"
    /// The digest of specs/protocols/NAME.json, this protocol declared (DeclarationSeedTests keeps them equal).
    package static let declarationDigest: String? = "sha256:9fe49ec3b99c38c7cad6f1f902b349b542c724af8a454997e71e7e58cf799876"
    package static let transport = TransportKind.datagram
    /// KC-TRANSPORT-2.
    package static let defaultPort: UInt16 = 47120
    /// KC-RATE-1: the game's 0.1 s timer.
    package static let nominalRateHz = 10.0

    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> KeepCalmMotion {
        try KeepCalmMotion.decode(bytes)
    }

    package static func encode(_ message: KeepCalmMotion) -> [UInt8] { message.encoded() }

    package static func facts(of message: KeepCalmMotion) -> MessageFacts {
        MessageFacts(direction: .controllerToHost, motion: MotionReading(own: Vector3(message.x, message.y, message.z)))
    }

    package static func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts {
        do throws(WireError) { return facts(of: try decode(bytes)) } catch { return MessageFacts(invalid: error) }
    }

    /// The message a phone sends for `reading`: its Combined sum, with a version-4 id
    /// drawn from the stamp and the values (the protocol itself carries no stamp), so
    /// the same input makes the same bytes and distinct samples distinct ids.
    package static func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]? {
        let sum = combinedSum(of: reading)
        var state = timeMs ^ sum.x.bitPattern
        let high = SplitMix64.step(&state) ^ sum.y.bitPattern
        state ^= sum.z.bitPattern
        let low = SplitMix64.step(&state)
        return KeepCalmMotion(id: MessageID(randomHigh: SplitMix64.step(&state) ^ high, randomLow: low), x: sum.x, y: sum.y, z: sum.z).encoded()
    }

    /// The KeepCalm sum of a reading: its own vector when it carries one, else user
    /// acceleration plus rotation rate, axis by axis (zero where it has none).
    package static func combinedSum(of reading: MotionReading) -> Vector3 {
        if let own = reading.own { return own }
        let a = reading.userAcceleration ?? .zero, w = reading.rotationRate ?? .zero
        return Vector3(a.x + w.x, a.y + w.y, a.z + w.z)
    }

    package static func makeHostModel(rule: GestureRule) -> any HostModel { KeepCalmHostModel(rule: rule) }

    package static func hostRule(_ rule: GestureRule) -> String {
        "jump when y > \(rule.threshold), latched for \(rule.refractoryMs) ms of the host's arrival clock; no reply"
    }

    package static let decodedShapes = [
        DecodedShape(kind: "motion", fields: [("id", .string), ("x", .number), ("y", .number), ("z", .number)]),
        DecodedShape(kind: "unknown", fields: []),
    ]

    package static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) {
        guard let message = try? decode(bytes) else { return visitor.kind("unknown") }
        visitor.kind("motion")
        visitor.field("id", message.id.description)
        visitor.field("x", message.x)
        visitor.field("y", message.y)
        visitor.field("z", message.z)
    }
}

/// What the KeepCalm host does (KC-HOST-*): a controller jumps when `y`
/// exceeds the threshold and it is not already jumping; the jump lasts
/// `refractoryMs` on the host's own clock from the message that started it.
/// Nothing is owed on the wire; the jump is reported as a decision.
package struct KeepCalmHostModel: HostModel {
    package let rule: GestureRule
    /// Per controller: when its current jump ends, host clock ns (Int64.min: never jumped).
    private var jumpEndsNs: [Int64] = []

    package init(rule: GestureRule) { self.rule = rule }

    /// Controllers ever numbered (forgotten ones keep their slot for the next controller given the number).
    package var controllerCount: Int { jumpEndsNs.count }

    package mutating func forget(_ controller: Int) {
        if controller < jumpEndsNs.count { jumpEndsNs[controller] = Int64.min }
    }

    package mutating func accept(_ message: MessageFacts, from controller: Int, receivedNs: Int64) -> HostVerdict {
        if let error = message.error { return .dropped(reason: error.code.name) }
        guard message.direction == .controllerToHost, let y = message.motion?.own?.y else {
            return .dropped(reason: "wrong_direction")
        }
        if controller >= jumpEndsNs.count {
            jumpEndsNs.append(contentsOf: repeatElement(Int64.min, count: controller - jumpEndsNs.count + 1))
        }
        // A jump whose end overflowed the clock never ends (only absurd clocks or windows get there).
        let jumpEnd = jumpEndsNs[controller]
        guard y > rule.threshold, receivedNs >= jumpEnd, jumpEnd != Int64.max else { return .accepted }
        let (window, tooLong) = Int64(clamping: rule.refractoryMs).multipliedReportingOverflow(by: 1_000_000)
        let (end, overflow) = receivedNs.addingReportingOverflow(window)
        jumpEndsNs[controller] = tooLong || overflow ? Int64.max : end
        return .decided(HostDecision(name: "jump", values: [message.motion!.own!.y]))
    }
}
