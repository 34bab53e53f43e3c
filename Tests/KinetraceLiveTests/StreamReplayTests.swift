import Foundation
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace replay` of a byte-stream protocol over TCP to the reference host.
@Suite(.serialized) struct StreamReplayTests {
    /// A trace of two phones' attitude streams in chunks of 1 to 40 bytes, 5 ms apart.
    func writeInput(_ path: String) throws -> [Endpoint: [[UInt8]]] {
        var generator = SeededGenerator(seed: 31)
        let writer = try TraceWriter(path: path, header: TraceHeader(created: "2026-01-01T00:00:00Z", tool: "test",
                                                                     protocolID: AttitudeStream.id, capturePoint: .controller, clock: .realtime))
        let host = Endpoint(host: "10.0.0.1", port: 47130)
        var records: [Endpoint: [[UInt8]]] = [:]
        for phone in 1...2 {
            let source = Endpoint(host: "10.0.0.\(phone + 1)", port: 50000)
            records[source] = (0..<60).map { _ in
                AttitudeRecord(roll: Float32(generator.unit() * 6 - 3), pitch: Float32(generator.unit() * 3 - 1.5), yaw: Float32(generator.unit() * 6 - 3)).encoded()
            }
        }
        let streams = records.mapValues { $0.flatMap { $0 } }
        var offsets: [Endpoint: Int] = [:]
        var time: Int64 = 1_767_225_600_000_000_000
        while offsets.count < streams.count || offsets.contains(where: { $0.value < streams[$0.key]!.count }) {
            for source in streams.keys.sorted() {
                let at = offsets[source, default: 0], stream = streams[source]!
                guard at < stream.count else { offsets[source] = at; continue }
                let n = min(1 + Int(generator.next() % 40), stream.count - at)
                try writer.write(.message(MessageRecord(timeNs: time, direction: .controllerToHost, source: source, destination: host,
                                                        payload: Array(stream[at..<at + n]))))
                offsets[source] = at + n
                time += 5_000_000
            }
        }
        try writer.close()
        return records
    }

    @Test(arguments: ["recorded", "record", "random", "byte"])
    func everySegmentationDeliversExactlyTheRecordedAttitudes(_ segmentation: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let input = dir.appendingPathComponent("input.jsonl").path
        let hostTrace = dir.appendingPathComponent("host.jsonl").path
        let records = try writeInput(input)
        let host = try Background.kinetrace("host", "--protocol", "attitude-stream", "--port", "0", "--trace", hostTrace, "--format", "json", "-v")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let result = try kinetrace(["replay", input, "--to", "127.0.0.1:\(port)", "--segmentation", segmentation, "--speed", "4",
                                    "--delay", "uniform:0:20", "--seed", "9", "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try lastJSONLine(result.stdout)
        // Stop the host once it has applied all 120 records (-v logs each), not after a guessed pause.
        try waitUntil("the host to apply 120 attitudes; stderr: \(host.stderr)") { host.stderrLines(containing: "] attitude") >= 120 }
        let hostResult = try host.stop(SIGTERM)
        #expect(hostResult.status == 0, "\(hostResult.stderr)")
        let received = try TraceStreams(path: hostTrace)
        let controllers = try #require(report["controllers"] as? [[String: Any]])
        #expect(controllers.count == 2)
        for controller in controllers {
            let source = try #require((controller["source"] as? String).flatMap(Endpoint.init))
            let endpoint = try #require((controller["endpoint"] as? String).flatMap(Endpoint.init))
            // The host got the recorded stream, byte for byte, and applied every record in order, delays notwithstanding.
            #expect(received.stream(endpoint) == records[source]!.flatMap { $0 })
            #expect(received.decisions[endpoint]?.map(\.values) == records[source]!.map(attitudeValues))
            let writes = try #require(controller["sent"] as? Int)
            switch segmentation {
            case "record": #expect(writes == 60)
            case "byte": #expect(writes == 60 * 12)
            default: #expect(writes > 0)
            }
        }
        #expect(try lastJSONLine(hostResult.stdout)["closed_mid_record"] as? Int == 0)
    }

    @Test(arguments: [["--loss", "0.1"], ["--duplicate", "0.1"], ["--reorder", "0.1"], ["--corrupt", "0.1"], ["--truncate", "0.1"]])
    func impairmentsTCPWouldRepairAreRefused(_ impairment: [String]) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let input = dir.appendingPathComponent("input.jsonl").path
        _ = try writeInput(input)
        let result = try kinetrace(["replay", input, "--to", "127.0.0.1:9"] + impairment)
        #expect(result.status == 64)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.contains("TCP, which repairs") == true, "\(result.stderr)")
    }

    @Test func aHostThatClosesTheConnectionEndsTheReplayAsDied() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let input = dir.appendingPathComponent("input.jsonl").path
        _ = try writeInput(input)
        // A listener that closes every connection it accepts.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        #expect(listen(listener, 8) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let closer = Thread {
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 { return }
                close(fd)
            }
        }
        closer.start()
        defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
        let result = try kinetrace(["replay", input, "--to", "127.0.0.1:\(port)", "--format", "json"])
        #expect(result.status == 69, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("the host closed the connection of controller") || result.stderr.contains("the host reset the connection of controller"),
                "\(result.stderr)")
    }
}
