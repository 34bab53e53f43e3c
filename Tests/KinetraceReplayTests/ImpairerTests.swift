import Testing
@testable import KinetraceImpairment
@testable import KinetraceReplay
import KinetraceTrace

@Suite struct ImpairerTests {
    static var harsh: Impairments {
        var i = Impairments()
        i.delay = .pareto(scaleMs: 5, shape: 1.8)
        i.loss = .gilbertElliott(p: 0.05, r: 0.3, lossInBad: 0.8, lossInGood: 0.01)
        i.duplicate = 0.05
        i.reorder = 0.05
        i.corrupt = 0.05
        i.corruptBits = 2
        i.truncate = 0.02
        return i
    }

    func decisions(_ impairments: Impairments, seed: UInt64, count: Int = 5000) -> [ImpairmentDecision] {
        var impairer = Impairer(impairments, seed: seed)
        return (0..<count).map { _ in impairer.decide(length: 36) }
    }

    @Test func sameSeedSameSchedule() {
        #expect(decisions(Self.harsh, seed: 9) == decisions(Self.harsh, seed: 9))
        #expect(decisions(Self.harsh, seed: 9) != decisions(Self.harsh, seed: 10))
    }

    @Test func changingOneImpairmentLeavesTheOthersDrawsAlone() {
        // Fixed draws per message: turning duplication off must not move the loss pattern.
        var calmer = Self.harsh
        calmer.duplicate = 0
        let a = decisions(Self.harsh, seed: 4), b = decisions(calmer, seed: 4)
        #expect(a.map(\.lost) == b.map(\.lost))
        #expect(a.map(\.delayNs) == b.map(\.delayNs))
        #expect(b.allSatisfy { $0.duplicates == 0 })
    }

    @Test func everyKindOfDecisionOccursAndStaysInBounds() {
        let all = decisions(Self.harsh, seed: 21, count: 20_000)
        #expect(all.contains { $0.lost })
        #expect(all.contains { $0.duplicates == 1 })
        #expect(all.contains { $0.reordered })
        #expect(all.contains { !$0.flippedBits.isEmpty })
        #expect(all.contains { $0.truncatedTo != nil })
        #expect(all.allSatisfy { $0.flippedBits.allSatisfy { (0..<288).contains($0) } })
        #expect(all.allSatisfy { ($0.truncatedTo ?? 0) < 36 })
        let bareLoss = ImpairmentDecision(lost: true)
        let lostOnes = all.filter(\.lost)
        #expect(lostOnes.allSatisfy { $0 == bareLoss })
        #expect(all.allSatisfy { $0.lost || $0.delayNs >= 5_000_000 })
        let clean = decisions(Impairments(), seed: 1)
        #expect(clean.allSatisfy { $0.isClean })
    }

    @Test func applyFlipsAndCuts() {
        let payload: [UInt8] = [0b0000_0001, 0xFF, 0x10]
        let decision = ImpairmentDecision(flippedBits: [0, 9], truncatedTo: 2)
        #expect(decision.apply(to: payload) == [0b0000_0000, 0xFD])
    }

    @Test func decisionsBecomeReplayableEvents() {
        let decision = ImpairmentDecision(delayNs: 1_500_000, duplicates: 1, flippedBits: [3])
        let event = decision.event(timeNs: 7, index: 12, controller: Endpoint(host: "127.0.0.1", port: 5000))
        #expect(event.event == "impair")
        #expect(event.data["index"] == .integer(12))
        #expect(event.data["delay_ns"] == .integer(1_500_000))
        #expect(event.data["duplicates"] == .integer(1))
        #expect(event.data["flipped_bits"] == .array([.integer(3)]))
        #expect(event.data["controller"] == .string("127.0.0.1:5000"))
        #expect(event.data["lost"] == nil)
    }

    @Test func badParametersAreNamed() {
        var i = Impairments()
        i.loss = .bernoulli(p: 1.5)
        #expect(i.problem == "a loss probability must be in [0, 1]")
        i = Impairments()
        i.delay = .uniform(minMs: 5, maxMs: 1)
        #expect(i.problem == "a uniform delay needs 0 ≤ min ≤ max")
        i = Impairments()
        i.duplicate = .nan
        #expect(i.problem == "the duplicate probability must be in [0, 1]")
        #expect(Self.harsh.problem == nil)
    }
}
