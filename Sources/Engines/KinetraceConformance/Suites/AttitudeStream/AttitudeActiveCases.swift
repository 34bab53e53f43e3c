#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTransport
import KinetraceWire

// The attitude host answers nothing on the wire: what it applied shows only
// on the observation channel (decision "attitude", values [roll, pitch,
// yaw]), so these cases judge observations, bit for bit, and are
// INCONCLUSIVE, never PASS, when a host reports none.

/// Attitudes a case sends: in range, distinct, drawn from a seeded generator (the case reports its seed).
struct AttitudeRecords {
    private var rng: SeededGenerator

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    mutating func next() -> AttitudeRecord {
        func value(_ limit: Float32) -> Float32 { Float32(rng.unit() * 2 - 1) * limit * 0.999 }
        return AttitudeRecord(roll: value(.pi), pitch: value(.pi / 2), yaw: value(.pi))
    }

    mutating func next(_ count: Int) -> [AttitudeRecord] { (0..<count).map { _ in next() } }

    /// The records back to back, as a stream carries them.
    static func stream(_ records: [AttitudeRecord]) -> [UInt8] { records.flatMap { $0.encoded() } }

    /// `bytes` cut at the given stream offsets, one write between each pair.
    static func writes(_ bytes: [UInt8], cutAt cuts: [Int]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var start = 0
        for cut in cuts.sorted() where cut > start && cut < bytes.count {
            out.append(Array(bytes[start..<cut]))
            start = cut
        }
        out.append(Array(bytes[start...]))
        return out
    }
}

extension AttitudeRecord {
    /// The record as a host reports it applied: values [roll, pitch, yaw], read back as float32 bit patterns.
    /// Values are compared at float32 precision (AS-OBS-2): a number stands for the float32
    /// nearest to it, so the shortest decimal that identifies a float32 and its exact value both do.
    init?(observed values: [Double]) {
        guard values.count == 3 else { return nil }
        let floats = values.map { Float32($0) }
        // A finite number past float32's range rounds to infinity: not a value the host read.
        guard zip(values, floats).allSatisfy({ $1.isFinite || !$0.isFinite }) else { return nil }
        self.init(roll: floats[0], pitch: floats[1], yaw: floats[2])
    }

    var bits: [UInt32] { [roll.bitPattern, pitch.bitPattern, yaw.bitPattern] }

    var text: String { "(\(roll), \(pitch), \(yaw))" }
}

/// How the host ended a TCP connection, from the link's errno.
func connectionEnd(_ code: Int32) -> String {
    code == ECONNRESET ? "reset the connection (RST)" : "closed the connection (FIN)"
}

/// One whole record from a fresh controller, when the host has reported nothing yet: a host
/// with an observation channel reports it, which tells a host that reports nothing at all
/// (INCONCLUSIVE, SA-OBS-5) from one that missed only what the case sent (FAIL).
func sendAttitudeWitness(_ p: LiveProbe, timeoutMs: Int) throws(SocketError) {
    guard p.canObserve, p.hostFailure == nil, p.observations.isEmpty else { return }
    let w = try p.controllers(1).lowerBound
    p.send(AttitudeRecord(roll: 0.5, pitch: 0.25, yaw: -0.5).encoded(), from: w)
    p.collect(forMs: timeoutMs) { _ in p.hostFailure != nil || !p.observed("attitude", on: w).isEmpty }
}

/// Waits until `count` attitudes are applied on `controller`, for as long as the host keeps applying
/// them: up to `quietMs` without a new one, and a minute in all. How fast it applies is
/// AC-AS-KEEPS-READING's to judge; the framing cases judge only what it applies.
func awaitApplied(_ p: LiveProbe, controller c: Int, count: Int, quietMs: Int) {
    let hardDeadline = SystemClock.monotonicNs() + 60_000_000_000
    var seen = -1
    while p.hostFailure == nil, SystemClock.monotonicNs() < hardDeadline {
        let now = p.observed("attitude", on: c).count
        if now >= count || now == seen { return }
        seen = now
        p.collect(forMs: quietMs) { _ in p.hostFailure != nil || p.observed("attitude", on: c).count > now }
    }
}

/// Sends `writes` from one fresh controller and checks that the host applied
/// exactly `expected`, in order, bit for bit (AS-HOST-1), and stayed live.
struct AppliedAttitudes {
    let info: CaseInfo
    /// The seed of the records, when they are drawn.
    let seed: UInt64?
    /// What the writes are, for verdicts: "records split at offsets 1–11".
    let what: String

    func run(_ p: LiveProbe, writes: [[UInt8]], expected: [AttitudeRecord], pauseMs: Int = 0) throws(SocketError) -> CaseResult {
        let c = try p.controllers(1).lowerBound
        for (i, write) in writes.enumerated() {
            p.send(write, from: c)
            if pauseMs > 0 && i + 1 < writes.count { p.collect(forMs: pauseMs) }
        }
        if p.canObserve {
            awaitApplied(p, controller: c, count: expected.count, quietMs: info.timeoutMs)
            p.collect(forMs: 50)  // stragglers: more applied than sent
        } else {
            p.collect(forMs: 300) { _ in p.refused || p.hostFailure != nil || p.closedByHost[c] != nil }
        }
        try sendAttitudeWitness(p, timeoutMs: info.timeoutMs)
        return judge(p, controller: c, writes: writes.count, expected: expected)
    }

    func judge(_ p: LiveProbe, controller c: Int, writes: Int, expected: [AttitudeRecord]) -> CaseResult {
        let observed = p.observed("attitude", on: c)
        let applied = observed.map { AttitudeRecord(observed: $0.observation.values) }
        var measurements = (seed.map { [Measurement("seed", Double($0))] } ?? []) + [
            Measurement("writes", Double(writes)), Measurement("records_sent", Double(expected.count)),
            Measurement("records_applied", Double(applied.count))]
        if let failure = p.hostFailure {
            return CaseResult(info, .fail("the host ended on \(what): \(failure)"), measurements: measurements,
                              evidence: ["expected the host to keep the connection and apply every valid record (AS-HOST-2), found: \(failure)"])
        }
        if let code = p.closedByHost[c] {
            let how = connectionEnd(code)
            return CaseResult(info, .fail("the host \(how) on \(what)"), measurements: measurements,
                              evidence: ["expected the connection to stay open (AS-HOST-2), found that the host \(how)"])
        }
        if let stray = p.strayObservationsFailure { return CaseResult(info, stray, measurements: measurements) }
        if var missing = p.observationsMissing("which attitudes the host applied from \(what)") {
            if p.target.controllersAreConnections { missing += "; the connection stayed open (no FIN or RST), which is all TCP shows" }
            return CaseResult(info, .inconclusive(missing), measurements: measurements)
        }
        var evidence: [String] = []
        var matching = 0
        for (i, record) in expected.enumerated() {
            guard i < applied.count else { break }
            if let got = applied[i], got.bits == record.bits { matching += 1; continue }
            if evidence.count < evidenceLimit {
                evidence.append("record \(i + 1): expected \(record.text), found \(applied[i].map(\.text) ?? "values \(observed[i].observation.values)")")
            }
        }
        measurements.append(Measurement("records_bit_exact", Double(matching)))
        if applied.count < expected.count {
            evidence.append("expected \(expected.count) records applied, found \(applied.count)")
        } else if applied.count > expected.count {
            evidence.append("expected \(expected.count) records applied, found \(applied.count): \(applied.count - expected.count) more than were sent")
        }
        guard evidence.isEmpty else {
            return CaseResult(info, .fail("\(expected.count - matching) of \(expected.count) records sent as \(what) were not applied bit for bit in order"),
                              measurements: measurements, evidence: evidence)
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}

/// Records split at every offset 1–11, each write ending inside one record and starting inside the next.
package struct AttitudeSplitCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-AS-SPLIT", requirements: ["AS-FRAME-1", "AS-HOST-1"], level: .must,
        summary: "12 records written with a write boundary at every offset 1–11 inside a record (each write spanning two records) are applied bit for bit, in order.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var rng = AttitudeRecords(seed: 0x4153_5350)
        let records = rng.next(12)
        // The k-th cut falls k bytes into the k-th record.
        let cuts = (1...11).map { ($0 - 1) * AttitudeRecord.size + $0 }
        let writes = AttitudeRecords.writes(AttitudeRecords.stream(records), cutAt: cuts)
        // A pause between writes, so each arrives on its own rather than merged by the host's read.
        return try AppliedAttitudes(info: info, seed: 0x4153_5350, what: "records split at offsets 1–11")
            .run(p, writes: writes, expected: records, pauseMs: 5)
    }
}

/// Many records in one write.
package struct AttitudeCoalescedCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-AS-COALESCED", requirements: ["AS-FRAME-1", "AS-HOST-1"], level: .must,
        summary: "60 records in one write (720 bytes), then 60 more in writes of 5, are all applied bit for bit, in order.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var rng = AttitudeRecords(seed: 0x4153_434F)
        let one = rng.next(60), fives = rng.next(60)
        var writes = [AttitudeRecords.stream(one)]
        writes += stride(from: 0, to: fives.count, by: 5).map { AttitudeRecords.stream(Array(fives[$0..<$0 + 5])) }
        return try AppliedAttitudes(info: info, seed: 0x4153_434F, what: "records coalesced in writes").run(p, writes: writes, expected: one + fives)
    }
}

/// A byte at a time.
package struct AttitudeBytewiseCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-AS-BYTEWISE", requirements: ["AS-FRAME-1", "AS-HOST-1"], level: .must,
        summary: "5 records written one byte per write (60 writes) are applied bit for bit, in order.", timeoutMs: 3_000, judgesDecisions: true)
    package init() {}

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var rng = AttitudeRecords(seed: 0x4153_4259)
        let records = rng.next(5)
        let writes = AttitudeRecords.stream(records).map { [$0] }
        return try AppliedAttitudes(info: info, seed: 0x4153_4259, what: "records written a byte at a time")
            .run(p, writes: writes, expected: records, pauseMs: 1)
    }
}

/// Little-endian float32, bit for bit, at the edges of the ranges.
package struct AttitudeBitExactCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-AS-BIT-EXACT", requirements: ["AS-HOST-1", "AS-VALUE-2"], level: .must,
        summary: "Records at the edges (±π, ±π/2 as float32, ±0, subnormals, values one ulp apart) written one per write are applied bit for bit: little-endian float32.",
        timeoutMs: 2_000, judgesDecisions: true)
    package init() {}

    static let records: [AttitudeRecord] = [
        // The edges themselves: π and π/2 rounded to the nearest float32 (AS-VALUE-2).
        AttitudeRecord(roll: AttitudeRecord.piFloat32, pitch: AttitudeRecord.halfPiFloat32, yaw: -AttitudeRecord.piFloat32),
        AttitudeRecord(roll: -AttitudeRecord.piFloat32, pitch: -AttitudeRecord.halfPiFloat32, yaw: AttitudeRecord.piFloat32),
        AttitudeRecord(roll: 0, pitch: -0.0, yaw: .leastNonzeroMagnitude),
        AttitudeRecord(roll: -.leastNormalMagnitude, pitch: Float32(0.25).nextUp, yaw: Float32(0.25).nextDown),
        AttitudeRecord(roll: 1.0e-30, pitch: -1.25, yaw: 2.5),
        AttitudeRecord(roll: 0.1, pitch: 0.2, yaw: 0.3),
    ]

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        try AppliedAttitudes(info: info, seed: nil, what: "edge-value records").run(p, writes: Self.records.map { $0.encoded() }, expected: Self.records)
    }
}

/// The host reads as fast as a phone writes: 60 records a second for 2 s leave no backlog.
package struct AttitudeKeepsReadingCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-AS-KEEPS-READING", requirements: ["AS-HOST-3", "AS-RATE-1"], level: .must,
        summary: "Over 2 s of records at 60 Hz the host keeps reading: the records it has not read (the send queue, SIOCOUTQ, or the records it has not yet reported applied) do not pile up (at most 12 behind over the last half second), and none are left 500 ms after the last.",
        timeoutMs: 3_000)
    package init() {}

    static let records = 120
    static let settleMs = 500
    /// Records a host keeping up may still owe at any moment: scheduling noise, not a slow host (200 ms at 60 Hz).
    static let backlogAllowed = 12

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        var rng = AttitudeRecords(seed: 0x4153_4B52)
        let c = try p.controllers(1).lowerBound
        let periodNs: Int64 = 1_000_000_000 / 60
        var primed = 0
        if p.target.controllersAreConnections {
            // A host that stops reading first fills its receive window: 256 KiB overflows a
            // stalled host's window (about 128 KiB on Linux), so from then on what it leaves unread
            // shows in this side's send queue. A host that reads takes it in milliseconds.
            for _ in 0..<21 {
                p.send(AttitudeRecords.stream(rng.next(1024)), from: c)
                primed += 1024
            }
        }
        let start = SystemClock.monotonicNs()
        var backlog: [Double] = []  // records sent but not yet applied, sampled after each send
        var queued: [Double] = []   // bytes in the send queue, when the link can tell
        var expected: [AttitudeRecord] = []
        for k in 0..<Self.records {
            p.collect(untilMonotonicNs: start + Int64(k) * periodNs)
            let record = rng.next()
            expected.append(record)
            p.send(record.encoded(), from: c)
            if let bytes = p.unsentBytes(of: c) { queued.append(Double(bytes)) }
            backlog.append(Double(expected.count - p.observed("attitude", on: c).count))
        }
        let sentNs = SystemClock.monotonicNs()
        p.collect(forMs: Self.settleMs) { _ in
            p.hostFailure != nil || p.closedByHost[c] != nil
                || (p.observed("attitude", on: c).count >= (p.canObserve ? primed + expected.count : 0) && (p.unsentBytes(of: c) ?? 0) == 0)
        }
        let leftBytes = p.unsentBytes(of: c)
        try sendAttitudeWitness(p, timeoutMs: info.timeoutMs)
        let applied = p.observed("attitude", on: c).count
        var measurements = [Measurement("records_primed", Double(primed)), Measurement("records_sent", Double(expected.count)),
                            Measurement("send_ms", Double(sentNs - start) / 1e6, "ms")]
        if !queued.isEmpty {
            measurements += [Measurement("send_queue_max", queued.max()!, "bytes"), Measurement("send_queue_after_settle", Double(leftBytes ?? 0), "bytes")]
        }
        let observedAny = !p.observations.isEmpty
        if observedAny {
            measurements += [Measurement("records_applied", Double(applied)), Measurement("backlog_max", backlog.max() ?? 0, "records")]
        }
        if let failure = p.hostFailure {
            return CaseResult(info, .fail("the host does not keep up with 60 Hz: \(failure)"), measurements: measurements)
        }
        if let code = p.closedByHost[c] {
            return CaseResult(info, .fail("the host \(connectionEnd(code)) while records came at 60 Hz"), measurements: measurements)
        }
        var evidence: [String] = []
        if let leftBytes, leftBytes > 0 {
            evidence.append("expected an empty send queue \(Self.settleMs) ms after the last record, found \(leftBytes) bytes unread (peak \(Int(queued.max()!)))")
        }
        if observedAny && applied < primed + expected.count {
            evidence.append("expected \(primed + expected.count) records applied \(Self.settleMs) ms after the last, found \(applied)")
        }
        // A host slower than 60 Hz falls further behind with every record, even if the settle lets it catch up.
        let lateBacklog = observedAny ? backlog.suffix(backlog.count / 4).max() ?? 0 : 0
        if observedAny && lateBacklog > Double(Self.backlogAllowed) {
            evidence.append("expected at most \(Self.backlogAllowed) records sent but not yet applied (\(Self.backlogAllowed * 1000 / 60) ms at 60 Hz) "
                            + "over the stream's last half second, found \(Int(lateBacklog)): the host applies records slower than they come")
        }
        if !evidence.isEmpty {
            let why = lateBacklog > Double(Self.backlogAllowed) && evidence.count == 1
                ? "the host does not keep up with 60 Hz: its backlog grows while the records come"
                : "the host does not keep up with 60 Hz: records are left unread after the stream stops"
            return CaseResult(info, .fail(why), measurements: measurements, evidence: evidence)
        }
        guard observedAny || !queued.isEmpty else {
            if let stray = p.strayObservationsFailure { return CaseResult(info, stray, measurements: measurements) }
            return CaseResult(info, .inconclusive(p.observationsMissing("whether the host keeps reading")!
                                                  + "; and this link cannot read its send queue"), measurements: measurements)
        }
        var result = CaseResult(info, .pass, measurements: measurements)
        result.samples = queued.isEmpty ? [SampleSeries(name: "backlog", unit: "records", values: backlog)]
                                        : [SampleSeries(name: "send queue", unit: "bytes", values: queued)]
        return result
    }
}

/// NaN and infinite records do not end the connection: the host reads on past them.
package struct AttitudeNonFiniteOpenCase: ActiveCase {
    package let info = CaseInfo(
        id: "AC-AS-NONFINITE-OPEN", requirements: ["AS-HOST-2", "AS-VALUE-1"], level: .must,
        summary: "After NaN (quiet and signalling) and ±inf records the connection stays open and the host reads on: over TCP no FIN or RST and an empty send queue; behind the stdio adapter, the valid record after them is applied.",
        timeoutMs: 2_000)
    package init() {}

    static let nonFinite: [AttitudeRecord] = [
        AttitudeRecord(roll: .nan, pitch: 0, yaw: 0), AttitudeRecord(roll: 0, pitch: .infinity, yaw: 0),
        AttitudeRecord(roll: 0, pitch: 0, yaw: -.infinity), AttitudeRecord(roll: Float32(bitPattern: 0xFF80_0001), pitch: .nan, yaw: .infinity),
    ]

    package func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult {
        let c = try p.controllers(1).lowerBound
        let after = AttitudeRecord(roll: 1.0, pitch: -0.5, yaw: 2.0)
        for record in Self.nonFinite { p.send(record.encoded(), from: c) }
        p.send(after.encoded(), from: c)
        if p.canObserve {
            p.collect(forMs: info.timeoutMs) { _ in p.hostFailure != nil || !p.observed("attitude", on: c).isEmpty }
        } else {
            p.collect(forMs: 300) { _ in p.refused || p.closedByHost[c] != nil }
        }
        let unsent = p.unsentBytes(of: c)
        try sendAttitudeWitness(p, timeoutMs: info.timeoutMs)
        var measurements = [Measurement("non_finite_records", Double(Self.nonFinite.count))]
        if let unsent { measurements.append(Measurement("send_queue_after", Double(unsent), "bytes")) }
        if let failure = p.hostFailure {
            return CaseResult(info, .fail("the host ended on NaN and infinite records: \(failure)"), measurements: measurements,
                              evidence: ["expected the connection to stay open (AS-HOST-2), found: \(failure)"])
        }
        if let code = p.closedByHost[c] {
            return CaseResult(info, .fail("the host \(connectionEnd(code)) on NaN and infinite records"), measurements: measurements,
                              evidence: ["expected the connection to stay open (AS-HOST-2), found that the host \(connectionEnd(code))"])
        }
        if p.canObserve {
            if let verdict = p.unjudgedObservations("whether the host reads on past NaN and infinite records") {
                return CaseResult(info, verdict, measurements: measurements)
            }
            let applied = p.observed("attitude", on: c).compactMap { AttitudeRecord(observed: $0.observation.values) }
            guard applied.contains(where: { $0.bits == after.bits }) else {
                return CaseResult(info, .fail("the valid record after NaN and infinite records was not applied"), measurements: measurements,
                                  evidence: ["expected \(after.text) applied, found \(applied.isEmpty ? "nothing" : applied.map(\.text).joined(separator: ", "))"])
            }
            return CaseResult(info, .pass, measurements: measurements)
        }
        guard let unsent else {
            return CaseResult(info, .inconclusive(p.observationsMissing("whether the host reads on past NaN and infinite records") ?? "nothing to judge by"),
                              measurements: measurements)
        }
        guard unsent == 0 else {
            return CaseResult(info, .fail("the host stopped reading after NaN and infinite records"), measurements: measurements,
                              evidence: ["expected the send queue empty, found \(unsent) bytes unread"])
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}
