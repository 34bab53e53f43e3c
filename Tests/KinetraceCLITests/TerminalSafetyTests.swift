import Foundation
import KinetraceTestSupport
import Testing

/// Issue 24, finding 11: text from a trace never reaches the terminal raw. A trace planting
/// ESC (screen clear, window title), CR, LF and NUL in its header fields, a record's source,
/// or label and event names gets them back as visible escapes: an error stays one line, and a
/// report cannot be rewritten or extended by its input.
@Suite struct TerminalSafetyTests {
    /// JSON string escapes for ESC ] 0 ; title BEL, ESC [ 2 J, CR, LF and NUL, then a forged error line.
    static let hostile = #"\u001b]0;owned\u0007\u001b[2J\r\nkinetrace: error: forged\u0000"#

    static let header = #"{"format":"kinetrace-trace","capture_point":"synthetic","clock":"model","created":"2026-01-01T00:00:00.000Z","minor":1,"profile":"motionlink-v1","tool":"kinetrace 0.1.0","version":1}"#

    func write(_ lines: [String]) throws -> (URL, String) {
        let dir = try Fixture.temporaryDirectory()
        let path = dir.appendingPathComponent("hostile.jsonl").path
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return (dir, path)
    }

    func expectNoRawControls(_ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let raw = text.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
        #expect(raw.isEmpty, "\(what) holds raw control characters \(raw.map { $0.value })", sourceLocation: sourceLocation)
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("kinetrace: error: forged") }, "\(what) has a forged line",
                sourceLocation: sourceLocation)
    }

    /// Each field an error line quotes: the header's format, its profile, and a record's source.
    @Test(arguments: [
        #"{"format":"FIELD","version":1}"#,
        #"{"format":"kinetrace-trace","version":1,"profile":"FIELD"}"#,
        Self.header + "\n" + #"{"kind":"msg","t_ns":1,"dir":"c2h","src":"FIELD","dst":"10.0.0.1:47110","len":0,"payload":""}"#,
    ])
    func anErrorLineQuotingTheInputStaysOneVisibleLine(_ template: String) throws {
        let (dir, path) = try write([template.replacingOccurrences(of: "FIELD", with: Self.hostile)])
        defer { Fixture.remove(dir) }
        for command in [["inspect"], ["convert"], ["latency"]] {
            var arguments = command + [path]
            if command == ["convert"] { arguments.append(dir.appendingPathComponent("out.pcap").path) }
            let result = try kinetrace(arguments)
            #expect(result.status == 65, "\(command): \(result.stderr)")
            expectNoRawControls(result.stderr, "\(command)'s standard error")
            let errorLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("kinetrace: error:") }
            #expect(errorLines.count == 1 && errorLines[0].contains(#"\e]0;owned\u{7}\e[2J\r\nkinetrace: error: forged"#),
                    "\(command): \(result.stderr)")
        }
    }

    /// inspect's report shows the header, the labels and the events the trace holds, escaped.
    @Test func inspectsReportShowsHostileNamesEscaped() throws {
        let tool = Self.header.replacingOccurrences(of: "kinetrace 0.1.0", with: Self.hostile)
        let (dir, path) = try write([
            tool,
            #"{"kind":"msg","t_ns":1767225600080980226,"dir":"c2h","src":"10.0.0.11:50001","dst":"10.0.0.1:47110","len":0,"payload":""}"#,
            #"{"kind":"label","t_ns":1767225601432000000,"controller":"10.0.0.12:50002","gesture":"GESTURE","t_ms":1767225601432,"duration_ms":450}"#
                .replacingOccurrences(of: "GESTURE", with: Self.hostile),
            #"{"kind":"event","t_ns":1767225601500000000,"event":"EVENT"}"#.replacingOccurrences(of: "EVENT", with: Self.hostile),
        ])
        defer { Fixture.remove(dir) }
        let result = try kinetrace("inspect", path)
        #expect(result.status == 0, "\(result.stderr)")
        expectNoRawControls(result.stdout, "inspect's report")
        expectNoRawControls(result.stderr, "inspect's standard error")
        for heading in ["Written", "Labels", "Events"] {
            let line = result.stdout.split(separator: "\n").first { $0.hasPrefix(heading) }
            #expect(line?.contains(#"\e[2J\r\nkinetrace: error: forged\u{0}"#) == true, "\(heading): \(line ?? "missing") in \(result.stdout)")
        }
    }
}
