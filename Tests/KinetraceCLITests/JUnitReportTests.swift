import Foundation
import KinetraceTestSupport
import Testing

/// Each command's JUnit report, written by the real binary and checked by xmllint against
/// Schemas/junit.xsd and by junitparser: passes, failures, skips, and the report a harness
/// error leaves beside its exit status.
@Suite(.enabled(if: JUnitCheck.runs, JUnitCheck.reason))
struct JUnitReportTests {
    static let captures = Fixture.packageRoot.appendingPathComponent("captures")

    /// Runs kinetrace with `--out FILE` and returns the status, standard error and the checked report.
    func report(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> (status: Int32, stderr: String, parsed: JUnitCheck.Parsed) {
        try JUnitCheck.requireTools()
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("report.xml").path
        let result = try kinetrace(arguments + ["--out", out])
        #expect(result.stdout.isEmpty, sourceLocation: sourceLocation)
        try #require(FileManager.default.fileExists(atPath: out), "no report; stderr: \(result.stderr)", sourceLocation: sourceLocation)
        return (result.status, result.stderr, try JUnitCheck.check(out, sourceLocation: sourceLocation))
    }

    func counts(_ parsed: JUnitCheck.Parsed) -> [Int] { [parsed.tests, parsed.failures, parsed.errors, parsed.skipped] }

    // MARK: conform

    @Test func conformPassesAndFails() throws {
        let pass = try report(["conform", "--capture", Self.captures.appendingPathComponent("loopback-session.pcap").path, "--port", "41448",
                               "--format", "junit"])
        #expect(pass.status == 0, "\(pass.stderr)")
        #expect(counts(pass.parsed) == [11, 0, 0, 0])
        #expect(pass.parsed.times.allSatisfy { $0 != nil })

        let fail = try report(["conform", "--capture", Fixture.bundledTrace, "--format", "junit"])
        #expect(fail.status == 1)
        #expect(counts(fail.parsed) == [11, 1, 0, 0])
        #expect(fail.parsed.types == ["FAIL"])
        #expect(fail.parsed.messages == ["14 of 1800 frames are invalid: 14 crc_mismatch"])
        #expect(fail.parsed.texts.first??.contains("expected a valid MotionFrame, found crc_mismatch") == true)
    }

    /// Without the host's direction the ack cases are INCONCLUSIVE: skipped. When nothing else
    /// ran, the run judged nothing and exits 1, and the report fails it too.
    @Test func conformInconclusiveCasesAreSkipped() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let oneWay = dir.appendingPathComponent("one-way.jsonl")
        let lines = try String(contentsOfFile: Fixture.bundledTrace, encoding: .utf8).split(separator: "\n")
        try (lines.filter { !$0.contains(#""dir":"h2c""#) }.joined(separator: "\n") + "\n").write(to: oneWay, atomically: false, encoding: .utf8)

        let some = try report(["conform", "--capture", oneWay.path, "--exclude", "PC-FRAME-*", "--format", "junit"])
        #expect(some.status == 0, "\(some.stderr)")
        #expect(counts(some.parsed) == [10, 0, 0, 6])
        #expect(some.parsed.messages.allSatisfy { $0 == "the capture holds no host→controller traffic" })

        let none = try report(["conform", "--capture", oneWay.path, "--cases", "PC-ACK-*", "--format", "junit"])
        #expect(none.status == 1)
        #expect(counts(none.parsed) == [7, 1, 0, 6])
        #expect(none.parsed.types.last == "NOTHING-JUDGED")
    }

    @Test func conformHarnessErrorsStillWriteAReport() throws {
        let missing = try report(["conform", "--capture", "/nonexistent/capture.pcap", "--format", "junit"])
        #expect(missing.status == 66)
        #expect(counts(missing.parsed) == [1, 0, 1, 0])
        #expect(missing.parsed.types == ["no-input"])
        #expect(missing.parsed.messages.first??.hasPrefix("/nonexistent/capture.pcap") == true)
        #expect(missing.stderr.split(separator: "\n").count == 1)

        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let garbage = dir.appendingPathComponent("garbage.jsonl").path
        try "not a trace\n".write(toFile: garbage, atomically: false, encoding: .utf8)
        let bad = try report(["conform", "--capture", garbage, "--format", "junit"])
        #expect(bad.status == 65)
        #expect(counts(bad.parsed) == [1, 0, 1, 0] && bad.parsed.types == ["data-error"])

        // Nothing listens: every case is an ERROR, the run exits 69, and each case says why.
        let closed = { TestSocket().bindLoopback() }()
        let refused = try report(["conform", "--host", "127.0.0.1:\(closed)", "--cases", "AC-ACK-FORMAT", "--cases", "AC-TRIGGER-*",
                                  "--format", "junit"])
        #expect(refused.status == 69)
        #expect(counts(refused.parsed) == [5, 0, 5, 0])
        #expect(refused.parsed.messages.allSatisfy { $0?.contains("the host refused") == true })
    }

    /// A host command whose text holds control characters, as it appears in the report's
    /// target and error messages: it used to make the XML malformed.
    @Test func controlCharactersFromTheCommandLineAreReplaced() throws {
        let hostile = "exit 3 # \u{1}\u{1B}[31m\u{7}\u{FFFE}&<\"'"
        let died = try report(["conform", "--exec", hostile, "--cases", "AC-ACK-FORMAT", "--format", "junit"])
        #expect(died.status == 69)
        #expect(counts(died.parsed) == [1, 0, 1, 0])
        let replay = try report(["replay", Fixture.bundledTrace, "--exec", hostile, "--end", "2", "--format", "junit"])
        #expect(replay.status == 69)
        #expect(replay.parsed.types.first == "host_died")
        // A harness error quotes the path and the arguments; control characters show as escapes (issue 24),
        // and what XML cannot hold (U+FFFE) as U+FFFD.
        let missing = try report(["gestures", "eval", "--detector", "threshold", "--format", "junit", "/nonexistent/\(hostile).jsonl"])
        #expect(missing.status == 66)
        #expect(missing.parsed.messages.first??.hasPrefix(#"/nonexistent/exit 3 # \u{1}\e[31m\u{7}"# + "\u{FFFD}&<\"'") == true,
                "\(String(describing: missing.parsed.messages.first))")
    }

    // MARK: gestures eval

    @Test func gesturesScoresGatesAndErrors() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let base = dir.appendingPathComponent("base.json").path
        #expect(try kinetrace("gestures", "eval", "--detector", "threshold", "--format", "json", "--out", base, Fixture.bundledTrace).status == 0)
        let corpus = Self.captures.appendingPathComponent("gestures").path

        let pass = try report(["gestures", "eval", "--detector", "threshold", "--baseline", base, "--min-recall", "0.5", "--format", "junit",
                               Fixture.bundledTrace])
        #expect(pass.status == 0, "\(pass.stderr)")
        #expect(counts(pass.parsed) == [4, 0, 0, 0])  // one trace, the f1 and recall gates, --min-recall
        #expect(pass.parsed.times[2] != nil)  // the trace's own time

        let worse = try report(["gestures", "eval", "--detector", "threshold", "--param", "threshold=1.0", "--baseline", base,
                                "--min-f1", "0.9", "--format", "junit", Fixture.bundledTrace])
        #expect(worse.status == 1)
        #expect(counts(worse.parsed) == [4, 3, 0, 0])
        #expect(worse.parsed.types == ["baseline-regression", "baseline-regression", "below-minimum"])
        #expect(worse.parsed.messages.first == "f1 0.709 below 0.950")

        let sweep = try report(["gestures", "eval", "--detector", "threshold", "--sweep", "threshold=0.3:0.9:0.1", "--format", "junit", corpus])
        #expect(sweep.status == 0, "\(sweep.stderr)")
        #expect(sweep.parsed.tests == 8 && sweep.parsed.times.dropFirst(2).allSatisfy { $0 != nil })

        let missing = try report(["gestures", "eval", "--detector", "threshold", "--format", "junit", "/nonexistent/trace.jsonl"])
        #expect(missing.status == 66)
        #expect(counts(missing.parsed) == [1, 0, 1, 0] && missing.parsed.types == ["no-input"])
        let refused = try report(["gestures", "eval", "--detector", "badger-tilt", "--source", "frames", "--format", "junit", Fixture.bundledTrace])
        #expect(refused.status == 65)
        #expect(refused.parsed.types == ["data-error"])
    }

    // MARK: replay

    /// Replayed through the stdio adapter (no packet loss): the reference host acks as the
    /// rule predicts; one told another threshold does not, and its controllers fail.
    @Test func replayPassesAndFailsPerController() throws {
        let binary = try Fixture.binary.path
        let common = [Fixture.bundledTrace, "--end", "20", "--speed", "20", "--format", "junit"]
        let pass = try report(["replay"] + common + ["--exec", "exec '\(binary)' host --stdio", "--strict"])
        #expect(pass.status == 0, "\(pass.stderr)")
        #expect(counts(pass.parsed) == [3, 0, 0, 0])
        #expect(pass.parsed.names.allSatisfy { $0.hasPrefix("controller ") })
        #expect(pass.parsed.systemOut.allSatisfy { $0?.contains("0 missing, 0 unexpected") == true })

        let other = ["--exec", "exec '\(binary)' host --stdio --threshold 0.3"]
        let mismatch = try report(["replay"] + common + other)
        #expect(mismatch.status == 0, "without --strict a mismatch is reported, not an exit status")
        #expect(mismatch.parsed.tests == 3 && mismatch.parsed.failures >= 1 && mismatch.parsed.errors == 0)
        #expect(mismatch.parsed.types.allSatisfy { $0 == "reply-mismatch" })
        #expect(mismatch.parsed.texts.allSatisfy { $0?.contains("unexpected: a reply echoing sender time") == true })
        let strict = try report(["replay"] + common + other + ["--strict"])
        #expect(strict.status == 1)
        #expect(counts(strict.parsed) == counts(mismatch.parsed))
    }

    @Test func replayOfAProtocolWithoutRepliesSkipsItsControllers() throws {
        let binary = try Fixture.binary.path
        let keepcalm = try report(["replay", Self.captures.appendingPathComponent("keepcalm-session.jsonl").path, "--end", "5",
                                   "--speed", "20", "--exec", "exec '\(binary)' host --stdio --protocol keepcalm-json", "--format", "junit"])
        #expect(keepcalm.status == 0, "\(keepcalm.stderr)")
        #expect(keepcalm.parsed.tests > 0 && keepcalm.parsed.skipped == keepcalm.parsed.tests)
    }

    @Test func replayHarnessErrorsStillWriteAReport() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let garbage = dir.appendingPathComponent("garbage.jsonl").path
        try "not a trace\n".write(toFile: garbage, atomically: false, encoding: .utf8)
        let bad = try report(["replay", garbage, "--to", "127.0.0.1:9", "--format", "junit"])
        #expect(bad.status == 65)
        #expect(counts(bad.parsed) == [1, 0, 1, 0] && bad.parsed.types == ["data-error"])

        // Nothing listens: the run stops with 69, one error says why, the controllers are not judged.
        let closed = { TestSocket().bindLoopback() }()
        let refused = try report(["replay", Fixture.bundledTrace, "--to", "127.0.0.1:\(closed)", "--end", "5", "--format", "junit"])
        #expect(refused.status == 69)
        #expect(counts(refused.parsed) == [4, 0, 1, 3])
        #expect(refused.parsed.types.first == "unreachable")

        let died = try report(["replay", Fixture.bundledTrace, "--exec", "exit 3", "--end", "5", "--format", "junit"])
        #expect(died.status == 69)
        #expect(died.parsed.errors == 1 && died.parsed.types.first == "host_died")

        let dry = try kinetrace("replay", Fixture.bundledTrace, "--dry-run", "--format", "junit")
        #expect(dry.status == 64)
    }
}
