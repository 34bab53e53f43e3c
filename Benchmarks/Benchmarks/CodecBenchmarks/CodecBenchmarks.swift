import Benchmark
import KinetraceSimulation
import KinetraceTrace
import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Each benchmark processes a fixed batch per iteration, so throughput
// (iterations/s) × batch size is items/s. Baselines run in the same process
// on the same bytes, so the ratios in README are like for like.

let frameBatch = 4096
let traceRecords = 100_000

/// 4096 realistic frames packed back to back, as a receive ring would hold them.
let packedFrames: [UInt8] = {
    var config = SessionSynthesizer.Configuration()
    config.controllers = 8
    config.durationS = 60
    var synth = SessionSynthesizer(config)
    var bytes: [UInt8] = []
    while bytes.count < frameBatch * MotionFrame.size, let record = synth.next() {
        if case .message(let m) = record, m.payload.count == MotionFrame.size { bytes += m.payload }
    }
    return bytes
}()

/// A synthetic trace of `traceRecords` records, as file bytes.
let traceBytes: [UInt8] = {
    var config = SessionSynthesizer.Configuration()
    config.controllers = 40
    config.durationS = 3600
    var synth = SessionSynthesizer(config)
    var records: [TraceRecord] = []
    while records.count < traceRecords, let record = synth.next() { records.append(record) }
    return try! TraceEncoder.document(header: synth.header(tool: "bench"), records: records)
}()

let keepCalmBatch = 4096

/// 4096 KeepCalm messages made by the protocol from synthesized motion, with their members
/// re-ordered six ways in the payload and two in the envelope (JSONEncoder promises no order).
let keepCalmMessages: [[UInt8]] = {
    var config = SessionSynthesizer.Configuration()
    config.wireProtocol = KeepCalmJSON()
    config.controllers = 8
    config.durationS = 60
    var synth = SessionSynthesizer(config)
    var messages: [[UInt8]] = []
    while messages.count < keepCalmBatch, let record = synth.next() {
        guard case .message(let m) = record, case .success(let motion) = m.decoded(as: KeepCalmJSON()) else { continue }
        let n = messages.count
        let members = ["\"id\":\"\(motion.id)\"", "\"type\":\"Combined\"", "\"x\":\(motion.x)", "\"y\":\(motion.y)", "\"z\":\(motion.z)"]
        let orders = [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3], [1, 2, 3, 4, 0], [3, 4, 0, 2, 1], [0, 2, 1, 4, 3]]
        let payload = "{" + orders[n % orders.count].map { members[$0] }.joined(separator: ",") + "}"
        let text = n % 2 == 0 ? "{\"type\":\"MotionData\",\"payload\":\(payload)}" : "{\"payload\":\(payload),\"type\":\"MotionData\"}"
        messages.append(Array(text.utf8))
    }
    return messages
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 3,
        maxDuration: .seconds(3))

    Benchmark("frame decode+validate (4096 frames)") { benchmark in
        let frames = packedFrames
        for _ in benchmark.scaledIterations {
            frames.withUnsafeBytes { raw in
                var sum: UInt64 = 0
                for i in 0..<frameBatch {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[i * 36..<(i + 1) * 36])
                    if case .frame(let f) = try? MotionLinkV1.decode(slice) { sum &+= f.tMs }
                }
                blackHole(sum)
            }
        }
    }

    Benchmark("keepcalm-json decode+validate (4096 messages, members in six orders)") { benchmark in
        let messages = keepCalmMessages
        for _ in benchmark.scaledIterations {
            var sum = 0.0
            for message in messages {
                if case .success(let motion) = KeepCalmJSON.decodeResult(message) { sum += motion.y }
            }
            blackHole(sum)
        }
    }

    Benchmark("baseline: bytewise CRC-32 (4096 frames)") { benchmark in
        // The textbook one-table loop, what most hand-rolled codecs use.
        var table = [UInt32](repeating: 0, count: 256)
        for n in 0..<256 {
            var c = UInt32(n)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            table[n] = c
        }
        let frames = packedFrames
        for _ in benchmark.scaledIterations {
            frames.withUnsafeBytes { raw in
                table.withUnsafeBufferPointer { t in
                    var sum: UInt32 = 0
                    for i in 0..<frameBatch {
                        var c: UInt32 = 0xFFFF_FFFF
                        for k in i * 36..<i * 36 + 32 { c = t[Int((c ^ UInt32(raw[k])) & 0xFF)] ^ (c >> 8) }
                        sum &+= ~c
                    }
                    blackHole(sum)
                }
            }
        }
    }

    Benchmark("trace read (100k records, memory)") { benchmark in
        for _ in benchmark.scaledIterations {
            let reader = try TraceReader(bytes: traceBytes)
            var count = 0
            while let _ = try reader.next() { count += 1 }
            precondition(count == traceRecords)
            blackHole(count)
        }
    }

    Benchmark("trace read (100k records, file)") { benchmark in
        let path = "/tmp/kinetrace-bench-\(getpid()).jsonl"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = traceBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        defer { unlink(path) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let reader = try TraceReader(path: path)
            var count = 0
            while let _ = try reader.next() { count += 1 }
            blackHole(count)
        }
    }

    Benchmark("baseline: line split only (100k records)") { benchmark in
        // The floor for any JSON Lines reader: finding the newlines.
        for _ in benchmark.scaledIterations {
            traceBytes.withUnsafeBytes { raw in
                var lines = 0
                var p = raw.baseAddress!
                var left = raw.count
                while left > 0, let nl = memchr(p, 0x0A, left) {
                    let next = UnsafeRawPointer(nl) + 1
                    left -= p.distance(to: next)
                    p = next
                    lines += 1
                }
                blackHole(lines)
            }
        }
    }
}
