import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace gestures eval` as a CI job runs it: real processes, real files, real hosts.
@Suite struct GesturesCommandTests {
    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    static func summary(_ object: [String: Any]) throws -> [String: Any] { try #require(object["summary"] as? [String: Any]) }

    /// One pass over the samples gives, for every swept value, what a run at that value alone gives.
    @Test func sweepAgreesWithSeparateRuns() throws {
        let sweep = try kinetrace("gestures", "eval", "--detector", "threshold-refractory", "--sweep", "threshold=0.4:1.2:0.2",
                                  "--format", "json", Fixture.bundledTrace)
        #expect(sweep.status == 0, "\(sweep.stderr)")
        let points = try #require((try Self.json(sweep.stdout)["sweep"] as? [String: Any])?["points"] as? [[String: Any]])
        #expect(points.map { $0["value"] as? Double } == [0.4, 0.6, 0.8, 1.0, 1.2])
        for point in points {
            let value = point["value"] as! Double
            let single = try kinetrace("gestures", "eval", "--detector", "threshold-refractory", "--param", "threshold=\(value)",
                                       "--format", "json", Fixture.bundledTrace)
            let s = try Self.summary(try Self.json(single.stdout))
            for key in ["tp", "fp", "fn"] { #expect(point[key] as? Int == s[key] as? Int, "\(key) at \(value)") }
        }
        // The bundled session's jumps are clean: recall falls as τ rises past the weaker ones, precision stays 1.
        let recalls = points.compactMap { $0["recall"] as? Double }
        #expect(recalls == recalls.sorted(by: >) && recalls.first! > recalls.last!)
    }

    /// The CI gate: a stored result, a changed threshold, a non-zero exit when F1 or recall drop.
    @Test func baselineGatesAThresholdChange() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let base = dir.appendingPathComponent("base.json").path
        let stored = try kinetrace("gestures", "eval", "--detector", "threshold", "--format", "json", "--out", base, Fixture.bundledTrace)
        #expect(stored.status == 0, "\(stored.stderr)")

        let same = try kinetrace("gestures", "eval", "--detector", "threshold", "--baseline", base, Fixture.bundledTrace)
        #expect(same.status == 0, "\(same.stderr)")
        #expect(same.stdout.contains("f1 0.970 (baseline 0.970 − margin 0.020): ok"), "\(same.stdout)")

        let worse = try kinetrace("gestures", "eval", "--detector", "threshold", "--param", "threshold=1.0", "--baseline", base,
                                  "--format", "junit", Fixture.bundledTrace)
        #expect(worse.status == 1)
        #expect(worse.stderr.hasPrefix("kinetrace: error: f1 0.709 is below 0.970 − 0.020; recall 0.549 is below 0.941 − 0.020") && worse.stderr.split(separator: "\n").count == 1, "\(worse.stderr)")
        #expect(worse.stdout.contains(#"<failure type="baseline-regression" message="f1 0.709 below 0.950">baseline 0.970 − margin 0.020</failure>"#)
                && worse.stdout.contains(#"<failure type="baseline-regression" message="recall"#), "\(worse.stdout)")

        // The report says which traces the drop comes from.
        let perTrace = try kinetrace("gestures", "eval", "--detector", "threshold", "--param", "threshold=1.0", "--baseline", base,
                                     "--format", "json", Fixture.bundledTrace)
        #expect(perTrace.status == 1)
        let regressions = try #require(try Self.json(perTrace.stdout)["trace_regressions"] as? [[String: Any]])
        #expect(regressions.count == 1 && regressions[0]["source"] as? String == Fixture.bundledTrace)
        #expect((regressions[0]["baseline_f1"] as? Double ?? 0) > 0.96 && (regressions[0]["f1"] as? Double ?? 1) < 0.72)

        // Within the margin passes; a wider margin lets the same drop through.
        let lenient = try kinetrace("gestures", "eval", "--detector", "threshold", "--param", "threshold=1.0", "--baseline", base,
                                    "--margin", "0.5", Fixture.bundledTrace)
        #expect(lenient.status == 0, "\(lenient.stderr)")
        let floor = try kinetrace("gestures", "eval", "--detector", "threshold", "--min-recall", "0.95", Fixture.bundledTrace)
        #expect(floor.status == 1 && floor.stderr.contains("recall 0.941 is below 0.950"), "\(floor.stderr)")
    }

    @Test func jsonValidatesAgainstTheSchema() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let base = dir.appendingPathComponent("base.json").path, sweep = dir.appendingPathComponent("sweep.json").path
        #expect(try kinetrace("gestures", "eval", "--detector", "threshold-latch", "--format", "json", "--out", base, Fixture.bundledTrace).status == 0)
        let result = try kinetrace("gestures", "eval", "--detector", "threshold-latch", "--sweep", "latch_ms=100:800:50", "--baseline", base,
                                   "--format", "json", "--out", sweep, Fixture.bundledTrace)
        #expect(result.status == 0, "\(result.stderr)")
        let schema = Fixture.packageRoot.appendingPathComponent("specs/gesture-eval-v1.schema.json").path
        let check = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            for path in sys.argv[2:]:
                jsonschema.Draft202012Validator(schema).validate(json.load(open(path)))
            print("valid")
            """, schema, base, sweep])
        #expect(check.status == 0 && check.stdout.contains("valid"), "\(check.stdout)\(check.stderr)")
    }

    /// --live scores a running host's acks. The reference host implements MotionLink v1's rule,
    /// so its score must be exactly the offline motionlink-v1 detector's on the same frames.
    @Test func liveScoresTheReferenceHostLikeTheOfflineRule() throws {
        let host = try Background.kinetrace("host", "--port", "0")
        let address = try host.waitForLine(startingWith: "listening on ").replacingOccurrences(of: "listening on ", with: "")
        let live = try kinetrace("gestures", "eval", "--live", address, "--live-speed", "20", "--format", "json", Fixture.bundledTrace)
        _ = try host.stop(SIGTERM)
        #expect(live.status == 0, "\(live.stderr)")
        let offline = try kinetrace("gestures", "eval", "--detector", "threshold-refractory", "--source", "frames", "--format", "json", Fixture.bundledTrace)
        let l = try Self.summary(try Self.json(live.stdout)), o = try Self.summary(try Self.json(offline.stdout))
        for key in ["tp", "fp", "fn"] { #expect(l[key] as? Int == o[key] as? Int, "\(key): live \(l[key] ?? "nil"), offline \(o[key] ?? "nil")") }
        #expect((l["tp"] as? Int ?? 0) > 40)
    }

    /// A host without the refractory window acks every frame over τ: the extra acks are false positives.
    @Test(.enabled(if: Requirement.python3.runs, "needs python3; with CI set this fails instead"))
    func liveCatchesAHostWithoutARefractoryWindow() throws {
        try Requirement.python3.check()
        let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/faulty_host.py").path
        let host = try Background(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--fault", "no-refractory"])
        let address = try host.waitForLine(startingWith: "listening on ").replacingOccurrences(of: "listening on ", with: "")
        let live = try kinetrace("gestures", "eval", "--live", address, "--live-speed", "20", "--format", "json", "--min-f1", "0.9",
                                 Fixture.bundledTrace)
        _ = try? host.stop(SIGKILL)
        #expect(live.status == 1, "\(live.stderr)")
        let s = try Self.summary(try Self.json(live.stdout))
        #expect((s["fp"] as? Int ?? 0) > 10, "\(s)")
    }

    /// The bundled corpus shows the trade-off a threshold makes: walking fires a low threshold,
    /// weak jumpers miss a high one, and the sweep's best F1 sits between.
    @Test func corpusSweepShowsTheThresholdTradeOff() throws {
        let corpus = Fixture.packageRoot.appendingPathComponent("captures/gestures").path
        let result = try kinetrace("gestures", "eval", "--detector", "threshold", "--sweep", "threshold=0.2:0.6:0.05",
                                   "--format", "json", corpus)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try Self.json(result.stdout)
        let traces = try #require(object["traces"] as? [[String: Any]])
        #expect(traces.count == 8 && traces.allSatisfy { ($0["sample_kinds"] as? [String]) == ["motion"] })
        let best = try #require((object["sweep"] as? [String: Any])?["best"] as? Double)
        #expect((0.3...0.45).contains(best), "best threshold \(best)")

        func score(_ threshold: String, _ file: String) throws -> [String: Any] {
            let run = try kinetrace("gestures", "eval", "--detector", "threshold", "--param", "threshold=\(threshold)", "--format", "json",
                                    corpus + "/" + file)
            return try #require((try Self.json(run.stdout)["traces"] as? [[String: Any]])?.first)
        }
        #expect(try score("0.25", "walking.jsonl")["fp"] as? Int ?? 0 > 10, "steps fire a low threshold")
        #expect(try score("0.25", "steady.jsonl")["fp"] as? Int == 0)
        #expect(try score("0.5", "weak.jsonl")["fn"] as? Int ?? 0 > 5, "weak jumps miss the paper's 0.5 g")
        #expect(try score("0.5", "strong.jsonl")["fn"] as? Int == 0)

        // Tilt, on the one landscape session; the portrait ones never arm it.
        let tilt = try kinetrace("gestures", "eval", "--detector", "badger-tilt", "--format", "json", corpus)
        let tiltTraces = try #require(try Self.json(tilt.stdout)["traces"] as? [[String: Any]])
        for t in tiltTraces {
            let steering = (t["source"] as? String ?? "").hasSuffix("steering.jsonl")
            #expect(steering ? (t["tp"] as? Int ?? 0) >= 8 : (t["fp"] as? Int) == 0, "\(t)")
        }
    }

    @Test func plotRendersWithRsvg() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        for (name, extra) in [("sweep", ["--sweep", "threshold=0.2:1.4:0.05"]), ("single", [])] {
            let svg = dir.appendingPathComponent("\(name).svg").path, png = dir.appendingPathComponent("\(name).png").path
            let result = try kinetrace(["gestures", "eval", "--detector", "threshold", "--plot", svg, Fixture.bundledTrace] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            let render = try run(try Fixture.tool("rsvg-convert"), ["-o", png, svg])
            #expect(render.status == 0, "\(name): \(render.stderr)")
            #expect(try String(contentsOfFile: svg, encoding: .utf8).contains(name == "sweep" ? "Precision" : "Detection delay"))
        }
    }

    @Test func badInputGetsOneLineAndItsOwnExitCode() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let unknown = try kinetrace("gestures", "eval", "--detector", "magic", Fixture.bundledTrace)
        #expect(unknown.status == 64 && unknown.stderr.contains("Unknown detector \"magic\""))
        let param = try kinetrace("gestures", "eval", "--detector", "threshold", "--param", "treshold=1", Fixture.bundledTrace)
        #expect(param.status == 64 && param.stderr.contains("threshold has no parameter \"treshold\""), "\(param.stderr)")
        let sweep = try kinetrace("gestures", "eval", "--detector", "badger-duck", "--sweep", "orientation=0:2:1", Fixture.bundledTrace)
        #expect(sweep.status == 64, "\(sweep.stderr)")

        // Tilt needs gravity; the bundled session has frames only.
        let tilt = try kinetrace("gestures", "eval", "--detector", "badger-tilt", Fixture.bundledTrace)
        #expect(tilt.status == 65 && tilt.stderr.contains("badger-tilt needs gravity") && tilt.stderr.split(separator: "\n").count == 1,
                "\(tilt.stderr)")

        let missing = try kinetrace("gestures", "eval", "--detector", "threshold", "/nonexistent/x.jsonl")
        #expect(missing.status == 66 && missing.stderr.split(separator: "\n").count == 1)
        let empty = try kinetrace("gestures", "eval", "--detector", "threshold", dir.path)
        #expect(empty.status == 66 && empty.stderr.contains("no .jsonl, .pcap or .pcapng files"))

        let notResult = dir.appendingPathComponent("other.json").path
        try #"{"format":"kinetrace-latency"}"#.write(toFile: notResult, atomically: true, encoding: .utf8)
        let baseline = try kinetrace("gestures", "eval", "--detector", "threshold", "--baseline", notResult, Fixture.bundledTrace)
        #expect(baseline.status == 65 && baseline.stderr.contains("not a gesture evaluation result"), "\(baseline.stderr)")

        let broken = dir.appendingPathComponent("broken.jsonl").path
        let lines = try String(contentsOfFile: Fixture.bundledTrace, encoding: .utf8).split(separator: "\n").prefix(5).map(String.init)
        try (lines[0...2].joined(separator: "\n") + "\n{\"kind\":\"label\"}\n").write(toFile: broken, atomically: true, encoding: .utf8)
        let bad = try kinetrace("gestures", "eval", "--detector", "threshold", broken)
        #expect(bad.status == 65 && bad.stderr.contains("line 4"), "\(bad.stderr)")
    }
}
