import Foundation
import KinetraceImpairment
import KinetraceReplay
import KinetraceTestSupport
import Testing

/// Issue 28: `kinetrace network fit` on a real recording: a host's trace of a replay through
/// crowded-event gives a network that reads back, says it is measured, and holds the loss the
/// replay applied; bad inputs get one line and exit 65, never a network built from nothing.
@Suite struct NetworkFitCommandTests {
    @Test func aHostsRecordingOfAReplayFitsAMeasuredNetwork() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("host.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0", "--trace", trace)
        defer { _ = try? host.stop(SIGKILL) }
        let port = try #require(try host.waitForLine(startingWith: "listening on ").split(separator: ":").last.map(String.init))
        let replay = try kinetrace("replay", Fixture.bundledTrace, "--to", "127.0.0.1:\(port)", "--network", "crowded-event",
                                   "--timestamps", "wallclock", "--duration", "8")
        #expect(replay.status == 0, "\(replay.stderr)")
        let stopped = try host.stop()
        #expect(stopped.status == 0 || stopped.status == 130, "\(stopped.stderr)")

        let output = dir.appendingPathComponent("event.json").path
        let fit = try kinetrace("network", "fit", trace, "-o", output, "--format", "json")
        #expect(fit.status == 0, "\(fit.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(fit.stdout.utf8)) as? [String: Any])
        #expect(report["controllers"] as? Int == 21)
        #expect(report["clocks_comparable"] as? Bool == true)
        let loss = try #require(report["loss"] as? [String: Any])
        let interval = try #require(loss["rate_interval"] as? [Double])
        // crowded-event's stationary loss rate is 3.95 %.
        #expect(interval[0] <= 0.0395 && 0.0395 <= interval[1], "\(interval)")

        let network = try ReplayNetwork.parse(Array(try Data(contentsOf: URL(fileURLWithPath: output))), source: output)
        #expect(network.name == "event" && network.basis == "measured" && network.controllers == 21)
        #expect(network.provenance.hasPrefix("Measured by kinetrace network fit"))
        #expect(network.provenance.contains("sha256:"))
        // The delay the replay emulated: crowded-event's median is 77.52 ms (loopback adds a fraction of one).
        let median = try #require(network.impairments.delay.quantileMs(0.5))
        #expect(median > 73 && median < 84, "median \(median) ms")

        let schema = Fixture.packageRoot.appendingPathComponent("specs/network-v1.schema.json").path
        let check = "import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])), cls=jsonschema.Draft202012Validator); print('valid')"
        let valid = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", check, schema, output])
        #expect(valid.status == 0 && valid.stdout == "valid\n", "\(valid.stderr)")
    }

    /// A host's recording of a replay through `network`, `seconds` long.
    static func record(through network: String, seed: Int, seconds: Int, into trace: String) throws {
        let host = try Background.kinetrace("host", "--port", "0", "--trace", trace)
        defer { _ = try? host.stop(SIGKILL) }
        let port = try #require(try host.waitForLine(startingWith: "listening on ").split(separator: ":").last.map(String.init))
        let replay = try kinetrace("replay", Fixture.bundledTrace, "--to", "127.0.0.1:\(port)", "--network", network,
                                   "--timestamps", "wallclock", "--duration", String(seconds), "--seed", String(seed))
        #expect(replay.status == 0, "\(replay.stderr)")
        _ = try host.stop()
    }

    /// The researcher's loop with real processes: an "event" recorded through crowded-event is
    /// fitted; a lab replay through the fitted network is recorded with another seed; `network
    /// compare` finds them alike (exit 0) and draws both CDFs, and finds a lab-5ghz recording
    /// different (exit 1).
    @Test func fitReplayAndCompareCloseTheLoop() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let event = dir.appendingPathComponent("event.jsonl").path, lab = dir.appendingPathComponent("lab.jsonl").path
        let other = dir.appendingPathComponent("other.jsonl").path, fitted = dir.appendingPathComponent("fitted.json").path
        try Self.record(through: "crowded-event", seed: 1, seconds: 6, into: event)
        let fit = try kinetrace("network", "fit", event, "-o", fitted)
        #expect(fit.status == 0, "\(fit.stderr)")
        try Self.record(through: fitted, seed: 2, seconds: 6, into: lab)
        try Self.record(through: "lab-5ghz", seed: 3, seconds: 6, into: other)

        let plot = dir.appendingPathComponent("compare.svg").path
        let same = try kinetrace("network", "compare", event, lab, "--plot", plot, "--format", "json")
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(same.stdout.utf8)) as? [String: Any])
        #expect(report["agrees"] as? Bool == true)
        let delay = try #require(report["delay"] as? [String: Any])
        #expect((delay["ks_distance"] as? Double ?? 1) <= 0.05 || (delay["p_value"] as? Double ?? 0) > 0.05, "\(delay)")
        let svg = try String(contentsOfFile: plot, encoding: .utf8)
        #expect(svg.contains("A: event.jsonl") && svg.contains("B: lab.jsonl"), "both recordings are in the plot's legend")
        let wellFormed = try run(URL(fileURLWithPath: "/usr/bin/env"), ["xmllint", "--noout", plot])
        #expect(wellFormed.status == 0, "\(wellFormed.stderr)")

        let different = try kinetrace("network", "compare", event, other)
        #expect(different.status == 1, "\(different.stdout)")
        #expect(different.stdout.contains("verdict   the two recordings' conditions DIFFER"))

        // --lab-baseline: a lab whose own path adds lab-5ghz's ~70 ms. Its median is taken out of
        // the delay written, and said so; the measured delays are untouched.
        let netted = dir.appendingPathComponent("netted.json").path
        let lab5 = try kinetrace("network", "fit", event, "-o", netted, "--lab-baseline", other, "--format", "json")
        #expect(lab5.status == 0, "\(lab5.stderr)")
        let labReport = try #require(try JSONSerialization.jsonObject(with: Data(lab5.stdout.utf8)) as? [String: Any])
        let labPath = try #require(labReport["lab_path_ms"] as? Double)
        #expect(labPath > 65 && labPath < 78, "lab path \(labPath) ms")
        let plain = try ReplayNetwork.parse(Array(try Data(contentsOf: URL(fileURLWithPath: fitted))), source: fitted)
        let less = try ReplayNetwork.parse(Array(try Data(contentsOf: URL(fileURLWithPath: netted))), source: netted)
        let before = try #require(plain.impairments.delay.quantileMs(0.5)), after = try #require(less.impairments.delay.quantileMs(0.5))
        #expect(abs(before - labPath - after) < 1, "median \(before) ms less \(labPath) ms is not \(after) ms")
        #expect(less.provenance.contains("less the lab's own path"))
    }

    @Test func badInputsAreOneLineWithTheirOwnStatus() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("n.json").path
        // No sender clock: KeepCalm messages carry none.
        let keepCalm = Fixture.packageRoot.appendingPathComponent("captures/keepcalm-session.jsonl").path
        let noClock = try kinetrace("network", "fit", keepCalm, "-o", out)
        #expect(noClock.status == 64 && noClock.stderr.contains("no sender clock") && noClock.stderr.contains("--join SENDER HOST, or --arrivals"),
                "\(noClock.stderr)")
        // Clocks days apart (the bundled loopback capture was recorded on another day) without --base-ms.
        let record = dir.appendingPathComponent("r.jsonl").path
        let replay = try kinetrace(["replay", Fixture.bundledTrace, "--exec", "exec '\(try Fixture.binary.path)' host --stdio",
                                    "--duration", "2", "--record", record])
        #expect(replay.status == 0, "\(replay.stderr)")
        let noBase = try kinetrace("network", "fit", record, "-o", out)
        #expect(noBase.status == 65 && noBase.stderr.contains("give --base-ms"), "\(noBase.stderr)")
        // Too few samples.
        let short = dir.appendingPathComponent("short.jsonl").path
        let lines = try String(contentsOfFile: Fixture.bundledTrace, encoding: .utf8).split(separator: "\n").prefix(30)
        try (lines.joined(separator: "\n") + "\n").write(toFile: short, atomically: true, encoding: .utf8)
        let few = try kinetrace("network", "fit", short, "-o", out)
        #expect(few.status == 65 && few.stderr.contains("a delay needs at least 50"), "\(few.stderr)")
        for result in [noClock, noBase, few] {
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.hasPrefix("kinetrace: error: "))
        }
        #expect(!FileManager.default.fileExists(atPath: out), "no network was written")
        // A name that cannot be a network's.
        let badName = try kinetrace("network", "fit", Fixture.bundledTrace, "-o", dir.appendingPathComponent("a b.json").path)
        #expect(badName.status == 64)
    }

    /// The sender's and the host's recordings of one real session (a replay to a host on this
    /// machine, so one clock): joined, every sent message is found (the loopback loses none), the
    /// delay is the true one-way delay, and a join of two different sessions is refused.
    @Test func aJoinedRecordingOfOneSessionFits() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path, sent = dir.appendingPathComponent("sent.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0", "--trace", hostTrace)
        defer { _ = try? host.stop(SIGKILL) }
        let port = try #require(try host.waitForLine(startingWith: "listening on ").split(separator: ":").last.map(String.init))
        let replay = try kinetrace("replay", Fixture.bundledTrace, "--to", "127.0.0.1:\(port)", "--duration", "6", "--record", sent)
        #expect(replay.status == 0, "\(replay.stderr)")
        _ = try host.stop()
        let out = dir.appendingPathComponent("joined.json").path
        let fit = try kinetrace("network", "fit", "--join", sent, hostTrace, "-o", out, "--format", "json")
        #expect(fit.status == 0, "\(fit.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(fit.stdout.utf8)) as? [String: Any])
        #expect(report["evidence"] as? String == "joined" && report["clocks_comparable"] as? Bool == true)
        let loss = try #require(report["loss"] as? [String: Any])
        #expect(loss["lost"] as? Int == 0 && (loss["messages"] as? Int ?? 0) >= 100, "\(loss)")
        #expect(report["unmatched"] as? Int == 0)
        let network = try ReplayNetwork.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out))), source: out)
        #expect(network.provenance.contains("joined by message bytes"))
        // Loopback: the true one-way delay is well under a few ms. The fit picks the family that fits
        // best: a table or samples have a median, a normal or the like only its mean.
        let centre = try #require(network.impairments.delay.quantileMs(0.5) ?? network.impairments.delay.meanMs)
        #expect(centre >= 0 && centre < 5, "centre \(centre) ms of \(network.impairments.delay)")

        // Two different sessions: nothing in common.
        let other = Fixture.packageRoot.appendingPathComponent("captures/loopback-session.jsonl").path
        let nothing = try kinetrace("network", "fit", "--join", sent, other, "-o", out + ".2")
        #expect(nothing.status == 65 && nothing.stderr.contains("the join matches nothing"), "\(nothing.stderr)")
        #expect(nothing.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: out + ".2"))
    }

    /// Unstamped arrivals: refused without --base-ms (the delay is not in them), fitted with it,
    /// and the report says what such a recording cannot show.
    @Test func unstampedArrivalsFitWithABase() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let keepCalm = Fixture.packageRoot.appendingPathComponent("captures/keepcalm-session.jsonl").path
        let out = dir.appendingPathComponent("kc.json").path
        let noBase = try kinetrace("network", "fit", "--arrivals", keepCalm, "-o", out)
        #expect(noBase.status == 65 && noBase.stderr.contains("jitter, not its delay"), "\(noBase.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let fit = try kinetrace("network", "fit", "--arrivals", keepCalm, "-o", out, "--base-ms", "5", "--format", "json")
        #expect(fit.status == 0, "\(fit.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(fit.stdout.utf8)) as? [String: Any])
        #expect(report["evidence"] as? String == "arrivals")
        #expect(report["duplicates"] is NSNull && report["reordered"] is NSNull, "not measurable, not 0")
        let evidence = try #require(report["minimum_evidence"] as? [[String: Any]])
        #expect(evidence.contains { ($0["figure"] as? String)?.hasPrefix("duplicates") == true && $0["met"] as? Bool == false })
        let network = try ReplayNetwork.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out))), source: out)
        #expect(network.provenance.contains("not measurable"))
        #expect(try #require(network.impairments.delay.quantileMs(0)) >= 5 - 1e-9)
    }

    @Test func segmentAndInputFlagsAreChecked() throws {
        let out = "/nonexistent/n.json"
        for arguments in [["--segment", "5s"], ["--segment", "soon"], ["--segment", "nan"], ["--segment", "-60"],
                          ["--join"], ["--join", "--arrivals", Fixture.bundledTrace]] {
            let result = try kinetrace(["network", "fit", Fixture.bundledTrace, "-o", out] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
        }
    }
}
