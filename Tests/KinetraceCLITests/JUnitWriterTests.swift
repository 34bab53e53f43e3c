import Foundation
@testable import KinetraceCLI
import KinetraceJUnit
import KinetraceTestSupport
import Testing

/// The JUnit writer on its own: escaping, times, timestamps and the document's counts.
@Suite struct JUnitWriterTests {
    /// Every C0 control but tab, LF and CR, and the two noncharacters XML 1.0 forbids.
    static let forbidden: [Unicode.Scalar] = (0..<0x20).filter { ![0x9, 0xA, 0xD].contains($0) }.map { Unicode.Scalar($0)! }
        + [Unicode.Scalar(0xFFFE)!, Unicode.Scalar(0xFFFF)!]

    @Test func everyCharacterXMLForbidsIsReplaced() {
        #expect(Self.forbidden.count == 31)
        for scalar in Self.forbidden {
            let text = "a\(Character(scalar))b"
            #expect(JUnitXML.escaped(text) == "a\u{FFFD}b", "U+\(String(scalar.value, radix: 16))")
            #expect(JUnitXML.escaped(text, inAttribute: true) == "a\u{FFFD}b", "U+\(String(scalar.value, radix: 16))")
            #expect(!JUnitXML.isAllowed(scalar))
        }
    }

    @Test func markupAndWhitespaceAreEscapedWhereAReaderWouldChangeThem() {
        #expect(JUnitXML.escaped(#"a & b < c > d " e ' f"#) == "a &amp; b &lt; c &gt; d &quot; e &apos; f")
        #expect(JUnitXML.escaped("]]>") == "]]&gt;")
        // Text keeps tab and LF; a CR would come back as LF, and in attributes tab and LF as spaces.
        #expect(JUnitXML.escaped("1\t2\n3\r4") == "1\t2\n3&#13;4")
        #expect(JUnitXML.escaped("1\t2\n3\r4", inAttribute: true) == "1&#9;2&#10;3&#13;4")
        #expect(JUnitXML.escaped("\r\n", inAttribute: true) == "&#13;&#10;")
        // A combining mark makes one Character with the quote before it; the quote is still escaped.
        #expect(JUnitXML.escaped("\"\u{301}<\u{308}") == "&quot;\u{301}&lt;\u{308}")
        // Allowed, if unusual: DEL, C1 controls, a noncharacter below U+FFFE, astral scalars.
        let noncharacter = String(Character(Unicode.Scalar(0xFDD0)!))  // Swift rejects it as a literal
        for kept in ["\u{7F}", "\u{85}", "\u{9F}", noncharacter, "\u{FFFD}", "\u{10000}", "🦘", "\u{10FFFF}", "é", "\u{2028}"] {
            #expect(JUnitXML.escaped(kept) == kept && JUnitXML.escaped(kept, inAttribute: true) == kept)
        }
    }

    /// Surefire's pattern (what junit-10.xsd enforces): decimal seconds, at most three places.
    @Test func timesAreDecimalSecondsWithThreePlaces() async {
        let expected: [(Int64, String)] = [
            (0, "0.000"), (1, "0.000"), (499_999, "0.000"), (500_000, "0.001"), (74_109_000, "0.074"),
            (999_499_999, "0.999"), (999_500_000, "1.000"), (1_000_000_000, "1.000"),
            (12_345_678_901, "12.346"), (86_400_000_000_000, "86400.000"),
            (Int64.max, "9223372036.855"), (-5, "0.000"), (Int64.min, "0.000"),
        ]
        for (ns, text) in expected {
            #expect(JUnitXML.seconds(ns: ns) == text, "\(ns) ns")
            #expect(JUnitCheck.isDecimalSeconds(JUnitXML.seconds(ns: ns)))
        }
        // Whatever the magnitude, never an exponent (Double's description gives 7.4109e-05).
        await seededPropertyCheck(count: 1_000, draw: { rng in Int64.random(in: Int64.min...Int64.max, using: &rng) >> Int64.random(in: 0...62, using: &rng) }) { ns in
            let text = JUnitXML.seconds(ns: ns)
            #expect(JUnitCheck.isDecimalSeconds(text), "\(ns) ns")
            if ns >= 0 { #expect(abs(Double(text)! - Double(ns) / 1e9) <= 5e-4 * max(1, Double(ns) / 1e15)) }
        }
    }

    /// The CLI's suite timestamps: RFC 3339 in UTC, to the second, with no zone.
    @Test func timestampsAreUTCToTheSecond() {
        #expect(JUnitRendering.timestamp(0) == "1970-01-01T00:00:00")
        #expect(JUnitRendering.timestamp(951_782_400_000_000_000) == "2000-02-29T00:00:00")
        #expect(JUnitRendering.timestamp(1_767_225_599_999_999_999) == "2025-12-31T23:59:59")
        #expect(JUnitRendering.timestamp(4_107_542_400_000_000_000) == "2100-03-01T00:00:00")
        #expect(JUnitRendering.timestamp(-1) == "1969-12-31T23:59:59")
        #expect(JUnitRendering.timestamp(nil) == nil)
    }

    static func sampleReport(hostile: String) -> JUnitReport {
        JUnitReport(name: "run \(hostile)", suites: [
            JUnitSuite(name: "suite \(hostile)", durationNs: 7_410_900, timestamp: "2026-01-01T00:00:00",
                       properties: [JUnitProperty("p \(hostile)", "v \(hostile)")],
                       cases: [
                        JUnitCase(name: "passes \(hostile)", className: "c.\(hostile)", durationNs: 74_109, systemOut: "out \(hostile)"),
                        JUnitCase(name: "bare"),
                        JUnitCase(name: "fails", durationNs: 1, result: .failed(JUnitProblem(type: "t \(hostile)", message: "m \(hostile)",
                                                                                               detail: "d \(hostile)"))),
                        JUnitCase(name: "errs", result: .errored(JUnitProblem(type: "e", message: "no detail"))),
                        JUnitCase(name: "skips", result: .skipped("why \(hostile)")),
                       ],
                       systemOut: "suite out \(hostile)"),
            JUnitSuite(name: "empty", cases: []),
        ], durationNs: 7_500_000)
    }

    @Test func theDocumentCountsItsCasesAndNeverPutsSkippedOnTestsuites() {
        let report = Self.sampleReport(hostile: "x")
        #expect((report.tests, report.failures, report.errors, report.skipped) == (5, 1, 1, 1))
        let xml = report.xml()
        let root = xml.split(separator: "\n")[1]
        #expect(root == #"<testsuites name="run x" tests="5" failures="1" errors="1" time="0.008">"#)
        #expect(xml.contains(#"<testsuite name="suite x" tests="5" failures="1" errors="1" skipped="1" time="0.007" timestamp="2026-01-01T00:00:00">"#))
        #expect(xml.contains(#"<testsuite name="empty" tests="0" failures="0" errors="0" skipped="0">"#))
        #expect(xml.contains(#"<testcase name="bare"/>"#))
        #expect(xml.contains(#"<error type="e" message="no detail"/>"#))
    }

    /// Every forbidden character, markup and whitespace in every place text goes: the schema
    /// accepts the file, and junitparser reads back what was meant.
    @Test(.enabled(if: JUnitCheck.runs, JUnitCheck.reason))
    func hostileTextStaysWellFormedAndReadsBack() throws {
        try JUnitCheck.requireTools()
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostile = String(String.UnicodeScalarView(Self.forbidden)) + "\t\n\r&<>\"'\u{301}]]>🦘"
        let path = dir.appendingPathComponent("hostile.xml").path
        try Self.sampleReport(hostile: hostile).xml().write(toFile: path, atomically: false, encoding: .utf8)
        let parsed = try JUnitCheck.check(path)
        #expect((parsed.suites, parsed.tests, parsed.failures, parsed.errors, parsed.skipped) == (2, 5, 1, 1, 1))
        let replaced = String(repeating: "\u{FFFD}", count: Self.forbidden.count)
        let meant = replaced + "\t\n\r&<>\"'\u{301}]]>🦘"
        #expect(parsed.names.first == "passes \(meant)")
        #expect(parsed.messages.contains("m \(meant)"))
        #expect(parsed.messages.contains("why \(meant)"))
        #expect(parsed.types.contains("t \(meant)"))
        // Text content: the CR stays a CR because it is written as a reference.
        #expect(parsed.texts.contains("d \(meant)"))
        #expect(parsed.systemOut.first == "out \(meant)")
        #expect(parsed.times == ["0.008", "0.007", "0.000", nil, "0.000", nil, nil, nil])
        #expect(parsed.suiteSeconds.first == 0.007)
    }
}
