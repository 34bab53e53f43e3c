import Foundation
import KinetraceTestSupport
import Testing

/// The bundled real captures of the two newer protocols go through every
/// command that reads a capture, and the live capture's trace equals the
/// pcap converted afterwards.
@Suite struct BundledProtocolCaptureTests {
    struct Capture: Sendable, CustomTestStringConvertible {
        var name: String
        var wireProtocol: String
        var port: String
        var messages: Int
        var testDescription: String { name }
        var pcap: String { Fixture.packageRoot.appendingPathComponent("captures/\(name).pcap").path }
        var trace: String { Fixture.packageRoot.appendingPathComponent("captures/\(name).jsonl").path }
        var reading: [String] { ["--protocol", wireProtocol, "--port", port] }
    }

    static let captures = [
        Capture(name: "keepcalm-session", wireProtocol: "keepcalm-json", port: "45693", messages: 900),
        Capture(name: "attitude-session", wireProtocol: "attitude-stream", port: "39081", messages: 2400),
    ]

    @Test(arguments: captures)
    func passiveConformancePassesOnPcapAndTrace(_ capture: Capture) throws {
        for input in [capture.pcap, capture.trace] {
            let result = try kinetrace(["conform", "--capture", input, "--format", "json"] + (input == capture.pcap ? capture.reading : []))
            #expect(result.status == 0, "\(input): \(result.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let summary = report?["summary"] as? [String: Int] ?? [:]
            #expect(summary["PASS"] ?? 0 >= 5 && summary.keys.allSatisfy { $0 == "PASS" }, "\(input): every case passes, got \(summary)")
            #expect(report?["failed"] as? Bool == false)
        }
    }

    @Test(arguments: captures)
    func inspectCountsEveryMessageAsValid(_ capture: Capture) throws {
        let result = try kinetrace(["inspect", capture.pcap, "--format", "json"] + capture.reading)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let toHost = (report?["messages"] as? [String: Any])?["c2h"] as? [String: Any]
        #expect(toHost?["total"] as? Int == capture.messages && toHost?["valid"] as? Int == capture.messages, "\(toHost ?? [:])")
        #expect(report?["replies"] as? Bool == false)
    }

    @Test(arguments: captures)
    func theCapturedTraceIsThePcapConverted(_ capture: Capture) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("converted.jsonl").path
        let result = try kinetrace(["convert", capture.pcap, out] + capture.reading)
        #expect(result.status == 0, "\(result.stderr)")
        func messages(_ path: String) throws -> [Substring] {
            try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("{\"kind\":\"msg\"") }
        }
        let converted = try messages(out), captured = try messages(capture.trace)
        #expect(converted.count >= capture.messages)
        #expect(converted == captured)
    }
}
