import Foundation
import Testing
@testable import KinetraceTrace
import KinetraceWire
import KinetraceJSON

// Shared helpers for the trace-format tests: a seeded generator of random
// records, headers and JSON values, readers that collect everything, and
// temporary files.

/// SplitMix64: tiny, fast, deterministic; seeded from a property-test input.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }
}

enum Fixtures {
    static let minimalHeaderLine = "{\"format\":\"kinetrace-trace\",\"version\":1}\n"

    static let header = TraceHeader(
        created: "2026-11-23T08:00:00.000Z", tool: "kinetrace-tests 0.0.1",
        capturePoint: .host, clock: .realtime, notes: "fixture",
        extra: ["seed": .integer(7)])

    static let frameT: Int64 = 1_767_225_600_140_490_966

    static func message(_ t: Int64 = frameT, length: Int = 36, fill: UInt8 = 0xA5, rtt: Int64? = nil) -> TraceRecord {
        .message(MessageRecord(
            timeNs: t, direction: .controllerToHost,
            source: Endpoint(host: "10.0.0.11", port: 50001), destination: Endpoint(host: "10.0.0.1", port: 47110),
            payload: (0..<length).map { UInt8(truncatingIfNeeded: Int(fill) &+ $0 &* 37) }, rttNs: rtt))
    }

    static func label(_ t: Int64 = 1_767_225_602_638_000_000) -> TraceRecord {
        .label(LabelRecord(timeNs: t, controller: Endpoint(host: "fe80::1%eth0", port: 50000), gesture: "jump",
                           senderTimeMs: 1_767_225_602_638, durationMs: 450))
    }

    static func event(_ t: Int64 = 1_767_225_600_000_000_000) -> TraceRecord {
        .event(EventRecord(timeNs: t, event: "seed", data: [
            "controllers": .integer(3), "rate_hz": .number(10.5), "script": .string("jumps \"quoted\"\n"),
            "nested": .array([.null, .bool(true), .object(["k": .array([])])]),
        ]))
    }

    /// A handful of different records, one of each shape.
    static let mixed: [TraceRecord] = [
        event(), message(), message(frameT + 1, length: 20, fill: 3, rtt: 1_234_567), label(),
        message(frameT + 2, length: 0), message(frameT + 3, length: 7, fill: 0xFF),
    ]
}

// MARK: Random values

enum RandomTrace {
    static let stringPieces: [String] = [
        "jump", "duck", "tilt_left", "", " ", "a\"b", "back\\slash", "new\nline", "cr\rlf", "\t", "\u{0}", "\u{1}",
        "\u{1F}", "\u{7F}", "é", "e\u{301}", "日本語", "😀", "👩‍👩‍👧", "\u{2028}\u{2029}", "/", "</script>", "\\u0041",
        "\u{FFFF}", "\u{10FFFF}", "{\"not\":\"json\"}", "[", "}", ",", ":",
    ]

    static func string(_ rng: inout SplitMix64) -> String {
        var s = ""
        for _ in 0..<rng.int(0...4) {
            if rng.chance(60) {
                s += rng.pick(stringPieces)
            } else {
                // Any scalar but a surrogate.
                var v = UInt32(rng.int(0...0x10FFFF))
                if (0xD800...0xDFFF).contains(v) { v = 0x41 }
                s.unicodeScalars.append(Unicode.Scalar(v)!)
            }
        }
        return s
    }

    /// Any time a trace may hold (TR-TIME-1), its edges often.
    static func time(_ rng: inout SplitMix64) -> Int64 {
        let last = TraceRecord.timeRangeNs.upperBound - 1
        if rng.chance(30) {
            return rng.pick([0, 1, last, last - 1, 1_767_225_600_140_490_966, 999_999_999, 1_000_000_000])
        }
        return Int64(bitPattern: rng.next() >> 2)
    }

    static func endpoint(_ rng: inout SplitMix64) -> Endpoint {
        let port = UInt16(truncatingIfNeeded: rng.next())
        if rng.chance(50) {
            let host = (0..<4).map { _ in String(rng.int(0...255)) }.joined(separator: ".")
            return Endpoint(host: host, port: port)
        }
        if rng.chance(50) {
            return Endpoint(host: rng.pick(["::1", "::", "fe80::1%eth0", "2001:db8::42", "::ffff:10.0.0.1", "fe80::abcd%wlp2s0"]),
                            port: port)
        }
        let host = (0..<8).map { _ in String(rng.int(0...0xFFFF), radix: 16) }.joined(separator: ":")
        return Endpoint(host: host, port: port)
    }

    static func payload(_ rng: inout SplitMix64) -> [UInt8] {
        let length = rng.chance(40) ? rng.pick([0, 1, 19, 20, 21, 35, 36, 37, 100]) : rng.int(0...100)
        return (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    static func double(_ rng: inout SplitMix64) -> Double {
        switch rng.int(0...3) {
        case 0: return rng.pick([0.0, -0.0, 0.5, -1.25, 1e300, -1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
                                 .leastNormalMagnitude, 3.0, 1e16, 1e-5, 0.1, 123456789.125])
        case 1:
            var d = Double(bitPattern: rng.next())
            if !d.isFinite { d = 42.5 }
            return d
        default: return Double(Int32(truncatingIfNeeded: rng.next())) / 1024
        }
    }

    /// Any JSON value except non-finite numbers (which the writer turns into
    /// strings by design, so they cannot round-trip).
    static func json(_ rng: inout SplitMix64, depth: Int = 0) -> JSONValue {
        let top = depth >= 4 ? 4 : 6
        switch rng.int(0...top) {
        case 0: return .null
        case 1: return .bool(rng.chance(50))
        case 2: return .integer(rng.chance(30) ? rng.pick([0, -1, .min, .max]) : Int64(bitPattern: rng.next()))
        case 3: return .number(double(&rng))
        case 4: return .string(string(&rng))
        case 5: return .array((0..<rng.int(0...4)).map { _ in json(&rng, depth: depth + 1) })
        default: return .object(object(&rng, depth: depth + 1))
        }
    }

    static func object(_ rng: inout SplitMix64, depth: Int = 0) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for _ in 0..<rng.int(0...4) { members[string(&rng)] = json(&rng, depth: depth) }
        return members
    }

    static func record(_ rng: inout SplitMix64) -> TraceRecord {
        switch rng.int(0...3) {
        case 0:
            return .message(MessageRecord(
                timeNs: time(&rng), direction: rng.chance(50) ? .controllerToHost : .hostToController,
                source: endpoint(&rng), destination: endpoint(&rng), payload: payload(&rng),
                rttNs: rng.chance(50) ? nil : time(&rng)))
        case 1:
            // t_ms and duration_ms up to Int64.max (beyond is a separate, known-bug test).
            return .label(LabelRecord(
                timeNs: time(&rng), controller: rng.chance(30) ? nil : endpoint(&rng), gesture: string(&rng),
                senderTimeMs: rng.chance(30) ? nil : rng.next() >> 1, durationMs: rng.chance(30) ? nil : UInt64(rng.int(0...100_000))))
        case 2:
            return .event(EventRecord(timeNs: time(&rng), event: string(&rng), data: object(&rng)))
        default:
            // Finite doubles of any magnitude and sign; every one must survive the text round trip exactly.
            func number() -> Double {
                let value = Double(bitPattern: rng.next())
                return value.isFinite ? value : Double(rng.int(-1000...1000)) / 7
            }
            func vector() -> Vector3 { Vector3(number(), number(), number()) }
            return .motion(MotionSampleRecord(
                timeNs: time(&rng), controller: endpoint(&rng), senderTimeMs: rng.next() >> 1, userAcceleration: vector(),
                rotationRate: vector(), gravity: rng.chance(30) ? nil : vector(),
                attitude: rng.chance(30) ? nil : .init(w: number(), x: number(), y: number(), z: number())))
        }
    }

    static let knownHeaderKeys: Set<String> = ["format", "version", "minor", "created", "tool", "profile", "protocol",
                                               "capture_point", "clock", "notes"]

    static func header(_ rng: inout SplitMix64) -> TraceHeader {
        var extra = object(&rng)
        for key in knownHeaderKeys { extra[key] = nil }
        if rng.chance(50) { extra["seed"] = .integer(Int64(bitPattern: rng.next())) }
        let created = RFC3339.string(fromNanoseconds: Int64(bitPattern: rng.next() >> 2))
        let tool = string(&rng), notes = string(&rng)
        let odd1 = string(&rng), odd2 = string(&rng), odd3 = string(&rng)
        _ = odd1  // drawn still, so each seed's other draws stay as they were
        let capturePoint = rng.pick([CapturePoint.host, .controller, .network, .synthetic, CapturePoint(odd2)])
        let clock = rng.pick([ClockSource.realtime, .pcap, .model, ClockSource(odd3)])
        // Only a protocol this build speaks reads back (TR-HEADER: an unknown one is refused).
        var header = TraceHeader(created: created, tool: tool, protocolID: MotionLinkV1.id,
                                 capturePoint: capturePoint, clock: clock, notes: notes, extra: extra)
        header.minor = rng.int(0...1000)
        return header
    }
}

// MARK: Reading

/// Every record of a reader, to the end.
func readAll(_ reader: TraceReader) throws(TraceError) -> [TraceRecord] {
    var out: [TraceRecord] = []
    while let record = try reader.next() { out.append(record) }
    return out
}

/// Records read before the first error, and that error (nil when none).
func readUntilError(_ reader: TraceReader) -> (records: [TraceRecord], error: TraceError?) {
    var out: [TraceRecord] = []
    do {
        while let record = try reader.next() { out.append(record) }
        return (out, nil)
    } catch {
        return (out, error)
    }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A document: the minimal header then the given record lines, each ended by "\n".
func document(_ lines: [String]) -> [UInt8] {
    bytes(Fixtures.minimalHeaderLine + lines.map { $0 + "\n" }.joined())
}

/// Parses a one-record document; returns the record or the error.
func parseOne(_ line: String) -> Result<TraceRecord?, TraceError> {
    do {
        let reader = try TraceReader(bytes: document([line]))
        let record = try reader.next()
        let rest = try reader.next()
        #expect(rest == nil, "more than one record from \(line)")
        return .success(record)
    } catch {
        return .failure(error)
    }
}

/// Start offset of each line (including the header as line 1) and its end
/// (the index of its "\n", or the count for an unterminated last line).
func lineExtents(_ data: [UInt8]) -> [(start: Int, end: Int)] {
    var extents: [(start: Int, end: Int)] = []
    var start = 0
    data.withUnsafeBufferPointer { buf in
        var i = 0
        let n = buf.count
        while i < n {
            if buf[i] == 0x0A { extents.append((start, i)); start = i + 1 }
            i += 1
        }
    }
    if start < data.count { extents.append((start, data.count)) }
    return extents
}

/// Byte offset of the first occurrence of `needle` in `haystack` at or after `from`.
func offset(of needle: String, in haystack: [UInt8], from: Int = 0) -> Int? {
    let n = Array(needle.utf8)
    guard n.count <= haystack.count else { return nil }
    var i = from
    while i + n.count <= haystack.count {
        if haystack[i..<(i + n.count)].elementsEqual(n) { return i }
        i += 1
    }
    return nil
}

// MARK: Temporary files

final class TempDirectory {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "kinetrace-trace-tests-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    @discardableResult
    func write(_ name: String, _ data: [UInt8]) -> String {
        let p = file(name)
        _ = FileManager.default.createFile(atPath: p, contents: Data(data))
        return p
    }

    func contents(_ name: String) -> [UInt8] {
        [UInt8](FileManager.default.contents(atPath: file(name)) ?? Data())
    }
}
