import KinetraceTrace
import KinetraceWire

/// What a report may claim about a protocol, found out through `WireProtocol`
/// alone (so a new protocol needs no entry here): whether it has replies to
/// match, a sender clock to measure on, and message ids to find duplicates by.
package enum ProtocolTraits {
    /// Whether a host answers on the wire (a protocol with a reply kind; many have none).
    package static func hasReplies(_ wireProtocol: any WireProtocol) -> Bool { wireProtocol.hostReplies }

    /// Whether the protocol's samples carry the sender's clock.
    package static func hasSenderClock(_ wireProtocol: any WireProtocol) -> Bool { wireProtocol.samplesCarrySenderClock }

    /// Whether `describe` writes a string field `id` for the protocol's samples (a message id).
    package static func describesIDs(_ wireProtocol: any WireProtocol) -> Bool {
        guard let bytes = wireProtocol.sample(MotionReading(), timeMs: 1) else { return false }
        var finder = IDFinder()
        bytes.withUnsafeBytes { wireProtocol.describe($0, into: &finder) }
        return finder.id != nil
    }

    /// The message's `id` field as the protocol describes it, if it has one.
    package static func describedID(of message: MessageRecord, _ wireProtocol: any WireProtocol) -> String? {
        var finder = IDFinder()
        message.payload.withUnsafeBytes { wireProtocol.describe($0, into: &finder) }
        return finder.id
    }

    private struct IDFinder: DecodedFieldVisitor {
        var id: String?
        mutating func kind(_ name: String) {}
        mutating func field(_ name: String, _ value: UInt64) {}
        mutating func field(_ name: String, _ value: UInt32) {}
        mutating func field(_ name: String, _ value: Float32) {}
        mutating func field(_ name: String, _ value: Double) {}
        mutating func field(_ name: String, _ value: String) { if name == "id" { id = value } }
    }
}
