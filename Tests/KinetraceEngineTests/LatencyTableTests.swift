import Foundation
import KinetraceAnalysis
import KinetraceSimulation
import KinetraceTestSupport
import Testing
import KinetraceSupport

/// Table I (the paper's latency summary) against exact hand-computed
/// values and against numpy, an independent implementation.
@Suite struct LatencyTableTests {
    @Test func exactValuesOnASmallSeries() throws {
        let table = try #require(LatencyTable(samplesMs: [14, 10, 12, 13, 11]))
        #expect(table.countBefore == 5 && table.countAfter == 5)
        #expect(table.meanMs == 12)
        #expect(abs(table.sdMs - 2.5.squareRoot()) < 1e-12)
        #expect(abs(table.p95Ms - 13.8) < 1e-12)  // rank 0.95 × 4 = 3.8: 13 + 0.8 × (14 − 13)
        #expect(table.minMs == 10 && table.maxMs == 14)
    }

    @Test func threeSigmaRemovesOneFarSample() throws {
        let table = try #require(LatencyTable(samplesMs: Array(repeating: 70, count: 40) + [1000]))
        #expect(table.countBefore == 41 && table.countAfter == 40)
        #expect(table.meanMs == 70 && table.sdMs == 0 && table.maxMs == 70)
        #expect(LatencyTable(samplesMs: []) == nil)
        #expect(LatencyTable(samplesMs: [5])?.sdMs == 0)
    }

    @Test(.enabled(if: Requirement.python("numpy").runs, "needs python3 with numpy; with CI set this fails instead"))
    func agreesWithNumpy() throws {
        try Requirement.python("numpy").check()
        // 10,000 draws from N(70.4, 3.7) (the paper's lab figures) plus 20 spikes at 500 ms.
        var rng = SeededGenerator(seed: 42)
        var samples: [Double] = (0..<10_000).map { _ in
            let u1 = max(rng.unit(), .leastNormalMagnitude), u2 = rng.unit()
            return 70.4 + 3.7 * (-2 * Foundation.log(u1)).squareRoot() * Foundation.cos(2 * .pi * u2)
        }
        samples += Array(repeating: 500, count: 20)
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("samples.txt")
        try samples.map { "\($0)" }.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let script = """
            import sys, numpy as np
            x = np.loadtxt(sys.argv[1])
            k = x[np.abs(x - x.mean()) <= 3 * x.std(ddof=1)]
            values = [k.mean(), np.percentile(k, 95), k.max(), k.min(), k.std(ddof=1)]
            print(x.size, k.size, *[repr(float(v)) for v in values])
            """
        let numpy = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, file.path])
        try #require(numpy.status == 0, "numpy: \(numpy.stderr)")
        let fields = numpy.stdout.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try #require(fields.count == 7, "numpy printed \(numpy.stdout)")
        let table = try #require(LatencyTable(samplesMs: samples))
        #expect(Double(table.countBefore) == fields[0] && Double(table.countAfter) == fields[1])
        #expect(table.maxMs < 500 && table.countAfter <= 10_000, "the 20 spikes are outliers")
        for (name, ours, theirs) in [("mean", table.meanMs, fields[2]), ("p95", table.p95Ms, fields[3]), ("max", table.maxMs, fields[4]),
                                     ("min", table.minMs, fields[5]), ("sd", table.sdMs, fields[6])] {
            #expect(abs(ours - theirs) <= 1e-9 * abs(theirs), "\(name): ours \(ours), numpy \(theirs)")
        }
    }
}
