import KinetraceWire

/// Kinetrace's reference host logic for one protocol, free of I/O, for a program or a test
/// to embed: each message a controller sends in, the replies the host owes it out.
///
/// It decides exactly as `kinetrace host` does (the protocol's host model, its default rule,
/// a controller table with a cap and an idle timeout). `String` controller keys are whatever
/// identifies a controller to you, such as its "address:port".
public struct ReferenceHostLogic {
    private var core: HostCore<String>

    /// A host for `wireProtocol` that keeps state for at most `maximumControllers`.
    public init(_ wireProtocol: WireProtocolHandle, maximumControllers: Int = 65_536) {
        let chosen = wireProtocol.wireProtocol
        core = HostCore(wireProtocol: chosen, rule: chosen.defaultRule, maximumControllers: max(1, maximumControllers))
    }

    /// Handles one message from `controller`, received at `receivedNs` on any monotonic clock in
    /// nanoseconds; returns the replies owed (none for protocols whose host does not answer).
    public mutating func receive(_ message: [UInt8], from controller: String, receivedNs: Int64) -> [[UInt8]] {
        guard let decision = core.handle(message, from: controller, receivedNs: receivedNs),
              let reply = core.wireProtocol.reply(to: decision) else { return [] }
        return [reply]
    }

    /// How many messages the host decided on (a jump, an applied attitude) so far.
    public var decisions: Int { core.statistics.triggers }
}
