import Foundation
import KinetraceTestSupport
import Testing

/// The controller's side of WebSocket against hosts that lie (Tests/FaultyHosts/websocket_faulty_host.py):
/// each lie ends in one line that names it and a distinct exit status, within the connect
/// timeout, and never in a hang or unbounded memory.
@Suite(.serialized) struct WebSocketControllerTests {
    static let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/websocket_faulty_host.py").path

    /// Runs `simulate --to ws://…` for one second against a host with `fault`.
    static func simulate(against fault: String, _ extra: [String] = []) throws -> (RunResult, [String: Any]?, String) {
        let host = try Background(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--fault", fault])
        defer { _ = try? host.stop(SIGKILL) }
        let line = try host.waitForLine(startingWith: "listening on ")
        let port = try #require(line.split(separator: ":").last.map(String.init))
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("sim.jsonl").path
        let result = try kinetrace(["simulate", "--to", "ws://127.0.0.1:\(port)/m", "--duration", "1", "--format", "json", "--trace", trace] + extra)
        let report = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let records = (try? String(contentsOfFile: trace, encoding: .utf8)) ?? ""
        return (result, report, records)
    }

    @Test(arguments: [
        ("not-found", "the host answered HTTP/1.1 404 Not Found instead of 101 Switching Protocols"),
        ("bad-accept", "Sec-WebSocket-Accept does not answer the key sent"),
        ("extension", "the host chose extensions (permessage-deflate) that were not offered"),
        ("endless-head", "no end of the HTTP head within 8192 bytes"),
    ])
    func aHandshakeLieIsRefusedInOneLine(_ fault: (String, String)) throws {
        let (result, _, _) = try Self.simulate(against: fault.0)
        #expect(result.status == 69, "\(fault.0): \(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(fault.1) && lines[0].contains("ws://127.0.0.1:"), "\(fault.0): \(result.stderr)")
    }

    @Test func aHostThatNeverAnswersTheUpgradeTimesOut() throws {
        let started = Date()
        let (result, _, _) = try Self.simulate(against: "silent")
        #expect(result.status == 69)
        #expect(result.stderr.contains("no WebSocket handshake answer within 5000 ms"), "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 30, "the handshake wait must end at the connect timeout")
    }

    /// A frame a server must not send (masked, or announced at 2 GiB) ends the connection as a
    /// protocol error, before any of a huge payload is held; a close from the host ends it in order.
    @Test(arguments: [("masked", "protocol error"), ("huge-frame", "protocol error"), ("close-1011", "host closed")])
    func aBrokenHostStreamEndsTheConnection(_ fault: (String, String)) throws {
        let (result, report, records) = try Self.simulate(against: fault.0)
        #expect(result.status == 69, "\(fault.0): \(result.stderr)")
        #expect(result.stderr.contains("no frame could be sent"), "\(fault.0): \(result.stderr)")
        #expect(report?["frames_sent"] as? Int == 0, "\(fault.0): \(String(describing: report))")
        #expect(records.contains("\"event\":\"connection_ended\"") && records.contains("\"by\":\"\(fault.1)\""), "\(fault.0): \(records.suffix(400))")
    }

    /// 10,000 pings from a host that never reads: the controller answers some, queues at most
    /// 4 KiB of pongs, and streams its samples as usual.
    @Test func aPingFloodDoesNotStopTheStream() throws {
        let (result, report, _) = try Self.simulate(against: "ping-flood")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(report?["frames_sent"] as? Int == 10, "\(String(describing: report))")
        #expect((report?["send_errors"] as? [String: Any])?.isEmpty ?? false, "\(String(describing: report))")
    }
}
