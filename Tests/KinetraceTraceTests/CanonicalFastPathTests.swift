import Testing
@testable import KinetraceTrace
import KinetraceWire

/// The canonical fast path must engage on what the writer writes, and must
/// never disagree with the general parser on any line.
@Suite struct CanonicalFastPathTests {
    /// (fast path result, general parser result) for one line.
    func bothPaths(_ line: [UInt8]) -> (fast: MessageRecord?, general: Result<TraceRecord?, TraceDecoder.Failure>) {
        var fastDecoder = TraceDecoder(MotionLinkV1()), generalDecoder = TraceDecoder(MotionLinkV1())
        return line.withUnsafeBytes { raw in
            let fast = fastDecoder.canonicalMessage(raw)
            let general: Result<TraceRecord?, TraceDecoder.Failure>
            do throws(TraceDecoder.Failure) { general = .success(try generalDecoder.generalRecord(raw)) } catch { general = .failure(error) }
            return (fast, general)
        }
    }

    @Test func engagesOnEveryMessageTheWriterWrites() throws {
        var rng = SplitMix64(seed: 99)
        var engaged = 0
        for _ in 0..<3000 {
            let record = RandomTrace.record(&rng)
            var line = TraceEncoder.line(for: record, as: MotionLinkV1())
            line.removeLast()  // the reader hands the decoder lines without "\n"
            let (fast, general) = bothPaths(line)
            if case .message(let message) = record {
                // Payloads with a non-finite float are written as strings and fall back by design.
                let text = String(decoding: line, as: UTF8.self)
                let nonFinite = text.contains("Infinity\"") || text.contains("\"NaN\"")
                if !nonFinite {
                    #expect(fast == message, "fast path did not engage on \(String(decoding: line, as: UTF8.self))")
                    engaged += 1
                }
                #expect(try general.get() == record)
            } else {
                #expect(fast == nil)
            }
        }
        #expect(engaged > 500)
    }

    @Test func neverAcceptsWhatTheGeneralParserRejectsOrReadsDifferently() {
        var rng = SplitMix64(seed: 7)
        var accepted = 0, checked = 0
        for _ in 0..<400 {
            let record = RandomTrace.record(&rng)
            guard case .message = record else { continue }
            var line = TraceEncoder.line(for: record, as: MotionLinkV1())
            line.removeLast()
            // Every single-byte change of a canonical line, at 24 random places per line.
            for _ in 0..<24 {
                var mutated = line
                let at = Int(rng.next() % UInt64(line.count))
                let replacements: [UInt8] = [0x20, 0x22, 0x5C, 0x2C, 0x7D, 0x30, 0x2E, 0x65, 0x41, 0x00, UInt8(truncatingIfNeeded: rng.next())]
                mutated[at] = replacements[Int(rng.next() % UInt64(replacements.count))]
                let (fast, general) = bothPaths(mutated)
                checked += 1
                guard let fast else { continue }
                accepted += 1
                guard case .success(.message(let expected)) = general else {
                    Issue.record("fast path accepted a line the general parser rejects: \(String(decoding: mutated, as: UTF8.self))")
                    continue
                }
                #expect(fast == expected, "\(String(decoding: mutated, as: UTF8.self))")
            }
        }
        #expect(checked > 1000)
        #expect(accepted > 0)  // some mutations (digits in numbers, hex) stay canonical
    }

    @Test func fallsBackOnWhitespaceOrReorderedMembers() {
        let spaced = #"{"kind": "msg","t_ns":1,"dir":"c2h","src":"1.2.3.4:5","dst":"1.2.3.4:6","len":0,"payload":"","msg":"unknown","valid":false,"reason":"invalid_length"}"#
        let reordered = #"{"t_ns":1,"kind":"msg","dir":"c2h","src":"1.2.3.4:5","dst":"1.2.3.4:6","payload":""}"#
        for line in [spaced, reordered] {
            let (fast, general) = bothPaths(Array(line.utf8))
            #expect(fast == nil)
            guard case .success(.message(let m)) = general else { Issue.record("general parser failed on \(line)"); continue }
            #expect(m.timeNs == 1 && m.payload.isEmpty)
        }
    }
}
