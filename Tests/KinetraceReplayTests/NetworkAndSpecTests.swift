import Foundation
import KinetraceJSON
import KinetraceSimulation
import KinetraceTestSupport
import Testing
@testable import KinetraceImpairment
@testable import KinetraceReplay
import KinetraceSupport

/// Networks (specs/networks) and the command line's impairment short forms.
@Suite struct NetworkTests {
    static let directory = Fixture.packageRoot.appendingPathComponent("specs/networks")
    static let bundled = ["lab-5ghz", "crowded-event", "perfect", "harsh"]

    func load(_ name: String) throws -> ReplayNetwork {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent("\(name).json"))
        return try ReplayNetwork.parse(Array(data), source: name)
    }

    @Test(arguments: bundled)
    func everyBundledNetworkParsesAndIsNamedForItsFile(_ name: String) throws {
        let network = try load(name)
        #expect(network.name == name)
        #expect(network.impairments.problem == nil)
        #expect(!network.provenance.isEmpty)
    }

    /// The writer `network fit` uses reads back to the same network, for every bundled one and
    /// for each delay form and loss model.
    @Test(arguments: bundled)
    func aWrittenNetworkReadsBackEqual(_ name: String) throws {
        let network = try load(name)
        let text = network.document.jsonText
        #expect(try ReplayNetwork.parse(Array(text.utf8), source: "written") == network, "\(text.prefix(300))")
    }

    @Test func everyDelayFormAndLossModelRoundTrips() throws {
        let delays: [DelayDistribution] = [.constant(ms: 5), .uniform(minMs: 1, maxMs: 9), .normal(meanMs: 70.4, sdMs: 3.7),
                                           .normal(meanMs: 70, sdMs: 5, minMs: 50, maxMs: 90), .pareto(scaleMs: 30, shape: 2.5),
                                           .quantiles([QuantilePoint(p: 0, ms: 10), QuantilePoint(p: 0.5, ms: 20), QuantilePoint(p: 1, ms: 90)])]
        let losses: [LossModel] = [.none, .bernoulli(p: 0.05), .gilbertElliott(p: 0.015, r: 0.2, lossInBad: 0.5, lossInGood: 0.005)]
        for delay in delays {
            for loss in losses {
                var network = ReplayNetwork(name: "n", description: "d", provenance: "p", controllers: 7, staggerNs: 250_000_000)
                network.basis = "measured"
                network.impairments.delay = delay
                network.impairments.loss = loss
                network.impairments.duplicate = 0.001
                network.impairments.reorder = 0.002
                network.impairments.allowReordering = true
                let back = try ReplayNetwork.parse(Array(network.document.jsonText.utf8), source: "written")
                #expect(back == network, "\(delay) \(loss)")
            }
        }
        // An empirical delay has no file form: it is written as its quantile table.
        var empirical = ReplayNetwork(name: "e", description: "d", provenance: "p")
        empirical.impairments.delay = .empirical(sortedMs: [1, 2, 4, 8])
        let back = try ReplayNetwork.parse(Array(empirical.document.jsonText.utf8), source: "written")
        #expect(back.impairments.delay == .quantiles([QuantilePoint(p: 0, ms: 1), QuantilePoint(p: 1.0 / 3, ms: 2),
                                                       QuantilePoint(p: 2.0 / 3, ms: 4), QuantilePoint(p: 1, ms: 8)]))
    }

    @Test func lab5GHzReproducesThePapersOneWayLatency() throws {
        let network = try load("lab-5ghz")
        #expect(network.impairments.loss == .none)
        var rng = SeededGenerator(seed: 2026)
        let n = 200_000
        let x = (0..<n).map { _ in network.impairments.delay.sample(using: &rng) }.sorted()
        let mean = x.reduce(0, +) / Double(n)
        let sd = (x.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(n - 1)).squareRoot()
        // The paper: mean 70.4 ms, p95 73.2, min 52.2, max 82.2, sd 3.7.
        #expect(abs(mean - 70.4) < 0.05)
        #expect(abs(sd - 3.7) < 0.05)
        #expect(abs(x[Int(0.95 * Double(n))] - 73.2) < 0.1)
        #expect(x.first! >= 52.2 && x.last! <= 82.2)
        #expect(abs((network.impairments.delay.meanMs ?? 0) - 70.4) < 0.01)
    }

    @Test func crowdedEventIsTheTwentyOnePlayerDeployment() throws {
        let network = try load("crowded-event")
        #expect(network.controllers == 21)
        #expect(network.impairments.loss.expectedLossRate > 0)
        guard case .gilbertElliott = network.impairments.loss else {
            Issue.record("crowded-event loss is not bursty")
            return
        }
    }

    @Test func perfectImpairsNothing() throws {
        var expected = Impairments()
        expected.allowReordering = false  // networks keep order unless they say otherwise
        #expect(try load("perfect").impairments == expected)
    }

    func error(_ json: String) -> ReplayNetworkError? {
        do { _ = try ReplayNetwork.parse(Array(json.utf8), source: "p.json"); return nil } catch { return error }
    }

    @Test func mistakesAreNamedWithTheirLine() {
        let base = #"{"kinetrace_network": 1, "name": "x", "description": "d", "provenance": "p""#
        #expect(error(base + "}") == nil)
        let typo = error(base + ",\n  \"dupliate\": 0.1}")
        #expect(typo?.line == 2)
        #expect(typo?.description.hasPrefix("p.json:2: dupliate: not a member of the network") == true)
        #expect(error(base + ", \"loss\": {\"model\": \"bernoulli\", \"p\": 1.5}}")?.message.contains("[0, 1]") == true)
        #expect(error(#"{"kinetrace_network": 2, "name": "x", "description": "d", "provenance": "p"}"#)?.message.contains("version 2") == true)
        #expect(error("{\n\"kinetrace_network\": 1,\n oops}")?.line == 3)
        #expect(error(#"{"name": "x", "description": "d", "provenance": "p"}"#)?.message.contains("kinetrace_network") == true)
        #expect(error(base + ", \"delay\": {\"distribution\": \"quantiles\", \"points\": [[0, 5], [0.5, 4], [1, 9]]}}")?.message.contains("never falling") == true)
        #expect(error(base + ", \"rate\": [{\"from_s\": 5, \"bits_per_s\": 1000}]}")?.message.contains("start at 0") == true)
    }

    /// Files written before networks were called networks still read, for one minor version.
    @Test func theOldVersionMemberStillReads() throws {
        let old = #"{"kinetrace_profile": 1, "name": "x", "description": "d", "provenance": "p", "duplicate": 0.5}"#
        #expect(try ReplayNetwork.parse(Array(old.utf8), source: "old.json").impairments.duplicate == 0.5)
        let both = #"{"kinetrace_profile": 1, "kinetrace_network": 1, "name": "x", "description": "d", "provenance": "p"}"#
        #expect(error(both)?.message.contains("kinetrace_profile") == true)
    }
}

@Suite struct ImpairmentSpecTests {
    @Test func delayForms() throws {
        #expect(try ImpairmentSpec.delay("5").get() == .constant(ms: 5))
        #expect(try ImpairmentSpec.delay("uniform:1:9").get() == .uniform(minMs: 1, maxMs: 9))
        #expect(try ImpairmentSpec.delay("normal:70.4:3.7:52.2:82.2").get() == .normal(meanMs: 70.4, sdMs: 3.7, minMs: 52.2, maxMs: 82.2))
        #expect(try ImpairmentSpec.delay("pareto:20:2.5").get() == .pareto(scaleMs: 20, shape: 2.5))
        for bad in ["uniform:9:1", "normal:x:1", "gamma:1:2", "-3", "pareto:0:1"] {
            #expect(throws: SpecError.self) { try ImpairmentSpec.delay(bad).get() }
        }
    }

    @Test func lossForms() throws {
        #expect(try ImpairmentSpec.loss("0.05").get() == .bernoulli(p: 0.05))
        #expect(try ImpairmentSpec.loss("5%").get() == .bernoulli(p: 0.05))
        #expect(try ImpairmentSpec.loss("gemodel:2%:25%:0.6:0.001").get() == .gilbertElliott(p: 0.02, r: 0.25, lossInBad: 0.6, lossInGood: 0.001))
        for bad in ["1.5", "gemodel:0.1:0.2", "loss:0.1", "abc"] {
            #expect(throws: SpecError.self) { try ImpairmentSpec.loss(bad).get() }
        }
    }

    @Test func rateForms() throws {
        #expect(try ImpairmentSpec.rate("64kbit").get() == RateStep(fromNs: 0, bitsPerSecond: 64_000))
        #expect(try ImpairmentSpec.rate("2mbit@20").get() == RateStep(fromNs: 20_000_000_000, bitsPerSecond: 2e6))
        #expect(try ImpairmentSpec.rate("9600").get() == RateStep(fromNs: 0, bitsPerSecond: 9600))
        for bad in ["0kbit", "fast", "1mbit@-1", "1mbit@x"] {
            #expect(throws: SpecError.self) { try ImpairmentSpec.rate(bad).get() }
        }
    }
}
