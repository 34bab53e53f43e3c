import Foundation
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
        let harsh = ["--profile", "harsh", "--controllers", "6", "--loop", "2"]
        let a = try plan(harsh + ["--seed", "99"])
        let b = try plan(harsh + ["--seed", "99"])
        let c = try plan(harsh + ["--seed", "100"])
        #expect(a["schedule_digest"] as? String == b["schedule_digest"] as? String)
        #expect(a["schedule_digest"] as? String != c["schedule_digest"] as? String)
        #expect((a["impaired"] as? [String: Int])?["lost"] ?? 0 > 0)
    }

    @Test func flagsOverrideTheProfile() throws {
        let profile = try plan(["--profile", "crowded-event"])
        #expect(profile["controllers"] as? Int == 21)
        let overridden = try plan(["--profile", "crowded-event", "--controllers", "2", "--loss", "0"])
        #expect(overridden["controllers"] as? Int == 2)
        #expect((overridden["impaired"] as? [String: Int])?["lost"] == nil)
    }

    @Test func badProfilesAndOptionsGetOneLineErrors() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let bad = dir.appendingPathComponent("bad.json")
        try #"{"kinetrace_profile": 1, "name": "b", "description": "d", "provenance": "p","#.appending("\n  \"los\": {}}").write(to: bad, atomically: true, encoding: .utf8)
        let result = try kinetrace("replay", Self.session, "--dry-run", "--profile", bad.path)
        #expect(result.status == 65)
        #expect(result.stderr == "kinetrace: error: \(bad.path):2: los: not a member of the profile (expected one of: controllers, corrupt, corrupt_bits, delay, description, duplicate, kinetrace_profile, loss, name, preserve_order, provenance, rate, reorder, stagger_ms, truncate)\n")

        let missing = try kinetrace("replay", Self.session, "--dry-run", "--profile", "no-such-profile")
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("not a bundled profile (crowded-event, harsh, lab-5ghz, perfect)"))

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

    /// The binary carries the profiles, so it works away from the source tree; they must match the files.
    @Test func embeddedProfilesMatchTheFiles() throws {
        let directory = Fixture.packageRoot.appendingPathComponent("specs/profiles")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }
        #expect(Set(files.map { String($0.dropLast(5)) }) == Set(BundledProfiles.json.keys))
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            #expect(BundledProfiles.json[String(file.dropLast(5))] == text, "\(file) changed: run scripts/embed-profiles")
        }
    }

    /// The bundled loopback capture was written as a pcap and a trace at once: both plan the same replay.
    @Test func aPcapAndItsTraceTwinPlanTheSameReplay() throws {
        let root = Fixture.packageRoot.appendingPathComponent("captures")
        func digest(_ file: String) throws -> [String: Any] {
            let result = try kinetrace("replay", root.appendingPathComponent(file).path, "--port", "41448", "--dry-run",
                                       "--format", "json", "--profile", "harsh")
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
