import KinetraceSupport
import KinetraceTransport
import KinetraceWire

// KeepCalm's host answers nothing on the wire: its jumps show only on the
// observation channel (SA-OBS-*), so every case here judges observations and
// is INCONCLUSIVE, never PASS, when a host reports none.

/// The jumps a host reported about one controller, each matched to the spike whose y
/// it reports. KC-OBS-2 lets a jump carry no values, [y], or [x, y, z] of the message's
/// vector: one without values is the jump of the newest message its controller sent
/// before it arrived.
struct JumpLog {
    var matched: [Double: Int] = [:]
    /// Jumps whose y is none of the spikes the case expects to jump.
    var unexpected: [LiveProbe.Observed] = []
    var total = 0

    init(_ p: LiveProbe, controller: Int, expected: Set<Double>) {
        for jump in p.observed("jump", on: controller) {
            total += 1
            if let y = Self.reportedY(jump, p), expected.contains(y) {
                matched[y, default: 0] += 1
            } else {
                unexpected.append(jump)
            }
        }
    }

    /// The y a jump stands for: the one its values report, or, without values, the y of
    /// the message that caused it; nil for values of another form.
    static func reportedY(_ jump: LiveProbe.Observed, _ p: LiveProbe) -> Double? {
        let values = jump.observation.values
        switch values.count {
        case 1: return values[0]
        case 3: return values[1]
        case 0:
            guard let bytes = p.newestSent(by: jump.controller, before: jump.monoNs) else { return nil }
            let facts = p.wireProtocol.facts(bytes)
            return facts.isValid ? facts.motion?.own?.y : nil
        default: return nil
        }
    }

    static func describe(_ jump: LiveProbe.Observed) -> String {
        let values = jump.observation.values
        switch values.count {
        case 0: return "a jump reporting no values"
        case 1: return "a jump with y = \(values[0])"
        case 3: return "a jump with (x, y, z) = (\(values[0]), \(values[1]), \(values[2]))"
        default: return "a jump with values \(values) (KC-OBS-2 allows none, [y] or [x, y, z])"
        }
    }
}

/// Waits for the jump the spike `y` owes on `controller` (or the host's end); over a
/// socket, long enough for a dead host's port to refuse the next datagram.
func awaitJump(_ p: LiveProbe, controller: Int, y: Double, timeoutMs: Int) {
    awaitJumps(p, [(controller, y)], timeoutMs: timeoutMs)
}

/// Waits for every jump owed, each spike `y` on its `controller`, as `awaitJump` does for one.
func awaitJumps(_ p: LiveProbe, _ owed: [(controller: Int, y: Double)], timeoutMs: Int) {
    if p.canObserve {
        p.collect(forMs: timeoutMs) { _ in
            p.hostFailure != nil || owed.allSatisfy { o in p.observed("jump", on: o.controller).contains { JumpLog.reportedY($0, p) == o.y } }
        }
        p.collect(forMs: 50)  // stragglers: a second jump, say
    } else {
        p.collect(forMs: 300) { _ in p.refused }
    }
}

/// A plain spike from a fresh controller, which a host with an observation channel
/// reports: it tells a host that reports nothing at all (INCONCLUSIVE, SA-OBS-5) from
/// one that missed only what the case owed (FAIL).
func sendWitness(_ p: LiveProbe, _ m: inout KeepCalmMessages, timeoutMs: Int) throws(SocketError) {
    guard p.canObserve, p.hostFailure == nil, p.observations.isEmpty else { return }
    let w = try p.controllers(1).lowerBound
    let y = m.spike(999)
    p.send(m.message(y: y), from: w)
    awaitJump(p, controller: w, y: y, timeoutMs: timeoutMs)
}

/// Hostile messages from one controller, then, after a pause, one valid spike
/// that must jump: a host that took any hostile message as a jump reports it
/// (and its latch would silence the spike), and a host that died or hung on
/// one reports nothing for the spike (KC-HOST-3).
struct HostileBurst {
    let info: CaseInfo
    /// What the messages are, for verdicts: "invalid JSON texts".
    let what: String
    let seed: UInt64
    /// The hostile messages, given the case's messages; spike levels from 1 on are theirs to use.
    let make: @Sendable (inout KeepCalmMessages) -> [[UInt8]]
    /// The valid spike sent last, given its y (canonical by default).
    var positive: @Sendable (inout KeepCalmMessages, Double) -> [UInt8] = { m, y in m.message(y: y) }
    /// What the valid spike is, for verdicts.
    var positiveWhat = "a valid spike"

    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var messages = KeepCalmMessages(rule: parameters.rule, seed: seed)
        let c = try p.controllers(1).lowerBound
        let hostile = make(&messages)
        let mark = messages.spike(0)
        for bytes in hostile { p.send(bytes, from: c) }
        // A pause, so a jump on a hostile message arrives before the spike leaves, values or not.
        p.collect(forMs: 100) { _ in p.refused || p.hostFailure != nil }
        let spikeSentNs = SystemClock.monotonicNs()
        p.send(positive(&messages, mark), from: c)
        awaitJump(p, controller: c, y: mark, timeoutMs: info.timeoutMs)
        if !p.canObserve {
            // A second datagram after the spike: a host that died on it refuses this one.
            p.send(messages.message(y: messages.below), from: c)
            p.collect(forMs: 200) { _ in p.refused }
        }
        try sendWitness(p, &messages, timeoutMs: info.timeoutMs)
        var log = JumpLog(p, controller: c, expected: [mark])
        // A jump reporting no y counts for the spike only if it came after the spike left.
        let late = log.unexpected.filter { $0.observation.values.isEmpty && $0.monoNs >= spikeSentNs }
        if !late.isEmpty {
            log.matched[mark, default: 0] += late.count
            log.unexpected.removeAll { $0.observation.values.isEmpty && $0.monoNs >= spikeSentNs }
        }
        let spikeJumps = log.matched[mark] ?? 0
        let measurements = [Measurement("seed", Double(seed)), Measurement("hostile_messages", Double(hostile.count)),
                            Measurement("jumps_observed", Double(log.total)), Measurement("spike_jumps", Double(spikeJumps))]
        if p.refused {
            return CaseResult(info, .fail("the host stopped listening after \(hostile.count) \(what): ICMP port unreachable"),
                              measurements: measurements,
                              evidence: ["expected the host to drop them and stay live (KC-HOST-3), found its port closed"])
        }
        if let failure = p.hostFailure {
            return CaseResult(info, .fail("the host ended on \(hostile.count) \(what): \(failure)"), measurements: measurements,
                              evidence: ["expected the host to drop them and stay live (KC-HOST-3), found: \(failure)"])
        }
        if !p.canObserve {
            return CaseResult(info, .inconclusive(
                "over \(p.target) a KeepCalm host sends nothing back and has no observation channel: whether it dropped the \(hostile.count) \(what) "
                + "cannot be seen, and its liveness cannot be proven (its port did not answer ICMP port unreachable, the one sign of a dead UDP host, "
                + "but a hung host looks the same); run it with --exec behind the stdio adapter, reporting jumps as observation records, to judge it"),
                measurements: measurements)
        }
        if let verdict = p.unjudgedObservations("whether the host dropped the \(hostile.count) \(what) and stayed live") {
            return CaseResult(info, verdict, measurements: measurements)
        }
        var evidence = evidence(log.unexpected) { "expected no jump on a hostile message, found \(JumpLog.describe($0))" }
        if spikeJumps == 0 {
            evidence.append("expected a jump for \(positiveWhat) (y = \(mark)) sent after them, found none")
        } else if spikeJumps > 1 {
            evidence.append("expected one jump for the valid spike y = \(mark), found \(spikeJumps)")
        }
        guard evidence.isEmpty else {
            let why = !log.unexpected.isEmpty
                ? "jumped on \(log.unexpected.count) of \(hostile.count) \(what)"
                : "no jump for \(positiveWhat) sent right after \(hostile.count) \(what): the host did not stay live, one of them changed its state, or it dropped the spike itself"
            return CaseResult(info, .fail(why), measurements: measurements, evidence: evidence)
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}

/// Not JSON, or not one JSON object: the host drops each and stays live.
package struct KeepCalmInvalidJSONCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-KC-INVALID-JSON", requirements: ["KC-MSG-1", "KC-HOST-3"], level: .must,
        summary: "Datagrams that are not one JSON object (truncated, trailing bytes, two objects, bad UTF-8, deep nesting, comments) are dropped and the host stays live.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    /// Brackets each way in the deeply nested datagram: 30 bytes of envelope, 4,064 of brackets, 1 to close.
    package static let nestingDepth = 2_032
    /// The deeply nested datagram is this long: within KC-SIZE-1's 4,096 bytes.
    package static var nestedLength: Int { #"{"type":"MotionData","nested":"#.utf8.count + 2 * nestingDepth + 1 }

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        try HostileBurst(info: info, what: "datagrams that are not one JSON object", seed: 0x4B43_4A53, make: { m in
            let whole = m.text(KeepCalmMessages.canonical, y: m.spike(1))
            // As deep as fits the 4,096-byte limit (KC-SIZE-1) inside an envelope: a datagram past the
            // limit is dropped for its length and would never test the parser's nesting.
            let deep = String(repeating: "[", count: Self.nestingDepth) + String(repeating: "]", count: Self.nestingDepth)
            var texts: [[UInt8]] = [
                Array("not JSON at all".utf8),
                Array(whole.prefix(whole.count / 2)),
                Array(whole.dropLast()),
                Array("[".utf8) + m.text(KeepCalmMessages.canonical, y: m.spike(2)) + Array("]".utf8),
                Array(#""MotionData""#.utf8), Array("null".utf8), Array("{}".utf8), Array("{".utf8),
                m.text(KeepCalmMessages.canonical, y: m.spike(3)) + Array("x".utf8),
                m.text(KeepCalmMessages.canonical, y: m.spike(4)) + m.text(KeepCalmMessages.canonical, y: m.spike(5)),
                m.text(KeepCalmMessages.canonical, y: m.spike(6)) + [0],
                m.text(#"{'type':'MotionData','payload':{'id':'$ID','type':'Combined','x':0,'y':$Y,'z':0}}"#, y: m.spike(7)),
                m.text(#"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":$Y,"z":0,},}"#, y: m.spike(8)),
                m.text(#"{"type":"MotionData",/* a comment */"payload":{"id":"$ID","type":"Combined","x":0,"y":$Y,"z":0}}"#, y: m.spike(9)),
                m.text(#"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":$Y,"z":0}"#, y: m.spike(10)),
                m.text(#"{"type":"MotionData","payload":{"id":"$ID,"type":"Combined","x":0,"y":$Y,"z":0}}"#, y: m.spike(11)),
                Array(#"{"type":"MotionData","nested":"#.utf8) + Array(deep.utf8) + Array("}".utf8),
            ]
            // Invalid UTF-8 inside the envelope's type.
            var badUTF8 = m.text(KeepCalmMessages.canonical, y: m.spike(12))
            badUTF8.insert(contentsOf: [0xC3, 0x28], at: 18)
            texts.append(badUTF8)
            return texts
        }).run(p, parameters)
    }
}

/// JSON of the wrong shape: a wrong envelope or payload `type`, members missing or mistyped, ids not in UUID form.
package struct KeepCalmSchemaCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-KC-SCHEMA", requirements: ["KC-MSG-1", "KC-MSG-2", "KC-MSG-3", "KC-MSG-4", "KC-HOST-3"], level: .must,
        summary: "Messages with a wrong envelope or payload type, a missing or mistyped member, a member given twice, or an id not an uppercase UUID are dropped (no jump, though y is above τ) and the host stays live.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        try HostileBurst(info: info, what: "messages of the wrong shape", seed: 0x4B43_5343, make: { m in
            let payload = #""id":"$ID","type":"Combined","x":0.03125,"y":$Y,"z":-0.015625"#
            let templates = [
                // The envelope.
                #"{"type":"MotionDatum","payload":{\#(payload)}}"#, #"{"type":"motiondata","payload":{\#(payload)}}"#,
                #"{"type":"","payload":{\#(payload)}}"#, #"{"type":1,"payload":{\#(payload)}}"#, #"{"type":null,"payload":{\#(payload)}}"#,
                #"{"payload":{\#(payload)}}"#, #"{"type":"MotionData"}"#, #"{"type":"MotionData","payload":null}"#,
                #"{"type":"MotionData","payload":[{\#(payload)}]}"#, #"{"type":"MotionData","Payload":{\#(payload)}}"#,
                // The payload's members.
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Gyro","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"combined","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"type":"Combined","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":$Y}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"Y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":"$Y","z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":"0","y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":[$Y],"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":{"value":$Y},"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":true,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":null,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":null,"y":$Y,"z":0}}"#,
                // The id: not an uppercase 8-4-4-4-12 UUID string.
                #"{"type":"MotionData","payload":{"id":42,"type":"Combined","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"","type":"Combined","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"{$ID}","type":"Combined","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID0","type":"Combined","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"not-a-uuid","type":"Combined","x":0,"y":$Y,"z":0}}"#,
            ]
            var texts = templates.enumerated().map { m.text($1, y: m.spike($0 + 1)) }
            let next = templates.count + 1
            let id = m.id().description
            texts.append(m.text(#"{"type":"MotionData","payload":{"id":"\#(id.lowercased())","type":"Combined","x":0,"y":$Y,"z":0}}"#, y: m.spike(next)))
            texts.append(m.text(#"{"type":"MotionData","payload":{"id":"\#(id.filter { $0 != "-" })","type":"Combined","x":0,"y":$Y,"z":0}}"#,
                                y: m.spike(next + 1)))
            // A member given twice at one level is malformed (KC-MSG-3), whichever value a reader would take.
            let twice = [
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":$Y,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"\u0079":0,"y":$Y,"z":0}}"#,
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":$Y,"z":0},"payload":{"id":"$ID","type":"Combined","x":0,"y":$Y,"z":0}}"#,
            ]
            texts += twice.enumerated().map { m.text($1, y: m.spike(next + 2 + $0)) }
            return texts
        }).run(p, parameters)
    }
}

/// Non-finite values (as JSONEncoder's string strategy writes them, or as bare tokens) and numbers past ±100.
package struct KeepCalmValuesCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-KC-VALUES", requirements: ["KC-VALUE-1", "KC-VALUE-2", "KC-HOST-3"], level: .must,
        summary: "Non-finite values (strings \"NaN\", \"Infinity\", \"-inf\", bare NaN tokens, 1e309) and numbers past ±100 (1e300, 100.000001, a 400-digit integer) are dropped and the host stays live.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        try HostileBurst(info: info, what: "messages with non-finite or out-of-range values", seed: 0x4B43_5641, make: { m in
            func with(y: String, x: String = "0.03125", z: String = "0") -> String {
                #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":\#(x),"y":\#(y),"z":\#(z)}}"#
            }
            var ys = [#""NaN""#, #""nan""#, #""Infinity""#, #""-Infinity""#, #""inf""#, #""+inf""#, #""-inf""#,
                      "NaN", "Infinity", "-Infinity", "1e309", "-1e309", "1e300", "150", "100.000001", "-100.5",
                      "1" + String(repeating: "0", count: 400)]
            ys += ["1E+309"]
            var texts = ys.map { m.text(with(y: $0)) }
            // A spike whose other axis breaks a rule.
            for (x, z) in [("1e309", "0"), (#""NaN""#, "0"), ("0", #""Infinity""#), ("-250", "0"), ("0", "1e100")] {
                texts.append(m.text(with(y: "$Y", x: x, z: z), y: m.spike(texts.count + 1)))
            }
            return texts
        }).run(p, parameters)
    }
}

/// Empty and oversized datagrams are dropped; one of exactly the largest size (KC-SIZE-1) is read.
package struct KeepCalmSizeCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-KC-SIZE", requirements: ["KC-SIZE-1", "KC-HOST-3"], level: .must,
        summary: "Empty datagrams and messages over 4,096 bytes (4,097, 9,000 and 65,000 bytes of valid JSON) are dropped; a valid spike of exactly 4,096 bytes then jumps.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    /// `bytes` grown to `size` with whitespace after the opening brace (still one JSON object).
    static func padded(_ bytes: [UInt8], to size: Int) -> [UInt8] {
        guard size > bytes.count else { return bytes }
        var out = bytes
        out.insert(contentsOf: repeatElement(UInt8(ascii: " "), count: size - bytes.count), at: 1)
        return out
    }

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var burst = HostileBurst(info: info, what: "empty or oversized datagrams", seed: 0x4B43_535A, make: { m in
            var texts: [[UInt8]] = [[]]
            for (k, size) in [KeepCalmMotion.maximumSize + 1, 9_000, 65_000].enumerated() {
                texts.append(Self.padded(m.message(y: m.spike(k + 1)), to: size))
            }
            texts.append([])
            return texts
        })
        burst.positive = { m, y in Self.padded(m.message(y: y), to: KeepCalmMotion.maximumSize) }
        burst.positiveWhat = "a valid spike of exactly \(KeepCalmMotion.maximumSize) bytes"
        return try burst.run(p, parameters)
    }
}

/// Valid messages a sender may write that a careless reader refuses: numbers written as integers
/// (JSON has one number type, KC-MSG-2) and an id already used by another message (KC-MSG-5: a
/// host does not reject a repeated id). Each spike comes from a fresh controller and must jump.
package struct KeepCalmValidFormsCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-KC-VALID-FORMS", requirements: ["KC-MSG-2", "KC-MSG-5", "KC-HOST-1"], level: .must,
        summary: "A spike whose numbers are all integers (\"y\":2), and spikes that repeat an earlier message's id, each from a fresh controller, all jump.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var m = KeepCalmMessages(rule: parameters.rule, seed: 0x4B43_5646)
        let controllers = try p.controllers(4)
        var owed: [(controller: Int, y: Double, what: String)] = []
        // The smallest integer above τ past the spike levels' range, within KC-VALUE-2's ±100.
        let integer = (max(parameters.rule.threshold, m.spike(8)) + 1).rounded(.down)
        if integer <= 100 {
            let c = controllers.lowerBound
            owed.append((c, integer, "a spike written with integers only (y = \(Int(integer)))"))
            p.send(m.text(#"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0,"y":\#(Int(integer)),"z":-1}}"#), from: c)
        }
        // One id, three messages: the canonical spike, then two others that reuse it from other controllers.
        let shared = m.id().description
        for k in 0..<3 {
            let c = controllers.lowerBound + 1 + k
            let y = m.spike(k)
            owed.append((c, y, k == 0 ? "the first message with id \(shared)" : "a later message reusing id \(shared)"))
            p.send(Array(#"{"type":"MotionData","payload":{"id":"\#(shared)","type":"Combined","x":0.03125,"y":\#(y.description),"z":-0.015625}}"#.utf8), from: c)
            p.collect(forMs: 30)
        }
        awaitJumps(p, owed.map { ($0.controller, $0.y) }, timeoutMs: info.timeoutMs)
        try sendWitness(p, &m, timeoutMs: info.timeoutMs)
        let measurements = [Measurement("messages", Double(owed.count)), Measurement("jumps_observed", Double(p.observations.count))]
        if let verdict = p.unjudgedObservations("whether the host accepts integers and repeated ids") {
            return CaseResult(info, verdict, measurements: measurements)
        }
        var evidence: [String] = []
        for o in owed {
            let log = JumpLog(p, controller: o.controller, expected: [o.y])
            let found = log.matched[o.y] ?? 0
            if found != 1 { evidence.append("expected one jump for \(o.what), found \(found)") }
            evidence += JumpLogEvidence.unexpected(log)
        }
        guard evidence.isEmpty else {
            return CaseResult(info, .fail("the host refuses valid messages: integers or a repeated id"), measurements: measurements, evidence: evidence)
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}

/// Unknown members are ignored, and member order and whitespace are free (JSONEncoder promises neither).
package struct KeepCalmUnknownMembersCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-KC-UNKNOWN-MEMBERS", requirements: ["KC-MSG-3", "KC-HOST-1"], level: .must,
        summary: "Spikes with unknown members (in the envelope and the payload, nested, with escaped names), members in another order, or pretty-printed, each from a fresh controller, all jump.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    static let variants = [
        #"{"type":"MotionData","sender":"iPhone","payload":{"id":"$ID","type":"Combined","x":0.03125,"y":$Y,"z":-0.015625}}"#,
        #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0.03125,"y":$Y,"z":-0.015625,"timestamp":1767225600.25}}"#,
        #"{"payload":{"z":-0.015625,"y":$Y,"x":0.03125,"type":"Combined","id":"$ID"},"type":"MotionData"}"#,
        #"{"meta":{"a":[1,2,{"b":null}],"c":true},"type":"MotionData","payload":{"extra":[[],{}],"id":"$ID","type":"Combined","x":0.03125,"y":$Y,"z":-0.015625,"flag":false}}"#,
        "{\n  \"payload\" : {\n    \"id\" : \"$ID\",\n    \"type\" : \"Combined\",\n    \"x\" : 0.03125,\n    \"y\" : $Y,\n    \"z\" : -0.015625\n  },\n  \"type\" : \"MotionData\"\n}",
        #"{"type":"MotionData","\u00e9t\u00e9":"\u2603","payload":{"id":"$ID","type":"Combined","x":0.03125,"y":$Y,"z":-0.015625,"n\u00fcll":null}}"#,
    ]

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var m = KeepCalmMessages(rule: parameters.rule, seed: 0x4B43_554D)
        let controllers = try p.controllers(Self.variants.count)
        var owed: [(controller: Int, y: Double)] = []
        for (k, template) in Self.variants.enumerated() {
            let c = controllers.lowerBound + k
            owed.append((c, m.spike(k)))
            p.send(m.text(template, y: m.spike(k)), from: c)
        }
        awaitJumps(p, owed.map { ($0.controller, $0.y) }, timeoutMs: info.timeoutMs)
        try sendWitness(p, &m, timeoutMs: info.timeoutMs)
        let measurements = [Measurement("messages", Double(owed.count)), Measurement("jumps_observed", Double(p.observations.count))]
        if let verdict = p.unjudgedObservations("whether the host accepts messages with unknown members") {
            return CaseResult(info, verdict, measurements: measurements)
        }
        var evidence: [String] = []
        var missed = 0
        for (k, o) in owed.enumerated() {
            let log = JumpLog(p, controller: o.controller, expected: [o.y])
            if log.total == 0 { missed += 1; evidence.append("expected a jump for variant \(k + 1) (\(Self.describe(k))), found none") }
            else if log.total > 1 { evidence.append("expected one jump for variant \(k + 1), found \(log.total)") }
        }
        guard evidence.isEmpty else {
            return CaseResult(info, .fail("\(missed) of \(owed.count) valid spikes with unknown members or another layout did not jump"),
                              measurements: measurements, evidence: evidence)
        }
        return CaseResult(info, .pass, measurements: measurements)
    }

    static func describe(_ k: Int) -> String {
        ["an unknown envelope member", "an unknown payload member", "members in reverse order", "nested unknown members",
         "pretty-printed", "escaped unknown member names"][k]
    }
}

enum JumpLogEvidence {
    static func unexpected(_ log: JumpLog) -> [String] {
        evidence(log.unexpected) { "expected no other jump, found \(JumpLog.describe($0))" }
    }
}
