import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace capture` on loopback with real traffic, read back by
/// tcpdump, tshark and the project's own readers.
@Suite(.serialized, .enabled(if: Requirement.root.runs, "live capture needs root or CAP_NET_RAW; with CI set this fails instead"))
struct CaptureTests {
    init() throws { try Requirement.root.check() }

    func counts(_ path: String) throws -> (c2h: Int, h2c: Int) {
        let reader = try TraceReader(path: path)
        var c2h = 0, h2c = 0
        while let record = try reader.next() {
            if case .message(let m) = record { if m.direction == .controllerToHost { c2h += 1 } else { h2c += 1 } }
        }
        return (c2h, h2c)
    }

    func tcpdumpLines(_ pcap: String) throws -> [String] {
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["tcpdump", "-nn", "-r", pcap, "--time-stamp-precision=nano"])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test func capturesHostAndSimulatorTrafficBothWays() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pcap = dir.appendingPathComponent("session.pcap").path
        let trace = dir.appendingPathComponent("session.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background.kinetrace("capture", "--interface", "lo", "--port", "\(port)", "--pcap", pcap,
                                               "--trace", trace, "--format", "json")
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(port)", "--controllers", "3", "--duration", "4",
                                "--script", "random", "--seed", "8", "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        let result = try capture.stop(SIGINT)
        _ = try host.stop()
        #expect(result.status == 0, "\(result.stderr)")

        let simReport = try #require(try JSONSerialization.jsonObject(with: Data(sim.stdout.utf8)) as? [String: Any])
        let frames = try #require(simReport["frames_sent"] as? Int)
        let acks = try #require(simReport["replies_received"] as? Int)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect(report["packets"] as? Int == frames + acks)
        #expect(report["kernel_dropped"] as? Int == 0)
        let (c2h, h2c) = try counts(trace)
        #expect(c2h == frames)
        #expect(h2c == acks)

        // tcpdump, an independent reader, sees the same packets with nanosecond stamps.
        let lines = try tcpdumpLines(pcap)
        #expect(lines.count == frames + acks)
        #expect(lines.allSatisfy { $0.range(of: #"^\d\d:\d\d:\d\d\.\d{9} IP 127\.0\.0\.1\.\d+ > 127\.0\.0\.1\.\d+: UDP, length (36|20)$"#, options: .regularExpression) != nil })
        // And the pcap read back through the project's pcap reader gives the trace's records.
        let fromPcap = try TraceInput.open(path: pcap, port: port)
        let fromTrace = try TraceReader(path: trace)
        while let a = try fromTrace.next() {
            #expect(try fromPcap.next() == a)
        }
        #expect(try fromPcap.next() == nil)
    }

    @Test func capturesIPv6BothWays() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("v6.jsonl").path
        let host = try Background.kinetrace("host", "--bind", "::1", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background.kinetrace("capture", "-i", "lo", "--port", "\(port)",
                                               "--pcap", dir.appendingPathComponent("v6.pcap").path, "--trace", trace)
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let sim = try kinetrace("simulate", "--to", "[::1]:\(port)", "--controllers", "2", "--duration", "4",
                                "--script", "jumps", "--seed", "5", "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        #expect(try capture.stop().status == 0)
        _ = try host.stop()
        let report = try #require(try JSONSerialization.jsonObject(with: Data(sim.stdout.utf8)) as? [String: Any])
        let reader = try TraceReader(path: trace)
        var c2h = 0, h2c = 0
        while let record = try reader.next() {
            guard case .message(let m) = record else { continue }
            #expect(m.source.host == "::1" && m.destination.host == "::1")
            if m.direction == .controllerToHost { c2h += 1 } else { h2c += 1 }
        }
        #expect(c2h == report["frames_sent"] as? Int)
        #expect(h2c == report["replies_received"] as? Int)
        #expect(h2c > 0)
    }

    @Test func stopLosesNothingSentBeforeIt() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pcap = dir.appendingPathComponent("burst.pcap").path
        let trace = dir.appendingPathComponent("burst.jsonl").path
        let sink = TestSocket()
        let port = sink.bindLoopback()
        let capture = try Background.kinetrace("capture", "-i", "lo", "--port", "\(port)", "--pcap", pcap, "--trace", trace)
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let sender = TestSocket()
        let burst = 3000
        for i in 0..<burst { sender.send(MotionFrame(tMs: UInt64(i + 1), ay: 0.1).encoded(), toPort: port) }
        // Stop the moment the last send returns: the drain must still deliver every packet.
        let result = try capture.stop(SIGTERM)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("captured \(burst) packets"))
        #expect(try counts(trace).c2h == burst)
        #expect(try tcpdumpLines(pcap).count == burst)
    }

    @Test func countStopsAfterThatManyPackets() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let trace = dir.appendingPathComponent("c.jsonl").path
        let capture = try Background.kinetrace("capture", "-i", "lo", "--port", "\(port)", "--count", "25",
                                               "--pcap", dir.appendingPathComponent("c.pcap").path, "--trace", trace)
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let sender = TestSocket()
        for i in 0..<60 { sender.send(MotionFrame(tMs: UInt64(i + 1)).encoded(), toPort: port) }
        let result = try capture.wait(timeout: 20)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try counts(trace).c2h == 25)
        _ = try host.stop()
    }

    /// Issue 15, finding 6: once the handle and files are open, capture runs as -Z's user with no capabilities,
    /// or, without -Z, as root with no capabilities, and still captures everything.
    @Test(arguments: [("nobody", "65534"), (nil, "0")] as [(String?, String)])
    func capturePutsDownItsPrivilegesAndStillCaptures(_ user: String?, _ uid: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let trace = dir.appendingPathComponent("z.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        var arguments = ["capture", "-i", "lo", "--port", "\(port)", "--pcap", dir.appendingPathComponent("z.pcap").path, "--trace", trace]
        if let user { arguments += ["-Z", user] }
        let capture = try Background(try Fixture.binary, arguments)
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let status = try String(contentsOfFile: "/proc/\(capture.process.processIdentifier)/status", encoding: .utf8)
        func field(_ name: String) -> [Substring] {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }?.dropFirst(name.count + 1).split(whereSeparator: \.isWhitespace) ?? []
        }
        #expect(field("Uid") == Array(repeating: Substring(uid), count: 4), "\(status)")
        #expect(field("CapEff") == ["0000000000000000"] && field("CapPrm") == ["0000000000000000"], "\(status)")
        #expect(capture.stderr.contains("no capabilities"), "\(capture.stderr)")
        let sender = TestSocket()
        for i in 0..<20 { sender.send(MotionFrame(tMs: UInt64(i + 1)).encoded(), toPort: port) }
        let waitUntil = Date().addingTimeInterval(20)
        while (try? counts(trace).c2h) ?? 0 < 20, Date() < waitUntil { usleep(100_000) }
        let result = try capture.stop()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try counts(trace).c2h == 20)
        _ = try host.stop()
    }

    @Test func anUnknownUserIsAUsageErrorAndNothingIsCaptured() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try kinetrace("capture", "-i", "lo", "--port", "9", "-Z", "no-such-user-kt", "--pcap",
                                   dir.appendingPathComponent("u.pcap").path, "--trace", dir.appendingPathComponent("u.jsonl").path)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr == "kinetrace: error: -Z no-such-user-kt: no such user. (see 'kinetrace capture --help')\n", "\(result.stderr)")
        #expect(!result.stdout.contains("capturing on"))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("u.pcap").path), "nothing is opened")
    }

    @Test func killedCaptureLeavesReadableFiles() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pcap = dir.appendingPathComponent("k.pcap").path, trace = dir.appendingPathComponent("k.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background.kinetrace("capture", "-i", "lo", "--port", "\(port)", "--pcap", pcap, "--trace", trace)
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(port)", "--controllers", "5", "--duration", "2")
        #expect(sim.status == 0)
        // The capture flushes every 250 ms, but either file may also flush on its own when its buffer fills: wait
        // (up to 20 s on a loaded machine) until both hold every frame, then kill it.
        let waitUntil = Date().addingTimeInterval(20)
        func bothFlushed() -> Bool {
            guard let c2h = try? counts(trace).c2h, c2h >= 100, let lines = try? tcpdumpLines(pcap) else { return false }
            return lines.count >= c2h
        }
        while !bothFlushed(), Date() < waitUntil { usleep(100_000) }
        let result = try capture.stop(SIGKILL)
        #expect(result.signalled)
        _ = try host.stop()
        let (c2h, _) = try counts(trace)
        #expect(c2h >= 90)  // 5 × 2 s × 10 Hz, all flushed before the kill
        #expect(try tcpdumpLines(pcap).count >= c2h)
    }

    @Test func clearErrorsForBadInterfaceFilterAndPermissions() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = [dir.appendingPathComponent("x.pcap").path, dir.appendingPathComponent("x.jsonl").path]
        let unknown = try kinetrace("capture", "-i", "nosuchif0", "--pcap", out[0], "--trace", out[1], "--count", "1")
        #expect(unknown.status == 64)
        #expect(unknown.stderr == "kinetrace: error: no such interface: nosuchif0\n")
        let badFilter = try kinetrace("capture", "-i", "lo", "--filter", "udp port port port", "--pcap", out[0], "--trace", out[1], "--count", "1")
        #expect(badFilter.status == 64)
        #expect(badFilter.stderr.hasPrefix("kinetrace: error: bad filter \"udp port port port\": "))
        #expect(badFilter.stderr.filter { $0 == "\n" }.count == 1)
        let cannotCreate = try kinetrace("capture", "-i", "lo", "--pcap", "/nonexistent-dir/x.pcap", "--trace", out[1], "--count", "1")
        #expect(cannotCreate.status == 73)
        #expect(cannotCreate.stderr.hasPrefix("kinetrace: error: /nonexistent-dir/x.pcap: cannot create"))
        let traceCannotCreate = try kinetrace("capture", "-i", "lo", "--pcap", out[0], "--trace", "/nonexistent-dir/x.jsonl", "--count", "1")
        #expect(traceCannotCreate.status == 73)
        #expect(!FileManager.default.fileExists(atPath: out[0]))  // no empty pcap left behind
        // Without privileges: run as nobody.
        let setpriv = URL(fileURLWithPath: "/usr/bin/setpriv")
        if FileManager.default.isExecutableFile(atPath: setpriv.path) {
            chmod(dir.path, 0o777)
            let denied = try run(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", try Fixture.binary.path,
                                           "capture", "-i", "lo", "--pcap", out[0], "--trace", out[1], "--count", "1"])
            #expect(denied.status == 77, "\(denied.stderr)")
            #expect(denied.stderr == "kinetrace: error: cannot capture on lo: permission denied (live capture needs root or CAP_NET_RAW)\n")
        }
    }
}
