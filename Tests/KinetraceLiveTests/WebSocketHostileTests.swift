import Foundation
import KinetraceHost
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWebSocket
import KinetraceWire
import Logging
import Testing

/// The WebSocket host under hostile controllers, each limit with its own attack on a real
/// loopback connection: what the host answers (close code or HTTP status), that it ends the
/// connection, and what its trace says. The limits are `WebSocketLimits`' defaults.
@Suite(.serialized) struct WebSocketHostileTests {
    static let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    /// A reference host over WebSocket at /m, recording to a trace in `dir`.
    static func host(_ dir: URL, protocolName: String = "motionlink-v1", connectionTimeoutNs: Int64? = 10_000_000_000) throws -> ReferenceHost {
        var configuration = ReferenceHost.Configuration(wireProtocol: try #require(ProtocolRegistry.standard.named(protocolName)))
        configuration.transport = Transports.webSocket
        configuration.port = 0
        configuration.path = "/m"
        configuration.connectionTimeoutNs = connectionTimeoutNs
        configuration.tracePath = dir.appendingPathComponent("host.jsonl").path
        return try ReferenceHost(configuration: configuration, logger: quiet)
    }

    static func events(_ dir: URL, named name: String) throws -> [EventRecord] {
        let reader = try TraceReader(path: dir.appendingPathComponent("host.jsonl").path)
        var events: [EventRecord] = []
        while let record = try reader.next() {
            if case .event(let event) = record, event.event == name { events.append(event) }
        }
        return events
    }

    @Test func anOversizedFrameIsRefusedWith1009BeforeItsPayloadArrives() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Self.host(dir)
        let peer = try RawWebSocketPeer(port: host.localAddress.port!, path: "/m")
        // A header announcing 70,000 bytes (over the 65,536 limit), and none of the payload.
        peer.write(WebSocketFrame.header(fin: true, opcode: .binary, payloadLength: 70_000, maskingKey: [1, 2, 3, 4]))
        let answer = try peer.readUntilClosed()
        #expect(answer.closeCode == 1009, "\(answer)")
        #expect(answer.closedByHost)
        _ = try host.shutdown()
        let closes = try Self.events(dir, named: "websocket_close")
        #expect(closes.count == 1 && closes[0].data["code"] == .integer(1009) && closes[0].data["by"] == .string("host"), "\(closes)")
    }

    @Test(arguments: [
        ("fragment flood", 1009, "too_many_fragments"),
        ("long message", 1009, "message_too_large"),
        ("unmasked", 1002, "unmasked_client_frame"),
        ("reserved bits", 1002, "reserved_bits"),
        ("reserved opcode", 1002, "reserved_opcode"),
        ("continuation first", 1002, "unexpected_continuation"),
        ("long ping", 1002, "control_frame_too_long"),
        ("fragmented ping", 1002, "fragmented_control_frame"),
    ])
    func aBrokenStreamEndsTheConnectionWithItsCode(_ attack: (String, Int, String)) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Self.host(dir)
        let peer = try RawWebSocketPeer(port: host.localAddress.port!, path: "/m")
        let key: [UInt8] = [9, 8, 7, 6]
        switch attack.0 {
        case "fragment flood":
            // 65 one-byte fragments of one message: one more than the 64 allowed.
            peer.write(WebSocketFrame(fin: false, opcode: .binary, maskingKey: key, payload: [1]).encoded())
            for _ in 0..<64 { peer.write(WebSocketFrame(fin: false, opcode: .continuation, maskingKey: key, payload: [1]).encoded()) }
        case "long message":
            // Two 40,000-byte fragments: each frame is within the limit, the message is not.
            peer.write(WebSocketFrame(fin: false, opcode: .binary, maskingKey: key, payload: Array(repeating: 7, count: 40_000)).encoded())
            peer.write(WebSocketFrame(fin: true, opcode: .continuation, maskingKey: key, payload: Array(repeating: 7, count: 40_000)).encoded())
        case "unmasked": peer.write(WebSocketFrame(opcode: .binary, payload: Array(repeating: 0, count: 36)).encoded())
        case "reserved bits": peer.write(WebSocketFrame(opcode: .binary, maskingKey: key, payload: [0], reservedBits: 0x40).encoded())
        case "reserved opcode": peer.write([0x83, 0x80] + key)
        case "continuation first": peer.write(WebSocketFrame(fin: true, opcode: .continuation, maskingKey: key, payload: [1]).encoded())
        case "long ping": peer.write(WebSocketFrame(opcode: .ping, maskingKey: key, payload: Array(repeating: 1, count: 126)).encoded())
        case "fragmented ping": peer.write(WebSocketFrame(fin: false, opcode: .ping, maskingKey: key, payload: [1]).encoded())
        default: Issue.record("unknown attack \(attack.0)")
        }
        let answer = try peer.readUntilClosed()
        #expect(answer.closeCode == UInt16(attack.1), "\(attack.0): \(answer)")
        #expect(answer.closedByHost, "\(attack.0)")
        _ = try host.shutdown()
        let closes = try Self.events(dir, named: "websocket_close")
        #expect(closes.count == 1, "\(attack.0): \(closes)")
        #expect(closes.first?.data["code"] == .integer(Int64(attack.1)) && closes.first?.data["by"] == .string("host"), "\(attack.0): \(closes)")
        if case .string(let reason) = closes.first?.data["reason"] { #expect(reason.hasPrefix(attack.2), "\(attack.0): \(reason)") } else { Issue.record("no reason: \(closes)") }
    }

    /// Pings are answered with their payload; a ping is no message, so it counts for nothing.
    @Test func aPingGetsItsPongAndAMessageItsAck() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Self.host(dir)
        let peer = try RawWebSocketPeer(port: host.localAddress.port!, path: "/m")
        peer.write(WebSocketFrame(opcode: .ping, maskingKey: [1, 1, 1, 1], payload: Array("are you there".utf8)).encoded())
        let pong = try peer.readFrame()
        #expect(pong.opcode == .pong && pong.payload == Array("are you there".utf8), "\(pong)")
        // A MotionLink frame over the jump threshold: the host answers with its 20-byte ack, as a binary message.
        var reading = MotionReading()
        reading.userAcceleration = Vector3(0, 0.9, 0)
        reading.rotationRate = Vector3(0, 0, 0)
        let frame = try #require(MotionLinkV1.sample(reading, timeMs: 1_000))
        peer.write(WebSocketFrame(opcode: .binary, maskingKey: [5, 6, 7, 8], payload: frame).encoded())
        let ack = try peer.readFrame()
        #expect(ack.opcode == .binary && ack.payload.count == 20 && ack.maskingKey == nil, "\(ack)")
        // The controller closes with 1001: echoed, recorded as the controller's.
        peer.write(WebSocketFrame(opcode: .close, maskingKey: [0, 0, 0, 0], payload: [0x03, 0xE9] + Array("going away".utf8)).encoded())
        let answer = try peer.readUntilClosed()
        #expect(answer.closeCode == 1001)
        let stats = try host.shutdown()
        #expect(stats.validFrames == 1 && stats.repliesSent == 1, "\(stats)")
        let closes = try Self.events(dir, named: "websocket_close")
        #expect(closes.count == 1 && closes[0].data["by"] == .string("controller") && closes[0].data["code"] == .integer(1001)
                && closes[0].data["reason"] == .string("going away"), "\(closes)")
    }

    /// The handshake's limits: another path gets 404, a plain request 426, a head over 8 KiB
    /// 400, and a head that never ends is closed by the connection timeout.
    @Test func theHandshakeIsBounded() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Self.host(dir, connectionTimeoutNs: 500_000_000)
        let port = host.localAddress.port!
        let wrongPath = try RawWebSocketPeer.rawHTTP(port: port, Array("GET /other HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        #expect(wrongPath.hasPrefix("HTTP/1.1 404"), "\(wrongPath)")
        let plain = try RawWebSocketPeer.rawHTTP(port: port, Array("GET /m HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(plain.hasPrefix("HTTP/1.1 426"), "\(plain)")
        let huge = try RawWebSocketPeer.rawHTTP(port: port, Array(("GET /m HTTP/1.1\r\nX-Pad: " + String(repeating: "a", count: 9_000) + "\r\n\r\n").utf8))
        #expect(huge.hasPrefix("HTTP/1.1 400"), "\(huge.prefix(200))")
        // A slow-loris head: one header byte every 100 ms, never ending; the 0.5 s timeout closes it.
        let slow = try ConnectedTCPSocket(to: try SocketAddressBox.resolve("127.0.0.1:\(port)"))
        _ = slow.write(Array("GET /m HTTP/1.1\r\nX-Slow: ".utf8), deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000)
        var closed = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        let giveUp = SystemClock.monotonicNs() + 20_000_000_000
        while !closed, SystemClock.monotonicNs() < giveUp {
            let written = [UInt8(ascii: "a")].withUnsafeBytes { slow.tryWrite($0) }
            if case .error = written { closed = true }
            switch slow.read(into: &buffer) as ConnectedTCPSocket.Read {
            case .closed, .error: closed = true
            default: usleep(100_000)
            }
        }
        #expect(closed, "a handshake that never ends must be closed by the connection timeout")
        let stats = try host.shutdown()
        #expect(stats.connectionsTimedOut >= 1, "\(stats)")
        #expect(stats.validFrames == 0)
    }

    /// 1,000 idle controllers, half of them stopped inside the handshake, half upgraded and
    /// silent: the host (a separate process) accepts them all and its memory grows by a bounded
    /// amount per connection; the connection timeout then closes every one.
    @Test func aThousandIdleConnectionsCostBoundedMemory() throws {
        guard DescriptorLimit.raiseToHardLimit() >= 1_200 else {
            Issue.record("the open-file limit is under 1,200: this test needs 1,000 connections")
            return
        }
        let host = try Background(try Fixture.binary, ["host", "--transport", "ws", "--path", "/m", "--port", "0", "--connection-timeout", "3", "--format", "json"])
        let line = try host.waitForLine(startingWith: "listening on ")
        let port = try #require(Int(line.split(separator: ":").last!))
        usleep(200_000)
        let before = try #require(try Self.residentBytes(of: host.process.processIdentifier))
        var upgraded: [RawWebSocketPeer] = []
        var halfOpen: [ConnectedTCPSocket] = []
        for _ in 0..<500 {
            upgraded.append(try RawWebSocketPeer(port: port, path: "/m"))
            let socket = try ConnectedTCPSocket(to: try SocketAddressBox.resolve("127.0.0.1:\(port)"))
            _ = socket.write(Array("GET /m HTTP/1.1\r\nHost: x\r\n".utf8), deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000)
            halfOpen.append(socket)
        }
        usleep(300_000)
        let during = try #require(try Self.residentBytes(of: host.process.processIdentifier))
        let perConnection = (during - before) / 1_000
        // A NIO channel with its handlers and buffers is a few KiB; 64 KiB each would mean a
        // buffer per connection sized by a limit rather than by what arrived.
        #expect(during - before < 64 << 20, "the host grew by \(during - before) bytes for 1,000 idle connections")
        #expect(perConnection < 64 << 10, "\(perConnection) bytes per idle connection")
        // The timeout (3 s, swept every 0.75 s) closes all of them: every peer reads its end.
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = SystemClock.monotonicNs() + 15_000_000_000
        var open = Set(0..<1_000)
        while !open.isEmpty, SystemClock.monotonicNs() < deadline {
            for index in open {
                let socket = index < 500 ? upgraded[index].socket : halfOpen[index - 500]
                switch socket.read(into: &buffer) as ConnectedTCPSocket.Read {
                case .closed, .error: open.remove(index)
                case .bytes, .nothing: break
                }
            }
            usleep(50_000)
        }
        #expect(open.isEmpty, "\(open.count) idle connections still open 15 s after a 3 s timeout")
        let stopped = try host.stop(SIGTERM)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stopped.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect(report["connections"] as? Int == 1_000, "\(report)")
        #expect(report["connections_timed_out"] as? Int == 1_000, "\(report)")
        print("1,000 idle WebSocket connections: host resident memory \(before >> 10) KiB before, \(during >> 10) KiB with them open (\(perConnection) bytes each)")
    }

    /// VmRSS of a process, from /proc (Linux).
    static func residentBytes(of pid: Int32) throws -> Int? {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
    }
}

/// A WebSocket client written against the wire, for attacks the real controller never makes.
final class RawWebSocketPeer {
    let socket: ConnectedTCPSocket
    private var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: 1 << 20)
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    struct Closed: CustomStringConvertible {
        var closeCode: UInt16?
        var closedByHost: Bool
        var description: String { "close code \(closeCode.map(String.init) ?? "none"), closed by host: \(closedByHost)" }
    }

    init(port: Int, path: String) throws {
        socket = try ConnectedTCPSocket(to: try SocketAddressBox.resolve("127.0.0.1:\(port)"))
        write(WebSocketHandshake.request(host: "127.0.0.1:\(port)", path: path, key: "dGhlIHNhbXBsZSBub25jZQ=="))
        var received: [UInt8] = []
        let deadline = SystemClock.monotonicNs() + 5_000_000_000
        while SystemClock.monotonicNs() < deadline {
            if let (head, length) = try HTTPHead.read(received[...]) {
                guard head.status == 101, head.value("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" else {
                    throw FixtureError("no upgrade: \(head.startLine)")
                }
                reader.append(received[length...])
                return
            }
            switch socket.read(into: &buffer) as ConnectedTCPSocket.Read {
            case .bytes(let n): received += buffer[0..<n]
            case .nothing: usleep(1_000)
            case .closed, .error: throw FixtureError("closed during the handshake")
            }
        }
        throw FixtureError("no handshake answer")
    }

    func write(_ bytes: [UInt8]) {
        _ = socket.write(bytes, deadlineMonotonicNs: SystemClock.monotonicNs() + 5_000_000_000)
    }

    /// The next frame from the host, within 5 s.
    func readFrame() throws -> WebSocketFrame {
        let deadline = SystemClock.monotonicNs() + 5_000_000_000
        while SystemClock.monotonicNs() < deadline {
            if let frame = try reader.next() { return frame }
            switch socket.read(into: &buffer) as ConnectedTCPSocket.Read {
            case .bytes(let n): reader.append(buffer[0..<n])
            case .nothing: usleep(1_000)
            case .closed, .error: throw FixtureError("the host closed the connection")
            }
        }
        throw FixtureError("no frame within 5 s")
    }

    /// Reads until the host ends the connection: the close code it sent, if any.
    func readUntilClosed() throws -> Closed {
        var code: UInt16?
        let deadline = SystemClock.monotonicNs() + 10_000_000_000
        while SystemClock.monotonicNs() < deadline {
            while let frame = try? reader.next() {
                if frame.opcode == .close, frame.payload.count >= 2 { code = UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]) }
            }
            switch socket.read(into: &buffer) as ConnectedTCPSocket.Read {
            case .bytes(let n): reader.append(buffer[0..<n])
            case .nothing: usleep(1_000)
            case .closed, .error: return Closed(closeCode: code, closedByHost: true)
            }
        }
        return Closed(closeCode: code, closedByHost: false)
    }

    /// Sends `request` on a new connection and returns what the host answered before closing.
    static func rawHTTP(port: Int, _ request: [UInt8]) throws -> String {
        let socket = try ConnectedTCPSocket(to: try SocketAddressBox.resolve("127.0.0.1:\(port)"))
        _ = socket.write(request, deadlineMonotonicNs: SystemClock.monotonicNs() + 5_000_000_000)
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let deadline = SystemClock.monotonicNs() + 5_000_000_000
        while SystemClock.monotonicNs() < deadline {
            switch socket.read(into: &buffer) as ConnectedTCPSocket.Read {
            case .bytes(let n): answer += buffer[0..<n]
            case .nothing: usleep(1_000)
            case .closed, .error: return String(decoding: answer, as: UTF8.self)
            }
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
