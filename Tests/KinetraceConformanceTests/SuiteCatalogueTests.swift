import Foundation
import KinetraceConformance
import KinetraceImpairment
import KinetraceReplay
import KinetraceTestSupport
import KinetraceWire
import Testing

/// The case catalogue against the spec: every case cites requirements that
/// exist, at a level that agrees with its own, and IDs are unique.
@Suite struct SuiteCatalogueTests {
    static let suite = MotionLinkV1.conformanceSuite
    static let all: [CaseInfo] = suite.activeCases.map(\.info) + suite.passiveCases.map(\.info)

    static func impaired(_ network: String, seed: UInt64 = 1) -> ImpairedPathCase {
        ImpairedPathCase(network: network, impairments: Impairments(), wireProtocol: MotionLinkV1(),
                         requirements: ["ML-GESTURE-2"], seed: seed)
    }

    /// Requirement ID → level, from the spec's requirement tables (`| ML-… | MUST | … |`).
    static func specLevels() throws -> [String: String] {
        let spec = try String(contentsOf: Fixture.packageRoot.appendingPathComponent("specs/motionlink-v1.md"), encoding: .utf8)
        var levels: [String: String] = [:]
        for line in spec.split(separator: "\n") where line.hasPrefix("| ML-") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            if cells.count >= 2 { levels[cells[0]] = cells[1] }
        }
        return levels
    }

    @Test func everyCitedRequirementExistsAtAMatchingLevel() throws {
        let levels = try Self.specLevels()
        #expect(levels.count > 20)
        for info in Self.all {
            #expect(!info.requirements.isEmpty, "\(info.id)")
            for id in info.requirements { #expect(levels[id] != nil, "\(info.id) cites \(id), which the spec does not define") }
            let cited = info.requirements.compactMap { levels[$0] }
            switch info.level {
            case .must: #expect(cited.contains("MUST"), "\(info.id) is MUST but cites no MUST requirement")
            case .should: #expect(cited.allSatisfy { $0 == "SHOULD" }, "\(info.id) is SHOULD but cites \(cited)")
            case .observation: #expect(!cited.contains("MUST"), "\(info.id) only observes but cites a MUST")
            }
        }
    }

    @Test func idsAreUniqueAndSelectable() {
        let ids = Self.all.map(\.id)
        #expect(Set(ids).count == ids.count)
        #expect(Self.all.allSatisfy { $0.id.hasPrefix("AC-") || $0.id.hasPrefix("PC-") })
        let timing = ConformanceSuite.select(Self.suite.activeCases, include: ["AC-ACK-*"], exclude: ["AC-ACK-FORMAT"]).map(\.info.id)
        #expect(timing == ["AC-ACK-UNSOLICITED", "AC-ACK-DEADLINE", "AC-ACK-PROMPT"])
        #expect(Self.impaired("crowded-event").info.id == "AC-IMPAIRED-CROWDED-EVENT")
        // The impaired-path cases come from the bundled networks, built in the engine.
        #expect(Self.all.map(\.id).filter { $0.hasPrefix("AC-IMPAIRED-") }
                == ["AC-IMPAIRED-LAB-5GHZ", "AC-IMPAIRED-CROWDED-EVENT", "AC-IMPAIRED-HARSH"])
    }

    @Test func theSuiteIsFoundFromTheProtocolAlone() {
        let found = ConformanceSuite.suite(for: ProtocolRegistry.standard.named("motionlink-v1")!)
        #expect(found?.specVersion == "motionlink-v1 1.0")
        #expect(found?.activeCases.count == Self.suite.activeCases.count)
    }

    /// Case inputs come from the rule: at the default τ exactly the values the suite always sent
    /// (so MotionLink v1 runs are unchanged), and on the right side of any other τ.
    @Test func triggerLevelsFollowTheRule() {
        #expect(TriggerLevel.above(.default) == 0.9 && TriggerLevel.below(.default) == 0.05)
        for tau in [0.95, -0.3, 0, 2.5, 1e-9, 999.5, -1000] {
            let rule = GestureRule(threshold: tau, refractoryMs: 400)
            #expect(Double(TriggerLevel.above(rule)) > tau, "τ = \(tau)")
            #expect(Double(TriggerLevel.below(rule)) <= tau, "τ = \(tau)")
        }
        // Through the protocol's own sample maker: a MotionFrame with that ay and nothing else.
        let bytes = TriggerLevel.sample(MotionLinkV1(), ay: 0.9, senderTimeMs: 42)
        #expect(bytes == MotionFrame(tMs: 42, ay: 0.9).encoded())
    }

    @Test func theImpairedInputIsSeeded() {
        let a = Self.impaired("x", seed: 7), b = Self.impaired("x", seed: 7), c = Self.impaired("x", seed: 8)
        let rule = GestureRule.default
        #expect(a.input(t0: 1_000, rule: rule).messages == b.input(t0: 1_000, rule: rule).messages)
        #expect(a.input(t0: 1_000, rule: rule).messages != c.input(t0: 1_000, rule: rule).messages)
        #expect(a.input(t0: 1_000, rule: rule).messages.count == 8 * 30)
    }
}
