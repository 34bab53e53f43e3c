import Benchmark
import KinetraceGestures
import KinetraceTrace
import KinetraceWire

// A threshold sweep is one pass over the samples with every setting's detector
// fed in turn, not one run per setting. These measure that pass against the
// 100 separate runs it replaces, on the same in-memory million samples.

let controllerCount = 21
let samplesPerController = 47_620  // ≈ 1,000,000 in all, 10 Hz each

/// 21 controllers at 10 Hz; a jump pulse on ay every ~3 s, noise otherwise; a label per jump.
let trace: GestureTrace = {
    var state: UInt64 = 2026
    func unit() -> Double {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Double(state >> 11) / Double(1 << 53)
    }
    let controllers = (0..<controllerCount).map { Endpoint(host: "10.0.0.\(10 + $0)", port: UInt16(50_000 + $0)) }
    var samples: [[GestureSample]] = [], labels: [GestureLabel] = []
    for (c, controller) in controllers.enumerated() {
        var list: [GestureSample] = []
        list.reserveCapacity(samplesPerController)
        var nextJump = 1000 + Int(unit() * 3000)
        var peak = 0.0
        for i in 0..<samplesPerController {
            let tMs = UInt64(1_767_225_600_000 + i * 100 + c * 7)
            let elapsed = i * 100
            if elapsed >= nextJump {
                labels.append(GestureLabel(gesture: "jump", controller: controller, senderTimeMs: Double(tMs), durationMs: 450))
                peak = 0.4 + unit() * 1.2
                nextJump = elapsed + 1500 + Int(unit() * 3000)
            }
            let ay = peak + (unit() - 0.5) * 0.3
            peak *= 0.35
            list.append(GestureSample(senderTimeMs: tMs, timeNs: Int64(tMs) * 1_000_000 + 70_000_000,
                                      userAcceleration: Vector3(0, ay, 0), rotationRate: Vector3(0, 0, 0)))
        }
        samples.append(list)
    }
    return GestureTrace(source: "bench", header: TraceHeader(created: "", tool: "", capturePoint: .synthetic, clock: .model),
                        controllers: controllers, samples: samples,
                        sampleKinds: Array(repeating: .frames, count: controllerCount), labels: labels)
}()

let thresholds: [DetectorSettings] = (1...100).map { i in
    try! DetectorKind.threshold.settings(["threshold": String(Double(i) / 100)])
}
let refractories: [DetectorSettings] = (1...100).map { i in
    try! DetectorKind.thresholdRefractory.settings(["refractory_ms": String(i * 10)])
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 1,
        maxDuration: .seconds(10),
        maxIterations: 10)

    Benchmark("gestures: one setting over 1M samples") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! GestureEvaluation.evaluate(trace, settings: [thresholds[49]], window: MatchWindow()))
        }
    }

    Benchmark("gestures: sweep of 100 thresholds over 1M samples, one pass") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! GestureEvaluation.evaluate(trace, settings: thresholds, window: MatchWindow()))
        }
    }

    // What the single pass replaces: each setting evaluated on its own.
    Benchmark("baseline: 100 separate threshold runs over 1M samples") { benchmark in
        for _ in benchmark.scaledIterations {
            for setting in thresholds {
                blackHole(try! GestureEvaluation.evaluate(trace, settings: [setting], window: MatchWindow()))
            }
        }
    }

    Benchmark("gestures: sweep of 100 refractory windows (motionlink-v1) over 1M samples, one pass") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try! GestureEvaluation.evaluate(trace, settings: refractories, window: MatchWindow()))
        }
    }
}
