import KinetraceTransport

/// Judging decisions that show nowhere on the wire (a jump shown only on
/// screen, an attitude applied): only the stdio adapter's observation channel carries
/// them (SA-OBS-*), so a case that saw none says why it cannot judge, and
/// is never a PASS (SA-OBS-5).
extension LiveProbe {
    /// The decisions called `decision` the host reported about a controller, in arrival order.
    public func observed(_ decision: String, on controller: Int) -> [Observed] {
        observations.filter { $0.controller == controller && $0.observation.decision == decision }
    }

    /// Whether the link can carry observations at all (only a host run behind the stdio adapter can report them).
    public var canObserve: Bool {
        if case .exec = target { return true } else { return false }
    }

    /// Why `what` cannot be judged when the host reported no observation during this case; nil when it reported some.
    public func observationsMissing(_ what: String) -> String? {
        guard observations.isEmpty else { return nil }
        if canObserve {
            return "the host reported no observation (stdio adapter record kind 0x03, SA-OBS-1) during this case, so \(what) cannot be judged: "
                + "the protocol has no reply on the wire"
        }
        return "a host reached over \(target) sends nothing back and has no observation channel, so \(what) cannot be judged; "
            + "run it with --exec behind the stdio adapter, reporting its decisions as observation records (SA-OBS-1)"
    }
}
