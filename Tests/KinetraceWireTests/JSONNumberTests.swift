import KinetraceJSON
import KinetraceSupport
import KinetraceTestSupport
import PropertyBased
import Testing

/// The fast decimal conversion must agree bit for bit with the standard
/// library's correctly rounded parser, on the numbers JSONEncoder writes
/// and on hand-picked rounding edges.
@Suite struct JSONNumberTests {
    static func value(_ text: String) -> Double {
        Array(text.utf8).withUnsafeBytes { JSONNumber.double($0) }
    }

    static func agrees(_ text: String) -> Bool {
        let expected = Double(text)!
        let found = value(text)
        return found.bitPattern == expected.bitPattern
    }

    @Test func shortestFormsOfRandomDoublesRoundTrip() async {
        await seededPropertyCheck(count: 20_000, input: Gen.uint64()) { bits in
            let d = Double(bitPattern: bits)
            guard d.isFinite else { return }
            #expect(Self.value(d.description).bitPattern == d.bitPattern, "\(d.description)")
        }
    }

    @Test func motionSizedValuesInEveryNotationAgree() {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<50_000 {
            let d = Double.random(in: -60...60, using: &generator)
            for text in [d.description, String(format: "%.17g", d), String(format: "%.15g", d), String(format: "%.3e", d), String(format: "%.19f", d)] {
                #expect(Self.agrees(text), "\(text)")
            }
        }
    }

    @Test func roundingEdgesAgree() {
        let edges = [
            "9007199254740993", "9007199254740992", "9007199254740995", "18014398509481985", "1.0000000000000001110223024625156540",
            "0.30000000000000004", "0.1", "0.2", "0.3", "2.2250738585072014e-308", "1e19", "1e-19", "9999999999999999999",
            "9999999999999999999e19", "1.7976931348623157e308", "5e-324", "123456789012345678901234567890", "-0", "-0.0", "0e5",
            "0.000000000000000000000000000001", "4.9406564584124654e-324", "1e400", "-1e400", "2.5e-1", "100.000001",
            "0.015502403740983729", "-17.999999999999996", "7.205759403792794e16", "72057594037927945",
        ]
        for text in edges { #expect(Self.agrees(text), "\(text)") }
    }

    @Test func randomDigitStringsAgree() async {
        await seededPropertyCheck(count: 20_000, input: Gen.int(in: 1...20), Gen.uint64(), Gen.int(in: -25...25)) { digits, bits, exponent in
            var text = String(bits % 10_000_000_000_000_000_000)
            text = String(text.prefix(digits))
            let point = Int(bits % UInt64(text.count + 1))
            if point < text.count { text.insert(".", at: text.index(text.startIndex, offsetBy: point)) }
            if text.hasPrefix(".") { text = "0" + text }
            if text.hasSuffix(".") { text += "0" }
            text += "e\(exponent)"
            #expect(Self.agrees(text), "\(text)")
        }
    }
}
