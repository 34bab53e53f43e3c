import Foundation
import KinetraceTestSupport
import KinetraceWire
import Testing

/// Issue 15, item 2: the arithmetic audit's CLI-visible findings
/// (docs/arithmetic-audit.md). Each case trapped (SIGILL, exit 132) before
/// its fix; now a flag out of range is a usage error (64) naming the flag,
/// and a trace value that is legal on the wire is reported, never a trap.
@Suite struct HostileArithmeticTests {
    static let session = Fixture.bundledTrace
    static let gestures = Fixture.packageRoot.appendingPathComponent("captures/gestures/steady.jsonl").path

    @Test(arguments: [
        (["conform", "--capture", session], ["--reply-deadline-ms", "1e300"]),
        (["conform", "--capture", session], ["--reply-deadline-ms", "3600001"]),
        (["latency", session], ["--sigmas", "1e300"]),
        (["latency", session], ["--base-ms", "1e300"]),
        (["latency", session], ["--base-ms=-1e300"]),
        (["gestures", "eval", gestures, "--detector", "threshold"], ["--window-ms", "0:1e300"]),
        (["gestures", "eval", gestures, "--detector", "threshold"], ["--window-ms", "3600001:0"]),
        (["gestures", "eval", gestures, "--detector", "threshold"], ["--sweep", "threshold=0:1:1e-300"]),
        (["gestures", "eval", gestures, "--detector", "threshold"], ["--sweep", "threshold=-1e308:1e308:1"]),
        (["replay", "--to", "127.0.0.1:9", session], ["--settle-ms", "100000000000000"]),
        (["simulate", "--to", "127.0.0.1:9"], ["--duration", "1e300"]),
        (["simulate", "--to", "127.0.0.1:9", "--duration", "1"], ["--rate", "1e-300"]),
        (["synth", "--out", "OUT", "--persona", "steady", "--duration", "1"], ["--rate", "1e-300"]),
        (["synth", "--out", "OUT", "--duration", "1"], ["--rate", "0.0009"]),
        (["capture", "-i", "lo", "--pcap", "OUT", "--trace", "OUT"], ["--duration", "1e300"]),
        // 1e-300 s is 0 ns, which tripped the controller table's precondition.
        (["host", "--port", "0"], ["--idle-timeout", "1e-300"]),
        (["host", "--port", "0"], ["--idle-timeout", "0.0009"]),
        // The planner refuses it (30 days at most); it was reported as a missing host, exit 69.
        (["gestures", "eval", gestures, "--live", "127.0.0.1:9"], ["--live-speed", "1e-300"]),
        // Fast timing has no duration to bound, so the send count is: it overflowed the replayer's allowance.
        (["replay", "--to", "127.0.0.1:9", "--timing", "fast", session], ["--loop", "9223372036854775807"]),
        (["replay", "--dry-run", "--timing", "fast", session], ["--loop", "4611686018427387904"]),
        (["replay", "--to", "127.0.0.1:9", "--speed", "1e300", session], ["--loop", "4611686018427387904"]),
    ])
    func absurdFlagsAreUsageErrorsNamingTheFlag(_ command: [String], _ flags: [String]) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let arguments = (command + flags).map { $0 == "OUT" ? dir.appendingPathComponent("out").path : $0 }
        let result = try kinetrace(arguments)
        #expect(result.status == 64 && !result.signalled, "\(arguments): \(result.status) \(result.stderr)")
        let flag = String(flags[0].prefix { $0 != "=" })
        #expect(result.stderr.contains(flag), "\(arguments): \(result.stderr)")
        // Usage errors are checked before anything is written.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    /// The largest values the bounds allow still run.
    @Test(arguments: [["latency", session, "--sigmas", "1000", "--base-ms", "3600000"],
                      ["conform", "--capture", session, "--reply-deadline-ms", "3600000"],
                      ["gestures", "eval", gestures, "--detector", "threshold", "--window-ms", "3600000:3600000"]])
    func theBoundsThemselvesAreAccepted(_ arguments: [String]) throws {
        let result = try kinetrace(arguments)
        #expect([0, 1].contains(result.status) && !result.signalled, "\(arguments): \(result.status) \(result.stderr)")
    }

    /// The largest --controllers synth accepts, with and without a persona: both trapped numbering
    /// the 15537th, before any record (so 10 ms is enough).
    @Test(arguments: [[String](), ["--persona", "steady"]])
    func synthNumbersAHundredThousandControllers(_ persona: [String]) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("many.jsonl").path
        let result = try kinetrace(["synth", "--out", path, "--controllers", "100000", "--duration", "0.01"] + persona)
        #expect(result.status == 0 && !result.signalled, "\(result.status) \(result.stderr)")
    }

    /// A rate limit's queue grows by every byte sent: two 65000-byte datagrams looped 20000 times
    /// at 1 bit/s queue for 660 years, which overflowed the planner's Int64 ns (RateLimit.swift).
    @Test func aRateLimitQueueingPastThirtyDaysIsAUsageError() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("big.jsonl").path
        let payload = String(repeating: "00", count: 65_000)
        let lines = [#"{"format":"kinetrace-trace","capture_point":"synthetic","clock":"model","created":"2026-01-01T00:00:00.000Z","minor":1,"profile":"motionlink-v1","tool":"test","version":1}"#]
            + [0, 1].map { #"{"kind":"msg","t_ns":\#(1_767_225_600_000_000_000 + $0 * 100_000_000),"dir":"c2h","src":"10.0.0.10:50000","dst":"10.0.0.1:47110","len":65000,"payload":"\#(payload)"}"# }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try kinetrace(["replay", "--dry-run", path, "--rate", "1bit", "--timing", "fast", "--loop", "20000"])
        #expect(result.status == 64 && !result.signalled, "\(result.status) \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("--rate"), "\(result.stderr)")
        // Inside the bound the same trace plans.
        let fine = try kinetrace(["replay", "--dry-run", path, "--rate", "1mbit", "--timing", "fast", "--loop", "20"])
        #expect(fine.status == 0, "\(fine.stderr)")
    }

    /// A baseline's scores are read from a file: outside [0, 1] the gate would mean nothing.
    @Test(arguments: ["-1e300", "1.5", "1e308"])
    func aBaselineScoreOutsideZeroToOneIsADataError(_ score: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let good = try kinetrace(["gestures", "eval", Self.gestures, "--detector", "threshold", "--format", "json"])
        #expect(good.status == 0)
        let path = dir.appendingPathComponent("base.json").path
        let bad = good.stdout.replacingOccurrences(of: #""recall":[0-9.eE+-]+"#, with: "\"recall\":\(score)", options: .regularExpression)
        #expect(bad != good.stdout)
        try bad.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try kinetrace(["gestures", "eval", Self.gestures, "--detector", "threshold", "--baseline", path])
        #expect(result.status == 65 && !result.signalled, "\(result.status) \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("recall") && result.stderr.contains(path), "\(result.stderr)")
    }

    /// `--delay empirical:FILE` draws from the file's rtt_ns: a round trip past an hour is that
    /// file's data error (65, naming it and rtt_ns), not a usage error without a place.
    @Test func anEmpiricalDelayPastAnHourIsADataErrorNamingTheFile() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("rtt.jsonl").path
        let frame = Hex.encode(MotionFrame(tMs: 1_767_225_600_000, ay: 2).encoded()), ack = Hex.encode(HapticAck(echoTMs: 1_767_225_600_000).encoded())
        let lines = [#"{"format":"kinetrace-trace","capture_point":"controller","clock":"realtime","created":"2026-01-01T00:00:00.000Z","minor":1,"profile":"motionlink-v1","tool":"test","version":1}"#,
                     #"{"kind":"msg","t_ns":1767225600000000000,"dir":"c2h","src":"10.0.0.10:50000","dst":"10.0.0.1:47110","len":36,"payload":"\#(frame)"}"#,
                     #"{"kind":"msg","t_ns":1767225600001000000,"dir":"h2c","src":"10.0.0.1:47110","dst":"10.0.0.10:50000","len":20,"payload":"\#(ack)","rtt_ns":4611686018427387904}"#]
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try kinetrace(["replay", "--dry-run", Self.session, "--delay", "empirical:" + path])
        #expect(result.status == 65 && !result.signalled, "\(result.status) \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(path) && result.stderr.contains("rtt_ns"), "\(result.stderr)")
    }

    /// A CSV script's span becomes Int64 ns: one spanning more than 10^9 s is a data error naming its line.
    @Test(arguments: ["-1e300,0,0,0,0,0,0\n1e300,0,1,0,0,0,0", "0,0,0,0,0,0,0\n1000000001,0,1,0,0,0,0", "-1.7e308,0,0,0,0,0,0\n1.7e308,0,0,0,0,0,0"])
    func aScriptSpanningCenturiesIsADataErrorNamingTheLine(_ rows: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("s.csv").path
        try "t,ax,ay,az,wx,wy,wz\n\(rows)\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try kinetrace(["simulate", "--to", "127.0.0.1:9", "--script", path])
        #expect(result.status == 65 && !result.signalled, "\(result.status) \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("line 3"), "\(result.stderr)")
    }

    /// A MotionLink trace whose controller's t_ms leaps by up to 2^64 − 1 ms:
    /// every frame is valid (ML-FRAME-4 bounds nothing), so every reader must
    /// report it. inspect summed the leap as Int64 ns; the renderers turned it to Int64.
    static func leapingTrace(in dir: URL, stamps: [UInt64], controllers: Int = 1) throws -> String {
        var lines = [#"{"format":"kinetrace-trace","capture_point":"synthetic","clock":"model","created":"2026-01-01T00:00:00.000Z","minor":1,"profile":"motionlink-v1","tool":"test","version":1}"#]
        for (i, tMs) in stamps.enumerated() {
            for c in 0..<controllers {
                let frame = MotionFrame(tMs: tMs, ay: 2).encoded(), ack = HapticAck(echoTMs: tMs).encoded()
                let t = 1_767_225_600_000_000_000 + Int64(i) * 100_000_000 + Int64(c) * 10_000
                lines.append(#"{"kind":"msg","t_ns":\#(t),"dir":"c2h","src":"10.0.\#(c).10:50000","dst":"10.0.0.1:47110","len":36,"payload":"\#(Hex.encode(frame))"}"#)
                lines.append(#"{"kind":"msg","t_ns":\#(t + 1_000),"dir":"h2c","src":"10.0.0.1:47110","dst":"10.0.\#(c).10:50000","len":20,"payload":"\#(Hex.encode(ack))"}"#)
            }
        }
        let path = dir.appendingPathComponent("leap.jsonl").path
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(arguments: [[1, UInt64.max], [1, 1 << 63], [0, UInt64(Int64.max)], [1, 1 << 62], [1_767_225_600_000, 1 << 53, (1 << 63) + 5]] as [[UInt64]])
    func senderClockLeapsAreReportedNotTrapped(_ stamps: [UInt64]) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = try Self.leapingTrace(in: dir, stamps: stamps)
        for command in [["inspect"], ["inspect", "--format", "json"], ["latency"], ["latency", "--format", "json"], ["conform", "--capture"],
                        ["gestures", "eval", "--detector", "threshold-refractory"], ["replay", "--dry-run"]] {
            let result = try kinetrace(command + [path])
            #expect(!result.signalled && [0, 1].contains(result.status), "\(command) \(stamps): \(result.status) \(result.stderr)")
        }
    }

    /// conform's passive cases once added to stamps near 2^64 (RateWindows, PC-RATE-GAPS) and
    /// summed missing frames over controllers; each trapped.
    @Test(arguments: [([UInt64.max, 1, 2], 1), ([1, 2, 3, UInt64.max - 1, UInt64.max], 1), ([1, UInt64.max], 60)] as [([UInt64], Int)])
    func conformSurvivesStampsNearTheTop(_ stamps: [UInt64], _ controllers: Int) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = try Self.leapingTrace(in: dir, stamps: stamps, controllers: controllers)
        let result = try kinetrace(["conform", "--capture", path])
        #expect(!result.signalled && [0, 1].contains(result.status), "\(result.status) \(result.stderr)")
    }
}
