// IdentityDrivers: the workloads of the three performance checks, one per
// run, for counting instructions under callgrind (Benchmarks/identity/perf-compare.sh).
//
//   IdentityDrivers WORKLOAD [ITERATIONS]
//   WORKLOAD: frame-decode | trace-read-memory | trace-read-file | replay-plain | replay-harsh
//
// Each workload is the body of one benchmark iteration, copied from
// Benchmarks/Benchmarks/{Codec,Replay}Benchmarks on the same inputs, built the
// same way. The driver builds the inputs, runs the body once to warm up
// (lazy globals, first-touch), then runs it ITERATIONS times inside
// `callgrindMeasured`, so `valgrind --tool=callgrind --collect-atstart=no
// --toggle-collect='*callgrindMeasured*'` counts exactly those iterations.
// It prints one line, `WORKLOAD iterations=N input=HASH result=HASH`: equal
// input and result hashes on two builds show they did the same work.
//
// The same source builds against the code before and after the
// protocol-generic refactor (ae54aa0): KinetraceSupport exists only after it.
// It lives outside Benchmarks/Benchmarks/ because the benchmark plugin takes
// every executable target there for a benchmark suite.
import KinetraceReplay
import KinetraceSimulation
import KinetraceTrace
import KinetraceWire
#if canImport(KinetraceSupport)
import KinetraceSupport
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - The two API differences the workloads meet

func encodeDocument(_ header: TraceHeader, _ records: [TraceRecord]) -> [UInt8] {
    #if canImport(KinetraceSupport)
    return try! TraceEncoder.document(header: header, records: records)
    #else
    return TraceEncoder.document(header: header, records: records)
    #endif
}

func makeReplayInput(_ messages: [ReplayInput.Message], _ controllers: [Endpoint]) -> ReplayInput {
    #if canImport(KinetraceSupport)
    return ReplayInput(wireProtocol: MotionLinkV1(), messages: messages, controllers: controllers)
    #else
    return ReplayInput(messages: messages, controllers: controllers)
    #endif
}

// MARK: - Measuring

/// Keeps a value alive without the optimizer seeing through it (as the benchmarks' `blackHole`).
@inline(never) @_optimize(none)
func blackHole<T>(_ value: T) {}

/// The only code callgrind counts (`--toggle-collect='*callgrindMeasured*'`).
@inline(never)
func callgrindMeasured(_ iterations: Int, _ body: () throws -> Void) rethrows {
    for _ in 0..<iterations { try body() }
}

/// FNV-1a, 64-bit.
struct Digest {
    var value: UInt64 = 0xcbf2_9ce4_8422_2325
    mutating func add(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }
    mutating func add(_ bytes: [UInt8]) { for b in bytes { add(b) } }
    mutating func add(_ n: UInt64) { for k in 0..<8 { add(UInt8(truncatingIfNeeded: n >> (8 * k))) } }
    mutating func add(_ n: Int64) { add(UInt64(bitPattern: n)) }
    mutating func add(_ n: Int) { add(Int64(n)) }
    var hex: String {
        let s = String(value, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}

// MARK: - Inputs (as in CodecBenchmarks.swift and ReplayBenchmarks.swift)

let frameBatch = 4096
let traceRecords = 100_000

/// 4096 realistic frames packed back to back, as a receive ring would hold them.
func makePackedFrames() -> [UInt8] {
    var config = SessionSynthesizer.Configuration()
    config.controllers = 8
    config.durationS = 60
    var synth = SessionSynthesizer(config)
    var bytes: [UInt8] = []
    while bytes.count < frameBatch * MotionFrame.size, let record = synth.next() {
        if case .message(let m) = record, m.payload.count == MotionFrame.size { bytes += m.payload }
    }
    return bytes
}

/// A synthetic trace of `traceRecords` records, as file bytes.
func makeTraceBytes() -> [UInt8] {
    var config = SessionSynthesizer.Configuration()
    config.controllers = 40
    config.durationS = 3600
    var synth = SessionSynthesizer(config)
    var records: [TraceRecord] = []
    while records.count < traceRecords, let record = synth.next() { records.append(record) }
    return encodeDocument(synth.header(tool: "bench"), records)
}

let controllers = 1000
let framesPerController = 100

/// 1,000 controllers × 100 frames at 10 Hz, a jump every 7th frame.
func makeReplayInput() -> ReplayInput {
    var messages: [ReplayInput.Message] = []
    for c in 0..<controllers {
        for i in 0..<framesPerController {
            let frame = MotionFrame(tMs: 1_767_225_600_000 + UInt64(i) * 100, ay: i % 7 == 3 ? 0.9 : 0.05)
            messages.append(.init(offsetNs: Int64(i) * 100_000_000 + Int64(c) * 97_000, controller: c,
                                  payload: frame.encoded(), file: 0, index: messages.count))
        }
    }
    messages.sort { ($0.offsetNs, $0.index) < ($1.offsetNs, $1.index) }
    return makeReplayInput(messages, (0..<controllers).map { Endpoint(host: "10.0.\($0 / 250).\($0 % 250)", port: 50_000) })
}

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

// MARK: - Workloads

let arguments = CommandLine.arguments
let workloads = ["frame-decode", "trace-read-memory", "trace-read-file", "replay-plain", "replay-harsh"]
guard arguments.count >= 2, workloads.contains(arguments[1]),
      arguments.count < 3 || (Int(arguments[2]) ?? 0) > 0 else {
    print("usage: IdentityDrivers WORKLOAD [ITERATIONS]\n  WORKLOAD: \(workloads.joined(separator: " | "))")
    exit(2)
}
let workload = arguments[1]
let iterations = arguments.count >= 3 ? Int(arguments[2])! : 1
var input = Digest()
var result = Digest()

switch workload {
case "frame-decode":
    let frames = makePackedFrames()
    input.add(frames)
    // The body of "frame decode+validate (4096 frames)".
    func body() -> UInt64 {
        frames.withUnsafeBytes { raw in
            var sum: UInt64 = 0
            for i in 0..<frameBatch {
                let slice = UnsafeRawBufferPointer(rebasing: raw[i * 36..<(i + 1) * 36])
                if case .frame(let f) = try? MotionLinkV1.decode(slice) { sum &+= f.tMs }
            }
            blackHole(sum)
            return sum
        }
    }
    result.add(body())
    callgrindMeasured(iterations) { _ = body() }

case "trace-read-memory":
    let traceBytes = makeTraceBytes()
    input.add(traceBytes)
    // The body of "trace read (100k records, memory)".
    func body() throws -> Int {
        let reader = try TraceReader(bytes: traceBytes)
        var count = 0
        while let _ = try reader.next() { count += 1 }
        precondition(count == traceRecords)
        blackHole(count)
        return count
    }
    result.add(try! body())
    try! callgrindMeasured(iterations) { _ = try body() }

case "trace-read-file":
    let traceBytes = makeTraceBytes()
    input.add(traceBytes)
    let directory = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    let path = "\(directory)/kinetrace-identity-\(getpid()).jsonl"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "cannot write \(path)")
    _ = traceBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    defer { unlink(path) }
    // The body of "trace read (100k records, file)".
    func body() throws -> Int {
        let reader = try TraceReader(path: path)
        var count = 0
        while let _ = try reader.next() { count += 1 }
        blackHole(count)
        return count
    }
    result.add(try! body())
    try! callgrindMeasured(iterations) { _ = try body() }

case "replay-plain", "replay-harsh":
    let replayInput = makeReplayInput()
    for message in replayInput.messages { input.add(message.payload); input.add(message.offsetNs); input.add(message.controller) }
    let options = workload == "replay-plain" ? ReplayOptions() : harsh
    // Every send, digested outside the measured run, shows both builds planned the same.
    var sends = 0
    for step in ReplaySchedule(input: replayInput, options: options) {
        if case .send(let send) = step {
            sends += 1
            result.add(send.deadlineNs)
            result.add(send.controller)
            result.add(send.payload)
            result.add(send.senderTimeMs ?? .max)
            result.add(UInt8(send.predictedTrigger ? 1 : 0))
        }
    }
    result.add(sends)
    // The body of "replay schedule, no impairment / harsh impairments (100k messages)".
    func body() -> Int {
        var sends = 0
        for step in ReplaySchedule(input: replayInput, options: options) { if case .send = step { sends += 1 } }
        blackHole(sends)
        return sends
    }
    callgrindMeasured(iterations) { _ = body() }

default:
    fatalError("unreachable")
}

print("\(workload) iterations=\(iterations) input=\(input.hex) result=\(result.hex)")
