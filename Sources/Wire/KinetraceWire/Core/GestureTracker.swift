/// What a sender-clock refractory rule made of one valid sample.
package enum GestureVerdict: Hashable, Sendable {
    /// The sender's stamp is not newer than the newest accepted sample's: ignored entirely.
    case stale
    /// Accepted; no trigger.
    case accepted
    /// Accepted and triggered: the host decides, and owes its reply (if the protocol has one) echoing this stamp.
    case trigger
}

/// Per-controller state of a threshold rule with a refractory window on the
/// sender's clock, stale-sample rejection and an optional resync: the host
/// behaviour `threshold` with `window.clock = sender`. `Controller` is whatever
/// identifies a controller (a datagram's source address and port, say).
package struct GestureTracker<Controller: Hashable> {
    package let rule: GestureRule
    // Inlinable so each use site gets a specialised dictionary, not generic witness calls.
    @usableFromInline var states: [Controller: State] = [:]

    @usableFromInline
    struct State {
        @usableFromInline var newestSenderTimeMs: UInt64
        @usableFromInline var lastTriggerMs: UInt64?
        /// When the newest sample was accepted, in the caller's arrival clock (for the resync).
        @usableFromInline var acceptedNs: Int64
        @inlinable init(newestSenderTimeMs: UInt64, lastTriggerMs: UInt64?, acceptedNs: Int64) {
            self.newestSenderTimeMs = newestSenderTimeMs
            self.lastTriggerMs = lastTriggerMs
            self.acceptedNs = acceptedNs
        }
    }

    package init(rule: GestureRule = .default) { self.rule = rule }

    /// Number of controllers seen so far.
    package var controllerCount: Int { states.count }

    /// Feeds one valid sample by its sender stamp and the quantity the threshold watches.
    /// Without arrival times there is no resynchronisation.
    @inlinable
    package mutating func accept(senderTimeMs: UInt64, value: Double, from controller: Controller) -> GestureVerdict {
        accept(senderTimeMs: senderTimeMs, value: value, from: controller, receivedNs: nil)
    }

    /// Feeds one valid sample that arrived at `receivedNs` (any monotonic clock); invalid samples
    /// must not reach the tracker. A stale sample arriving `rule.staleResyncMs` or more after the
    /// controller's newest accepted one finds it locked out (a forged far-future stamp, a phone
    /// whose clock restarted): the controller is forgotten and the sample judged as its first.
    @inlinable
    package mutating func accept(senderTimeMs: UInt64, value: Double, from controller: Controller, receivedNs: Int64?) -> GestureVerdict {
        // One hash lookup per sample: the known controller's state is updated where it lies.
        guard let index = states.index(forKey: controller) else {
            let fires = value > rule.threshold
            states[controller] = State(newestSenderTimeMs: senderTimeMs, lastTriggerMs: fires ? senderTimeMs : nil, acceptedNs: receivedNs ?? 0)
            return fires ? .trigger : .accepted
        }
        let known = states.values[index]
        var lastTriggerMs = known.lastTriggerMs
        if senderTimeMs <= known.newestSenderTimeMs {
            guard let receivedNs, rule.staleResyncMs > 0,
                  case let (since, overflow) = receivedNs.subtractingReportingOverflow(known.acceptedNs), !overflow,
                  since >= 0, UInt64(since) / 1_000_000 >= rule.staleResyncMs else { return .stale }
            lastTriggerMs = nil  // locked out long enough: judged as the controller's first sample
        }
        // Not stale (or forgotten), so the stamp > newest ≥ lastTrigger and the subtraction cannot underflow.
        let fires = value > rule.threshold && (lastTriggerMs.map { senderTimeMs - $0 >= rule.refractoryMs } ?? true)
        states.values[index] = State(newestSenderTimeMs: senderTimeMs, lastTriggerMs: fires ? senderTimeMs : lastTriggerMs, acceptedNs: receivedNs ?? 0)
        return fires ? .trigger : .accepted
    }

    /// Forgets one controller: its next sample is never stale and may trigger.
    package mutating func forget(_ controller: Controller) { states[controller] = nil }

    /// Forgets every controller.
    package mutating func reset() { states.removeAll() }
}
