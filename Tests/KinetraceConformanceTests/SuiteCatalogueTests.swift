import Foundation
import KinetraceConformance
import KinetraceReplay
import KinetraceTestSupport
import Testing

/// The case catalogue against the spec: every case cites requirements that
/// exist, at a level that agrees with its own, and IDs are unique.
@Suite struct SuiteCatalogueTests {
    static let all: [CaseInfo] = ConformanceSuite.activeCases.map(\.info) + ConformanceSuite.passiveCases.map(\.info)
        + [ImpairedPathCase(profile: "harsh", impairments: Impairments()).info]

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
        let timing = ConformanceSuite.select(ConformanceSuite.activeCases, include: ["AC-ACK-*"], exclude: ["AC-ACK-FORMAT"]).map(\.info.id)
        #expect(timing == ["AC-ACK-UNSOLICITED", "AC-ACK-DEADLINE", "AC-ACK-PROMPT"])
        #expect(ImpairedPathCase(profile: "crowded-event", impairments: Impairments()).info.id == "AC-IMPAIRED-CROWDED-EVENT")
    }

    @Test func theImpairedInputIsSeeded() {
        let a = ImpairedPathCase(profile: "x", impairments: Impairments(), seed: 7)
        let b = ImpairedPathCase(profile: "x", impairments: Impairments(), seed: 7)
        let c = ImpairedPathCase(profile: "x", impairments: Impairments(), seed: 8)
        #expect(a.input(t0: 1_000).messages == b.input(t0: 1_000).messages)
        #expect(a.input(t0: 1_000).messages != c.input(t0: 1_000).messages)
        #expect(a.input(t0: 1_000).messages.count == 8 * 30)
    }
}
