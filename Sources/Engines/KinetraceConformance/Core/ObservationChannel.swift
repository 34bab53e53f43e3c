import KinetraceTransport

/// Judging decisions that show nowhere on the wire (a jump shown only on
/// screen, an attitude applied): only the stdio adapter's observation channel carries
/// them (SA-OBS-*), so a case that saw none says why it cannot judge, and
/// is never a PASS (SA-OBS-5).
extension LiveProbe {
    /// The decisions called `decision` the host reported about a controller, in arrival order.
    package func observed(_ decision: String, on controller: Int) -> [Observed] {
        observations.filter { $0.controller == controller && $0.observation.decision == decision }
    }

    /// Whether the link can carry observations at all (only a host run behind the stdio adapter can report them).
    package var canObserve: Bool {
        if case .exec = target { return true } else { return false }
    }

    /// The verdict when the host reported no observation about this case's controllers: FAIL when it
    /// reported decisions under other controller ids (SA-OBS-2: an observation names the controller
    /// whose message caused it), INCONCLUSIVE when it reported nothing; nil when there is something to judge.
    package func unjudgedObservations(_ what: String) -> Verdict? {
        guard observations.isEmpty else { return nil }
        if let stray = strayObservationsFailure { return stray }
        if hostReportsDecisions, canObserve {
            // Cases that judge observations all send messages that must be decided: silence here is the host's.
            return .fail("the host reported no decision during this case, though it reported one on the suite's preflight message, "
                         + "so its observation channel works: it made none of the decisions this case's messages required (\(what))")
        }
        return observationsMissing(what).map { .inconclusive($0) }
    }

    /// FAIL, naming what the host reported, when it reported decisions only under ids that are none of this case's.
    package var strayObservationsFailure: Verdict? {
        guard observations.isEmpty, strayObservationCount > 0 else { return nil }
        let ids = controllerIDs.map(String.init).joined(separator: ", ")
        let shown = strayObservations.map { "\"\($0.observation.decision)\" under controller id \($0.controllerID)" }.joined(separator: "; ")
        return .fail("the host reported \(strayObservationCount) decision(s), none under this case's controller ids (\(ids)): \(shown)"
                     + (strayObservationCount > strayObservations.count ? "; …" : "")
                     + ". An observation names the controller whose message caused it (SA-OBS-2)")
    }

    /// Why `what` cannot be judged when the host reported no observation during this case; nil when it reported some.
    package func observationsMissing(_ what: String) -> String? {
        guard observations.isEmpty else { return nil }
        if canObserve {
            return "the host reported no observation (stdio adapter record kind 0x03, SA-OBS-1) during this case, so \(what) cannot be judged: "
                + "the protocol has no reply on the wire"
        }
        return "a host reached over \(target) sends nothing back and has no observation channel, so \(what) cannot be judged; "
            + "run it with --exec behind the stdio adapter, reporting its decisions as observation records (SA-OBS-1)"
    }
}
