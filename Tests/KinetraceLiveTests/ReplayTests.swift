import Foundation
import KinetracePcap
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace replay` as a real process against real hosts: the reference
/// host over UDP on loopback, the same host and the Python example behind
/// the stdio adapter, and hosts that fail in each way a host can.
@Suite(.serialized) struct ReplayTests {
    static let session = Fixture.bundledTrace
    /// 12 s of the bundled session at 20× speed: 360 frames, well under a second.
    static let fast = ["--end", "12", "--speed", "20"]

    func json(_ text: String) throws -> [String: Any] {
        let line = try #require(text.split(separator: "\n").last)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// Acks as (controller index, echoed t_ms), from a JSON report.
    func triggers(_ report: [String: Any]) throws -> [String] {
        let list = try #require(report["triggers"] as? [[String: Any]])
        return list.map { "\($0["controller"]!) \($0["sender_time_ms"]!) \($0["predicted"]!) \($0["round_trip_ms"] is NSNull ? "missing" : "acked")" }.sorted()
    }

    func acks(_ report: [String: Any]) throws -> [String: Int] {
        try #require(report["replies"] as? [String: Int])
    }

    func withHost<T>(_ body: (UInt16) throws -> T) throws -> T {
        let host = try Background.kinetrace("host", "--port", "0")
        defer { _ = try? host.stop() }
        return try body(try port(in: try host.waitForLine(startingWith: "listening on")))
    }

    @Test func theReferenceHostAcksExactlyWhatTheRulePredicts() throws {
        try withHost { port in
            let result = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "--format", "json", "--strict"] + Self.fast)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try json(result.stdout)
            let a = try acks(report)
            #expect(report["outcome"] as? String == "completed")
            #expect(report["sent"] as? Int == 360)
            #expect(a["predicted"]! > 0)
            #expect(a["matched"] == a["predicted"])
            #expect(a["unexpected"] == 0)
        }
    }

    @Test func impairedFannedOutReplayStillGetsExactlyThePredictedAcks() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let record = dir.appendingPathComponent("replay.jsonl").path
        try withHost { port in
            let result = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "--format", "json", "--strict",
                                        "--controllers", "8", "--seed", "5", "--loss", "gemodel:0.05:0.3:0.7:0.01",
                                        "--corrupt", "0.03", "--duplicate", "0.03", "--reorder", "0.03", "--truncate", "0.02",
                                        "--record", record] + Self.fast)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try json(result.stdout)
            let a = try acks(report)
            let impaired = try #require(report["impaired"] as? [String: Int])
            #expect(impaired["lost"]! > 0 && impaired["corrupted"]! > 0 && impaired["duplicated"]! > 0)
            #expect(a["matched"] == a["predicted"] && a["unexpected"] == 0)
            #expect((report["controllers"] as? [Any])?.count == 8)

            // The record holds every send, every ack and every decision, and says how to reproduce it.
            let reader = try TraceReader(path: record)
            #expect(reader.header.extra["seed"] == .integer(5))
            var c2h = 0, h2c = 0
            var rtts = 0
            var decisions: [String: Int] = [:]
            while let r = try reader.next() {
                switch r {
                case .message(let m) where m.direction == .controllerToHost: c2h += 1
                case .message(let m):
                    h2c += 1
                    if m.rttNs != nil { rtts += 1 }
                case .event(let e) where e.event == "impair":
                    for (member, kind) in [("lost", "lost"), ("duplicates", "duplicated"), ("reordered", "reordered"),
                                           ("flipped_bits", "corrupted"), ("truncated_to", "truncated")] where e.data[member] != nil {
                        decisions[kind, default: 0] += 1
                    }
                default: break
                }
            }
            #expect(c2h == report["sent"] as? Int)
            #expect(h2c == a["matched"])
            #expect(rtts == h2c)
            #expect(decisions == impaired)
        }
    }

    @Test func execAndUDPGiveTheSameResult() throws {
        let options = ["--format", "json", "--controllers", "4", "--seed", "3", "--loss", "10%", "--corrupt", "0.05"] + Self.fast
        let udp = try withHost { port in try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)"] + options) }
        let binary = try Fixture.binary.path
        let exec = try kinetrace(["replay", Self.session, "--exec", "exec '\(binary)' host --stdio"] + options)
        #expect(udp.status == 0, "\(udp.stderr)")
        #expect(exec.status == 0, "\(exec.stderr)")
        let u = try json(udp.stdout), e = try json(exec.stdout)
        #expect(try triggers(u) == triggers(e))
        #expect(!(try triggers(u)).isEmpty)
        #expect(u["sent"] as? Int == e["sent"] as? Int)
        #expect(try acks(u) == acks(e))
        #expect((e["host_exit"] as? String) == "exited with status 0")
    }

    /// The observation channel (SA-OBS-*): with --observe the reference host reports each
    /// decision as an observation record too; the replayer counts them and records each as an event.
    @Test func observationsReachTheRecord() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let record = dir.appendingPathComponent("record.jsonl").path
        let binary = try Fixture.binary.path
        let result = try kinetrace(["replay", Self.session, "--exec", "exec '\(binary)' host --stdio --observe", "--format", "json",
                                    "--record", record, "--strict"] + Self.fast)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try json(result.stdout)
        let matched = try #require(try acks(report)["matched"])
        #expect(matched > 0)
        #expect(report["observations"] as? Int == matched)
        let reader = try TraceReader(path: record)
        var observed: [UInt64] = [], acked: [UInt64] = []
        while let r = try reader.next() {
            switch r {
            case .event(let e) where e.event == "observation":
                #expect(e.data["decision"] == .string("jump"))
                observed.append(UInt64(try #require(e.data["sender_time_ms"]?.integerValue)))
            case .message(let m) where m.direction == .hostToController:
                if case .success(.ack(let ack)) = m.decoded(as: MotionLinkV1()) { acked.append(ack.echoTMs) }
            default: break
            }
        }
        // Each decision observed is the one whose ack came back, and nothing else.
        #expect(observed.sorted() == acked.sorted())
        // Without --observe, a decision with a reply on the wire is not observed again.
        let plain = try kinetrace(["replay", Self.session, "--exec", "exec '\(binary)' host --stdio", "--format", "json"] + Self.fast)
        #expect(try json(plain.stdout)["observations"] as? Int == 0)
    }

    @Test(.enabled(if: Requirement.python3.runs, "needs python3; with CI set this fails instead"))
    func thePythonExampleHostAgreesWithTheReferenceHost() throws {
        try Requirement.python3.check()
        let example = Fixture.packageRoot.appendingPathComponent("examples/stdio-host/jump_host.py").path
        let options = ["--format", "json", "--controllers", "3", "--seed", "4"] + Self.fast
        let binary = try Fixture.binary.path
        let reference = try kinetrace(["replay", Self.session, "--exec", "exec '\(binary)' host --stdio"] + options)
        let python = try kinetrace(["replay", Self.session, "--exec", "exec python3 '\(example)'", "--strict"] + options)
        #expect(python.status == 0, "\(python.stderr)")
        #expect(try triggers(json(python.stdout)) == triggers(json(reference.stdout)))
    }

    /// A host started with no signals blocked (as from a shell) still stops on SIGTERM after
    /// heavy traffic: the signal must not get stuck on one of NIO's or libdispatch's threads.
    /// (With dispatch signal sources that happened 3 times in 3 with the release binary after
    /// 1,000 frames/s; this debug-build test did not catch it, so it guards the path, not that race.)
    @Test(.enabled(if: Requirement.python3.runs, "needs python3 to clear the signal mask; with CI set this fails instead"))
    func aHostStopsOnSIGTERMWhateverItsSignalMask() throws {
        try Requirement.python3.check()
        let unblockAndExec = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])"
        let host = try Background(URL(fileURLWithPath: "/usr/bin/env"),
                                  ["python3", "-c", unblockAndExec, try Fixture.binary.path, "host", "--port", "0"])
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let replay = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "--controllers", "50",
                                    "--timing", "fast", "--end", "20"])
        #expect(replay.status == 0, "\(replay.stderr)")
        let stopped = try host.stop(SIGTERM, timeout: 10)
        #expect(stopped.status == 0)
        // Back to back, the kernel may drop some of the 10,000 datagrams: what matters is that the host
        // read traffic and still stopped. (An exact count would be a verdict on this machine's speed.)
        let received = stopped.stdout.firstMatch(of: /received (\d+) datagrams/).flatMap { Int($0.1) }
        #expect(received.map { $0 > 0 && $0 <= 10_000 } == true, "\(stopped.stdout)")
    }

    // MARK: Failing hosts

    @Test func aClosedPortIsReportedAsUnreachable() throws {
        // A port that was free a moment ago: its socket is closed when the closure returns.
        let closed = { TestSocket().bindLoopback() }()
        let result = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(closed)"] + Self.fast)
        #expect(result.status == 69)
        #expect(result.stderr.contains("kinetrace: error: the host refused: ICMP port unreachable"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func aHostThatDiesMidRunIsReported() throws {
        let result = try kinetrace(["replay", Self.session, "--exec", "head -c 3000 >/dev/null"] + Self.fast)
        #expect(result.status == 69)
        // Whichever the replayer notices first: the failed write or the closed output.
        #expect(result.stderr.contains("the host process stopped reading its input")
                || result.stderr.contains("the host process closed its output and exited with status 0"), "\(result.stderr)")
    }

    @Test func aUDPHostThatDiesMidRunIsReported() throws {
        // The test plays the host: it answers the first frame, waits until the replay's record
        // holds that answer (so the replay has heard from the host), then closes its socket, as
        // a host that died would. No guessed pause decides what the replay has seen.
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let record = dir.appendingPathComponent("record.jsonl").path
        let replay: Background
        do {
            let host = TestSocket()
            let port = host.bindLoopback()
            replay = try Background.kinetrace("replay", Self.session, "--to", "127.0.0.1:\(port)", "--speed", "2",
                                              "--record", record)
            let first = try #require(host.receiveWithSender(within: 30), "no frame from the replay: \(replay.stderr)")
            host.send([UInt8](repeating: 0, count: 20), toPort: first.port)
            try waitUntil("the replay to record the host's answer: \(replay.stderr)") {
                (try? String(contentsOfFile: record, encoding: .utf8))?.contains(#""dir":"h2c""#) == true
            }
        }
        let result = try replay.wait(timeout: 30)
        #expect(result.status == 69, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("the host stopped listening"))
    }

    @Test func aHostThatNeverAnswersEndsTheReplayWithoutHanging() throws {
        let silent = TestSocket()
        let port = silent.bindLoopback()
        let result = try kinetrace(["replay", Self.session, "--to", "127.0.0.1:\(port)", "--settle-ms", "200"] + Self.fast)
        #expect(result.status == 76)
        #expect(result.stderr.contains("the host never answered"))
        withExtendedLifetime(silent) {}
    }

    @Test func theTimeoutBoundsAReplay() throws {
        // The runner kills the replay after 30 s, which would show as a signal, not 75.
        let result = try kinetrace(["replay", Self.session, "--exec", "exec sleep 60", "--timeout", "1.5"], timeout: 30)
        #expect(result.status == 75)
        #expect(!result.signalled)
        #expect(result.stderr.contains("timeout"))
    }

    /// An observation record whose payload is not an observation breaks the adapter (SA-OBS-2).
    @Test func aMalformedObservationIsAProtocolError() throws {
        // One record: length 6, kind 0x03, flags 0, controller 0, payload "{x".
        let result = try kinetrace(["replay", Self.session, "--exec", #"printf '\000\000\000\006\003\000\000\000{x'; exec cat >/dev/null"#]
                                   + Self.fast)
        #expect(result.status == 76, "\(result.stderr)")
        #expect(result.stderr.contains("an observation payload (SA-OBS-2)"), "\(result.stderr)")
    }

    @Test func aHostThatBreaksTheFramingIsAProtocolError() throws {
        let result = try kinetrace(["replay", Self.session, "--exec", "printf 'not records'; exec cat >/dev/null"] + Self.fast)
        #expect(result.status == 76)
        #expect(result.stderr.contains("not stdio records: byte 0"))
    }
}

/// What the replayer says it sent, checked against what an independent
/// libpcap capture (tcpdump) saw on the wire.
@Suite(.serialized, .enabled(if: Requirement.root.runs, "live capture needs root or CAP_NET_RAW; with CI set this fails instead"))
struct ReplayOnTheWireTests {
    init() throws { try Requirement.root.check() }

    @Test func theWireCarriesExactlyTheRecordedSendsInOrder() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = dir.appendingPathComponent("wire.pcap").path
        let record = dir.appendingPathComponent("replay.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0")
        defer { _ = try? host.stop() }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let tcpdump = try Background(try Fixture.tool("tcpdump"),
                                     ["-i", "lo", "-U", "--immediate-mode", "-n", "--time-stamp-precision=nano", "-w", pcap, "udp port \(port)"])
        let ready = Date().addingTimeInterval(20)
        while !tcpdump.stderr.contains("listening on") {
            guard Date() < ready, tcpdump.process.isRunning else { throw FixtureError("tcpdump did not start: \(tcpdump.stderr)") }
            usleep(10_000)
        }
        let replay = try kinetrace(["replay", Fixture.bundledTrace, "--to", "127.0.0.1:\(port)", "--end", "10", "--speed", "5",
                                    "--controllers", "4", "--seed", "12", "--network", "harsh", "--record", record])
        #expect(replay.status == 0, "\(replay.stderr)")

        func messages(_ source: any TraceRecordSource) throws -> [String] {
            var out: [String] = []
            while let r = try source.next() {
                if case .message(let m) = r { out.append("\(m.direction.rawValue) \(m.controller) \(Hex.encode(m.payload))") }
            }
            return out
        }
        let recorded = try messages(try TraceReader(path: record))
        // Wait until tcpdump has written as many packets as were recorded (-U writes each as it comes).
        var captured: [String] = []
        try waitUntil("tcpdump to write \(recorded.count) packets (has \(captured.count)): \(tcpdump.stderr)") {
            captured = (try? messages(try TraceInput.open(path: pcap, port: port))) ?? []
            return captured.count >= recorded.count
        }
        // The test runner's blocked signal mask, inherited by its children, keeps SIGINT from reaching tcpdump.
        _ = try tcpdump.stop(SIGKILL)
        captured = try messages(try TraceInput.open(path: pcap, port: port))
        #expect(recorded.count > 100)
        // Per controller and direction, the same datagrams in the same order.
        for key in Set(recorded.map { $0.split(separator: " ").prefix(2).joined(separator: " ") }) {
            let mine = recorded.filter { $0.hasPrefix(key + " ") }, wire = captured.filter { $0.hasPrefix(key + " ") }
            let firstDifference = zip(mine, wire).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(mine.count == wire.count && firstDifference == nil,
                    "\(key): recorded \(mine.count), captured \(wire.count), first difference at \(firstDifference.map(String.init) ?? "–")")
        }
        #expect(recorded.count == captured.count)
    }
}
