/// What the rule made of one valid frame.
public enum GestureVerdict: Hashable, Sendable {
    /// `t_ms` is not newer than the newest accepted frame: ignored entirely (ML-GESTURE-2).
    case stale
    /// Accepted; no trigger.
    case accepted
    /// Accepted and triggered: the host owes exactly one ack echoing this `t_ms`.
    case trigger
}

/// Per-controller rule state. `Controller` is whatever identifies a controller:
/// the host uses the datagram's source address and port (ML-GESTURE-1).
public struct GestureTracker<Controller: Hashable> {
    public let rule: GestureRule
    // Inlinable so each use site gets a specialised dictionary, not generic witness calls.
    @usableFromInline var states: [Controller: State] = [:]

    @usableFromInline
    struct State {
        @usableFromInline var newestTMs: UInt64
        @usableFromInline var lastTriggerTMs: UInt64?
        /// When the newest frame was accepted, in the caller's arrival clock (ML-STATE-4).
        @usableFromInline var acceptedNs: Int64
        @inlinable init(newestTMs: UInt64, lastTriggerTMs: UInt64?, acceptedNs: Int64) {
            self.newestTMs = newestTMs
            self.lastTriggerTMs = lastTriggerTMs
            self.acceptedNs = acceptedNs
        }
    }

    public init(rule: GestureRule = .default) { self.rule = rule }

    /// Number of controllers seen so far.
    public var controllerCount: Int { states.count }

    /// Feeds one valid frame; invalid frames must not reach the tracker (ML-VALID-2).
    @inlinable
    public mutating func accept(_ frame: MotionFrame, from controller: Controller) -> GestureVerdict {
        accept(tMs: frame.tMs, ay: Double(frame.ay), from: controller)
    }

    /// Feeds one valid frame by its stamp and ay.
    /// Without arrival times there is no resynchronisation (ML-STATE-4): the rule as ML-GESTURE-2 states it.
    @inlinable
    public mutating func accept(tMs: UInt64, ay: Double, from controller: Controller) -> GestureVerdict {
        accept(tMs: tMs, ay: ay, from: controller, receivedNs: nil)
    }

    /// Feeds one valid frame that arrived at `receivedNs` (any monotonic clock). A stale frame
    /// arriving `rule.staleResyncMs` or more after the controller's newest accepted frame finds
    /// it locked out (a forged far-future stamp, a phone whose clock restarted): the controller
    /// is forgotten and the frame judged as its first (ML-STATE-4, ML-STATE-3).
    @inlinable
    public mutating func accept(tMs: UInt64, ay: Double, from controller: Controller, receivedNs: Int64?) -> GestureVerdict {
        // One hash lookup per frame: the known controller's state is updated where it lies.
        guard let index = states.index(forKey: controller) else {
            let fires = ay > rule.threshold
            states[controller] = State(newestTMs: tMs, lastTriggerTMs: fires ? tMs : nil, acceptedNs: receivedNs ?? 0)
            return fires ? .trigger : .accepted
        }
        let known = states.values[index]
        var lastTriggerTMs = known.lastTriggerTMs
        if tMs <= known.newestTMs {
            guard let receivedNs, rule.staleResyncMs > 0,
                  case let (since, overflow) = receivedNs.subtractingReportingOverflow(known.acceptedNs), !overflow,
                  since >= 0, UInt64(since) / 1_000_000 >= rule.staleResyncMs else { return .stale }
            lastTriggerTMs = nil  // locked out long enough: judged as the controller's first frame
        }
        // Not stale (or forgotten), so tMs > newest ≥ lastTrigger and the subtraction cannot underflow.
        let fires = ay > rule.threshold && (lastTriggerTMs.map { tMs - $0 >= rule.refractoryMs } ?? true)
        states.values[index] = State(newestTMs: tMs, lastTriggerTMs: fires ? tMs : lastTriggerTMs, acceptedNs: receivedNs ?? 0)
        return fires ? .trigger : .accepted
    }

    /// Forgets one controller: its next frame is never stale and may trigger (ML-STATE-3).
    public mutating func forget(_ controller: Controller) { states[controller] = nil }

    /// Forgets every controller.
    public mutating func reset() { states.removeAll() }
}
