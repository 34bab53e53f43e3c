import ArgumentParser
import Foundation
@testable import KinetraceCLI
import KinetraceAnalysis
import KinetraceJSON
import KinetraceTestSupport
import Testing

/// Issue 24: `latency` writes its report as it renders it (`ReportStream`), a chunk at a
/// time, instead of holding the whole text. The bytes must be the whole rendering's, on
/// standard output and in --out, and every write is checked.
@Suite struct LatencyStreamingTests {
    static let captures = ["synthetic-session.jsonl", "loopback-session.jsonl", "loopback-session.pcap",
                           "keepcalm-session.jsonl", "attitude-session.jsonl"]
        .map { Fixture.packageRoot.appendingPathComponent("captures/\($0)").path }

    /// 3,000 controllers: a JSON report of about 2 MB, so many 64 KB chunks.
    static func manyControllers(in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("many.jsonl").path
        let synth = try kinetrace("synth", "--out", path, "--controllers", "3000", "--duration", "0.2", "--seed", "7")
        try #require(synth.status == 0, "\(synth.stderr)")
        return path
    }

    /// The report as one string, made in this process by the same renderers without streaming.
    static func whole(_ format: LatencyFormat, _ path: String) throws -> String {
        let analysis = try Latency.analyse(path: path, input: try CaptureInputOptions.parse([]), options: LatencyOptions())
        let reports = [LatencyReport(source: path, analysis: analysis)]
        switch format {
        case .text: return LatencyRendering.text(reports)
        case .json: return LatencyRendering.json(reports)
        case .csv: return LatencyRendering.csv(reports)
        }
    }

    @Test func streamedReportIsTheWholeRendering() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("report").path
        for path in Self.captures + [try Self.manyControllers(in: dir)] {
            for format in [LatencyFormat.text, .json, .csv] {
                let expected = try Self.whole(format, path)
                let printed = try kinetrace(["latency", "--format", format.rawValue, path])
                #expect(printed.status == 0, "\(path) \(format): \(printed.stderr)")
                #expect(printed.stdout == expected, "\(path) \(format) on standard output")
                let written = try kinetrace(["latency", "--format", format.rawValue, "--out", out, path])
                #expect(written.status == 0 && written.stdout.isEmpty, "\(path) \(format): \(written.stderr)")
                #expect(try String(contentsOfFile: out, encoding: .utf8) == expected, "\(path) \(format) in --out")
                if format == .json {
                    // Chunks joined at the right places: the text parses, and is its own compact form.
                    let parsed = try JSONValue.parse(Array(expected.utf8)).get()
                    #expect(parsed.jsonText + "\n" == expected)
                }
            }
        }
    }

    private func expectOneLineError(_ result: RunResult, naming name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 74 && !result.signalled, "\(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("kinetrace: error: ") && lines[0].contains(name), "\(result.stderr)",
                sourceLocation: sourceLocation)
    }

    /// /dev/full as --out, and as standard output (which `print` used to fail silently, exit 0).
    @Test func failedWritesAreOneLineAndExit74() throws {
        var info = stat()
        try #require(stat("/dev/full", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/full is not a character device here")
        for format in ["text", "json", "csv"] {
            expectOneLineError(try kinetrace("latency", "--format", format, "--out", "/dev/full", Fixture.bundledTrace), naming: "/dev/full")
            let shell = try run(URL(fileURLWithPath: "/bin/sh"),
                                ["-c", "exec \"$0\" latency --format \(format) \"$1\" > /dev/full", Fixture.binary.path, Fixture.bundledTrace])
            expectOneLineError(shell, naming: "standard output")
        }
        #expect(stat("/dev/full", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/full was replaced")
    }

    /// A write that fails part way (the file-size limit, with SIGXFSZ ignored so write(2) says
    /// EFBIG) leaves no half report behind.
    @Test func partialReportIsRemoved() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = try Self.manyControllers(in: dir)
        let out = dir.appendingPathComponent("report.json").path
        let result = try run(URL(fileURLWithPath: "/bin/bash"),
                             ["-c", "trap '' XFSZ; ulimit -f 256; exec \"$0\" latency --format json --out \"$1\" \"$2\"",
                              Fixture.binary.path, out, trace])
        expectOneLineError(result, naming: out)
        #expect(!FileManager.default.fileExists(atPath: out), "the partial report was left")
    }
}
