/// What a conforming host keeps and owes: the protocol's host behaviour,
/// free of I/O, fed the messages that reach the host in arrival order. The
/// reference hosts run it; the replayer, the synthesizer, `inspect` and the
/// conformance suite run it to predict what a host under test owes.
///
/// The caller gives each controller a number of its own choosing (an index,
/// or `ControllerNumbering` over socket addresses or stdio ids), so models
/// stay concrete: a generic controller type behind `any HostModel` made
/// every message pay for unspecialised dictionary code (1.6× the replay
/// planner's instructions; Benchmarks/identity/results.md).
package protocol HostModel {
    /// Feeds one controller→host message (its facts) from the numbered controller, as the host receives it.
    mutating func accept(_ message: MessageFacts, from controller: Int, receivedNs: Int64) -> HostVerdict
    /// Controllers the model keeps state for.
    var controllerCount: Int { get }
    /// Drops everything kept for the numbered controller: a host that forgets an idle
    /// controller, or one evicted to stay within its bound, treats it as new,
    /// and may give its number to another.
    mutating func forget(_ controller: Int)
}

/// Numbers controllers in the order they are met, for a `HostModel`.
package struct ControllerNumbering<Controller: Hashable> {
    @usableFromInline var numbers: [Controller: Int] = [:]

    package init() {}

    /// The controller's number, given on first sight.
    @inlinable
    package mutating func number(of controller: Controller) -> Int {
        if let known = numbers[controller] { return known }
        let next = numbers.count
        numbers[controller] = next
        return next
    }

    package var count: Int { numbers.count }
}

/// What a conforming host makes of one message that reached it.
package enum HostVerdict: Hashable, Sendable {
    /// Not acted on: invalid bytes, or a message that is not for a host. The reason is the
    /// wire error's code name, or `wrong_direction`.
    case dropped(reason: String)
    /// Valid, but not newer than what the host has seen: ignored entirely.
    case stale
    /// Accepted; nothing owed.
    case accepted
    /// Accepted, and the host owes this.
    case decided(HostDecision)

    package var decision: HostDecision? { if case .decided(let d) = self { return d } else { return nil } }
}

/// Something a conforming host owes: a reply on the wire, a decision
/// observable only through an observation channel (a game's jump on
/// screen), or both. The reply's bytes come from `WireProtocol.reply(to:)`,
/// made only by those who send them (planners need just `owesReply`).
package struct HostDecision: Hashable, Sendable {
    /// What the host decided, e.g. `jump`.
    package var name: String
    /// The sender stamp of the sample that caused it, when the protocol stamps samples.
    package var sampleTimeMs: UInt64?
    /// Whether the host owes a reply on the wire for it.
    package var owesReply: Bool
    /// The decision's values, for decisions that carry some (an attitude applied).
    package var values: [Double]

    package init(name: String, sampleTimeMs: UInt64? = nil, owesReply: Bool = false, values: [Double] = []) {
        self.name = name
        self.sampleTimeMs = sampleTimeMs
        self.owesReply = owesReply
        self.values = values
    }

    package static func == (a: HostDecision, b: HostDecision) -> Bool {
        a.name == b.name && a.sampleTimeMs == b.sampleTimeMs && a.owesReply == b.owesReply && a.values == b.values
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(sampleTimeMs)
        hasher.combine(owesReply)
        hasher.combine(values)
    }
}
