import Foundation
import KinetraceCLI
import KinetraceController
import KinetraceTLS
import KinetraceHost
import KinetraceSimulation
import KinetraceTestSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging
import Testing

/// The transport seam, transport by transport: the one host, the one simulator and the one
/// controller link over every transport in `Transports.all` that carries each built-in
/// protocol, on real loopback sockets, with no code that names the transport.
@Suite(.serialized) struct TransportSeamTests {
    static let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    /// Every (transport, protocol) pair the seam accepts.
    static var carried: [(String, String)] {
        Transports.all.flatMap { transport in
            ProtocolRegistry.standard.protocols.filter { transport.problem(carrying: $0) == nil }.map { (transport.scheme, $0.id.name) }
        }
    }

    @Test func everyProtocolHasATransportAndEveryTransportAProtocol() {
        for wireProtocol in ProtocolRegistry.standard.protocols {
            #expect(Transports.all.contains { $0.problem(carrying: wireProtocol) == nil }, "\(wireProtocol.id) has no transport")
            #expect(Transports.native(for: wireProtocol).problem(carrying: wireProtocol) == nil)
        }
        for transport in Transports.all {
            #expect(Self.carried.contains { $0.0 == transport.scheme }, "\(transport.scheme) carries no built-in protocol")
            #expect(Transports.named(transport.scheme.uppercased())?.scheme == transport.scheme)
        }
    }

    /// The simulator's sends reach the host whole, and the host's record of them equals the
    /// simulator's byte for byte, per controller and in order, whatever carried them.
    @Test(arguments: carried)
    func theHostRecordsExactlyWhatTheSimulatorSent(_ pair: (String, String)) throws {
        let transport = try #require(Transports.named(pair.0))
        let wireProtocol = try #require(ProtocolRegistry.standard.named(pair.1))
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path, simTrace = dir.appendingPathComponent("sim.jsonl").path

        var hostConfiguration = ReferenceHost.Configuration(wireProtocol: wireProtocol)
        hostConfiguration.transport = transport
        hostConfiguration.port = 0
        hostConfiguration.tracePath = hostTrace
        var trust = TLSTrust.system
        if transport.isSecure {
            NIOSSLProvider.install()
            let identity = try SelfSignedIdentity.make()
            hostConfiguration.tlsIdentity = TLSServerIdentity(certificateChainPEM: Array(identity.certificate.utf8), privateKeyPEM: Array(identity.key.utf8))
            trust = .certificates(pem: Array(identity.certificate.utf8))
        }
        let host = try ReferenceHost(configuration: hostConfiguration, logger: Self.quiet)
        let address = try SocketAddressBox.resolve("127.0.0.1:\(host.localAddress.port!)")
        var configuration = ControllerSimulator.Configuration(wireProtocol: wireProtocol, target: TransportTarget(transport, address))
        configuration.tlsTrust = trust
        configuration.controllers = 3
        // The jump script's first jump comes 2 to 4 s in: every controller has one to answer.
        configuration.durationS = 4.5
        configuration.rateHz = 40
        configuration.tracePath = simTrace
        if case .script = configuration.motion, wireProtocol.transport == .byteStream { configuration.motion = .persona(Persona.preset(named: "steering")!) }
        let report = try ControllerSimulator(configuration: configuration, logger: Self.quiet).run()
        let stats = try host.shutdown()

        #expect(report.framesSent >= 3 * 170, "\(report)")
        #expect(report.sendErrors.isEmpty && report.blockedWrites == 0, "\(report)")
        #expect(stats.validFrames == report.framesSent, "\(stats)")
        #expect(stats.invalidByReason.isEmpty, "\(stats)")
        let sent = try Self.bytes(in: simTrace, direction: .controllerToHost, keyedBy: \.source)
        let received = try Self.bytes(in: hostTrace, direction: .controllerToHost, keyedBy: \.source)
        #expect(sent.count == 3)
        #expect(sent == received, "the host's record differs from what the simulator sent over \(transport.scheme)")
        if wireProtocol.hostReplies && transport.keepsMessageBoundaries {
            #expect(report.repliesReceived == stats.repliesSent && stats.repliesSent > 0, "\(report) \(stats)")
        }
        if transport.hasConnections { #expect(stats.connections == 3, "\(stats)") }
    }

    /// A transport that cannot carry a protocol is refused before anything opens, in one line, by every command.
    @Test func aTransportThatCannotCarryTheProtocolIsRefused() throws {
        for (arguments, words) in [(["host", "--transport", "tcp", "--port", "0"], ["--transport tcp:// carries byte-stream protocols"]),
                                   (["host", "--transport", "udp", "--protocol", "attitude-stream", "--port", "0"], ["--transport udp:// carries datagram protocols"]),
                                   (["host", "--transport", "sctp", "--port", "0"], ["--transport must be one of udp, tcp"]),
                                   (["host", "--stdio", "--transport", "udp"], ["--transport names a network transport"]),
                                   (["simulate", "--to", "tcp://127.0.0.1:9", "--duration", "1"], ["--to tcp:// carries byte-stream protocols"]),
                                   (["simulate", "--to", "quic://127.0.0.1:9", "--duration", "1"], ["--to quic://127.0.0.1:9: unknown transport quic://"]),
                                   (["simulate", "--to", "://127.0.0.1:9", "--duration", "1"], ["unknown transport ://"]),
                                   (["simulate", "--to", "udp://", "--duration", "1"], ["--to udp://:", "HOST:PORT"]),
                                   (["replay", Fixture.bundledTrace, "--to", "tcp://127.0.0.1:9"], ["--to tcp:// carries byte-stream protocols"]),
                                   (["conform", "--host", "tcp://127.0.0.1:9"], ["--host tcp:// carries byte-stream protocols"]),
                                   (["conform", "--host", "udp:/127.0.0.1:9"], ["--host", "HOST:PORT"]),
                                   (["simulate", "--to", "udp://127.0.0.1:9/motion", "--duration", "1"], ["--to udp://127.0.0.1:9/motion: udp:// takes no path"]),
                                   (["simulate", "--to", "ws://127.0.0.1:9/a\u{7F}b", "--duration", "1"], ["the path must be printable ASCII"]),
                                   (["replay", Fixture.bundledTrace, "--to", "ws://127.0.0.1:9/" + String(repeating: "p", count: 1100)], ["the path is longer than 1024 bytes"]),
                                   (["host", "--path", "/m", "--port", "0"], ["--path applies to a WebSocket host"]),
                                   (["host", "--transport", "ws", "--path", "m", "--port", "0"], ["--path must start with /"]),
                                   (["host", "--transport", "ws", "--path", "/m?x=1", "--port", "0"], ["--path must start with /"])] {
            let result = try kinetrace(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("Usage") && !$0.hasPrefix("  See") && !$0.isEmpty }
            #expect(lines.count == 1 && words.allSatisfy { lines[0].contains($0) }, "\(arguments): \(result.stderr)")
        }
    }

    /// The URL spellings reach a real host on the transport they name, through every command that takes one.
    @Test(arguments: [("motionlink-v1", "udp"), ("attitude-stream", "tcp"), ("motionlink-v1", "ws"), ("keepcalm-json", "ws"), ("attitude-stream", "ws")])
    func aURLReachesTheHostOnItsTransport(_ pair: (String, String)) throws {
        let (name, scheme) = pair
        let path = scheme == "ws" ? "/motion/\(name)" : ""
        let host = try Background(try Fixture.binary, ["host", "--protocol", name, "--transport", scheme, "--port", "0", "--format", "json"] + (path.isEmpty ? [] : ["--path", path]))
        let line = try host.waitForLine(startingWith: "listening on ")
        let port = try #require(line.split(separator: ":").last.map(String.init))
        let sim = try kinetrace("simulate", "--protocol", name, "--to", "\(scheme.uppercased())://127.0.0.1:\(port)\(path)", "--duration", "1", "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        let stopped = try host.stop(SIGTERM)
        #expect(stopped.status == 0, "\(stopped.stderr)")
        let simReport = try #require(try JSONSerialization.jsonObject(with: Data(sim.stdout.utf8)) as? [String: Any])
        let hostReport = try #require(try JSONSerialization.jsonObject(with: Data(stopped.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        // A stream's summary counts records written; a datagram's, frames sent.
        let sent = try #require((simReport["frames_sent"] ?? simReport["records_written"]) as? Int)
        #expect(sent > 0 && hostReport["valid_frames"] as? Int == sent, "\(simReport) \(hostReport)")
        if scheme != "udp" { #expect(hostReport["connections"] as? Int == 1, "\(hostReport)") }
    }

    /// A replay over WebSocket delivers each of the trace's messages as one WebSocket message:
    /// the host's record equals the replay's, message for message, per controller and in order,
    /// and the host answers every triggering frame.
    @Test func aReplayOverWebSocketDeliversEveryMessageWhole() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path, replayTrace = dir.appendingPathComponent("replay.jsonl").path
        let host = try Background(try Fixture.binary, ["host", "--transport", "ws", "--path", "/replay", "--port", "0", "--trace", hostTrace, "--format", "json"])
        let line = try host.waitForLine(startingWith: "listening on ")
        let port = try #require(line.split(separator: ":").last.map(String.init))
        let replay = try kinetrace(["replay", Fixture.bundledTrace, "--to", "ws://127.0.0.1:\(port)/replay", "--record", replayTrace, "-x", "20", "--format", "json"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let stopped = try host.stop(SIGTERM)
        let hostReport = try #require(try JSONSerialization.jsonObject(with: Data(stopped.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect(hostReport["connections"] as? Int == 3, "\(hostReport)")
        let sent = try Self.messages(in: replayTrace, direction: .controllerToHost, keyedBy: \.source)
        let received = try Self.messages(in: hostTrace, direction: .controllerToHost, keyedBy: \.source)
        #expect(sent.values.map(\.count).reduce(0, +) == 1_800, "\(sent.mapValues(\.count))")
        #expect(sent == received, "each WebSocket message is one replayed message, in order")
        let replies = try Self.messages(in: replayTrace, direction: .hostToController, keyedBy: \.destination)
        let answered = try Self.messages(in: hostTrace, direction: .hostToController, keyedBy: \.destination)
        #expect(!replies.isEmpty && replies == answered, "every ack the host sent arrived whole")
    }

    /// Each controller's payloads as a list of messages, in order.
    static func messages(in path: String, direction: Direction, keyedBy key: KeyPath<MessageRecord, Endpoint>) throws -> [String: [[UInt8]]] {
        let reader = try TraceReader(path: path)
        var messages: [String: [[UInt8]]] = [:]
        while let record = try reader.next() {
            guard case .message(let message) = record, message.direction == direction else { continue }
            messages[message[keyPath: key].description, default: []].append(Array(message.payload))
        }
        return messages
    }

    /// Each source's controller→host payloads, concatenated in order: a stream's reads may
    /// cut differently from its writes, but never its bytes or their order.
    static func bytes(in path: String, direction: Direction, keyedBy key: KeyPath<MessageRecord, Endpoint>) throws -> [String: [UInt8]] {
        let reader = try TraceReader(path: path)
        var bytes: [String: [UInt8]] = [:]
        while let record = try reader.next() {
            guard case .message(let message) = record, message.direction == direction else { continue }
            bytes[message[keyPath: key].description, default: []] += message.payload
        }
        return bytes
    }
}
