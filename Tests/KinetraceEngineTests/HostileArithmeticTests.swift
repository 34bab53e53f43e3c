import Testing
@testable import KinetraceAnalysis
import KinetraceGestures
import KinetraceSimulation
import KinetraceTrace
import KinetraceWire

/// Issue 15, item 2: values from a trace or a flag that once trapped in an
/// engine's arithmetic. Each test here trapped (SIGILL) before its fix.
@Suite struct HostileArithmeticTests {
    let host = Endpoint(host: "127.0.0.1", port: 47110)
    let a = Endpoint(host: "127.0.0.1", port: 50001)

    func summarize(stamps: [UInt64]) -> TraceSummary {
        var s = TraceSummarizer(source: "test", header: TraceHeader(created: "", tool: "", capturePoint: .host, clock: .realtime),
                                wireProtocol: MotionLinkV1(), rule: .default)
        for (i, tMs) in stamps.enumerated() {
            s.add(.message(MessageRecord(timeNs: 1_000_000_000 + Int64(i) * 100_000_000, direction: .controllerToHost,
                                         source: a, destination: host, payload: MotionFrame(tMs: tMs).encoded())))
        }
        return s.summary
    }

    /// A u64 t_ms may leap by nearly 2^64 ms between two valid frames: the
    /// interval saturates at Int64.max ns instead of overflowing the ms → ns product.
    @Test(arguments: [[1, UInt64.max], [0, UInt64(Int64.max)], [1, 1 << 63], [1, 1 << 62, UInt64.max]] as [[UInt64]])
    func senderClockLeapsSaturate(_ stamps: [UInt64]) throws {
        let s = summarize(stamps: stamps)
        let controller = try #require(s.controllers[a])
        #expect(controller.senderIntervals.count == stamps.count - 1)
        #expect(controller.senderIntervals.maxNs == Int64.max)
        #expect(s.senderIntervals.maxNs == Int64.max)
        #expect(controller.gaps == stamps.count - 1 && controller.framesMissing > 0)
    }

    @Test func anOrdinaryLeapIsStillExact() throws {
        let s = summarize(stamps: [1_000, 1_100, 5_100])
        let controller = try #require(s.controllers[a])
        #expect(controller.senderIntervals.maxNs == 4_000_000_000 && controller.senderIntervals.minNs == 100_000_000)
        #expect(controller.gaps == 1 && controller.framesMissing == 39)
    }

    /// synth accepts 100000 controllers, but ports from 50000 held only 15536: the 15537th
    /// controller's port trapped in UInt16(...). Each block now has its own address, and the
    /// first block keeps the endpoints every earlier trace has.
    @Test func everySyntheticControllerHasItsOwnEndpoint() {
        let network = SyntheticNetwork()
        let endpoints = (0..<100_000).map { network.controllerEndpoint($0) }
        #expect(Set(endpoints).count == 100_000)
        #expect(endpoints[0] == Endpoint(host: "10.0.0.10", port: 50_000))
        #expect(endpoints[15_535] == Endpoint(host: "10.0.0.\(10 + 15_535 % 240)", port: 65_535))
        #expect(endpoints[15_536] == Endpoint(host: "10.1.0.10", port: 50_000))
    }

    /// A sweep of 10^300 values, or of a range wider than Double holds, is a
    /// GestureError, not an Int conversion trap.
    @Test(arguments: ["threshold=0:1:1e-300", "threshold=0:1e300:0.5", "threshold=-1e308:1e308:1", "threshold=0:9223372036854775807:1",
                      "threshold=0:100000:1"])
    func sweepsPastTheLimitAreRefused(_ text: String) {
        #expect(throws: GestureError.self) { try SweepRange(parsing: text) }
    }

    @Test func theLargestSweepStillParses() throws {
        #expect(try SweepRange(parsing: "threshold=0:99999:1").values.count == 100_000)
    }

    /// Latency samples a hostile trace can produce (±2^62 ns from a median of
    /// the opposite sign) reach ±2^63 ns: the histogram holds them at Int64's ends.
    @Test func extremeLatencySamplesNeitherTrapNorLeaveTheHistogram() throws {
        let edge = Double(1 << 62) / 1e6
        let stats = SeriesStatistics([-edge, 0, 2 * edge, 1e300, -1e300], sigmas: 3)
        #expect(stats.histogram.count == 5)
        let p50 = try #require(stats.percentiles.first { $0.percentile == 50 }?.ms)
        #expect(p50.isFinite)
        #expect(stats.histogram.resolutionMs(near: 1e300).isFinite && stats.histogram.resolutionMs(near: -1e300) >= 0)
    }
}
