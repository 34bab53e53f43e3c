import KinetraceTrace
import KinetraceWire

/// What a report may claim about a protocol, found out through `WireProtocol`
/// alone (so a new protocol needs no entry here): whether it has replies to
/// match, a sender clock to measure on, and message ids to find duplicates by.
public enum ProtocolTraits {
    /// Whether a host decision can owe bytes on the wire: asked with a decision that owes a
    /// reply to a stamped sample. MotionLink v1 answers with an ack; KeepCalm and the attitude
    /// stream answer nothing, ever.
    public static func hasReplies(_ wireProtocol: any WireProtocol.Type) -> Bool {
        wireProtocol.reply(to: HostDecision(name: "probe", sampleTimeMs: 1, owesReply: true)) != nil
    }

    /// Whether the protocol's samples carry the sender's clock. A protocol that makes no
    /// samples is taken to have one, so its reports say "no data" rather than claim otherwise.
    public static func hasSenderClock(_ wireProtocol: any WireProtocol.Type) -> Bool {
        guard let bytes = wireProtocol.sample(MotionReading(), timeMs: 1) else { return true }
        return wireProtocol.facts(bytes).senderTimeMs != nil
    }

    /// Whether `describe` writes a string field `id` for the protocol's samples (KeepCalm's UUID).
    public static func describesIDs(_ wireProtocol: any WireProtocol.Type) -> Bool {
        guard let bytes = wireProtocol.sample(MotionReading(), timeMs: 1) else { return false }
        var finder = IDFinder()
        bytes.withUnsafeBytes { wireProtocol.describe($0, into: &finder) }
        return finder.id != nil
    }

    /// The message's `id` field as the protocol describes it, if it has one.
    public static func describedID(of message: MessageRecord, _ wireProtocol: any WireProtocol.Type) -> String? {
        var finder = IDFinder()
        message.payload.withUnsafeBytes { wireProtocol.describe($0, into: &finder) }
        return finder.id
    }

    private struct IDFinder: DecodedFieldVisitor {
        var id: String?
        mutating func kind(_ name: StaticString) {}
        mutating func field(_ name: StaticString, _ value: UInt64) {}
        mutating func field(_ name: StaticString, _ value: UInt32) {}
        mutating func field(_ name: StaticString, _ value: Float32) {}
        mutating func field(_ name: StaticString, _ value: Double) {}
        mutating func field(_ name: StaticString, _ value: String) { if name.description == "id" { id = value } }
    }
}
