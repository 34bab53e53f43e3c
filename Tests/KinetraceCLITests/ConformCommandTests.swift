import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace conform --capture` on the bundled captures, in every report format.
@Suite struct ConformCommandTests {
    static let captures = Fixture.packageRoot.appendingPathComponent("captures")

    @Test func theRealLoopbackCaptureConforms() throws {
        let result = try kinetrace("conform", "--capture", Self.captures.appendingPathComponent("loopback-session.pcap").path,
                                   "--port", "41448", "--format", "json")
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let cases = try #require(report["cases"] as? [[String: Any]])
        #expect(cases.count == 11)
        #expect(cases.allSatisfy { $0["verdict"] as? String == "PASS" })
        #expect(report["spec_version"] as? String == "motionlink-v1 1.0")
        let deadline = try #require(cases.first { $0["id"] as? String == "PC-ACK-DEADLINE" })
        #expect((deadline["measurements"] as? [String: Double])?["samples"] == 60)
    }

    @Test func corruptFramesFailWithTheirRequirementAndExitOne() throws {
        let result = try kinetrace("conform", "--capture", Fixture.bundledTrace)
        #expect(result.status == 1)
        #expect(result.stdout.contains("FAIL          PC-FRAME-LAYOUT [MUST: ML-TRANSPORT-4, ML-FRAME-1, ML-FRAME-2, ML-FRAME-3, ML-VALID-1]"))
        #expect(result.stdout.contains("expected a valid MotionFrame, found crc_mismatch"))
        #expect(result.stdout.contains("NOT CONFORMANT"))
        // Without the failing case the rest conforms.
        let rest = try kinetrace("conform", "--capture", Fixture.bundledTrace, "--exclude", "PC-FRAME-*")
        #expect(rest.status == 0, "\(rest.stdout)")
    }

    @Test func junitIsWellFormedAndCountsFailures() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("conform.xml").path
        let result = try kinetrace("conform", "--capture", Fixture.bundledTrace, "--format", "junit", "--out", out)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        let check = """
            import sys, xml.etree.ElementTree as ET
            root = ET.parse(sys.argv[1]).getroot()
            cases = root.findall(".//testcase")
            print(root.get("tests"), root.get("failures"), len(cases), len(root.findall(".//failure")))
            """
        let parsed = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", check, out])
        #expect(parsed.status == 0, "\(parsed.stderr)")
        #expect(parsed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "11 1 11 1")
    }

    @Test func listingHarnessErrorsAndUsage() throws {
        let list = try kinetrace("conform", "--list", "--cases", "PC-RATE-*")
        #expect(list.status == 0)
        #expect(list.stdout.contains("PC-RATE-NOMINAL  SHOULD  ML-RATE-2"))
        #expect(!list.stdout.contains("PC-ACK"))
        let missing = try kinetrace("conform", "--capture", "/nonexistent/capture.pcap")
        #expect(missing.status == 66)
        #expect(missing.stderr.hasPrefix("kinetrace: error: /nonexistent/capture.pcap"))
        // Nothing listening: a harness error, not a verdict.
        let closed = { TestSocket().bindLoopback() }()
        let refused = try kinetrace("conform", "--host", "127.0.0.1:\(closed)", "--cases", "AC-ACK-FORMAT")
        #expect(refused.status == 69)
        #expect(refused.stderr.contains("the host refused"))
        let both = try kinetrace("conform", "--host", "127.0.0.1:9", "--capture", Fixture.bundledTrace)
        #expect(both.status == 64)
        // No target: the active suite against the built-in reference host, which conforms.
        // Timing cases are left to the stability run: the test machine is shared and noisy.
        let reference = try kinetrace("conform", "--format", "json", "--exclude", "AC-ACK-DEADLINE", "--exclude", "AC-ACK-PROMPT",
                                      "--exclude", "AC-LOAD")
        #expect(reference.status == 0, "\(reference.stdout)")
    }
}
