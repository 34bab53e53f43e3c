import Foundation
import KinetraceTestSupport
import Testing

/// inspect, latency and gestures eval on KeepCalm and attitude-stream traces written by
/// `kinetrace synth` in the test: real processes, real files.
@Suite struct UnrepliedProtocolCommandTests {
    func synth(_ dir: URL, _ name: String, _ arguments: String...) throws -> String {
        let path = dir.appendingPathComponent(name).path
        let result = try kinetrace(["synth", "--out", path] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        return path
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func validate(_ report: String, against schema: String) throws {
        let path = Fixture.packageRoot.appendingPathComponent("specs/\(schema)").path
        let check = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))
            print("valid")
            """, path, report])
        #expect(check.status == 0 && check.stdout.contains("valid"), "\(check.stdout)\(check.stderr)")
    }

    @Test func inspectMakesNoAckClaimsForKeepCalm() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = try synth(dir, "kc.jsonl", "--protocol", "keepcalm-json", "--duration", "20", "--seed", "5")
        let text = try kinetrace("inspect", trace)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.components(separatedBy: "no replies").count == 2, "\(text.stdout)")
        for absent in ["Acks", "Matched", "missing", "acks seen", "host→controller", "no data"] {
            #expect(!text.stdout.contains(absent), "\(absent) in\n\(text.stdout)")
        }
        for present in ["messages carry no sender timestamp", "capture clock (t_ns)  mean", "decisions jump", "Duplicate ids  0"] {
            #expect(text.stdout.contains(present), "missing \(present) in\n\(text.stdout)")
        }
        let object = try json(try kinetrace("inspect", "--format", "json", trace).stdout)
        #expect(object["replies"] as? Bool == false)
        #expect(object["sender_clock"] as? Bool == false)
        #expect(object["duplicate_ids"] as? Int == 0)
        #expect(object["missing_replies"] == nil && object["replies_seen"] == nil && object["matched_replies"] == nil)
        let decisions = try #require(object["decisions"] as? [String: Int])
        #expect((decisions["jump"] ?? 0) > 0)
        let controller = try #require((object["controllers"] as? [[String: Any]])?.first)
        #expect(controller["replies_seen"] == nil)
        #expect(controller["frames"] as? Int == 200)
        let rate = try #require(controller["samples_per_s"] as? Double)
        #expect(abs(rate - 10) < 0.5)
    }

    @Test func inspectSummarisesAnAttitudeStream() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = try synth(dir, "as.jsonl", "--protocol", "attitude-stream", "--persona", "steering", "--duration", "30", "--seed", "3")
        let text = try kinetrace("inspect", trace)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("decisions attitude 1800"), "\(text.stdout)")
        #expect(text.stdout.contains("Attitude   roll ["))
        #expect(!text.stdout.contains("Matched"))
        let object = try json(try kinetrace("inspect", "--format", "json", trace).stdout)
        let ranges = try #require(object["attitude_range_rad"] as? [String: [String: Double]])
        // Held in landscape and tilted both ways: pitch swings through zero; roll stays near −110°.
        #expect(try #require(ranges["pitch"]?["min"]) < -0.2 && (try #require(ranges["pitch"]?["max"])) > 0.2)
        #expect(try #require(ranges["roll"]?["max"]) < -0.8)
        #expect((object["unfinished_streams"] as? [Any])?.isEmpty == true)
    }

    @Test func latencyMeasuresArrivalsAndSaysWhatItCannot() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        for (name, proto) in [("kc.jsonl", "keepcalm-json"), ("as.jsonl", "attitude-stream")] {
            let trace = try synth(dir, name, "--protocol", proto, "--duration", "10", "--controllers", "2")
            let text = try kinetrace("latency", trace)
            #expect(text.status == 0, "\(text.stderr)")
            for present in ["Arrival interval", "Interarrival jitter", "after the last message:", "not available: no sender clock",
                            "not available: no replies"] {
                #expect(text.stdout.contains(present), "missing \(present) for \(proto)")
            }
            let report = dir.appendingPathComponent("\(proto).json").path
            #expect(try kinetrace("latency", trace, "--format", "json", "--out", report).status == 0)
            try validate(report, against: "latency-report-v2.schema.json")
            let object = try json(try String(contentsOfFile: report, encoding: .utf8))
            let measures = try #require(((object["traces"] as? [[String: Any]])?.first?["measures"] as? [[String: Any]]))
            #expect(measures.compactMap { $0["measure"] as? String } == ["arrival_interval", "interarrival_jitter"])
            let perController = try #require(measures[1]["per_controller"] as? [[String: Any]])
            #expect(perController.count == 2 && perController.allSatisfy { $0["final_ms"] is Double })
        }
    }

    @Test func latencyOnOneMessageFailsAndJoinGivesOneWayDelay() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let single = try synth(dir, "one.jsonl", "--protocol", "keepcalm-json", "--duration", "0.1")
        let nothing = try kinetrace("latency", single)
        #expect(nothing.status == 65)
        #expect(nothing.stderr.hasPrefix("kinetrace: error: ") && nothing.stderr.split(separator: "\n").count == 1)
        let trace = try synth(dir, "as.jsonl", "--protocol", "attitude-stream", "--persona", "steady", "--duration", "5")
        let joined = try kinetrace("latency", "--join", trace, trace, "--format", "json")
        #expect(joined.status == 0, "\(joined.stderr)")
        let report = try #require((try json(joined.stdout)["traces"] as? [[String: Any]])?.first)
        #expect((report["notes"] as? [String])?.first?.contains("by position") == true)
        let measure = try #require((report["measures"] as? [[String: Any]])?.first)
        #expect(measure["measure"] as? String == "one_way_joined")
        #expect((measure["all"] as? [String: Any])?["n"] as? Int == 300)
    }

    @Test func gestureDetectorsRunOnTheirProtocolsAndAreRefusedOnOthers() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let keepCalm = try synth(dir, "kc.jsonl", "--protocol", "keepcalm-json", "--persona", "steady", "--duration", "30", "--seed", "4")
        let attitude = try synth(dir, "as.jsonl", "--protocol", "attitude-stream", "--persona", "steering", "--duration", "30", "--seed", "4")
        let jumps = try kinetrace("gestures", "eval", "--detector", "threshold-latch", "--source", "frames", keepCalm, "--format", "json")
        #expect(jumps.status == 0, "\(jumps.stderr)")
        let jumpSummary = try #require(try json(jumps.stdout)["summary"] as? [String: Any])
        #expect(jumpSummary["recall"] as? Double == 1)
        let tilts = try kinetrace("gestures", "eval", "--detector", "attitude-tilt", "--param", "axis=pitch", "--source", "frames",
                                  attitude, "--format", "json")
        #expect(tilts.status == 0, "\(tilts.stderr)")
        let tiltSummary = try #require(try json(tilts.stdout)["summary"] as? [String: Any])
        #expect(tiltSummary["f1"] as? Double == 1)

        let refused = try kinetrace("gestures", "eval", "--detector", "threshold-latch", "--source", "frames", attitude)
        #expect(refused.status == 65)
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(refused.stderr.contains("threshold-latch reads") && refused.stderr.contains("attitude-stream"))
        let stamped = try kinetrace("gestures", "eval", "--detector", "threshold-refractory", "--source", "frames", keepCalm)
        #expect(stamped.status == 65)
        #expect(stamped.stderr.contains("sender timestamps"))
    }
}
