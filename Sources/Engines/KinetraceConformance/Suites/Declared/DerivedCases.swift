import KinetraceSupport
import KinetraceTransport
import KinetraceWire

/// A fault a derived case exists to catch, stated so a test can build a host that has it: a change
/// to the declaration the faulty host is run with, or a fault of the reference host itself
/// (`kinetrace host --fault`). Every derived case names at least one; a case no fault can fail
/// checks nothing.
package enum GeneratedFault: Hashable, Sendable, CustomStringConvertible {
    /// The host runs a declaration changed this way.
    case declaration(DeclarationMutation)
    /// The reference host runs with `--fault NAME`.
    case host(String)

    package var description: String {
        switch self {
        case .declaration(let m): return "declaration: \(m)"
        case .host(let name): return "host --fault \(name)"
        }
    }
}

/// One change to a declaration's JSON (`DeclarationMutation.apply`).
package enum DeclarationMutation: Hashable, Sendable, CustomStringConvertible {
    /// `host.above` moved to the next value of the quantity's type above (+1) or below (-1).
    case thresholdUlp(Int)
    /// `host.window.ms` scaled by percent/100.
    case windowPercent(Int)
    /// `host.stale` removed: every sample judged.
    case staleJudged
    /// The quantity's role moved to another axis of its vector.
    case quantityAxisSwapped
    /// Every field's declared range removed.
    case rangesRemoved
    /// Every field's range and `finite` removed.
    case valuesUnchecked
    /// Every check removed (its field read as a plain number).
    case checksRemoved
    /// JSON: a repeated member's last value taken.
    case repeatedMembersLast
    /// JSON: `max_length` raised by this many bytes.
    case maximumLengthRaised(Int)
    /// The sample kind's byte order flipped.
    case byteOrderSwapped
    /// The first reported role swapped with another motion field's.
    case motionRolesSwapped
    /// `host.decision_values` names the first motion role that is not among them.
    case decisionValuesMoved
    /// The reply's first declared field value changed (halved, or 1 for 0).
    case replyFieldChanged

    package var description: String {
        switch self {
        case .thresholdUlp(let d): return d > 0 ? "threshold one ulp up" : "threshold one ulp down"
        case .windowPercent(let p): return "window × \(p) %"
        case .staleJudged: return "stale samples judged"
        case .quantityAxisSwapped: return "quantity on another axis"
        case .rangesRemoved: return "ranges removed"
        case .valuesUnchecked: return "ranges and finiteness removed"
        case .checksRemoved: return "checks removed"
        case .repeatedMembersLast: return "a repeated member's last value taken"
        case .maximumLengthRaised(let n): return "max_length + \(n)"
        case .byteOrderSwapped: return "byte order swapped"
        case .motionRolesSwapped: return "two motion roles swapped"
        case .decisionValuesMoved: return "decision values of another role"
        case .replyFieldChanged: return "a reply field of another value"
        }
    }
}

/// An active case derived from a declaration, with the faults it is built to catch.
package protocol DerivedActiveCase: ActiveCase {
    var faults: [GeneratedFault] { get }
}

/// What every derived case shares: the messages the declaration makes, the host behaviour,
/// and where the host's decisions show (replies on the wire, or observations).
struct DerivedContext: Sendable {
    let messages: DerivedMessages
    let host: DeclaredHost
    /// The host replies to each decision on the wire: decisions are judged from replies.
    var repliesShowDecisions: Bool { host.replyKind != nil }

    /// When each decision about `controller` showed: its valid replies, or its observations.
    func decisionTimes(_ p: LiveProbe, on controller: Int) -> [Int64] {
        if repliesShowDecisions {
            return p.replies.filter { r in
                guard r.controller == controller, !r.isTruncated else { return false }
                let facts = p.wireProtocol.facts(r.payload)
                return facts.isValid && facts.direction == .hostToController
            }.map(\.monoNs)
        }
        return p.observed(host.decision, on: controller).map(\.monoNs)
    }

    /// How long after its last message a case waits for decisions it must not see.
    /// Capped, so a deadline flag of an hour cannot make every case wait three.
    func settleMs(_ parameters: SuiteParameters) -> Int { min(max(150, Int(parameters.replyDeadlineMs * 3)), 2_000) }

    /// A fresh salt per message, so ids never repeat within or across cases.
    func salt(_ p: LiveProbe, _ k: Int) -> UInt64 { p.t0 &* 1_000 &+ UInt64(k) }
}

/// What a derived case expects of each of its controllers, and the one way every derived case
/// judges it: no way to see decisions is INCONCLUSIVE, counts that differ FAIL with evidence.
struct DecisionExpectations {
    struct Item {
        var label: String
        var controller: Int
        var decisions: Int
        /// Decisions seen before this monotonic time are another message's (an invalid one's).
        var notBeforeNs: Int64?
        /// The host may close this controller's connection (its stream cannot be framed, or ended).
        var mayClose = false
    }
    var items: [Item] = []

    mutating func expect(_ label: String, _ controller: Int, decisions: Int, notBeforeNs: Int64? = nil, mayClose: Bool = false) {
        items.append(Item(label: label, controller: controller, decisions: decisions, notBeforeNs: notBeforeNs, mayClose: mayClose))
    }

    /// Waits the settling time for decisions that must not come, then judges.
    func settleAndJudge(_ info: CaseInfo, _ context: DerivedContext, _ p: LiveProbe, _ parameters: SuiteParameters) -> CaseResult {
        p.collect(forMs: context.settleMs(parameters)) { _ in p.hostFailure != nil }
        return judge(info, context, p)
    }

    func judge(_ info: CaseInfo, _ context: DerivedContext, _ p: LiveProbe, measurements: [Measurement] = [],
               extraFailures: [String] = []) -> CaseResult {
        var measurements = measurements
        var failures: [String] = []
        var seen = 0
        for item in items {
            let times = context.decisionTimes(p, on: item.controller)
            seen += times.count
            let early = item.notBeforeNs.map { t in times.filter { $0 < t }.count } ?? 0
            if early > 0 {
                failures.append("\(item.label): expected no \(context.host.decision) before the valid message that followed, found \(early)")
            } else if times.count != item.decisions {
                failures.append("\(item.label): expected \(item.decisions) \(context.host.decision)(s), found \(times.count)")
            }
        }
        measurements += [Measurement("probes", Double(items.count)), Measurement("decisions_seen", Double(seen)),
                         Measurement("probes_wrong", Double(failures.count))]
        if !context.repliesShowDecisions {
            if !p.canObserve {
                var missing = p.observationsMissing("the host's \(context.host.decision)s") ?? "no observation channel"
                if p.target.controllersAreConnections {
                    // All TCP shows: whether the host kept each connection open that it must.
                    let closed = items.filter { !$0.mayClose && p.closedByHost[$0.controller] != nil }
                    if !closed.isEmpty {
                        return CaseResult(info, .fail("the host closed \(closed.count) connection(s) it must keep open"), measurements: measurements,
                                          evidence: evidence(closed) { "\($0.label): expected the connection to stay open, found it closed by the host" })
                    }
                    missing += "; the connection stayed open (no FIN or RST), which is all TCP shows"
                }
                return CaseResult(info, .inconclusive(missing), measurements: measurements)
            }
            if let verdict = p.unjudgedObservations("the host's \(context.host.decision)s") {
                return CaseResult(info, verdict, measurements: measurements)
            }
        }
        failures += extraFailures
        guard failures.isEmpty else {
            var shown = evidence(failures) { $0 }
            if !context.repliesShowDecisions {
                // Where the decisions went, by stdio controller id: a host that mixes up ids shows here.
                let ids = p.controllerIDs
                var byID: [Int: Int] = [:]
                for o in p.observations where o.observation.decision == context.host.decision { byID[ids[o.controller], default: 0] += 1 }
                let expected = items.map { "\(ids[$0.controller]): \($0.decisions)" }.joined(separator: ", ")
                let found = byID.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
                shown.append("\(context.host.decision)s expected by controller id (\(expected)); reported under controller id (\(found.isEmpty ? "none" : found))")
            }
            return CaseResult(info, .fail("\(failures.count) of \(items.count + extraFailures.count) probes went wrong; the first: \(failures[0])"),
                              measurements: measurements, evidence: shown)
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}

extension LiveProbe {
    /// The wall clock in ms, newer than anything this probe sent.
    func nowStamp() -> UInt64 { max(UInt64(SystemClock.realtimeNs() / 1_000_000), newestSenderTimeMs + 1, t0) }

    /// Waits until a monotonic time, collecting what comes back meanwhile.
    func wait(untilNs deadline: Int64) { collect(untilMonotonicNs: deadline) { _ in self.hostFailure != nil } }
}

// MARK: The threshold

/// The threshold's edges in the quantity's own type: at τ and one ulp below no decision, one ulp
/// above a decision, and a clearly deciding value reported with the values the declaration names.
struct DerivedEdgeThresholdCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    /// Values are judged where the host reports them: observations with declared `decision_values`.
    var faults: [GeneratedFault] {
        [.declaration(.thresholdUlp(1)), .declaration(.thresholdUlp(-1)), .declaration(.quantityAxisSwapped)]
            + (context.repliesShowDecisions || context.host.decisionValues.isEmpty ? [] : [.declaration(.decisionValuesMoved)])
    }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        guard let (notAbove, above) = m.edges(of: tau), let q = m.quantityField else {
            return CaseResult(info, .error("the declaration's quantity has no field in the sample kind"))
        }
        let below = m.kind.fields[q].type == .f32 ? Double(Float32(notAbove).nextDown) : m.kind.fields[q].type.isIntegral ? notAbove - 1 : notAbove.nextDown
        let probes: [(String, Double, Int)] = [
            ("one ulp below τ (\(below))", below, 0), ("at τ or the last value not above it (\(notAbove))", notAbove, 0),
            ("one ulp above τ (\(above))", above, 1), ("well above τ (\(m.deciding(tau)))", m.deciding(tau), 1),
        ]
        let controllers = try p.controllers(probes.count)
        var expectations = DecisionExpectations()
        // Other motion values distinct and nonzero, so reported values show which field they came from.
        var motion: [Int: Double] = [:]
        for (i, f) in m.kind.fields.enumerated() where i != q { if case .motion? = f.role { motion[i] = m.representable(0.125 * Double(i % 5 + 1), in: f) } }
        var sentValues: [[Double]] = []
        for (k, (label, value, decisions)) in probes.enumerated() {
            let c = controllers.lowerBound + k
            p.send(m.sample(senderTimeMs: p.nowStamp(), quantity: value, motion: motion, salt: context.salt(p, k)), from: c)
            expectations.expect("message \(label)", c, decisions: decisions)
            sentValues.append(context.host.decisionValues.map { role in
                if let i = m.kind.fields.firstIndex(where: { $0.role == role }) { return i == q ? value : motion[i] ?? 0 }
                return 0
            })
        }
        p.collect(forMs: context.settleMs(parameters)) { _ in p.hostFailure != nil }
        // A decision's values, when reported, are the message's at the field's precision (or contain them).
        var wrongValues: [String] = []
        if !context.repliesShowDecisions {
            for (k, (label, _, decisions)) in probes.enumerated() where decisions > 0 {
                for o in p.observed(context.host.decision, on: controllers.lowerBound + k) where !o.observation.values.isEmpty {
                    let expected = sentValues[k]
                    let reported = o.observation.values
                    let matches = reported.count == expected.count
                        ? zip(reported, expected).allSatisfy { Self.same($0, $1) }
                        : expected.allSatisfy { e in reported.contains { Self.same($0, e) } }
                    if !matches {
                        wrongValues.append("message \(label): expected values \(expected) (\(context.host.decisionValues.map(\.description).joined(separator: ", "))), the host reported \(reported)")
                    }
                }
            }
        }
        return expectations.judge(info, context, p, extraFailures: wrongValues)
    }

    /// Equal at float32 precision: what every declared number survives.
    static func same(_ a: Double, _ b: Double) -> Bool { a == b || Float32(a) == Float32(b) }
}

/// The window probed on both sides and inside: a second trigger at R − δ and at R/4, R/2 and 3R/4
/// makes no decision; one at R + δ (at R on the sender's clock) does; a trigger the window
/// suppressed does not restart it. On the sender's clock the stamps say it exactly (δ = 1 ms); on
/// the host's arrival clock the messages are sent on time (δ = R/20), and a run the machine
/// delayed past δ/2 is repeated, up to three times.
struct DerivedEdgeWindowCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    let senderClock: Bool
    var faults: [GeneratedFault] { [.declaration(.windowPercent(90)), .declaration(.windowPercent(110)), .host("shared-state")] }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let r = Int64(parameters.rule.refractoryMs)
        guard r >= 40 else { return CaseResult(info, .inconclusive("a window of \(r) ms is too short to probe on both sides")) }
        // On the arrival clock the probe waits about 2R: a declared window of up to an hour must not hold the run that long.
        guard senderClock || r <= 10_000 else {
            return CaseResult(info, .inconclusive("an arrival-clock window of \(r) ms is longer than the 10,000 ms this case waits in real time"))
        }
        let delta = senderClock ? 1 : max(r / 20, 5)
        // Each controller's triggers and quiet messages, as offsets from its first trigger, and the decisions they owe.
        let at = senderClock ? r : r + delta
        let quiet = stride(from: r / 8, to: r, by: Int(r / 8)).map { $0 + 1 }
        let plans: [Plan] = [
            Plan(label: "second trigger at R − δ (\(r - delta) ms)", triggers: [0, r - delta], decisions: 1),
            Plan(label: "second trigger at \(senderClock ? "R" : "R + δ") (\(at) ms), a third R/2 after it, a fourth \(senderClock ? "R" : "R + δ") after it (the window restarts at each decision)",
                 triggers: [0, at, at + r / 2, 2 * at], decisions: 3),
            Plan(label: "triggers at R/4, R/2, 3R/4 among quiet messages every R/8 (the window is a time, not a count of messages)",
                 triggers: [0, r / 4, r / 2, 3 * r / 4], quiet: quiet, decisions: 1),
            Plan(label: "triggers at R − δ, then \(senderClock ? "R" : "R + δ") (a suppressed trigger does not restart the window)",
                 triggers: [0, r - delta, at], decisions: 2),
        ]
        var last: CaseResult?
        for attempt in 1...(senderClock ? 1 : 3) {
            let (result, onTime) = try once(p, parameters, plans, delta: delta)
            last = result
            if senderClock || onTime { break }
            if attempt < 3 { last?.evidence.append("attempt \(attempt): a message left more than δ/2 late; repeated") }
        }
        return last!
    }

    struct Plan {
        var label: String
        var triggers: [Int64]
        var quiet: [Int64] = []
        var decisions: Int
    }

    private func once(_ p: LiveProbe, _ parameters: SuiteParameters, _ plans: [Plan], delta: Int64) throws(SocketError) -> (CaseResult, Bool) {
        let m = context.messages
        let tau = parameters.rule.threshold
        let controllers = try p.controllers(plans.count)
        var expectations = DecisionExpectations()
        // Every send, in time order: (offset ms, plan, trigger or not).
        var sends: [(offset: Int64, plan: Int, trigger: Bool)] = []
        for (k, plan) in plans.enumerated() {
            sends += plan.triggers.map { ($0, k, true) } + plan.quiet.map { ($0, k, false) }
        }
        sends.sort { ($0.offset, $0.plan) < ($1.offset, $1.plan) }
        let base = p.nowStamp()
        let startNs = SystemClock.monotonicNs()
        var firstSentNs: [Int: Int64] = [:]
        var onTime = true
        for (n, send) in sends.enumerated() {
            if !senderClock { p.wait(untilNs: startNs + send.offset * 1_000_000) }
            let c = controllers.lowerBound + send.plan
            let stamp = senderClock ? base + UInt64(send.offset) : p.nowStamp()
            let now = SystemClock.monotonicNs()
            if send.offset == 0 { firstSentNs[send.plan] = now } else if !senderClock, send.trigger, let first = firstSentNs[send.plan] {
                // Late by more than δ/2 from the plan: this run cannot tell R − δ from R + δ.
                if abs((now - first) / 1_000_000 - send.offset) > delta / 2 { onTime = false }
            }
            p.send(m.sample(senderTimeMs: stamp, quantity: send.trigger ? m.deciding(tau) : m.quiet(tau), salt: context.salt(p, n)), from: c)
        }
        for (k, plan) in plans.enumerated() { expectations.expect(plan.label, controllers.lowerBound + k, decisions: plan.decisions) }
        p.collect(forMs: context.settleMs(parameters)) { _ in p.hostFailure != nil }
        let measurements = [Measurement("window", Double(parameters.rule.refractoryMs), "ms"), Measurement("delta", Double(delta), "ms")]
        return (expectations.judge(info, context, p, measurements: measurements), onTime)
    }
}

/// State per controller: triggers from several controllers inside one another's windows each
/// decide once, and, on a byte stream, a record cut by another controller's whole record is
/// reassembled on its own stream.
struct DerivedIsolationCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    /// Per-controller state is a threshold host's; a per-controller buffer is a stream host's.
    var faults: [GeneratedFault] {
        (context.messages.threshold != nil ? [.host("shared-state")] : []) + (context.messages.isStream ? [.host("shared-buffer")] : [])
    }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        let isApply = m.threshold == nil
        let count = m.isStream ? 10 : 4
        let controllers = try p.controllers(count)
        var expectations = DecisionExpectations()
        var n = 0
        func sample(_ c: Int) -> [UInt8] {
            n += 1
            return m.sample(senderTimeMs: p.nowStamp(), quantity: isApply ? nil : m.deciding(tau), motion: isApply ? m.applyValues(seed: UInt64(c)) : [:],
                            salt: context.salt(p, n))
        }
        // Triggers from each controller in turn, each inside the others' windows; then each again.
        for round in 0..<2 {
            for k in 0..<4 {
                p.send(sample(controllers.lowerBound + k), from: controllers.lowerBound + k)
                p.collect(forMs: 2)
            }
            if round == 0 { p.collect(forMs: 5) }
        }
        for k in 0..<4 {
            expectations.expect("controller \(k + 1) of 4 triggering in turn, twice inside its window", controllers.lowerBound + k, decisions: isApply ? 2 : 1)
        }
        if m.isStream {
            // Interleaved partial records: A's record cut 1 byte in, halfway and 1 byte before its end, B's whole record between the parts.
            for (pair, fraction) in [0.0, 0.5, 1.0].enumerated() {
                let a = controllers.lowerBound + 4 + 2 * pair, b = a + 1
                let recordA = sample(a), recordB = sample(b)
                let cut = max(1, min(recordA.count - 1, fraction == 0 ? 1 : fraction == 1 ? recordA.count - 1 : recordA.count / 2))
                p.send(Array(recordA[..<cut]), from: a)
                p.collect(forMs: 2)
                p.send(recordB, from: b)
                p.collect(forMs: 2)
                p.send(Array(recordA[cut...]), from: a)
                expectations.expect("a record cut \(cut) bytes in by another controller's whole record", a, decisions: 1)
                expectations.expect("a whole record sent between the parts of another's cut \(cut) bytes in", b, decisions: 1)
            }
        }
        return expectations.settleAndJudge(info, context, p, parameters)
    }
}

/// Stale, duplicate and out-of-order samples (PD-HOST-7): after a sample stamped s + 100, triggers
/// stamped s + 50 and s + 100 are ignored entirely, and one a window after s + 50 decides once.
struct DerivedStaleCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    var faults: [GeneratedFault] { [.declaration(.staleJudged)] }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        let r = parameters.rule.refractoryMs
        let controllers = try p.controllers(2)
        let c = controllers.lowerBound, control = controllers.lowerBound + 1
        let s = p.nowStamp()
        let plan: [(UInt64, Double)] = [(s + 100, m.quiet(tau)), (s + 50, m.deciding(tau)), (s + 100, m.deciding(tau)), (s + 60 + r, m.deciding(tau))]
        for (k, (stamp, value)) in plan.enumerated() {
            // Forged stamps ahead of the wall clock by up to a window: later cases start after them.
            p.send(m.sample(senderTimeMs: stamp, quantity: value, salt: context.salt(p, k)), from: c)
            p.collect(forMs: 3)
        }
        p.send(m.sample(senderTimeMs: s + 100, quantity: m.deciding(tau), salt: context.salt(p, 9)), from: control)
        var expectations = DecisionExpectations()
        expectations.expect("a trigger older than the newest sample, one as old, then one a window after the older: only the last decides", c, decisions: 1)
        expectations.expect("a fresh controller's trigger (the control)", control, decisions: 1)
        return expectations.settleAndJudge(info, context, p, parameters)
    }
}

// MARK: Invalid input

/// Each invalid message of one category the declaration implies, from its own controller, carrying
/// a value the host would decide on were the message valid: no decision; then a valid deciding
/// message from the same controller: exactly one, after it (the invalid one changed no state).
struct DerivedInvalidInputCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    let category: DerivedMessages.Invalid.Category
    let probes: [DerivedMessages.Invalid]
    let faults: [GeneratedFault]

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        let controllers = try p.controllers(probes.count)
        // A probe that breaks its stream gets a fresh controller for the valid message that follows.
        let followers = try p.controllers(probes.filter(\.breaksStream).count)
        var follower: [Int: Int] = [:]
        for (k, f) in zip(probes.indices.filter { probes[$0].breaksStream }, followers) { follower[k] = f }
        var validSentNs: [Int64] = []
        for (k, probe) in probes.enumerated() {
            p.send(probe.bytes(p.nowStamp(), context.salt(p, 2 * k)), from: controllers.lowerBound + k)
            p.collect(forMs: 2)
        }
        p.collect(forMs: 40) { _ in p.hostFailure != nil }
        for k in probes.indices {
            validSentNs.append(SystemClock.monotonicNs())
            p.send(m.sample(senderTimeMs: p.nowStamp(), quantity: m.threshold == nil ? nil : m.deciding(tau), salt: context.salt(p, 2 * k + 1)),
                   from: follower[k] ?? controllers.lowerBound + k)
            p.collect(forMs: 2)
        }
        var expectations = DecisionExpectations()
        for (k, probe) in probes.enumerated() {
            if let f = follower[k] {
                expectations.expect(probe.label + " (a stream that cannot be framed further)", controllers.lowerBound + k, decisions: 0, mayClose: true)
                expectations.expect("a fresh controller's valid message after it", f, decisions: 1)
            } else {
                expectations.expect(probe.label, controllers.lowerBound + k, decisions: 1, notBeforeNs: validSentNs[k])
            }
        }
        return expectations.settleAndJudge(info, context, p, parameters)
    }
}

// MARK: Byte streams

/// Records across reads: three in one write (only the last deciding), one split over two writes,
/// one written a byte at a time.
struct DerivedStreamReadsCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    var faults: [GeneratedFault] { [.host("one-record-per-read")] }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        let isApply = m.threshold == nil
        let controllers = try p.controllers(3)
        var n = 0
        func record(_ value: Double?) -> [UInt8] {
            n += 1
            return m.sample(senderTimeMs: p.nowStamp() + UInt64(n), quantity: value, motion: isApply ? m.applyValues(seed: UInt64(n)) : [:], salt: context.salt(p, n))
        }
        let c0 = controllers.lowerBound, c1 = c0 + 1, c2 = c0 + 2
        p.send(record(isApply ? nil : m.quiet(tau)) + record(isApply ? nil : m.quiet(tau)) + record(isApply ? nil : m.deciding(tau)), from: c0)
        let split = record(isApply ? nil : m.deciding(tau))
        p.send(Array(split[..<(split.count / 2)]), from: c1)
        p.collect(forMs: 10)
        p.send(Array(split[(split.count / 2)...]), from: c1)
        for byte in record(isApply ? nil : m.deciding(tau)) {
            p.send([byte], from: c2)
            p.collect(forMs: 1)
        }
        var expectations = DecisionExpectations()
        expectations.expect(isApply ? "three records in one write" : "two quiet records and a deciding one in one write", c0, decisions: isApply ? 3 : 1)
        expectations.expect("a record split over two writes 10 ms apart", c1, decisions: 1)
        expectations.expect("a record written a byte at a time", c2, decisions: 1)
        return expectations.settleAndJudge(info, context, p, parameters)
    }
}

/// A record cut at the end of its stream is not a message: a deciding record missing its last byte,
/// then the end of the stream, makes no decision; a whole one before the end does.
struct DerivedCutAtEndCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    var faults: [GeneratedFault] { [.host("pad-cut-record")] }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        let value = m.threshold == nil ? nil : m.deciding(tau)
        let controllers = try p.controllers(2)
        let cut = controllers.lowerBound, whole = cut + 1
        // A record whose last byte is 0 where one can be found (a check makes it vary with the values): a host that pads
        // the cut with zeros then reads the very record, and decides, instead of a record its check would drop.
        let stamp = p.nowStamp()
        var record = m.sample(senderTimeMs: stamp, quantity: value, motion: m.threshold == nil ? m.applyValues(seed: 7) : [:], salt: context.salt(p, 0))
        let delimited: Bool = { if case .delimiter = m.declared.declared.framing { return true } else { return false } }()
        for k in 1..<4_096 where record.last != 0 && !delimited {
            record = m.sample(senderTimeMs: stamp + UInt64(k % 64), quantity: value, motion: m.threshold == nil ? m.applyValues(seed: UInt64(7 + k)) : [:],
                              salt: context.salt(p, k))
        }
        p.send(Array(record.dropLast()), from: cut)
        p.send(m.sample(senderTimeMs: p.nowStamp(), quantity: value, motion: m.threshold == nil ? m.applyValues(seed: 8) : [:], salt: context.salt(p, 1)), from: whole)
        p.collect(forMs: 10)
        guard p.endStream(of: cut), p.endStream(of: whole) else {
            return CaseResult(info, .inconclusive("this link cannot end one controller's stream"))
        }
        var expectations = DecisionExpectations()
        expectations.expect("a deciding record missing its last byte, then the end of the stream", cut, decisions: 0, mayClose: true)
        expectations.expect("a whole deciding record, then the end of the stream (the control)", whole, decisions: 1, mayClose: true)
        return expectations.settleAndJudge(info, context, p, parameters)
    }
}

// MARK: Apply hosts

/// Each valid sample applied and reported with its values, as the message carried them at the
/// declared type's precision, in the order the declaration names them.
struct DerivedApplyValuesCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    /// Byte order swapped shows in the values only where no check makes the host drop every message first.
    var faults: [GeneratedFault] {
        let binary: Bool = { if case .binary = context.messages.kind.encoding { return true } else { return false } }()
        let checked = context.messages.kind.fields.contains { $0.check != nil }
        return [.declaration(.motionRolesSwapped)] + (binary && !checked ? [.declaration(.byteOrderSwapped)] : [])
    }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let controllers = try p.controllers(8)
        var expected: [[Double]] = []
        for (k, c) in controllers.enumerated() {
            let motion = m.applyValues(seed: 0x5eed &+ UInt64(k))
            p.send(m.sample(senderTimeMs: p.nowStamp(), quantity: nil, motion: motion, salt: context.salt(p, k)), from: c)
            expected.append(context.host.decisionValues.map { role in m.kind.fields.firstIndex { $0.role == role }.flatMap { motion[$0] } ?? 0 })
            p.collect(forMs: 2)
        }
        var expectations = DecisionExpectations()
        for k in controllers.indices { expectations.expect("sample \(k + 1) with values \(expected[k])", controllers.lowerBound + k, decisions: 1) }
        p.collect(forMs: context.settleMs(parameters)) { _ in p.hostFailure != nil }
        var wrong: [String] = []
        for (k, c) in controllers.enumerated() {
            for o in p.observed(context.host.decision, on: c) {
                let reported = o.observation.values
                if reported.count != expected[k].count || !zip(reported, expected[k]).allSatisfy({ DerivedEdgeThresholdCase.same($0, $1) }) {
                    wrong.append("sample \(k + 1): expected values \(expected[k]) (\(context.host.decisionValues.map(\.description).joined(separator: ", "))), the host reported \(reported)")
                }
            }
        }
        return expectations.judge(info, context, p, extraFailures: wrong)
    }
}

// MARK: Load

/// Many controllers at the declared rate at once, each with one deciding sample at a seeded
/// moment among quiet ones: each decides exactly once.
struct DerivedLoadCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    let controllersCount: Int
    let seconds: Double
    var faults: [GeneratedFault] { [.host("shared-state")] }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        let controllers = try p.controllers(controllersCount)
        let rate = max(1, min(context.messages.declared.nominalRateHz, 100))
        let ticks = max(4, Int(seconds * rate))
        var random = SeededGenerator(seed: 0x10ad)
        let triggerTick = controllers.map { _ in 1 + Int(random.next() % UInt64(ticks - 2)) }
        let start = SystemClock.monotonicNs()
        var n = 0
        for tick in 0..<ticks {
            p.wait(untilNs: start + Int64(Double(tick) / rate * 1e9))
            for (k, c) in controllers.enumerated() {
                n += 1
                p.send(m.sample(senderTimeMs: p.nowStamp(), quantity: tick == triggerTick[k] ? m.deciding(tau) : m.quiet(tau), salt: context.salt(p, n)), from: c)
            }
        }
        var expectations = DecisionExpectations()
        for (k, c) in controllers.enumerated() { expectations.expect("controller \(k + 1), deciding at message \(triggerTick[k] + 1) of \(ticks)", c, decisions: 1) }
        p.collect(forMs: context.settleMs(parameters)) { _ in p.hostFailure != nil }
        return expectations.judge(info, context, p, measurements: [Measurement("controllers", Double(controllersCount)),
                                                                   Measurement("messages", Double(n)), Measurement("rate", rate, "Hz")])
    }
}

extension DerivedMessages {
    /// Seeded values for every motion field, within its range and at its type's precision.
    func applyValues(seed: UInt64) -> [Int: Double] {
        var random = SeededGenerator(seed: seed &+ 0xa991)
        var out: [Int: Double] = [:]
        for (i, f) in kind.fields.enumerated() {
            guard case .motion? = f.role else { continue }
            let range = f.range ?? -1...1
            let span = range.upperBound - range.lowerBound
            out[i] = representable(range.lowerBound + span * (0.05 + 0.9 * random.unit()), in: f)
        }
        return out
    }
}

// MARK: Replies

/// Each deciding message, from its own controller, gets exactly one reply of the declared reply kind
/// (PD-REPLY-2): it echoes the message's sender time, carries the declared field values (PD-REPLY-4,
/// compared at float32 precision) and leaves within the deadline (PD-REPLY-3: the declaration's
/// `deadline_ms`, else the run's `--reply-deadline-ms`); at most 2 late, for a loaded machine.
struct DerivedReplyCase: DerivedActiveCase {
    let info: CaseInfo
    let context: DerivedContext
    var faults: [GeneratedFault] { [.declaration(.replyFieldChanged), .host("late")] }

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let m = context.messages
        let tau = parameters.rule.threshold
        guard let replyKind = context.host.replyKind else { return CaseResult(info, .error("the declaration has no reply")) }
        let deadlineMs = context.host.replyDeadlineMs ?? parameters.replyDeadlineMs
        let controllers = try p.controllers(10)
        var stamps: [UInt64] = []
        for (k, c) in controllers.enumerated() {
            let stamp = p.nowStamp()
            stamps.append(stamp)
            p.send(m.sample(senderTimeMs: stamp, quantity: m.deciding(tau), salt: context.salt(p, k)), from: c)
            p.collect(forMs: 25) { _ in p.hostFailure != nil }
        }
        // A declared deadline may be an hour: wait at most the case's own timeout for replies that do not come.
        p.collect(forMs: min(max(200, Int(deadlineMs * 4)), info.timeoutMs)) { replies in
            p.hostFailure != nil || controllers.allSatisfy { c in replies.contains { $0.controller == c } }
        }
        let kind = m.declared.declared.kinds[replyKind]
        var failures: [String] = [], late: [String] = [], delays: [Double] = []
        for (k, c) in controllers.enumerated() {
            let mine = p.replies.filter { $0.controller == c }
            guard mine.count == 1, let reply = mine.first else {
                failures.append("message \(k + 1): expected one \(kind.name) reply, found \(mine.count)")
                continue
            }
            guard !reply.isTruncated, let decoded = try? reply.payload.withUnsafeBytes({ bytes throws(WireError) in try m.declared.decode(bytes) }) else {
                failures.append("message \(k + 1): expected a valid \(kind.name), found \(reply.length) bytes that are not one (\(Hex.encode(reply.payload.prefix(32))))")
                continue
            }
            guard decoded.kind == replyKind else {
                failures.append("message \(k + 1): expected a \(kind.name) reply, found a \(m.declared.declared.kinds[decoded.kind].name)")
                continue
            }
            let facts = m.declared.facts(of: decoded)
            if facts.echoTimeMs != stamps[k] {
                failures.append("message \(k + 1): expected the reply to echo \(stamps[k]), it echoes \(facts.echoTimeMs.map(String.init) ?? "nothing")")
            }
            for (i, field) in kind.fields.enumerated() {
                guard let want = context.host.replyFields[field.name] else { continue }
                let got = decoded.values[i]?.double
                if got.map({ !DerivedEdgeThresholdCase.same($0, want) }) ?? true {
                    failures.append("message \(k + 1): expected \(field.name) = \(want), found \(got.map { String($0) } ?? "none")")
                }
            }
            if let delay = p.echoes.first(where: { $0.controller == c })?.delayNs.map({ Double($0) / 1e6 }) {
                delays.append(delay)
                if delay > deadlineMs { late.append("message \(k + 1): reply after \((delay * 10).rounded() / 10) ms, past \(deadlineMs) ms") }
            }
        }
        if late.count > 2 { failures += late }
        let sorted = delays.sorted()
        var measurements = [Measurement("messages", Double(controllers.count)), Measurement("replies", Double(p.replies.count)),
                            Measurement("late", Double(late.count)), Measurement("deadline", deadlineMs, "ms")]
        if let worst = sorted.last { measurements += [Measurement("delay_p50", sorted[sorted.count / 2], "ms"), Measurement("delay_max", worst, "ms")] }
        guard failures.isEmpty else {
            return CaseResult(info, .fail("\(failures.count) of \(controllers.count) replies went wrong; the first: \(failures[0])"),
                              measurements: measurements, evidence: evidence(failures) { $0 })
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}
