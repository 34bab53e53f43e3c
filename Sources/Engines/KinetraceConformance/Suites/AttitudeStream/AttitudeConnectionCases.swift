import KinetraceSupport
import KinetraceTransport
import KinetraceWire

/// AS-CONN-2 from outside: idle connections past the host's bound (--max-connections) lock no
/// phone out. A phone streams through the flood and one connects after it; both must be read.
/// Over TCP "read" shows as each phone's send queue draining after 256 KiB of records, more
/// than a host that never accepts or reads can leave in the kernel's window.
package struct AttitudeConnectionFloodCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-AS-CONN-FLOOD", requirements: ["AS-CONN-2"], level: .must,
        summary: "After 64 more idle connections than the host's bound (--max-connections), opened while a phone streams, the host still reads that phone and a phone that connects after them, and closes neither.",
        timeoutMs: 6_000)
    package init() {}

    /// Connections past the bound: enough that a host refusing at its bound refuses the new phone.
    static let pastTheBound = 64
    /// The most idle connections the case opens: 16 × the reference host's bound.
    static let largestFlood = 16_384
    /// Records each phone sends after the flood: 256 KiB, past a stalled host's window.
    static let recordsAfter = 21 * 1024

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        guard p.target.controllersAreConnections else {
            return CaseResult(info, .inconclusive("the stdio adapter's controllers are not connections: there is no connection limit to flood"))
        }
        let flood = parameters.maxConnections + Self.pastTheBound
        guard flood <= Self.largestFlood else { return CaseResult(info, .inconclusive("a bound of \(parameters.maxConnections) connections is not flooded past")) }
        let descriptors = DescriptorLimit.raiseToHardLimit()
        guard flood + 64 <= descriptors else {
            return CaseResult(info, .inconclusive("\(flood) connections do not fit in this process's open-file limit of \(descriptors) (raise ulimit -n)"))
        }
        var rng = AttitudeRecords(seed: 0x4153_4346)
        let before = try p.controllers(1).lowerBound
        p.send(rng.next().encoded(), from: before)
        var opened = 0
        while opened < flood {
            let count = Swift.min(64, flood - opened)
            do {
                _ = try p.controllers(count)
            } catch {
                return CaseResult(info, .inconclusive("could not open idle connection \(opened + 1) of \(flood): \(error)"),
                                  measurements: [Measurement("idle_connections", Double(opened))])
            }
            opened += count
            // The phone streams on through the flood.
            p.send(rng.next().encoded(), from: before)
            p.collect(forMs: 1)
        }
        let after = try p.controllers(1).lowerBound
        for _ in 0..<21 {
            for phone in [after, before] where p.closedByHost[phone] == nil && p.hostFailure == nil {
                p.send(AttitudeRecords.stream(rng.next(Self.recordsAfter / 21)), from: phone)
            }
        }
        p.collect(forMs: 2_000) { _ in
            p.hostFailure != nil || [after, before].contains { p.closedByHost[$0] != nil }
                || [after, before].allSatisfy { (p.unsentBytes(of: $0) ?? 1) == 0 }
        }
        let unsent = [after, before].map { p.unsentBytes(of: $0) }
        let idleClosed = (before + 1..<after).filter { p.closedByHost[$0] != nil }.count
        var measurements = [Measurement("bound", Double(parameters.maxConnections)), Measurement("idle_connections", Double(flood)),
                            Measurement("idle_closed_by_host", Double(idleClosed))]
        if let a = unsent[0], let b = unsent[1] {
            measurements += [Measurement("new_phone_unread", Double(a), "bytes"), Measurement("streaming_phone_unread", Double(b), "bytes")]
        }
        for (phone, who) in [(after, "the phone that connected after the flood"), (before, "the phone that streamed through the flood")] {
            if let code = p.closedByHost[phone] {
                return CaseResult(info, .fail("the host \(connectionEnd(code)) of \(who) after \(flood) idle connections"), measurements: measurements,
                                  evidence: ["expected the host to close idle connections to make room (AS-CONN-2), found that it \(connectionEnd(code)) of \(who)"])
            }
        }
        if let failure = p.hostFailure {
            return CaseResult(info, .fail("after \(flood) idle connections the host does not read the phones: \(failure)"), measurements: measurements)
        }
        guard let newUnread = unsent[0], let oldUnread = unsent[1] else {
            return CaseResult(info, .inconclusive("this link cannot read its send queue, and the connection staying open is all TCP shows"),
                              measurements: measurements)
        }
        guard newUnread == 0, oldUnread == 0 else {
            return CaseResult(info, .fail("after \(flood) idle connections the host does not read \(newUnread > 0 ? "the new phone" : "the streaming phone")"),
                              measurements: measurements,
                              evidence: ["expected both phones' send queues empty 2 s after 256 KiB of records, found \(newUnread) and \(oldUnread) bytes unread"])
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}
