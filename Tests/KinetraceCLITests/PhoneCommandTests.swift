import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace phone`'s flags and its life as a process: every bad value one line and exit 64,
/// a protocol the page cannot write refused before anything binds, a taken port 69, an
/// unwritable trace 73, the QR code on request, and a session that streamed nothing exits 1.
@Suite struct PhoneCommandTests {
    static func phone(_ directory: URL, _ arguments: [String]) throws -> Background {
        try Background(URL(fileURLWithPath: "/usr/bin/env"), ["XDG_DATA_HOME=\(directory.path)", try Fixture.binary.path, "phone"] + arguments)
    }

    @Test(arguments: [
        (["--cue-every", "0"], "--cue-every must be seconds from 0.5 to 600"),
        (["--cue-every", "5:2"], "needs MIN ≤ MAX"),
        (["--cue-every", "nan"], "--cue-every must be seconds"),
        (["--gestures", "jump,fly"], "--gestures must list gestures from jump, duck, tilt_left, tilt_right"),
        (["--gestures", ""], "--gestures must list"),
        (["--mode", "loud"], "--mode must be guided or free"),
        (["--url-host", "evil.example/x"], "--url-host must be a host name or address"),
        (["--max-phones", "0"], "--max-phones must be from 1 to 65536"),
        (["--port", "65536"], "--port must be between 0 and 65535"),
        (["--certificate", "/etc/hostname"], "--certificate and --private-key go together"),
        (["--protocol", "Tests/Browser/protocols/nomotion.json"], "the page cannot stream it: clock's samples carry no motion"),
    ])
    func aBadFlagIsOneLineAndExit64(_ arguments: [String], _ message: String) throws {
        let resolved = arguments.map { $0.hasPrefix("Tests/") ? Fixture.packageRoot.appendingPathComponent($0).path : $0 }
        let result = try kinetrace(["phone", "--no-qr"] + resolved)
        #expect(result.status == 64 && result.stderr.contains(message), "\(result.status): \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stdout.isEmpty)
    }

    @Test func aTakenPortIs69AndAnUnwritableTraceIs73() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let first = try Self.phone(directory, ["--bind", "127.0.0.1", "--port", "0", "--no-qr"])
        let port = try #require(try first.waitForLine(startingWith: "listening on ").split(separator: ":").last.map(String.init))
        let second = try Self.phone(directory, ["--bind", "127.0.0.1", "--port", port, "--no-qr"]).wait(timeout: 30)
        #expect(second.status == 69 && second.stderr.contains("cannot serve on 127.0.0.1:\(port)"), "\(second.stderr)")
        _ = try first.stop()
        let unwritable = try Self.phone(directory, ["--bind", "127.0.0.1", "--port", "0", "--no-qr", "--trace", "/nonexistent/dir/t.jsonl"]).wait(timeout: 30)
        #expect(unwritable.status == 73 && unwritable.stderr.contains("/nonexistent/dir/t.jsonl"), "\(unwritable.stderr)")
    }

    /// Under a small open-file limit the phone count is cut to what fits, said once at start: past the
    /// limit, accept would fail and phones would wait on a page that never answers.
    @Test func anOpenFileLimitCutsThePhonesItServes() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let session = try Background(URL(fileURLWithPath: "/bin/bash"),
                                     ["-c", "ulimit -n 200; exec env XDG_DATA_HOME=\"$1\" \"$0\" phone --bind 127.0.0.1 --port 0 --no-qr --max-phones 5000",
                                      try Fixture.binary.path, directory.path])
        _ = try session.waitForLine(startingWith: "listening on ")
        let stopped = try session.stop(SIGTERM)
        // 200 descriptors, 64 kept aside, 16 for the page's requests: (136 - 16) / 2 phones.
        #expect(stopped.stderr.contains("the open-file limit is 200: serving at most 60 phones, not 5000 (raise ulimit -n)"), "\(stopped.stderr)")
    }

    /// The address lines come first, then the QR code of the page's address (asked for here,
    /// since standard output is a pipe); with nothing streamed the session exits 1, its JSON
    /// summary still written.
    @Test func theAddressAndItsQRCodeThenAnHonestSummary() throws {
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let session = try Self.phone(directory, ["--bind", "127.0.0.1", "--port", "0", "--qr", "--url-host", "kinetrace.local", "--format", "json"])
        _ = try session.waitForLine(startingWith: "listening on ")
        let stopped = try session.stop(SIGTERM)
        let lines = stopped.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let page = try #require(lines.first)
        #expect(page.hasPrefix("phone page: https://kinetrace.local:") && page.hasSuffix("/"), "\(page)")
        #expect(lines[1].hasPrefix("operator:   https://kinetrace.local:") && lines[1].hasSuffix("/operator"))
        #expect(lines[3].allSatisfy { $0 == "█" } && lines[3].count >= 29, "the QR code's quiet zone: \(lines[3])")
        let json = try #require(lines.last { $0.hasPrefix("{") })
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(summary["samples"] as? Int == 0 && (summary["phones"] as? [Any])?.isEmpty == true)
        #expect(stopped.status == 1 && stopped.stderr.contains("no phone streamed a sample"), "\(stopped.stderr)")
    }
}
