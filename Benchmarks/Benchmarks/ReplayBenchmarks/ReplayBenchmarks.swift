import Benchmark
import KinetraceReplay
import KinetraceTrace
import KinetraceWire

// How fast the replay planner produces sends, against the least it must do
// per message anyway (decode the frame, copy its bytes). The
// planner runs on the sending thread between deadlines, so its cost per
// message bounds the rate a replay can hold.

let controllers = 1000
let framesPerController = 100

/// 1,000 controllers × 100 frames at 10 Hz, a jump every 7th frame.
let input: ReplayInput = {
    var messages: [ReplayInput.Message] = []
    for c in 0..<controllers {
        for i in 0..<framesPerController {
            let frame = MotionFrame(tMs: 1_767_225_600_000 + UInt64(i) * 100, ay: i % 7 == 3 ? 0.9 : 0.05)
            messages.append(.init(offsetNs: Int64(i) * 100_000_000 + Int64(c) * 97_000, controller: c,
                                  payload: frame.encoded(), file: 0, index: messages.count))
        }
    }
    messages.sort { ($0.offsetNs, $0.index) < ($1.offsetNs, $1.index) }
    return ReplayInput(wireProtocol: MotionLinkV1(), messages: messages,
                       controllers: (0..<controllers).map { Endpoint(host: "10.0.\($0 / 250).\($0 % 250)", port: 50_000) })
}()

let harsh: ReplayOptions = {
    var options = ReplayOptions()
    options.impairments.delay = .pareto(scaleMs: 30, shape: 2.5)
    options.impairments.loss = .gilbertElliott(p: 0.06, r: 0.3, lossInBad: 0.7, lossInGood: 0.01)
    options.impairments.duplicate = 0.03
    options.impairments.reorder = 0.05
    options.impairments.corrupt = 0.03
    options.impairments.truncate = 0.02
    return options
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 2,
        maxDuration: .seconds(5))

    // The floor: what the planner cannot avoid per message, decoding the frame
    // (for the ack prediction) and handing out its own copy of the bytes.
    Benchmark("baseline: decode and copy every payload (100k messages)") { benchmark in
        for _ in benchmark.scaledIterations {
            var triggers = 0
            for message in input.messages {
                var copy = message.payload
                copy[0] ^= 0  // a write: the copy is real
                if case .success(.frame(let frame)) = MotionLinkV1.decodeResult(copy), frame.ay > 0.5 { triggers += 1 }
                blackHole(copy)
            }
            blackHole(triggers)
        }
    }

    Benchmark("replay schedule, no impairment (100k messages)") { benchmark in
        for _ in benchmark.scaledIterations {
            var sends = 0
            for step in ReplaySchedule(input: input, options: ReplayOptions()) { if case .send = step { sends += 1 } }
            blackHole(sends)
        }
    }

    Benchmark("replay schedule, harsh impairments (100k messages)") { benchmark in
        for _ in benchmark.scaledIterations {
            var sends = 0
            for step in ReplaySchedule(input: input, options: harsh) { if case .send = step { sends += 1 } }
            blackHole(sends)
        }
    }
}
