import Foundation
import KinetraceImpairment
import KinetraceHost
import KinetraceJSON
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging
import Testing

/// What a trace says about each connection of a byte-stream protocol (or each
/// controller of a datagram one): its controller→host messages as recorded,
/// and the decisions recorded as events.
struct TraceStreams {
    var chunks: [Endpoint: [[UInt8]]] = [:]
    var decisions: [Endpoint: [(name: String, values: [Double], timeNs: Int64)]] = [:]
    var labels: [LabelRecord] = []
    var events: [EventRecord] = []
    var messageTimes: [Endpoint: [Int64]] = [:]

    init(path: String) throws {
        let reader = try TraceReader(path: path)
        while let record = try reader.next() {
            switch record {
            case .message(let m) where m.direction == .controllerToHost:
                chunks[m.source, default: []].append(Array(m.payload))
                messageTimes[m.source, default: []].append(m.timeNs)
            case .event(let e):
                events.append(e)
                guard e.event == "decision", let controller = e.data["controller"]?.stringValue.flatMap(Endpoint.init),
                      let name = e.data["decision"]?.stringValue else { continue }
                var values: [Double] = []
                if case .array(let items)? = e.data["values"] { values = items.compactMap { $0.doubleValue } }
                decisions[controller, default: []].append((name, values, e.timeNs))
            case .label(let l):
                labels.append(l)
            default:
                break
            }
        }
        #expect(reader.truncation == nil)
    }

    /// A connection's stream, its chunks joined.
    func stream(_ controller: Endpoint) -> [UInt8] { (chunks[controller] ?? []).flatMap { $0 } }

    /// The 12-byte records of a connection's stream, cut from its start.
    func records(_ controller: Endpoint) -> [[UInt8]] {
        let bytes = stream(controller)
        return stride(from: 0, to: bytes.count - bytes.count % 12, by: 12).map { Array(bytes[$0..<$0 + 12]) }
    }
}

/// The attitude a record carries as the host reports it: three float32 widened to doubles.
func attitudeValues(_ record: [UInt8]) -> [Double] {
    (0..<3).map { i in
        Double(Float32(bitPattern: UInt32(record[4 * i]) | UInt32(record[4 * i + 1]) << 8 | UInt32(record[4 * i + 2]) << 16 | UInt32(record[4 * i + 3]) << 24))
    }
}

func lastJSONLine(_ text: String) throws -> [String: Any] {
    let line = try #require(text.split(separator: "\n").last)
    return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

/// The reference host and the link of byte-stream protocols (attitude-stream) on loopback.
@Suite(.serialized) struct StreamHostTests {
    @Test func theHostAppliesExactlyTheRecordsTheSimulatorWrote() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path
        let simTrace = dir.appendingPathComponent("sim.jsonl").path
        let host = try Background.kinetrace("host", "--protocol", "attitude-stream", "--port", "0", "--trace", hostTrace, "--format", "json")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let sim = try kinetrace("simulate", "--protocol", "attitude-stream", "--to", "127.0.0.1:\(port)", "--controllers", "3",
                                "--duration", "3", "--seed", "7", "--trace", simTrace, "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        let hostResult = try host.stop(SIGTERM)
        #expect(hostResult.status == 0, "\(hostResult.stderr)")
        let simReport = try lastJSONLine(sim.stdout)
        let hostReport = try lastJSONLine(hostResult.stdout)

        let sent = try TraceStreams(path: simTrace)
        let received = try TraceStreams(path: hostTrace)
        #expect(sent.chunks.count == 3)
        #expect(Set(received.chunks.keys) == Set(sent.chunks.keys))
        var total = 0
        for controller in sent.chunks.keys {
            // The same bytes, in order, on each connection, whatever the reads cut.
            #expect(received.stream(controller) == sent.stream(controller))
            #expect(sent.stream(controller).count % 12 == 0)
            let records = sent.records(controller)
            total += records.count
            let decided = try #require(received.decisions[controller])
            #expect(decided.allSatisfy { $0.name == "attitude" })
            // Bit for bit: each decision's doubles narrow back to the record's float32s.
            #expect(decided.map(\.values) == records.map(attitudeValues))
            #expect(decided.flatMap(\.values).allSatisfy { Double(Float32($0)) == $0 })
        }
        #expect(total > 3 * 150)
        #expect(simReport["records_written"] as? Int == total)
        #expect(simReport["bytes_written"] as? Int == total * 12)
        #expect(hostReport["datagrams"] as? Int == total)
        #expect(hostReport["triggers"] as? Int == total)
        #expect(hostReport["connections"] as? Int == 3)
        #expect(hostReport["closed_mid_record"] as? Int == 0)
        // Nothing blocked while the host kept up, and nothing lost either way.
        #expect(simReport["blocked_writes"] as? Int == 0)
        #expect(sent.events.filter { $0.event == "blocked_write" }.isEmpty)
    }

    /// Drives the host through the link: records split at every offset, coalesced
    /// and byte by byte, a non-finite record mid-stream, and a stream ending mid-record.
    @Test func framingIsIndependentOfHowTheStreamIsWritten() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path
        let host = try Background.kinetrace("host", "--protocol", "attitude-stream", "--port", "0", "--trace", hostTrace, "--format", "json", "-v")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let link = try openLink(to: .network(TransportTarget(Transports.tcp, try SocketAddressBox.resolve("127.0.0.1:\(port)"))))
        #expect(link.target.description == "tcp://127.0.0.1:\(port)")
        var generator = SeededGenerator(seed: 2024)
        func randomRecord() -> [UInt8] {
            let limit = Double(Float32.pi)
            return AttitudeRecord(roll: Float32((generator.unit() * 2 - 1) * limit), pitch: Float32((generator.unit() * 2 - 1) * limit / 2),
                                  yaw: Float32((generator.unit() * 2 - 1) * limit)).encoded()
        }
        func deadline() -> Int64 { SystemClock.monotonicNs() + 2_000_000_000 }
        var expected: [Int: [[UInt8]]] = [:]

        // Every split offset 1–11, one connection each, with a pause so the reads can see the split.
        for offset in 1...11 {
            let controller = try link.openController()
            for _ in 0..<6 {
                let record = randomRecord()
                #expect(link.send(Array(record[..<offset]), from: controller, deadlineMonotonicNs: deadline()) == nil)
                usleep(2_000)
                #expect(link.send(Array(record[offset...]), from: controller, deadlineMonotonicNs: deadline()) == nil)
                expected[controller, default: []].append(record)
            }
        }
        // Many records coalesced in one write.
        let coalesced = try link.openController()
        let many = (0..<50).map { _ in randomRecord() }
        #expect(link.send(many.flatMap { $0 }, from: coalesced, deadlineMonotonicNs: deadline()) == nil)
        expected[coalesced] = many
        // Byte at a time, planned by the segmenter, with a NaN record in the middle that must not end the connection.
        let bytewise = try link.openController()
        let nan = AttitudeRecord(roll: .nan, pitch: 0, yaw: .infinity).encoded()
        let stream = (0..<5).map { _ in randomRecord() }
        let writes = try StreamSegmenter.plan([StreamWrite(timeNs: 0, bytes: stream[0..<2].flatMap { $0 } + nan + stream[2...].flatMap { $0 })],
                                              .byte, wireProtocol: AttitudeStream())
        #expect(writes.count == 6 * 12)
        for write in writes { #expect(link.send(write.bytes, from: bytewise, deadlineMonotonicNs: deadline()) == nil) }
        expected[bytewise] = stream
        // A stream that ends 5 bytes into a record.
        let torn = try link.openController()
        #expect(link.send(Array(randomRecord()[..<5]), from: torn, deadlineMonotonicNs: deadline()) == nil)
        #if os(Linux)
        #expect(link.unsentBytes(of: coalesced) != nil)
        #endif

        // Nothing comes back on this protocol, and the host ends no connection.
        var events: [String] = []
        link.receive(timeoutMs: 300) { event in events.append("\(event)") }
        #expect(events.isEmpty)
        _ = link.finish(graceMs: 0)
        // Stop the host once it has applied every whole finite record (-v logs each), not after a guessed pause.
        let owed = expected.values.map(\.count).reduce(0, +)
        try waitUntil("the host to apply \(owed) attitudes; stderr: \(host.stderr)") { host.stderrLines(containing: "] attitude") >= owed }
        let result = try host.stop(SIGTERM)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try lastJSONLine(result.stdout)
        #expect(report["closed_mid_record"] as? Int == 1)
        #expect((report["invalid_by_reason"] as? [String: Int])?["non_finite"] == 1)
        #expect(report["connections"] as? Int == 14)

        let received = try TraceStreams(path: hostTrace)
        for (controller, records) in expected {
            let endpoint = received.chunks.keys.first { $0.port == link.endpoint(of: controller).port }
            let decided = try #require(endpoint.flatMap { received.decisions[$0] }, "controller \(controller)")
            #expect(decided.map(\.values) == records.map(attitudeValues), "controller \(controller)")
        }
        // The reads did see records cut apart (else this test proved nothing about framing).
        #expect(received.chunks.values.joined().contains { $0.count % 12 != 0 })
    }

    @Test func aSlowReaderShowsAsBlockedWritesNotLostRecords() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let simTrace = dir.appendingPathComponent("sim.jsonl").path
        // A listener that never accepts or reads: the kernel queues the stream until the windows close.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var small: Int32 = 4096
        setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        #expect(listen(listener, 4) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)

        // 500 records a second for 2 s through a phone-sized send buffer: more than it and the closed window hold.
        let sim = try kinetrace(["simulate", "--protocol", "attitude-stream", "--to", "127.0.0.1:\(port)", "--rate", "500",
                                 "--duration", "2", "--send-buffer", "4096", "--trace", simTrace, "--format", "json"], timeout: 120)
        #expect(sim.status == 0, "\(sim.stderr)")
        let report = try lastJSONLine(sim.stdout)
        let written = try #require(report["records_written"] as? Int)
        let blocked = try #require(report["blocked_writes"] as? Int)
        #expect(blocked > 0)
        // Every tick is either a record written or a blocked write: none vanished.
        #expect(written + blocked == 1_000)
        let sent = try TraceStreams(path: simTrace)
        let controller = try #require(sent.chunks.keys.first)
        #expect(sent.events.filter { $0.event == "blocked_write" }.count == blocked)
        #expect(sent.events.contains { $0.event == "blocked_write" && $0.data["unsent_bytes"]?.integerValue ?? 0 > 0 })
        let bytes = sent.stream(controller).count
        #expect(report["bytes_written"] as? Int == bytes)
        // Whole records, except one the socket took in part at the very end, if any.
        #expect(bytes / 12 == written || (bytes + 11) / 12 == written)
    }

    /// AS-CONN-2: at the limit a new connection is admitted and displaces one that has sent no
    /// record yet, not the phone that is streaming (the host used to close the new one).
    @Test func aNewConnectionAtTheLimitDisplacesAnIdleOneNotTheStreamingPhone() throws {
        var configuration = ReferenceHost.Configuration(wireProtocol: AttitudeStream())
        configuration.port = 0
        configuration.maximumConnections = 2
        let host = try ReferenceHost(configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let link = NetworkControllerLink(target: TransportTarget(Transports.tcp, try SocketAddressBox.resolve("127.0.0.1:\(host.localAddress.port!)")))
        let record = AttitudeRecord(roll: 0.5, pitch: -0.25, yaw: 1).encoded()
        func deadline() -> Int64 { SystemClock.monotonicNs() + 1_000_000_000 }
        let phone = try link.openController()
        #expect(link.send(record, from: phone, deadlineMonotonicNs: deadline()) == nil)
        try waitUntil("the host to read the phone's record") { try host.statistics().datagrams == 1 }
        let idle = try link.openController()
        try waitUntil("the host to accept the idle connection") { try host.statistics().connections == 2 }
        let newcomer = try link.openController()
        var ended: [Int: Int32] = [:]
        try waitUntil("the idle connection to be closed by the host") {
            link.receive(timeoutMs: 100) { if case .error(let c, let code) = $0 { ended[c] = code } }
            return !ended.isEmpty
        }
        #expect(ended.keys.sorted() == [idle])
        for controller in [phone, newcomer] { #expect(link.send(record, from: controller, deadlineMonotonicNs: deadline()) == nil) }
        var stats = try host.statistics()
        try waitUntil("the host to read the phone's and the newcomer's records") {
            stats = try host.statistics()
            return stats.datagrams >= 3
        }
        #expect(stats.datagrams == 3)
        #expect(stats.triggers == 3)
        #expect(stats.connections == 3)
        #expect(stats.connectionsDisplaced == 1)
        _ = link.finish(graceMs: 0)
        let final = try host.shutdown()
        #expect(final.closedMidRecord == 0)
    }

    @Test func aHostThatStopsReadingGrowsTheSendQueueAndTimesTheSendOut() throws {
        // A listener that never accepts: the kernel takes the stream until the windows close.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        #expect(listen(listener, 4) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let link = NetworkControllerLink(target: TransportTarget(Transports.tcp, try SocketAddressBox.resolve("127.0.0.1:\(UInt16(bigEndian: address.sin_port))")), options: ConnectionOptions(sendBufferBytes: 16_384))
        let controller = try link.openController()
        #if os(Linux)
        #expect(link.unsentBytes(of: controller) == 0)
        #endif
        // 8 MB cannot fit: the send gives up at its deadline, part of it queued.
        let failure = link.send([UInt8](repeating: 0, count: 8 << 20), from: controller, deadlineMonotonicNs: SystemClock.monotonicNs() + 300_000_000)
        #expect(failure == ETIMEDOUT)
        #if os(Linux)
        #expect((link.unsentBytes(of: controller) ?? 0) > 0)
        #endif
        #expect(link.unsentBytes(of: 99) == nil)
        _ = link.finish(graceMs: 0)
        #expect(link.send([1], from: controller, deadlineMonotonicNs: SystemClock.monotonicNs()) == EBADF)
    }
}
