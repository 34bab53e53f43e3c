import Foundation
import KinetraceImpairment
import KinetraceReplay
import KinetraceTestSupport
import Testing
@testable import KinetraceCLI

/// `kinetrace replay` options and plans, without a network (--dry-run).
@Suite struct ReplayCommandTests {
    static let session = Fixture.bundledTrace

    func plan(_ extra: [String]) throws -> [String: Any] {
        let result = try kinetrace(["replay", Self.session, "--dry-run", "--format", "json"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func aSeedGivesTheSameScheduleInEveryProcess() throws {
        let harsh = ["--network", "harsh", "--controllers", "6", "--loop", "2"]
        let a = try plan(harsh + ["--seed", "99"])
        let b = try plan(harsh + ["--seed", "99"])
        let c = try plan(harsh + ["--seed", "100"])
        #expect(a["schedule_digest"] as? String == b["schedule_digest"] as? String)
        #expect(a["schedule_digest"] as? String != c["schedule_digest"] as? String)
        #expect((a["impaired"] as? [String: Int])?["lost"] ?? 0 > 0)
    }

    @Test func flagsOverrideTheNetwork() throws {
        let network = try plan(["--network", "crowded-event"])
        #expect(network["controllers"] as? Int == 21)
        let overridden = try plan(["--network", "crowded-event", "--controllers", "2", "--loss", "0"])
        #expect(overridden["controllers"] as? Int == 2)
        #expect((overridden["impaired"] as? [String: Int])?["lost"] == nil)
    }

    /// `--profile`, the old name of `--network`, still works for one minor version, with a warning.
    @Test func theOldNetworkFlagIsAHiddenAlias() throws {
        let old = try kinetrace("replay", Self.session, "--dry-run", "--format", "json", "--profile", "harsh")
        let new = try kinetrace("replay", Self.session, "--dry-run", "--format", "json", "--network", "harsh")
        #expect(old.status == 0 && new.status == 0)
        #expect(old.stdout == new.stdout)
        #expect(old.stderr == "kinetrace: warning: --profile is now --network; the old name goes away in the next minor version\n")
        #expect(new.stderr.isEmpty)
        let both = try kinetrace("replay", Self.session, "--dry-run", "--profile", "harsh", "--network", "harsh")
        #expect(both.status == 64)
        let help = try kinetrace("replay", "--help")
        #expect(help.stdout.contains("--network") && !help.stdout.contains("--profile"))
    }

    @Test func badNetworksAndOptionsGetOneLineErrors() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let bad = dir.appendingPathComponent("bad.json")
        try #"{"kinetrace_network": 1, "name": "b", "description": "d", "provenance": "p","#.appending("\n  \"los\": {}}").write(to: bad, atomically: true, encoding: .utf8)
        let result = try kinetrace("replay", Self.session, "--dry-run", "--network", bad.path)
        #expect(result.status == 65)
        #expect(result.stderr == "kinetrace: error: \(bad.path):2: los: not a member of the network (expected one of: basis, controllers, corrupt, corrupt_bits, delay, description, duplicate, kinetrace_network, loss, name, preserve_order, provenance, rate, reorder, stagger_ms, truncate)\n")

        let missing = try kinetrace("replay", Self.session, "--dry-run", "--network", "no-such-network")
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("not a bundled network (crowded-event, harsh, lab-5ghz, perfect)"))

        let usage = try kinetrace("replay", Self.session, "--dry-run", "--loss", "150%")
        #expect(usage.status == 64)
        let neither = try kinetrace("replay", Self.session)
        #expect(neither.status == 64)
        #expect(neither.stderr.contains("Give exactly one of --to HOST:PORT and --exec COMMAND."))
        let fastDelay = try kinetrace("replay", Self.session, "--dry-run", "--timing", "fast", "--delay", "5")
        #expect(fastDelay.status == 64)

        let noInput = try kinetrace("replay", dir.appendingPathComponent("nope.jsonl").path, "--dry-run")
        #expect(noInput.status == 66)
    }

    /// The binary carries the networks, so it works away from the source tree; they must match the files.
    @Test func embeddedNetworksMatchTheFiles() throws {
        let directory = Fixture.packageRoot.appendingPathComponent("specs/networks")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }
        #expect(Set(files.map { String($0.dropLast(5)) }) == Set(BundledNetworks.json.keys))
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            #expect(BundledNetworks.json[String(file.dropLast(5))] == text, "\(file) changed: run scripts/embed-networks")
        }
    }

    /// The bundled loopback capture was written as a pcap and a trace at once: both plan the same replay.
    @Test func aPcapAndItsTraceTwinPlanTheSameReplay() throws {
        let root = Fixture.packageRoot.appendingPathComponent("captures")
        func digest(_ file: String) throws -> [String: Any] {
            let result = try kinetrace("replay", root.appendingPathComponent(file).path, "--port", "41448", "--dry-run",
                                       "--format", "json", "--network", "harsh")
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        }
        let pcap = try digest("loopback-session.pcap"), trace = try digest("loopback-session.jsonl")
        #expect(pcap["sends"] as? Int ?? 0 > 1000)
        #expect(pcap["schedule_digest"] as? String == trace["schedule_digest"] as? String)
    }

    /// `--delay empirical:TRACE` draws from the round trips a trace recorded (halved).
    @Test func empiricalDelaysComeFromARecordedTrace() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let record = dir.appendingPathComponent("r.jsonl").path
        let binary = try Fixture.binary.path
        let replay = try kinetrace(["replay", Self.session, "--exec", "exec '\(binary)' host --stdio", "--end", "20",
                                    "--speed", "20", "--record", record])
        #expect(replay.status == 0, "\(replay.stderr)")
        let planned = try plan(["--delay", "empirical:\(record)"])
        #expect((planned["impaired"] as? [String: Int])?["delayed"] ?? 0 > 1000)
        let none = try kinetrace("replay", Self.session, "--dry-run", "--delay", "empirical:\(Self.session)")
        #expect(none.status == 64)
        #expect(none.stderr.contains("holds no measured round trips"))
    }
}
