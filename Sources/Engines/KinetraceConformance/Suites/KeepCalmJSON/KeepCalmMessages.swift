import KinetraceSupport
import KinetraceWire

/// The KeepCalm messages a case sends: ids from a seeded generator (the case
/// reports its seed), y from the rule under test. Every spike carries its own
/// y, so the jump a host reports (the observation's `values`, [y]) names the
/// message that caused it.
struct KeepCalmMessages {
    private var rng: SeededGenerator
    let rule: GestureRule

    init(rule: GestureRule, seed: UInt64) {
        rng = SeededGenerator(seed: seed)
        self.rule = rule
    }

    /// A y that makes a conforming host jump, and one that never does.
    var above: Double { Double(TriggerLevel.above(rule)) }
    var below: Double { Double(TriggerLevel.below(rule)) }

    /// The `k`th distinct spike level of a case: above τ, apart from every other.
    func spike(_ k: Int) -> Double { above + Double(k) / 1024 }

    mutating func id() -> MessageID { MessageID(randomHigh: rng.next(), randomLow: rng.next()) }

    /// The canonical message (members in the game's order) with this y.
    mutating func message(y: Double) -> [UInt8] { KeepCalmMotion(id: id(), x: 0.03125, y: y, z: -0.015625).encoded() }

    /// A message written by hand: `$ID` becomes a fresh uppercase UUID, `$Y` the y given.
    mutating func text(_ template: String, y: Double = 0) -> [UInt8] {
        Array(template.replacing("$ID", with: id().description).replacing("$Y", with: y.description).utf8)
    }

    /// The canonical layout with each part replaceable, for messages broken in one place.
    static let canonical = #"{"type":"MotionData","payload":{"id":"$ID","type":"Combined","x":0.03125,"y":$Y,"z":-0.015625}}"#
}
