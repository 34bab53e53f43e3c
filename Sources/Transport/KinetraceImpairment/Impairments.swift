import KinetraceJSON
import KinetraceSupport
import KinetraceTrace

/// A network's misbehaviour, applied to each message of a replay.
package struct Impairments: Hashable, Sendable {
    package var delay = DelayDistribution.none
    package var loss = LossModel.none
    /// Probability that a message is sent twice.
    package var duplicate: Double = 0
    /// Probability that a message is held back behind the next one.
    package var reorder: Double = 0
    /// Probability that a message has `corruptBits` random bits flipped.
    package var corrupt: Double = 0
    package var corruptBits = 1
    /// Probability that a message is cut to a random shorter length.
    package var truncate: Double = 0
    /// Whether delays may change the order of messages (false: a message never
    /// overtakes the one sent before it, as on a FIFO link).
    package var allowReordering = true
    /// Link-rate limits over time (netem `rate`); empty for an unlimited link.
    package var rate: [RateStep] = []

    package init() {}

    /// True when nothing is impaired.
    package var isNone: Bool { self == Impairments() }

    /// The first unusable parameter, described.
    package var problem: String? {
        if let p = delay.problem { return p }
        if let p = loss.problem { return p }
        for (name, value) in [("duplicate", duplicate), ("reorder", reorder), ("corrupt", corrupt), ("truncate", truncate)]
        where !(value.isFinite && value >= 0 && value <= 1) {
            return "the \(name) probability must be in [0, 1]"
        }
        if corruptBits < 1 { return "corruption flips at least one bit" }
        return RateStep.problem(rate)
    }
}

/// What happens to one message.
package struct ImpairmentDecision: Hashable, Sendable {
    package var lost = false
    /// Extra delay before sending, ns.
    package var delayNs: Int64 = 0
    /// Extra copies sent after the original.
    package var duplicates = 0
    /// Held back and sent after the next message.
    package var reordered = false
    /// Bit positions flipped (bit 0 is the least significant bit of byte 0).
    package var flippedBits: [Int] = []
    /// New length, when truncated.
    package var truncatedTo: Int?

    /// True when the message goes out untouched and on time.
    package var isClean: Bool { self == ImpairmentDecision() }

    /// Applies corruption and truncation to a payload.
    package func apply(to payload: [UInt8]) -> [UInt8] {
        var bytes = payload
        for bit in flippedBits where bit / 8 < bytes.count { bytes[bit / 8] ^= 1 << UInt8(bit % 8) }
        if let truncatedTo { bytes = Array(bytes.prefix(truncatedTo)) }
        return bytes
    }

    /// The decision as a trace event (TR kind `event`, name `impair`), so a run can be reproduced and audited.
    package func event(timeNs: Int64, index: Int, controller: Endpoint?) -> EventRecord {
        var data: [String: JSONValue] = ["index": .integer(Int64(index))]
        if let controller { data["controller"] = .string(controller.description) }
        if lost { data["lost"] = .bool(true) }
        if delayNs != 0 { data["delay_ns"] = .integer(delayNs) }
        if duplicates > 0 { data["duplicates"] = .integer(Int64(duplicates)) }
        if reordered { data["reordered"] = .bool(true) }
        if !flippedBits.isEmpty { data["flipped_bits"] = .array(flippedBits.map { .integer(Int64($0)) }) }
        if let truncatedTo { data["truncated_to"] = .integer(Int64(truncatedTo)) }
        return EventRecord(timeNs: timeNs, event: "impair", data: data)
    }
}

/// Draws every impairment decision from one seeded generator, in message
/// order, with a fixed number of draws per message whatever the outcome:
/// the same seed, impairments and input give the same decisions.
package struct Impairer: Sendable {
    package let impairments: Impairments
    package let seed: UInt64
    private var rng: SeededGenerator
    /// Loss state per link: each controller's bursts are its own.
    private var loss: [Int: LossProcess] = [:]

    package init(_ impairments: Impairments, seed: UInt64) {
        self.impairments = impairments
        self.seed = seed
        rng = SeededGenerator(seed: seed)
    }

    /// The decision for the next message, whose payload is `length` bytes,
    /// on controller `link`'s path.
    package mutating func decide(length: Int, link: Int = 0) -> ImpairmentDecision {
        let i = impairments
        var decision = ImpairmentDecision()
        decision.lost = loss[link, default: LossProcess(i.loss)].isLost(using: &rng)
        decision.delayNs = Int64((Swift.min(i.delay.sample(using: &rng), DelayDistribution.maximumMs) * 1e6).rounded())
        decision.duplicates = rng.unit() < i.duplicate ? 1 : 0
        decision.reordered = rng.unit() < i.reorder
        let corrupts = rng.unit() < i.corrupt
        var bits: [Int] = []
        for _ in 0..<i.corruptBits {
            let draw = rng.next()  // drawn always, used only when corrupting
            if corrupts && length > 0 { bits.append(Int(draw % UInt64(length * 8))) }
        }
        decision.flippedBits = bits
        let truncates = rng.unit() < i.truncate
        let cut = rng.next()
        if truncates && length > 0 { decision.truncatedTo = Int(cut % UInt64(length)) }
        if decision.lost {
            // A lost message is just lost; the other draws were made to keep later decisions aligned.
            return ImpairmentDecision(lost: true)
        }
        return decision
    }
}
