import Foundation
import KinetraceTransport
import KinetraceHost
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Logging
import Testing

/// A plain TCP client socket to 127.0.0.1, for abusing the stream host: idle
/// connections, slow writers, connections closed with a reset.
final class RawTCPClient {
    let fd: Int32
    /// The client's own address, as the host names the connection.
    let local: Endpoint

    init(port: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = port.bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } }
        guard connected == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            throw FixtureError("connect: \(why)")
        }
        var mine = sockaddr_in()
        _ = withUnsafeMutablePointer(to: &mine) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        local = Endpoint(host: "127.0.0.1", port: UInt16(bigEndian: mine.sin_port))
    }

    /// Writes all of `bytes`; false when the host has closed or reset the connection.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// Whether the host has ended the connection (a FIN or RST is waiting), without blocking.
    var endedByHost: Bool {
        var polled = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&polled, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Closes with SO_LINGER 0: the kernel sends a RST instead of a FIN.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(fd)
    }

    func close() { Glibc.close(fd) }
}

/// Issue 24, findings 5 and 6: the TCP host under connection floods, slow
/// writers and reset storms.
@Suite(.serialized) struct StreamHostAbuseTests {
    static let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    /// Finding 6: connections reset (SO_LINGER 0) right after a partial record, many at once.
    /// Many are reset before the host accepts them, when the peer can no longer be looked up;
    /// every read must still name its own connection, so no two streams are glued together.
    @Test func anRSTStormLeavesEveryReadNamedByItsOwnConnection() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("host.jsonl").path
        var configuration = ReferenceHost.Configuration(wireProtocol: AttitudeStream())
        configuration.port = 0
        configuration.tracePath = trace
        let host = try ReferenceHost(configuration: configuration, logger: Self.quiet)
        let port = UInt16(host.localAddress.port!)
        var sent: [Endpoint: [UInt8]] = [:]
        let storm = 400
        for i in 0..<storm {
            let client = try RawTCPClient(port: port)
            // A distinct partial record on each connection: 5 bytes of (i/1000, 0.25, -0.5).
            let bytes = Array(AttitudeRecord(roll: Float32(i) / 1000, pitch: 0.25, yaw: -0.5).encoded().prefix(5))
            #expect(client.write(bytes))
            client.reset()
            sent[client.local] = bytes
        }
        try waitUntil("the host to have seen all \(storm) connections") {
            let stats = try host.statistics()
            return stats.connections + stats.connectionsUnnamed == storm
        }
        let stats = try host.shutdown()
        let received = try TraceStreams(path: trace)
        let unnamed = received.chunks.keys.filter { sent[$0] == nil }
        #expect(unnamed.isEmpty, "reads recorded from sources that are no connection of this test: \(unnamed.prefix(5))")
        // Each connection's stream is exactly what that connection sent: nothing glued from another.
        for (source, _) in received.chunks where sent[source] != nil {
            #expect(received.stream(source) == sent[source], "\(source)")
        }
        #expect(received.chunks.count > storm / 2, "the storm's reads were recorded (\(received.chunks.count) of \(storm))")
        #expect(stats.connectionsUnnamed == 0, "Linux names even a reset connection (SO_PEERNAME)")
        #expect(stats.closedMidRecord == received.chunks.count)
        #expect(stats.datagrams == 0, "no whole record was sent, so none was applied")
    }

    /// Finding 5 (AS-CONN-2): 1,100 idle connections against a host capped at 16 no longer lock
    /// a phone out. The phone streaming before the flood keeps its connection, and one that
    /// connects after it is admitted and served.
    @Test func elevenHundredIdleConnectionsLockNoPhoneOut() throws {
        DescriptorLimit.raiseToHardLimit()
        var configuration = ReferenceHost.Configuration(wireProtocol: AttitudeStream())
        configuration.port = 0
        configuration.maximumConnections = 16
        configuration.connectionTimeoutNs = nil  // displacement alone, on a machine however slow
        let host = try ReferenceHost(configuration: configuration, logger: Self.quiet)
        let port = UInt16(host.localAddress.port!)
        let record = AttitudeRecord(roll: 0.5, pitch: -0.25, yaw: 1).encoded()
        let before = try RawTCPClient(port: port)
        defer { before.close() }
        #expect(before.write(record))
        try waitUntil("the host to read the first phone's record") { try host.statistics().datagrams == 1 }
        var idle: [RawTCPClient] = []
        defer { idle.forEach { $0.close() } }
        for i in 0..<1_100 {
            idle.append(try RawTCPClient(port: port))
            // The phone goes on streaming through the flood.
            if i % 50 == 49 { #expect(before.write(record)) }
        }
        try waitUntil("the host to accept the flood") { try host.statistics().connections == 1_101 }
        let after = try RawTCPClient(port: port)
        defer { after.close() }
        #expect(after.write(record))
        #expect(before.write(record))
        try waitUntil("the host to read both phones' records") { try host.statistics().datagrams == 1 + 22 + 2 }
        // 1,102 connections through 16 places: 1,086 displaced, every one of them idle.
        try waitUntil("the displaced idle connections to see the host's FIN") { idle.filter(\.endedByHost).count == 1_102 - 16 }
        #expect(!before.endedByHost, "the phone that was streaming kept its connection")
        #expect(!after.endedByHost, "the phone that came after the flood was admitted")
        let stats = try host.shutdown()
        #expect(stats.triggers == 25, "every record of both phones was applied")
        #expect(stats.connectionsDisplaced == 1_102 - 16, "\(stats)")
    }

    /// Finding 5 (AS-CONN-3): a connection that delivers no whole record for the timeout is closed,
    /// however many bytes it trickles; a phone streaming records is not.
    @Test func aTricklingOrSilentConnectionIsClosedAfterTheTimeoutAndAStreamingOneIsNot() throws {
        var configuration = ReferenceHost.Configuration(wireProtocol: AttitudeStream())
        configuration.port = 0
        configuration.connectionTimeoutNs = 300_000_000
        let host = try ReferenceHost(configuration: configuration, logger: Self.quiet)
        let port = UInt16(host.localAddress.port!)
        let record = AttitudeRecord(roll: 0.5, pitch: -0.25, yaw: 1).encoded()
        let phone = try RawTCPClient(port: port), trickle = try RawTCPClient(port: port), silent = try RawTCPClient(port: port)
        defer { [phone, trickle, silent].forEach { $0.close() } }
        // A byte every 40 ms completes a record every 480 ms: past the timeout each time.
        var sentBytes = 0
        try waitUntil("the host to close the trickling and the silent connection", timeout: 30) {
            #expect(phone.write(record))
            if !trickle.endedByHost {
                _ = trickle.write([record[sentBytes % 12]])
                sentBytes += 1
            }
            usleep(30_000)
            return trickle.endedByHost && silent.endedByHost
        }
        #expect(!phone.endedByHost, "the phone streaming records stays")
        #expect(sentBytes > 0, "the trickling connection sent bytes, and was closed all the same")
        let stats = try host.shutdown()
        #expect(stats.connectionsTimedOut == 2)
        #expect(stats.connectionsDisplaced == 0)
    }

    /// AC-AS-CONN-FLOOD over TCP against the reference host at a bound of 32: 96 idle connections,
    /// and both phones are still read.
    @Test func theConnectionFloodCasePassesTheReferenceHostOverTCP() throws {
        let host = try Background.kinetrace("host", "--protocol", "attitude-stream", "--port", "0", "--max-connections", "32", "--format", "json")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let result = try kinetrace(["conform", "--protocol", "attitude-stream", "--host", "127.0.0.1:\(port)", "--max-connections", "32",
                                    "--cases", "AC-AS-CONN-FLOOD", "--format", "json"], timeout: 60)
        let stopped = try host.stop(SIGTERM)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let only = try #require((report["cases"] as? [[String: Any]])?.first)
        #expect(only["verdict"] as? String == "PASS", "\(only)")
        #expect((only["measurements"] as? [String: Double])?["idle_connections"] == 96)
        let summary = try lastJSONLine(stopped.stdout)
        #expect((summary["connections_displaced"] as? Int ?? 0) >= 96 - 32, "\(summary)")
    }

    /// The case's fault: a host that holds 32 connections and closes every newcomer (as the reference
    /// host did before issue 24) FAILs AC-AS-CONN-FLOOD; the same script without the fault passes it.
    @Test(arguments: [("refuses-over-cap", "FAIL", Int32(1)), ("none", "PASS", Int32(0))])
    func theConnectionFloodCaseFailsAHostThatRefusesNewcomers(_ fault: String, _ verdict: String, _ status: Int32) throws {
        let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/attitude_faulty_host.py").path
        let host = try Background(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--fault", fault, "--tcp", "--max-connections", "32"])
        defer { _ = try? host.stop(SIGKILL) }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let result = try kinetrace(["conform", "--protocol", "attitude-stream", "--host", "127.0.0.1:\(port)", "--max-connections", "32",
                                    "--cases", "AC-AS-CONN-FLOOD", "--format", "json"], timeout: 60)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let only = try #require((report["cases"] as? [[String: Any]])?.first)
        #expect(only["verdict"] as? String == verdict, "\(fault): \(only)")
        #expect(result.status == status, "\(fault): \(result.stderr)")
    }
}
