import KinetraceWire

/// Kinetrace's reference host logic for one protocol, free of I/O, for a program or a test
/// to embed: each message a controller sends in, the replies the host owes it out.
///
/// It decides exactly as `kinetrace host` does (the protocol's host model, its default rule,
/// a controller table with a cap and an idle timeout). `String` controller keys are whatever
/// identifies a controller to you, such as its "address:port".
public struct ReferenceHostLogic {
    private var core: HostCore<String>

    /// Why a host could not be made.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// A host for `wireProtocol` that keeps state for at most `maximumControllers` (1 to
    /// 16,777,216, `kinetrace host`'s range) and forgets the least recently heard beyond that.
    public init(_ wireProtocol: WireProtocolHandle, maximumControllers: Int = 65_536) throws(Failure) {
        guard (1...16_777_216).contains(maximumControllers) else {
            throw Failure(description: "maximumControllers must be from 1 to 16777216, not \(maximumControllers)")
        }
        let chosen = wireProtocol.wireProtocol
        core = HostCore(wireProtocol: chosen, rule: chosen.defaultRule, maximumControllers: maximumControllers)
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
