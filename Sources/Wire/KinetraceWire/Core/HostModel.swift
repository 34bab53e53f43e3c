/// What a conforming host keeps and owes: the protocol's host behaviour,
/// free of I/O, fed the messages that reach the host in arrival order. The
/// reference hosts run it; the replayer, the synthesizer, `inspect` and the
/// conformance suite run it to predict what a host under test owes.
public protocol HostModel<Controller> {
    /// Whatever tells controllers apart (a socket address, a stdio id).
    associatedtype Controller: Hashable
    /// Feeds one controller→host message (its facts) as the host receives it.
    mutating func accept(_ message: MessageFacts, from controller: Controller, receivedNs: Int64) -> HostVerdict
    /// Controllers the model keeps state for.
    var controllerCount: Int { get }
}

/// What a conforming host makes of one message that reached it.
public enum HostVerdict: Hashable, Sendable {
    /// Not acted on: invalid bytes, or a message that is not for a host. The reason is the
    /// wire error's code name, or `wrong_direction`.
    case dropped(reason: String)
    /// Valid, but not newer than what the host has seen: ignored entirely.
    case stale
    /// Accepted; nothing owed.
    case accepted
    /// Accepted, and the host owes this.
    case decided(HostDecision)

    public var decision: HostDecision? { if case .decided(let d) = self { return d } else { return nil } }
}

/// Something a conforming host owes: a reply on the wire, a decision
/// observable only through an observation channel (a game's jump on
/// screen), or both.
public struct HostDecision: Hashable, Sendable {
    /// What the host decided, e.g. `jump`.
    public var name: String
    /// The sender stamp of the sample that caused it, when the protocol stamps samples.
    public var sampleTimeMs: UInt64?
    /// The reply the host owes on the wire, if the protocol has replies.
    public var reply: [UInt8]?
    /// The decision's values, for decisions that carry some (an attitude applied).
    public var values: [Double]

    public init(name: String, sampleTimeMs: UInt64? = nil, reply: [UInt8]? = nil, values: [Double] = []) {
        self.name = name
        self.sampleTimeMs = sampleTimeMs
        self.reply = reply
        self.values = values
    }
}
