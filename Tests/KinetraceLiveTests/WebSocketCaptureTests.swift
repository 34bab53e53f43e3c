import Foundation
import KinetraceWebSocket
import KinetraceJSON
import KinetracePcap
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace capture --transport ws` on loopback while `kinetrace simulate` talks to
/// `kinetrace host --transport ws`: the capture, converted with `convert --transport ws`,
/// must hold exactly the messages and closes the host's own trace holds, and tshark, an
/// independent WebSocket dissector, must find the same payloads in the same order.
@Suite(.serialized, .enabled(if: Requirement.root.runs, "live capture needs root or CAP_NET_RAW; with CI set this fails instead"))
struct WebSocketCaptureTests {
    init() throws { try Requirement.root.check() }

    static func readAll(_ path: String) throws -> [TraceRecord] {
        let reader = try TraceReader(path: path)
        var out: [TraceRecord] = []
        while let record = try reader.next() { out.append(record) }
        return out
    }

    /// What a trace says of each controller: per direction, its messages in order
    /// (source, destination, payload); and its websocket_close events' data.
    struct Sessions: Equatable, CustomStringConvertible {
        struct Message: Equatable {
            var source: Endpoint
            var destination: Endpoint
            var payload: [UInt8]
        }
        var messages: [String: [Message]] = [:]  // "CONTROLLER c2h" → messages
        var closes: [String: [[String: JSONValue]]] = [:]  // controller → closes' data

        init(_ records: [TraceRecord]) {
            for record in records {
                switch record {
                case .message(let m):
                    let controller = m.direction == .controllerToHost ? m.source : m.destination
                    messages["\(controller) \(m.direction.rawValue)", default: []].append(Message(source: m.source, destination: m.destination, payload: Array(m.payload)))
                case .event(let e) where e.event == "websocket_close":
                    closes[e.data["controller"]?.stringValue ?? "?", default: []].append(e.data)
                default:
                    break
                }
            }
        }

        var messageCount: Int { messages.values.reduce(0) { $0 + $1.count } }
        var description: String {
            "\(messages.mapValues(\.count)) messages; closes \(closes)"
        }
    }

    /// The payloads of the text and binary frames tshark finds in `pcap`, hex, in packet order.
    static func tsharkPayloads(_ pcap: String, port: UInt16) throws -> [String] {
        let tshark = try Fixture.tool("tshark")
        // Which field holds a frame's payload bytes depends on the version: `websocket.payload` is
        // bytes in some, a label in others (4.0, where the unmasked bytes go to `data.data`, and a
        // text frame's to `websocket.payload.text`).
        let glossary = try run(tshark, ["-G", "fields"], timeout: 120)
        let payloadIsBytes = glossary.stdout.split(separator: "\n").contains {
            let columns = $0.split(separator: "\t", omittingEmptySubsequences: false)
            return columns.count > 3 && columns[2] == "websocket.payload" && columns[3] == "FT_BYTES"
        }
        let fields = payloadIsBytes ? ["websocket.payload"] : ["data.data", "websocket.payload.text"]
        var arguments = ["-r", pcap, "-d", "tcp.port==\(port),http", "-Y", "websocket.opcode == 1 || websocket.opcode == 2",
                         "-T", "fields", "-E", "separator=\t", "-E", "aggregator=^"]
        for field in fields { arguments += ["-e", field] }
        let result = try run(tshark, arguments, timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        var payloads: [String] = []
        for line in result.stdout.split(separator: "\n") {
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            if !columns[0].isEmpty { payloads += columns[0].split(separator: "^").map { $0.replacingOccurrences(of: ":", with: "").lowercased() } }
            if columns.count > 1, !columns[1].isEmpty {
                payloads += columns[1].split(separator: "^").map { Array($0.utf8).map { String(format: "%02x", $0) }.joined() }
            }
        }
        return payloads
    }

    @Test(arguments: ["motionlink-v1", "keepcalm-json", "attitude-stream"])
    func aCapturedSessionConvertsToTheHostsOwnRecords(_ protocolName: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path
        let pcap = dir.appendingPathComponent("ws.pcap").path
        let liveTrace = dir.appendingPathComponent("live.jsonl").path
        let converted = dir.appendingPathComponent("converted.jsonl").path

        let host = try Background.kinetrace("host", "--protocol", protocolName, "--transport", "ws", "--port", "0", "--path", "/m",
                                            "--trace", hostTrace)
        defer { if host.process.isRunning { _ = try? host.stop(SIGKILL) } }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background.kinetrace("capture", "-i", "lo", "--protocol", protocolName, "--transport", "ws", "--port", "\(port)",
                                               "-w", pcap, "--trace", liveTrace, "--format", "json")
        defer { if capture.process.isRunning { _ = try? capture.stop(SIGKILL) } }
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        // Jumps, so that motionlink-v1's host sends acks: messages both ways.
        let sim = try kinetrace(["simulate", "--protocol", protocolName, "--to", "ws://127.0.0.1:\(port)/m", "--controllers", "2",
                                 "--duration", "5", "--script", "jumps", "--seed", "7"], timeout: 120)
        #expect(sim.status == 0, "\(sim.stderr)")
        // The simulator has closed its connections: the host's trace is complete once it stops.
        let hostResult = try host.stop(SIGINT)
        #expect(hostResult.status == 0 || hostResult.status == 130, "\(hostResult.stderr)")
        let captured = try capture.stop(SIGINT)
        #expect(captured.status == 0, "\(captured.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(captured.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect(report["kernel_dropped"] as? Int == 0)

        let result = try kinetrace("convert", pcap, converted, "--protocol", protocolName, "--transport", "ws", "--port", "\(port)")
        #expect(result.status == 0, "\(result.stderr)")

        let fromHost = Sessions(try Self.readAll(hostTrace))
        let convertedRecords = try Self.readAll(converted)
        let fromCapture = Sessions(convertedRecords)
        #expect(fromHost.messageCount > 0)
        #expect(fromCapture.messages.count >= 2, "both controllers' messages: \(fromCapture)")
        if protocolName == "motionlink-v1" { #expect(fromCapture.messages.keys.contains { $0.hasSuffix("h2c") }, "acks: \(fromCapture)") }
        #expect(fromCapture.closes.count == 2, "one close per controller: \(fromCapture)")
        #expect(fromCapture == fromHost)
        // Nothing the reader could not read.
        #expect(!convertedRecords.contains { if case .event(let e) = $0 { e.event == "websocket_error" } else { false } })
        // The capture's own trace, read live, holds the same records as the pcap converted afterwards.
        #expect(try Self.readAll(liveTrace) == convertedRecords)

        // tshark agrees on every text and binary frame's payload, in order (the simulator sends whole messages).
        guard try Requirement.tools("tshark").available() else { return }
        let messagesInOrder = convertedRecords.compactMap { record -> String? in
            guard case .message(let m) = record else { return nil }
            return Array(m.payload).map { String(format: "%02x", $0) }.joined()
        }
        #expect(try Self.tsharkPayloads(pcap, port: port) == messagesInOrder)
    }

    /// A close the host begins on a broken stream reads the same in the capture as in the
    /// host's trace: its code and its reason travel in the close frame.
    @Test func aHostsErrorCloseReadsTheSameInTheCapture() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path, pcap = dir.appendingPathComponent("ws.pcap").path
        let converted = dir.appendingPathComponent("converted.jsonl").path
        let host = try Background.kinetrace("host", "--transport", "ws", "--port", "0", "--path", "/m", "--trace", hostTrace)
        defer { if host.process.isRunning { _ = try? host.stop(SIGKILL) } }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background.kinetrace("capture", "-i", "lo", "--transport", "ws", "--port", "\(port)", "-w", pcap, "--format", "json")
        defer { if capture.process.isRunning { _ = try? capture.stop(SIGKILL) } }
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let peer = try RawWebSocketPeer(port: Int(port), path: "/m")
        var reading = MotionReading()
        reading.userAcceleration = Vector3(0, 0.1, 0)
        reading.rotationRate = Vector3(0, 0, 0)
        let frame = try #require(MotionLinkV1.sample(reading, timeMs: 5_000))
        peer.write(WebSocketFrame(opcode: .binary, maskingKey: [1, 2, 3, 4], payload: frame).encoded())
        peer.write(WebSocketFrame(opcode: .binary, payload: frame).encoded())  // unmasked: 1002
        let answer = try peer.readUntilClosed()
        #expect(answer.closeCode == 1002)
        _ = try host.stop(SIGINT)
        usleep(300_000)
        _ = try capture.stop(SIGINT)
        let result = try kinetrace("convert", pcap, converted, "--transport", "ws", "--port", "\(port)")
        #expect(result.status == 0, "\(result.stderr)")
        let fromHost = Sessions(try Self.readAll(hostTrace)), fromCapture = Sessions(try Self.readAll(converted))
        #expect(fromHost.closes.count == 1 && fromHost == fromCapture, "host \(fromHost) capture \(fromCapture)")
    }
}
