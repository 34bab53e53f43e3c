import Foundation
import KinetraceTestSupport
import Testing

/// Every line Kinetrace writes validates against specs/trace-v1.schema.json,
/// checked by an independent validator (Python's jsonschema).
@Suite struct SchemaTests {
    static let validator = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        v = jsonschema.Draft202012Validator(schema)
        bad = 0
        kinds = set()
        for n, line in enumerate(open(sys.argv[2]), 1):
            obj = json.loads(line)
            kinds.add(obj.get("kind", "header"))
            errors = list(v.iter_errors(obj))
            if errors:
                bad += 1
                print(f"line {n}: {errors[0].message}")
        print("kinds", " ".join(sorted(kinds)))
        sys.exit(1 if bad else 0)
        """

    func validate(_ path: String) throws -> RunResult {
        let schema = Fixture.packageRoot.appendingPathComponent("specs/trace-v1.schema.json").path
        return try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.validator, schema, path])
    }

    @Test func synthOutputValidates() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("s.jsonl").path
        #expect(try kinetrace("synth", "--out", path, "--controllers", "3", "--duration", "20", "--corrupt", "0.1", "--seed", "4").status == 0)
        let result = try validate(path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("kinds event header label msg"))
    }

    @Test func bundledTraceValidates() throws {
        let result = try validate(Fixture.bundledTrace)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    /// Every bundled trace, of every protocol (issue 25's schema item: KeepCalm's `motion` and the attitude
    /// stream's `attitude` messages failed a schema that knew only MotionLink's kinds and reasons).
    @Test func everyBundledTraceValidates() throws {
        let captures = Fixture.packageRoot.appendingPathComponent("captures")
        let traces = try #require(FileManager.default.enumerator(atPath: captures.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".jsonl") }.sorted()
        #expect(traces.count >= 12, "\(traces)")
        for trace in traces {
            let result = try validate(captures.appendingPathComponent(trace).path)
            #expect(result.status == 0, "\(trace): \(result.stdout)\(result.stderr)")
        }
    }

    /// A built-in kind's decoded fields are checked: a KeepCalm motion without y, an attitude without yaw,
    /// an invalid message without its reason, a reason that is not a code.
    @Test func aBuiltInKindMissingADecodedFieldIsRejected() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = #""kind":"msg","t_ns":1,"dir":"c2h","src":"1.2.3.4:5","dst":"1.2.3.4:6","payload":"00""#
        let lines = [
            "{\(base),\"msg\":\"motion\",\"decoded\":{\"id\":\"A\",\"x\":0,\"z\":0},\"valid\":true}",
            "{\(base),\"msg\":\"attitude\",\"decoded\":{\"roll\":0,\"pitch\":0},\"valid\":true}",
            "{\(base),\"msg\":\"unknown\",\"valid\":false}",
            "{\(base),\"msg\":\"unknown\",\"valid\":false,\"reason\":\"Not A Code\"}",
        ]
        for (n, line) in lines.enumerated() {
            let path = dir.appendingPathComponent("bad\(n).jsonl").path
            try (line + "\n").write(toFile: path, atomically: false, encoding: .utf8)
            let result = try validate(path)
            #expect(result.status == 1 && result.stdout.contains("line 1:"), "\(line): \(result.stdout)")
        }
        // A declared protocol's own kind, fields and reason are accepted.
        let declared = dir.appendingPathComponent("declared.jsonl").path
        try "{\(base),\"msg\":\"osc_message\",\"decoded\":{\"address\":\"/accel\",\"a0\":0.5,\"flag\":true},\"valid\":false,\"reason\":\"bad_type_tag\"}\n"
            .write(toFile: declared, atomically: false, encoding: .utf8)
        let accepted = try validate(declared)
        #expect(accepted.status == 0, "\(accepted.stdout)")
    }

    @Test func schemaRejectsABrokenRecord() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("bad.jsonl").path
        try #"{"kind":"msg","t_ns":1,"dir":"sideways","src":"1.2.3.4:5","dst":"1.2.3.4:6","payload":"zz"}"#
            .appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try validate(path)
        #expect(result.status == 1)
        #expect(result.stdout.contains("line 1:"))
    }

    /// A replay's record (sends, impairment events, acks) is a valid trace too.
    @Test func replayRecordValidates() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let record = dir.appendingPathComponent("r.jsonl").path
        let binary = try Fixture.binary.path
        let replay = try kinetrace(["replay", Fixture.bundledTrace, "--exec", "exec '\(binary)' host --stdio", "--end", "6",
                                    "--speed", "20", "--network", "harsh", "--record", record])
        #expect(replay.status == 0, "\(replay.stderr)")
        let result = try validate(record)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("kinds event header msg"))
    }

    /// Every bundled network validates against specs/network-v1.schema.json.
    @Test func bundledNetworksValidate() throws {
        let check = """
            import json, sys, glob, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            files = sorted(glob.glob(sys.argv[2] + "/*.json"))
            for f in files:
                jsonschema.validate(json.load(open(f)), schema, cls=jsonschema.Draft202012Validator)
            print(len(files), "valid")
            """
        let root = Fixture.packageRoot
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"),
                             ["python3", "-c", check, root.appendingPathComponent("specs/network-v1.schema.json").path,
                              root.appendingPathComponent("specs/networks").path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("4 valid"))
    }

    /// `conform --format json` validates against specs/conform-report-v2.schema.json, passive and active, and
    /// against v1's, which takes reports of both versions.
    @Test func conformReportsValidate() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let passive = dir.appendingPathComponent("passive.json").path, active = dir.appendingPathComponent("active.json").path
        _ = try kinetrace(["conform", "--capture", Fixture.bundledTrace, "--format", "json", "--out", passive])
        let live = try kinetrace(["conform", "--format", "json", "--out", active, "--cases", "AC-TRIGGER-*", "--cases", "AC-ACK-FORMAT"])
        #expect(live.status == 0, "\(live.stderr)")
        let check = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            for f in sys.argv[2:]:
                report = json.load(open(f))
                jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)
                print(report["mode"], len(report["cases"]))
            """
        for version in ["v1", "v2"] {
            let result = try run(URL(fileURLWithPath: "/usr/bin/env"),
                                 ["python3", "-c", check, Fixture.packageRoot.appendingPathComponent("specs/conform-report-\(version).schema.json").path,
                                  passive, active])
            #expect(result.status == 0, "\(version): \(result.stdout)\(result.stderr)")
            #expect(result.stdout == "passive 11\nactive 5\n", "\(version)")
        }
    }

    /// One report per protocol validates: KeepCalm's and the attitude stream's cite KC- and AS- requirements,
    /// which a pattern of ML- IDs refused (issue 25's schema item).
    static let withoutSlowCases = ["--exclude", "*-LOAD", "--exclude", "*-IMPAIRED-*", "--exclude", "*-KEEPS-READING", "--exclude", "*-OBS-TIMELY"]

    @Test func everyProtocolsConformReportValidates() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var reports: [String] = []
        for (capture, wireProtocol) in [("keepcalm-session.pcap", "keepcalm-json"), ("attitude-session.pcap", "attitude-stream"),
                                        ("loopback-session.pcap", "motionlink-v1")] {
            let out = dir.appendingPathComponent("\(wireProtocol).json").path
            let result = try kinetrace(["conform", "--capture", Fixture.packageRoot.appendingPathComponent("captures/\(capture)").path,
                                        "--protocol", wireProtocol, "--format", "json", "--out", out])
            #expect(FileManager.default.fileExists(atPath: out), "\(wireProtocol): \(result.stderr)")
            reports.append(out)
        }
        let active = dir.appendingPathComponent("keepcalm-active.json").path
        let live = try kinetrace(["conform", "--protocol", "keepcalm-json", "--format", "json", "--out", active, "--cases", "AC-KC-*"], timeout: 120)
        #expect(FileManager.default.fileExists(atPath: active), "\(live.stderr)")
        reports.append(active)
        // The suites derived from a declaration, whole, against the reference host; their JUnit too.
        for (name, declaration) in [("attitude-stream", "attitude-stream"), ("osc-motion", "examples/protocols/osc-motion.json"),
                                    ("ndjson-motion", "examples/protocols/ndjson-motion.json")] {
            let path = declaration.hasSuffix(".json") ? Fixture.packageRoot.appendingPathComponent(declaration).path : declaration
            let out = dir.appendingPathComponent("\(name)-active.json").path, junit = dir.appendingPathComponent("\(name).xml").path
            // Without the slowest cases (load, impaired paths, pacing, timing): their reports have the same shape.
            let json = try kinetrace(["conform", "--protocol", path, "--format", "json", "--out", out] + Self.withoutSlowCases, timeout: 120)
            #expect(json.status == 0 && FileManager.default.fileExists(atPath: out), "\(name): \(json.stderr)")
            reports.append(out)
            // The JUnit form of the same cases.
            let xml = try kinetrace(["conform", "--protocol", path, "--format", "junit", "--out", junit] + Self.withoutSlowCases, timeout: 120)
            #expect(xml.status == 0, "\(name): \(xml.stderr)")
            let parsed = try JUnitCheck.check(junit)
            #expect(parsed.failures == 0 && parsed.tests >= 7, "\(name): \(parsed)")
        }
        let check = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            for f in sys.argv[2:]:
                report = json.load(open(f))
                jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)
                prefixes = sorted({r.split("-")[0] for case in report["cases"] for r in case["requirements"]})
                print(report["mode"], ",".join(prefixes))
            """
        for version in ["v1", "v2"] {
            let result = try run(URL(fileURLWithPath: "/usr/bin/env"),
                                 ["python3", "-c", check, Fixture.packageRoot.appendingPathComponent("specs/conform-report-\(version).schema.json").path] + reports)
            #expect(result.status == 0, "\(version): \(result.stdout)\(result.stderr)")
            #expect(result.stdout == "passive KC\npassive AS\npassive ML\nactive KC\nactive AS\nactive OSC\nactive ND,PD\n", "\(version): \(result.stdout)")
        }
    }
}
