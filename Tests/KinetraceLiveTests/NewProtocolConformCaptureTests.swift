import Foundation
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace conform --capture` on traces of the two new protocols: the
/// suite is found from the trace's header, a byte-stream trace's chunks are
/// framed into records, and the verdicts come back through the CLI.
@Suite struct NewProtocolConformCaptureTests {
    static let host = Endpoint(host: "10.0.0.1", port: 47120)

    func write(_ records: [TraceRecord], _ wireProtocol: ProtocolID, to path: String) throws {
        let header = TraceHeader(created: "2026-11-24T00:00:00.000Z", tool: "kinetrace-tests 0.0.1", protocolID: wireProtocol,
                                 capturePoint: .host, clock: .realtime, notes: "conform capture test", extra: [:])
        let writer = try TraceWriter(path: path, header: header)
        for record in records { try writer.write(record) }
        try writer.close()
    }

    func verdicts(_ result: RunResult) throws -> [String: String] {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let cases = try #require(report["cases"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: cases.map { ($0["id"] as! String, $0["verdict"] as! String) })
    }

    @Test func aKeepCalmTracePassesAndAReusedIDFails() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        var rng = SeededGenerator(seed: 14)
        var records: [TraceRecord] = []
        for i in 0..<150 {
            let message = KeepCalmMotion(id: MessageID(randomHigh: rng.next(), randomLow: rng.next()), x: 0.1, y: i % 20 == 3 ? 0.9 : 0.1, z: 0)
            records.append(.message(MessageRecord(timeNs: 1_767_225_600_000_000_000 + Int64(i) * 100_000_000, direction: .controllerToHost,
                                                  source: Endpoint(host: "10.0.0.11", port: 50_001), destination: Self.host,
                                                  payload: message.encoded())))
        }
        let clean = dir.appendingPathComponent("keepcalm.jsonl").path
        try write(records, KeepCalmJSON.id, to: clean)
        let passed = try kinetrace(["conform", "--capture", clean, "--format", "json"])
        #expect(passed.status == 0, "\(passed.stderr)")
        #expect(try verdicts(passed).values.allSatisfy { $0 == "PASS" }, "\(passed.stdout)")

        guard case .message(var copy) = records[40], case .message(let original) = records[10] else {
            Issue.record("records 10 and 40 of the capture are not both messages")
            return
        }
        let id = try KeepCalmJSON.decode(Array(original.payload)).id
        copy.payload = Payload(KeepCalmMotion(id: id, x: 0.5, y: 0.5, z: 0.5).encoded())
        records[40] = .message(copy)
        let reused = dir.appendingPathComponent("reused.jsonl").path
        try write(records, KeepCalmJSON.id, to: reused)
        let failed = try kinetrace(["conform", "--capture", reused, "--format", "json"])
        #expect(failed.status == 1)
        #expect(try verdicts(failed)["PC-KC-UNIQUE-ID"] == "FAIL")
    }

    @Test func anAttitudeTraceEndingInsideARecordFailsTheLengthCase() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        var rng = SeededGenerator(seed: 60)
        var records: [TraceRecord] = []
        let controller = Endpoint(host: "10.0.0.11", port: 50_001), host = Endpoint(host: "10.0.0.1", port: 47130)
        var stream: [UInt8] = []
        for _ in 0..<720 {
            stream += AttitudeRecord(roll: Float32(rng.unit() * 6 - 3), pitch: Float32(rng.unit() * 3 - 1.5), yaw: Float32(rng.unit() * 6 - 3)).encoded()
        }
        stream += [1, 2, 3, 4, 5]  // a torn last record
        // Chunks of random sizes, one every 20 ms: framing must not care where they fall.
        var offset = 0, k = 0
        while offset < stream.count {
            let size = min(stream.count - offset, 1 + Int(rng.next() % 40))
            records.append(.message(MessageRecord(timeNs: 1_767_225_600_000_000_000 + Int64(k) * 16_666_667, direction: .controllerToHost,
                                                  source: controller, destination: host, payload: Array(stream[offset..<offset + size]))))
            offset += size
            k += 1
        }
        let path = dir.appendingPathComponent("attitude.jsonl").path
        try write(records, AttitudeStream.id, to: path)
        let result = try kinetrace(["conform", "--capture", path, "--format", "json"])
        let got = try verdicts(result)
        #expect(result.status == 1)
        #expect(got["PC-AS-STREAM-LENGTH"] == "FAIL", "\(got)")
        #expect(got["PC-AS-VALUES"] == "PASS" && got["PC-AS-STREAM-GAPS"] == "PASS", "\(got)")
    }
}
