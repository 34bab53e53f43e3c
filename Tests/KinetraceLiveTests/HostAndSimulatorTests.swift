import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// The reference host and simulator as real processes on loopback.
@Suite(.serialized) struct HostAndSimulatorTests {
    @Test func simulatorAndHostAgreeOnEveryTrigger() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path
        let simTrace = dir.appendingPathComponent("sim.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0", "--trace", hostTrace, "--format", "json")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(port)", "--controllers", "4", "--duration", "6",
                                "--script", "random", "--seed", "11", "--trace", simTrace, "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        let hostResult = try host.stop(SIGTERM)
        #expect(hostResult.status == 0, "\(hostResult.stderr)")

        let simReport = try #require(try JSONSerialization.jsonObject(with: Data(sim.stdout.utf8)) as? [String: Any])
        let hostReport = try #require(try JSONSerialization.jsonObject(with: Data(hostResult.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        let sent = try #require(simReport["frames_sent"] as? Int)
        #expect(sent >= 4 * 55 && sent <= 4 * 61)
        #expect(hostReport["datagrams"] as? Int == sent)
        #expect(hostReport["valid_frames"] as? Int == sent)
        #expect(hostReport["controllers"] as? Int == 4)

        // The acks must be exactly what the gesture rule predicts from the frames sent.
        var tracker = GestureTracker<Endpoint>()
        var predicted: Set<String> = []
        var received: [String] = []
        var rtts = 0
        let reader = try TraceReader(path: simTrace)
        while let record = try reader.next() {
            guard case .message(let m) = record else { continue }
            switch (m.direction, m.decoded(as: MotionLinkV1())) {
            case (.controllerToHost, .success(.frame(let f))):
                if tracker.accept(f, from: m.source) == .trigger { predicted.insert("\(m.source) \(f.tMs)") }
            case (.hostToController, .success(.ack(let a))):
                received.append("\(m.destination) \(a.echoTMs)")
                if m.rttNs != nil { rtts += 1 }
            default:
                Issue.record("unexpected record \(m)")
            }
        }
        #expect(!predicted.isEmpty)
        #expect(Set(received) == predicted)
        #expect(received.count == predicted.count)  // exactly one ack per trigger
        #expect(rtts == received.count)
        #expect(hostReport["replies_sent"] as? Int == predicted.count)
        #expect(simReport["replies_received"] as? Int == predicted.count)
        #expect(simReport["unexpected_replies"] as? Int == 0)

        // The host's own trace holds every datagram it received and every ack it sent.
        let hostReader = try TraceReader(path: hostTrace)
        var c2h = 0, h2c = 0
        while let record = try hostReader.next() {
            if case .message(let m) = record { if m.direction == .controllerToHost { c2h += 1 } else { h2c += 1 } }
        }
        #expect(c2h == sent)
        #expect(h2c == predicted.count)
        #expect(hostReader.truncation == nil)
    }

    @Test func hostKeepsServingThroughEveryInvalidClassAndAFlood() throws {
        let host = try Background.kinetrace("host", "--port", "0", "--format", "json")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let socket = TestSocket()
        var probeTime: UInt64 = 0, acked = 0
        // A triggering frame 400 ms of frame time after the last one: its ack
        // proves the host has read everything sent before it (one socket, in order).
        func probe(_ sourceLocation: SourceLocation = #_sourceLocation) {
            probeTime += 400
            socket.send(MotionFrame(tMs: probeTime, ay: 0.9).encoded(), toPort: port)
            let ack = socket.receive(within: 30)
            #expect(ack == HapticAck(echoTMs: probeTime).encoded(), sourceLocation: sourceLocation)
            if ack != nil { acked += 1 }
        }
        probe()
        var sentInvalid: [String: Int] = [:]
        let valid = MotionFrame(tMs: 1_000_000, ay: 0.9).encoded()
        // Every wrong length from 0 to 100.
        for length in 0...100 where length != 36 && length != 20 {
            socket.send(Array((valid + valid + valid).prefix(length)), toPort: port)
            sentInvalid["invalid_length", default: 0] += 1
        }
        probe()
        // Every single-bit flip of a triggering frame.
        for bit in 0..<(36 * 8) {
            var flipped = valid
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            socket.send(flipped, toPort: port)
            sentInvalid["crc_mismatch", default: 0] += 1
            if bit % 64 == 63 { probe() }
        }
        // Non-finite values with a correct CRC, and an ack sent the wrong way.
        for value in [Float32.nan, .infinity, -.infinity] {
            socket.send(MotionFrame(tMs: 1_000_000, ay: value).encoded(), toPort: port)
            sentInvalid["non_finite", default: 0] += 1
        }
        socket.send(HapticAck(echoTMs: 1).encoded(), toPort: port)
        sentInvalid["wrong_direction", default: 0] += 1
        probe()
        let probes = acked
        // A flood of garbage: the kernel may drop some of it, the host must survive all of it.
        var state: UInt64 = 12345
        for _ in 0..<5000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            socket.send((0..<Int(state >> 58)).map { UInt8(truncatingIfNeeded: state >> UInt64($0 % 8 * 8)) }, toPort: port)
        }
        // Still serving: a probe after the flood is answered. The kernel may drop a probe that meets a
        // full socket buffer, so probe until one is answered instead of pausing for a guessed time.
        var afterFlood = 0
        for _ in 0..<30 where afterFlood == 0 {
            probeTime += 400
            socket.send(MotionFrame(tMs: probeTime, ay: 0.9).encoded(), toPort: port)
            while let datagram = socket.receive() {
                let sentAfterFlood = stride(from: UInt64(probes + 1) * 400, through: probeTime, by: 400)
                #expect(sentAfterFlood.contains { HapticAck(echoTMs: $0).encoded() == datagram }, "not an ack for a probe: \(datagram)")
                afterFlood += 1
            }
        }
        #expect(afterFlood > 0, "no probe answered after the flood")
        // None of the invalid input produced an ack.
        #expect(socket.receive() == nil)

        let result = try host.stop(SIGINT)
        #expect(result.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        let invalid = try #require(report["invalid_by_reason"] as? [String: Int])
        for (reason, count) in sentInvalid where reason != "invalid_length" && reason != "crc_mismatch" {
            #expect(invalid[reason] == count, "\(reason)")
        }
        // The flood adds to these two; everything sent before it was read.
        #expect((invalid["invalid_length"] ?? 0) >= sentInvalid["invalid_length"]!)
        #expect((invalid["crc_mismatch"] ?? 0) >= sentInvalid["crc_mismatch"]!)
        // One trigger and one ack per probe answered; a probe the kernel dropped reached no one.
        #expect(report["triggers"] as? Int == probes + afterFlood)
        #expect(report["replies_sent"] as? Int == probes + afterFlood)
    }

    @Test func aSecondHostOnATakenPortFailsClearly() throws {
        let first = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try first.waitForLine(startingWith: "listening on"))
        let second = try kinetrace("host", "--port", "\(port)")
        #expect(second.status == 69)
        #expect(second.stderr.hasPrefix("kinetrace: error: cannot listen on 127.0.0.1:\(port): "))
        #expect(second.stderr.contains("Address already in use"))
        #expect(try first.stop().status == 0)
    }

    @Test func ipv6HostAndControllers() throws {
        let host = try Background.kinetrace("host", "--bind", "::1", "--port", "0")
        let line = try host.waitForLine(startingWith: "listening on")
        #expect(line.hasPrefix("listening on [::1]:"))
        let port = try port(in: line)
        let sim = try kinetrace("simulate", "--to", "[::1]:\(port)", "--controllers", "2", "--duration", "5",
                                "--script", "jumps", "--seed", "3", "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(sim.stdout.utf8)) as? [String: Any])
        #expect((report["replies_received"] as? Int ?? 0) >= 2)
        #expect(report["unexpected_replies"] as? Int == 0)
        #expect(try host.stop().status == 0)
    }

    @Test func csvScriptIsResampledAndLabelled() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // 50 Hz samples over 3 s: quiet, one jump pulse at 1.0–1.2 s labelled at 1.0 s.
        var csv = "t,ax,ay,az,wx,wy,wz,gesture\n"
        for i in 0...150 {
            let t = Double(i) / 50
            let ay = (1.0..<1.2).contains(t) ? 1.2 : 0.01
            csv += "\(t),0,\(ay),0,0,0,0,\(i == 50 ? "jump" : "")\n"
        }
        let script = dir.appendingPathComponent("jump.csv").path
        try csv.write(toFile: script, atomically: true, encoding: .utf8)
        let trace = dir.appendingPathComponent("sim.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(port)", "--script", script, "--trace", trace, "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        _ = try host.stop()
        let report = try #require(try JSONSerialization.jsonObject(with: Data(sim.stdout.utf8)) as? [String: Any])
        #expect(report["frames_sent"] as? Int == 30)  // 3 s at 10 Hz
        #expect(report["gestures"] as? Int == 1)
        #expect(report["replies_received"] as? Int == 1)

        let bad = dir.appendingPathComponent("bad.csv").path
        try "t,ax,ay,az,wx,wy,wz\n0,0,0,0,0,0,0\n0.1,0,zz,0,0,0,0\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let failed = try kinetrace("simulate", "--to", "127.0.0.1:9", "--script", bad)
        #expect(failed.status == 65)
        #expect(failed.stderr == "kinetrace: error: \(bad): line 3: field 3 (ay) is not a finite number: \"zz\"\n")
    }

    @Test func simulatorAgainstNoHostSaysSo() throws {
        // Bind then close a socket to find a port nobody listens on.
        let closedPort = TestSocket().bindLoopback()  // the socket closes as this statement ends
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(closedPort)", "--duration", "1", "--format", "json")
        #expect(!sim.signalled)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(sim.stdout.utf8)) as? [String: Any])
        let errors = report["send_errors"] as? [String: Int] ?? [:]
        #expect((errors["Connection refused"] ?? 0) > 0)
        #expect(report["replies_received"] as? Int == 0)
    }
}
