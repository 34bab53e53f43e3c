// DeclaredDriver: MotionLink v1 facts(bytes) through the compiled codec and through
// the interpreter of specs/protocols/motionlink-v1.json, on the same frames
// (Benchmarks/declared/run.sh builds it in release and runs it).
//
//   DeclaredDriver rate DECLARATION [FRAMES] [RUNS]
//       FRAMES frames (default 1,000,000; 1 % with a bit flipped, so a bad CRC), each
//       codec RUNS times (default 5), alternating; prints the best rate of each, the
//       median, and the ratio declared ÷ compiled of the best rates.
//   DeclaredDriver count DECLARATION compiled|declared [FRAMES]
//       one pass over FRAMES frames (default 100,000) inside `callgrindMeasured`, after
//       one pass to warm up, for `valgrind --tool=callgrind --collect-atstart=no
//       --toggle-collect='*callgrindMeasured*'` to count only that pass.
//
// Before timing, every frame's facts are compared between the two codecs (the error's
// code and offset, not its wording): the run stops if they differ, so both rates are
// for the same answers. Each pass folds the
// facts into a checksum that is printed, so the optimizer cannot drop the work.
import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func fail(_ message: String) -> Never {
    var text = "DeclaredDriver: \(message)\n"
    _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

func readFile(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
    defer { fclose(file) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n <= 0 { break }
        out += buffer[0..<n]
    }
    return out
}

/// xorshift64*: the same frames on every run and machine.
struct Generator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
    /// Uniform in [-1, 1).
    mutating func unit() -> Float32 { Float32(Double(next() >> 11) / Double(1 << 53) * 2 - 1) }
}

/// FRAMES frames back to back: a 10 Hz controller clock, plausible motion (±2 g, ±4 rad/s,
/// a jump now and then), and 1 in 100 frames with one bit flipped after the CRC was taken.
func makeFrames(_ count: Int) -> [UInt8] {
    var generator = Generator(state: 0x9E37_79B9_7F4A_7C15)
    var out: [UInt8] = []
    out.reserveCapacity(count * MotionFrame.size)
    for i in 0..<count {
        let jump: Float32 = i % 37 == 0 ? 1.5 : 0
        var frame = MotionFrame(tMs: 1_767_225_600_000 + UInt64(i) * 100,
                                ax: generator.unit() * 0.2, ay: generator.unit() * 0.2 + jump, az: generator.unit() * 0.2,
                                wx: generator.unit() * 4, wy: generator.unit() * 4, wz: generator.unit() * 4).encoded()
        if generator.next() % 100 == 0 {
            let bit = Int(generator.next() % UInt64(MotionFrame.size * 8))
            frame[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
        }
        out += frame
    }
    return out
}

/// Folds facts into a number that depends on every field read.
@inline(__always)
func fold(_ sum: inout UInt64, _ facts: MessageFacts) {
    if facts.isValid {
        sum &+= facts.senderTimeMs ?? 1
        sum &+= facts.motion?.userAcceleration?.y.bitPattern ?? 3
    } else {
        sum &+= 7
    }
}

/// Keeps a value alive without the optimizer seeing through it.
@inline(never) @_optimize(none)
func blackHole<T>(_ value: T) {}

@inline(never)
func compiledPass(_ frames: UnsafeRawBufferPointer) -> UInt64 {
    var sum: UInt64 = 0
    var at = 0
    while at < frames.count {
        fold(&sum, MotionLinkV1.facts(UnsafeRawBufferPointer(rebasing: frames[at..<(at + MotionFrame.size)])))
        at += MotionFrame.size
    }
    return sum
}

@inline(never)
func declaredPass(_ wire: DeclaredProtocol, _ frames: UnsafeRawBufferPointer) -> UInt64 {
    var sum: UInt64 = 0
    var at = 0
    while at < frames.count {
        fold(&sum, wire.facts(UnsafeRawBufferPointer(rebasing: frames[at..<(at + MotionFrame.size)])))
        at += MotionFrame.size
    }
    return sum
}

/// As the engines call it: through `any WireProtocol`.
@inline(never)
func existentialPass(_ wire: any WireProtocol, _ frames: UnsafeRawBufferPointer) -> UInt64 {
    var sum: UInt64 = 0
    var at = 0
    while at < frames.count {
        fold(&sum, wire.facts(UnsafeRawBufferPointer(rebasing: frames[at..<(at + MotionFrame.size)])))
        at += MotionFrame.size
    }
    return sum
}

/// The only code callgrind counts (`--toggle-collect='*callgrindMeasured*'`).
@inline(never)
func callgrindMeasured(_ body: () -> UInt64) -> UInt64 { body() }

func seconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, ["rate", "count"].contains(arguments[1]) else {
    fail("usage: DeclaredDriver rate DECLARATION [FRAMES] [RUNS] | count DECLARATION compiled|declared [FRAMES]")
}
let declarationPath = arguments[2]
let declared: DeclaredProtocol
do throws(DeclarationError) {
    declared = try DeclaredProtocol.read(readFile(declarationPath), path: declarationPath)
} catch {
    fail("\(error)")
}
guard declared.id == MotionLinkV1.id else { fail("\(declarationPath) declares \(declared.id), not motionlink-v1") }

func number(_ index: Int, _ fallback: Int, _ range: ClosedRange<Int>, _ what: String) -> Int {
    guard index < arguments.count else { return fallback }
    guard let n = Int(arguments[index]), range.contains(n) else { fail("\(what) must be \(range.lowerBound)–\(range.upperBound), found \(arguments[index])") }
    return n
}

if arguments[1] == "count" {
    guard arguments.count >= 4, ["compiled", "declared"].contains(arguments[3]) else { fail("count takes compiled or declared") }
    let count = number(4, 100_000, 1...100_000_000, "FRAMES")
    let frames = makeFrames(count)
    let sum = frames.withUnsafeBytes { raw -> UInt64 in
        if arguments[3] == "compiled" {
            blackHole(compiledPass(raw))
            return callgrindMeasured { compiledPass(raw) }
        }
        blackHole(declaredPass(declared, raw))
        return callgrindMeasured { declaredPass(declared, raw) }
    }
    print("count \(arguments[3]) frames=\(count) checksum=\(String(sum, radix: 16))")
    exit(0)
}

let count = number(3, 1_000_000, 1...100_000_000, "FRAMES")
let runs = number(4, 5, 1...50, "RUNS")
let frames = makeFrames(count)
var valid = 0
frames.withUnsafeBytes { raw in
    var at = 0
    while at < raw.count {
        let bytes = UnsafeRawBufferPointer(rebasing: raw[at..<(at + MotionFrame.size)])
        var a = MotionLinkV1.facts(bytes), b = declared.facts(bytes)
        // The same reason at the same byte; the phrase after "expected" may differ.
        guard a.error?.code == b.error?.code, a.error?.offset == b.error?.offset else {
            fail("frame \(at / MotionFrame.size): compiled \(a), declared \(b)")
        }
        if a.isValid { valid += 1 }
        a.error = nil
        b.error = nil
        guard a == b else { fail("frame \(at / MotionFrame.size): compiled \(a), declared \(b)") }
        at += MotionFrame.size
    }
}

// Alternating, so a change of machine load hits every codec alike.
let variants: [(String, (UnsafeRawBufferPointer) -> UInt64)] = [
    ("compiled MotionLinkV1.facts", { compiledPass($0) }),
    ("declared DeclaredProtocol.facts", { declaredPass(declared, $0) }),
    ("compiled, through any WireProtocol", { existentialPass(MotionLinkV1(), $0) }),
    ("declared, through any WireProtocol", { existentialPass(declared, $0) }),
]
var times = [[Double]](repeating: [], count: variants.count)
var sums = [UInt64](repeating: 0, count: variants.count)
frames.withUnsafeBytes { raw in
    for (i, variant) in variants.enumerated() { sums[i] = variant.1(raw) }  // warm-up
    for _ in 0..<runs {
        for (i, variant) in variants.enumerated() {
            let start = seconds()
            let sum = variant.1(raw)
            times[i].append(seconds() - start)
            guard sum == sums[i] else { fail("\(variant.0) gave another checksum") }
        }
    }
}
guard Set(sums).count == 1 else { fail("the codecs' checksums differ: \(sums)") }

func rate(_ t: Double) -> Double { Double(count) / t }
func millions(_ r: Double) -> String {
    let m = (r / 1e4).rounded() / 100
    return "\(m) M/s"
}
print("frames=\(count) valid=\(valid) invalid=\(count - valid) runs=\(runs) checksum=\(String(sums[0], radix: 16))")
var best: [Double] = []
for (i, variant) in variants.enumerated() {
    let sorted = times[i].sorted()
    best.append(rate(sorted[0]))
    print("\(variant.0)\tbest \(millions(rate(sorted[0])))\tmedian \(millions(rate(sorted[sorted.count / 2])))\tbest \((sorted[0] / Double(count) * 1e10).rounded() / 10) ns/frame")
}
let ratio = (best[1] / best[0] * 1000).rounded() / 1000
print("ratio declared/compiled (best rates): \(ratio)  target >= 0.333: \(ratio >= 1.0 / 3 ? "met" : "NOT met")")
