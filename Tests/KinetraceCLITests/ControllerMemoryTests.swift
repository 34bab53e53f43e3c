import Foundation
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// Issue 24: what `inspect` and `latency` keep per controller must be small.
/// They kept HDR histograms per controller (120 KB each for inspect, 410 KB for
/// latency), so 20,000 controllers needed 2.4 and 8 GB. Run under an
/// address-space limit of 1 GiB, a tenth of what they needed, the commands must
/// finish and report every controller; no timing and no RSS is measured.
@Suite(.serialized) struct ControllerMemoryTests {
    static let controllers = 20_000

    /// Two frames 100 ms apart from each of 20,000 controllers, and an ack to the second.
    static func manyControllers(at path: String) throws {
        let host = Endpoint(host: "10.0.0.1", port: 47110)
        var records: [TraceRecord] = []
        records.reserveCapacity(3 * controllers)
        let startNs: Int64 = 1_795_000_000_000_000_000
        for frame in 0..<2 {
            for c in 0..<controllers {
                let controller = Endpoint(host: "10.\(c / 60_000).\(c / 250 % 240).\(c % 250 + 1)", port: UInt16(20_000 + c % 40_000))
                let tMs = UInt64(startNs / 1_000_000) + UInt64(frame * 100 + c % 50)
                let arrivalNs = Int64(tMs) * 1_000_000 + 70_000_000 + Int64(c % 997) * 1000
                records.append(.message(MessageRecord(timeNs: arrivalNs, direction: .controllerToHost, source: controller,
                                                      destination: host, payload: MotionFrame(tMs: tMs, ay: 0.01).encoded())))
                if frame == 1 {
                    records.append(.message(MessageRecord(timeNs: arrivalNs + 300_000, direction: .hostToController, source: host,
                                                          destination: controller, payload: HapticAck(echoTMs: tMs).encoded())))
                }
            }
        }
        records.sort { $0.timeNs < $1.timeNs }
        let header = TraceHeader(created: "2026-11-26T00:00:00.000Z", tool: "ControllerMemoryTests", capturePoint: .host, clock: .realtime)
        try Data(TraceEncoder.document(header: header, records: records)).write(to: URL(fileURLWithPath: path))
    }

    /// The command under `ulimit -v` in KiB (a child shell, so the limit is the command's alone).
    static func limited(_ kib: Int, _ arguments: [String]) throws -> RunResult {
        try run(URL(fileURLWithPath: "/bin/bash"), ["-c", "ulimit -v \(kib); exec \"$0\" \"$@\"", try Fixture.binary.path] + arguments,
                timeout: 300)
    }

    @Test(arguments: ["inspect", "latency"])
    func twentyThousandControllersFitInOneGibibyte(command: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("many.jsonl").path, report = dir.appendingPathComponent("report.json").path
        try Self.manyControllers(at: trace)
        let result = try Self.limited(1 << 20, [command, trace, "--format", "json", "--out", report])
        #expect(result.status == 0, "\(command) under ulimit -v 1 GiB: status \(result.status), \(result.stderr.suffix(300))")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report)))
        // Every controller is reported, each with its own figures.
        switch command {
        case "inspect":
            let controllers = try #require((json as? [String: Any])?["controllers"] as? [[String: Any]])
            #expect(controllers.count == Self.controllers)
            let intervals = try #require(controllers.first?["sender_intervals_ms"] as? [String: Any])
            #expect(intervals["count"] as? Int == 1 && intervals["p50"] as? Double == 100)
        default:
            let traces = try #require((json as? [String: Any])?["traces"] as? [[String: Any]])
            let measures = try #require(traces.first?["measures"] as? [[String: Any]])
            let oneWay = try #require(measures.first { $0["measure"] as? String == "one_way_raw" })
            #expect((oneWay["per_controller"] as? [Any])?.count == Self.controllers)
        }
    }
}
