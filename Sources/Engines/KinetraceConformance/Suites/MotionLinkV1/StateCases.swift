import KinetraceSupport
import KinetraceTransport
import KinetraceWire

/// ML-STATE-4: one forged far-future frame locks a controller out for at most the resync time.
package struct StaleResyncCase: ActiveCase {
    package let info = CaseInfo(id: "AC-STALE-RESYNC", requirements: ["ML-STATE-4"], level: .should,
                               summary: "After a forged frame stamped far ahead, the controller's real frames are ignored only until the resync time (--stale-resync-ms) has passed.",
                               timeoutMs: 4_000, judgesDecisions: true)
    package init() {}
    /// The forged frame's stamp lies this far ahead of the real ones: over 11 days.
    static let forgedLeadMs: UInt64 = 1_000_000_000
    /// Longer resync times would make the case outlast its bound.
    static let longestResyncMs: UInt64 = 30_000

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let resyncMs = parameters.rule.staleResyncMs
        guard resyncMs > 0, resyncMs <= Self.longestResyncMs else {
            return CaseResult(info, .inconclusive(resyncMs == 0 ? "told the host never resynchronises (--stale-resync-ms 0)"
                                                     : "a resync time over 30 s is not waited for"))
        }
        let levels = Levels(parameters)
        let t0 = p.t0
        let c = try p.controllers(1).lowerBound
        p.send(levels.low(t0), from: c)
        p.send(levels.low(t0 + Self.forgedLeadMs).encoded(), from: c, advancesClock: false)
        let forgedAt = SystemClock.monotonicNs()
        // The player's real frames go on at 10 Hz: stale until the host resynchronises. One
        // trigger-level frame halfway must not be acked (still stale); the one sent 300 ms
        // after the resync time must be.
        let halfway = forgedAt + Int64(resyncMs) * 500_000
        let due = forgedAt + Int64(resyncMs + 300) * 1_000_000
        var tMs = t0, sentHalfway: UInt64?
        while SystemClock.monotonicNs() < due, p.flooded == nil {
            tMs += 100
            if sentHalfway == nil, SystemClock.monotonicNs() >= halfway {
                sentHalfway = tMs
                p.send(levels.high(tMs), from: c)
            } else {
                p.send(levels.low(tMs), from: c)
            }
            p.collect(untilMonotonicNs: min(due, SystemClock.monotonicNs() + 100_000_000))
        }
        tMs += 100
        let trigger = tMs
        p.send(levels.high(trigger), from: c)
        p.collect(forMs: 1_000) { _ in p.echoes.contains { $0.echo == trigger } }
        p.collect(forMs: 30)
        let echoes = p.echoes
        var evidence: [String] = []
        if let early = sentHalfway, echoes.contains(where: { $0.echo == early }) {
            evidence.append("expected no ack to a stale frame \(resyncMs / 2) ms after the forged one (t_ms \(early)), found one")
            return CaseResult(info, .nonStrict("acked a frame that was still stale, before the resync time"), evidence: evidence)
        }
        let acked = echoes.contains { $0.echo == trigger }
        let measurements = [Measurement("resync_ms", Double(resyncMs)), Measurement("acked_after_resync", acked ? 1 : 0)]
        guard acked else {
            return CaseResult(info, .nonStrict("still locked out \(resyncMs + 300) ms after one forged frame stamped \(Self.forgedLeadMs) ms ahead"),
                              measurements: measurements,
                              evidence: ["expected an ack to a trigger (t_ms \(trigger)) sent \(resyncMs + 300) ms after the forged frame "
                                         + "(t_ms \(t0 + Self.forgedLeadMs)), found none"])
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}

/// ML-STATE-2 from outside: after more new controllers than the cap, the one heard least
/// recently has been forgotten, which shows as a trigger inside its refractory period
/// being acked (ML-STATE-3).
package struct StateBoundCase: ActiveCase {
    package let info = CaseInfo(id: "AC-STATE-BOUND", requirements: ["ML-STATE-2"], level: .should,
                               summary: "After one frame each from an eighth more new controllers than the cap (--max-controllers), the least recently heard controller has been forgotten.",
                               timeoutMs: 15_000, judgesDecisions: true)
    package init() {}
    /// The most sources the case makes: 16 × the default cap.
    static let largestFlood = 1_048_576

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let levels = Levels(parameters)
        let cap = parameters.maxControllers
        let flood = cap + cap / 8 + 64
        guard cap > 0, flood <= Self.largestFlood else { return CaseResult(info, .inconclusive("a cap of \(cap) is not flooded past")) }
        let t0 = p.t0
        let a = try p.controllers(1).lowerBound
        p.send(levels.high(t0), from: a)
        // Waits end as soon as the ack comes; the long bounds are for a loaded machine.
        p.collect(forMs: 4_000) { _ in p.echoes.contains { $0.controller == a && $0.echo == t0 } }
        guard p.echoes.contains(where: { $0.controller == a && $0.echo == t0 }) else {
            return CaseResult(info, .inconclusive("the host did not ack the first trigger: nothing to forget"))
        }
        // Spoofed sources send frames that never trigger, so they owe no replies. The flood goes
        // in chunks, each followed by a trigger from a new controller of ours: its ack says the
        // host has read every frame before it, so the next chunk finds the receive buffer
        // empty and none is dropped, even while a loaded machine keeps the host waiting.
        let chunk = Swift.max(64, flood / 32)
        let floodStarted = SystemClock.monotonicNs()
        var sent = 0, syncs = 0
        while sent < flood {
            let count = Swift.min(chunk, flood - sent)
            let first = sent
            switch p.sendFromFreshSources(count: count, firstSource: first, payload: { i in levels.low(t0 + 1 + UInt64((first + i) % 50)).encoded() }) {
            case .unavailable(let why): return CaseResult(info, .inconclusive(why))
            case .sent: break
            }
            sent += count
            let sync = try p.controllers(1).lowerBound
            syncs += 1
            p.send(levels.high(t0 + 100), from: sync)
            p.collect(forMs: 6_000) { _ in p.echoes.contains { $0.controller == sync } }
            guard p.echoes.contains(where: { $0.controller == sync }) else {
                return CaseResult(info, .inconclusive("the host did not ack a new controller's trigger after \(sent) of \(flood) flood frames"),
                                  measurements: [Measurement("flood_sources", Double(sent))])
            }
        }
        let floodMs = Double(SystemClock.monotonicNs() - floodStarted) / 1e6
        // Inside A's refractory period: acked only if A was forgotten.
        p.send(levels.high(t0 + 100), from: a)
        p.collect(forMs: 2_000) { _ in p.echoes.contains { $0.controller == a && $0.echo == t0 + 100 } }
        let forgotten = p.echoes.contains { $0.controller == a && $0.echo == t0 + 100 }
        let measurements = [Measurement("flood_sources", Double(flood)), Measurement("sync_controllers", Double(syncs)),
                            Measurement("flood_ms", floodMs), Measurement("forgotten", forgotten ? 1 : 0)]
        guard forgotten else {
            return CaseResult(info, .nonStrict("still remembered a controller after \(flood) newer ones, past a cap of \(cap)"),
                              measurements: measurements,
                              evidence: ["expected an ack to controller A's trigger 100 ms after its first (forgotten, so fresh), found none: "
                                         + "its refractory state was kept"])
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}
