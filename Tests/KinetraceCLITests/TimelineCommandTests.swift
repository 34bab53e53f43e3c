import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace plot timeline`, run as a user runs it, its SVG read back: well-formed, its marks the
/// evaluation's outcomes one for one, its threshold where τ is, its size bounded; and the errors.
@Suite struct TimelineCommandTests {
    static let xmllint = Requirement.tools("xmllint")
    static let corpus = Fixture.packageRoot.appendingPathComponent("captures/gestures")

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The evaluation's outcomes of one trace, as `gestures eval --format json` lists them.
    static func evaluated(_ arguments: [String]) throws -> (trace: [String: Any], outcomes: [[String: Any]]) {
        let result = try kinetrace(["gestures", "eval", "--format", "json"] + arguments)
        try #require(result.status == 0, "\(result.stderr)")
        let trace = try #require((try json(result.stdout)["traces"] as? [[String: Any]])?.first)
        return (trace, try #require(trace["outcomes"] as? [[String: Any]]))
    }

    static func draw(_ arguments: [String], in dir: URL, name: String = "timeline.svg") throws -> (result: RunResult, svg: String?) {
        let path = dir.appendingPathComponent(name).path
        let result = try kinetrace(["plot", "timeline"] + arguments + ["-o", path])
        return (result, try? String(contentsOfFile: path, encoding: .utf8))
    }

    static func xmllintAccepts(_ path: String) throws {
        guard try xmllint.available() else { return }
        let check = try run(URL(fileURLWithPath: "/usr/bin/env"), ["xmllint", "--noout", path])
        #expect(check.status == 0, "xmllint: \(check.stderr)")
    }

    /// weak.jsonl with no detector named: the protocol's host model scores it, as `gestures eval --detector host-model` does.
    @Test func theMarksAreTheEvaluationsOutcomes() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = Self.corpus.appendingPathComponent("weak.jsonl").path
        let (result, drawn) = try Self.draw([trace], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        let svg = try #require(drawn)
        try Self.xmllintAccepts(dir.appendingPathComponent("timeline.svg").path)
        #expect(SVGChecksLite.nonFinite(svg).isEmpty)

        let (summary, outcomes) = try Self.evaluated(["--detector", "host-model", trace])
        let tp = PlotCommandTests.elements(svg, class: "mark-tp"), fn = PlotCommandTests.elements(svg, class: "mark-fn")
        let fp = PlotCommandTests.elements(svg, class: "mark-fp")
        #expect(tp.count == summary["tp"] as? Int && fn.count == summary["fn"] as? Int && fp.count == summary["fp"] as? Int,
                "marks \(tp.count)/\(fn.count)/\(fp.count), evaluation \(summary["tp"] ?? "")/\(summary["fn"] ?? "")/\(summary["fp"] ?? "")")
        #expect(tp.count > 0 && fn.count > 0, "weak.jsonl has hits and misses at the host's τ")
        #expect(result.stdout.contains("TP \(tp.count), FN \(fn.count), FP \(fp.count)"), "\(result.stdout)")

        // Each mark sits at its outcome's time (seconds since the trace's first record, as the JSON says).
        let area = try #require(PlotCommandTests.plotAreas(svg).first)
        func x(_ seconds: Double) -> Double { area.left + (seconds - area.x[0]) / (area.x[1] - area.x[0]) * area.width }
        let expectedTP = outcomes.filter { $0["kind"] as? String == "TP" }.compactMap { $0["label_s"] as? Double }.map(x).sorted()
        let drawnTP = tp.compactMap { Double($0.attributes["cx"] ?? "") }.sorted()
        #expect(zip(expectedTP, drawnTP).allSatisfy { abs($0 - $1) < 0.02 } && expectedTP.count == drawnTP.count, "\(expectedTP) \(drawnTP)")

        // τ: the host rule's 0.5 g on ay, a dashed line at its y.
        let references = PlotCommandTests.elements(svg, class: "reference")
        let tau = try #require(references.first { $0.attributes["data-value"] == "0.5" })
        let y = area.top + area.height - (0.5 - area.y[0]) / (area.y[1] - area.y[0]) * area.height
        #expect(abs(Double(tau.attributes["y1"]!)! - y) < 0.02 && tau.attributes["y1"] == tau.attributes["y2"])
        #expect(tau.attributes["stroke-dasharray"] != nil)
        let legend = PlotCommandTests.elements(svg, class: "legend").map { PlotCommandTests.decoded($0.text) }
        #expect(legend.contains("ay") && legend.contains("τ = 0.5 g on ay (host rule)"), "\(legend)")
        // The title names the trace, its protocol and the controller.
        let title = try #require(PlotCommandTests.elements(svg, class: "figure-title").first)
        #expect(PlotCommandTests.decoded(title.text) == "weak.jsonl · motionlink-v1 · 10.0.0.10:50000")
    }

    /// A named detector and two controllers: every panel's false detections too, at the detection's time.
    @Test func falseDetectionsOfEveryPanelAreTheEvaluations() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = Self.corpus.appendingPathComponent("walking.jsonl").path
        let detector = ["--detector", "threshold", "--param", "threshold=0.3"]
        let (result, drawn) = try Self.draw(detector + [trace], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        let svg = try #require(drawn)
        try Self.xmllintAccepts(dir.appendingPathComponent("timeline.svg").path)
        let (summary, outcomes) = try Self.evaluated(detector + [trace])
        #expect((summary["fp"] as? Int ?? 0) > 10)
        #expect(PlotCommandTests.elements(svg, class: "mark-tp").count == summary["tp"] as? Int)
        #expect(PlotCommandTests.elements(svg, class: "mark-fn").count == summary["fn"] as? Int)
        #expect(PlotCommandTests.elements(svg, class: "mark-fp").count == summary["fp"] as? Int)
        #expect(PlotCommandTests.plotAreas(svg).count == 2, "one panel per controller")
        // The detector's τ (0.3 g) and the host rule's (0.5 g) are both drawn, each at its y.
        let areas = PlotCommandTests.plotAreas(svg)
        for value in [0.3, 0.5] {
            let lines = PlotCommandTests.elements(svg, class: "reference").filter { Double($0.attributes["data-value"] ?? "") == value }
            #expect(lines.count == 2, "τ \(value) on both panels")
            for (line, area) in zip(lines, areas) {
                let y = area.top + area.height - (value - area.y[0]) / (area.y[1] - area.y[0]) * area.height
                #expect(abs(Double(line.attributes["y1"]!)! - y) < 0.02)
            }
        }
        #expect(outcomes.filter { $0["kind"] as? String == "FP" }.allSatisfy { $0["detection_s"] is Double && $0["label_s"] is NSNull })
    }

    /// Half a million samples draw as at most four points per pixel column and line; the file stays small.
    @Test func aLargeTraceDrawsABoundedNumberOfPoints() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("large.jsonl")
        var text = #"{"format":"kinetrace-trace","version":1,"minor":1,"profile":"motionlink-v1","capture_point":"synthetic","clock":"model"}"# + "\n"
        let start: Int64 = 1_767_225_600_000
        let count = 200_000
        text.reserveCapacity(count * 150)
        for i in 0..<count {
            let ms = start + Int64(i)  // 1 kHz for 200 s
            let ay = i % 2000 < 40 ? 0.9 : Double(i % 7) * 0.01
            text += #"{"kind":"motion","t_ns":\#(ms * 1_000_000),"controller":"10.0.0.10:50000","t_ms":\#(ms),"user_accel":[0,\#(ay),0],"rotation_rate":[0,0,0]}"# + "\n"
        }
        try text.write(to: trace, atomically: true, encoding: .utf8)
        let (result, drawn) = try Self.draw([trace.path], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        let svg = try #require(drawn)
        let area = try #require(PlotCommandTests.plotAreas(svg).first)
        let vertices = PlotCommandTests.elements(svg, class: "series").map { $0.attributes["d"]!.matches(of: /[ML]-?[0-9.]+ -?[0-9.]+/).count }
        #expect(vertices.count == 3 && vertices.allSatisfy { $0 <= 4 * Int(area.width) }, "\(vertices)")
        #expect(svg.utf8.count < 300_000, "\(svg.utf8.count) bytes")
        #expect(PlotCommandTests.elements(svg, class: "mark-trigger").count == count / 2000, "one crossing a bump")
        #expect(result.stdout.contains("\(count) samples"), "\(result.stdout)")
        try Self.xmllintAccepts(dir.appendingPathComponent("timeline.svg").path)
    }

    @Test func anUnknownControllerIsAUsageErrorNamingIt() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let (result, drawn) = try Self.draw(["--controller", "10.9.9.9:1", Self.corpus.appendingPathComponent("steady.jsonl").path], in: dir)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.hasPrefix("kinetrace: error: ")
                && result.stderr.contains("no controller 10.9.9.9:1") && result.stderr.contains("10.0.0.10:50000"), "\(result.stderr)")
        #expect(drawn == nil, "nothing written")
    }

    @Test func anEmptyWindowWritesNothing() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = Self.corpus.appendingPathComponent("weak.jsonl").path
        for window in [["--from", "120", "--to", "130"], ["--from", "1000"], ["--to", "0.01"]] {
            let (result, drawn) = try Self.draw(window + [trace], in: dir)
            #expect(result.status == 65, "\(window): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("nothing"), "\(result.stderr)")
            #expect(drawn == nil, "\(window): nothing written")
        }
        // A window beyond the trace's end is cut to it; one inside it draws only what it holds.
        let (huge, hugeSVG) = try Self.draw(["--from", "10", "--to", "4000000000", trace], in: dir)
        #expect(huge.status == 0 && huge.stderr.contains("the window ends there"), "\(huge.stderr)")
        let hugeText = try #require(hugeSVG)
        let area = try #require(PlotCommandTests.plotAreas(hugeText).first)
        #expect(area.x[0] == 10 && area.x[1] < 61)
        #expect(try kinetrace("plot", "timeline", "--from", "5", "--to", "2", trace, "-o", "/tmp/never.svg").status == 64)
        #expect(try kinetrace("plot", "timeline", "--to", "nan", trace, "-o", "/tmp/never.svg").status == 64)
    }

    @Test func pngComesFromRsvgConvert() throws {
        guard try PlotCommandTests.rsvg.available() else { return }
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("t.png").path
        let result = try kinetrace("plot", "timeline", "--from", "0", "--to", "10", Fixture.bundledTrace, "-o", path)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))).starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    /// Stream events (a connection's start and end) are drawn and labelled; an attitude vector in degrees.
    @Test func streamEventsAndTheProtocolsOwnNames() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let (result, drawn) = try Self.draw([Fixture.packageRoot.appendingPathComponent("captures/attitude-session.jsonl").path], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        let svg = try #require(drawn)
        let labels = PlotCommandTests.elements(svg, class: "event-label").map(\.text)
        #expect(labels.contains("stream start") && labels.contains { $0.hasPrefix("stream end") }, "\(labels)")
        let names = PlotCommandTests.elements(svg, class: "series").compactMap { $0.attributes["data-name"] }
        #expect(Set(names) == ["roll", "pitch", "yaw"], "\(names)")
        #expect(PlotCommandTests.elements(svg, class: "y-title").allSatisfy { PlotCommandTests.decoded($0.text) == "attitude (°)" })
    }
}

/// Attribute values that spell a non-number.
enum SVGChecksLite {
    static func nonFinite(_ svg: String) -> [String] {
        svg.components(separatedBy: "\"").enumerated().filter { $0.offset % 2 == 1 }.map(\.element).filter {
            let lower = $0.lowercased()
            return lower.contains("nan") || lower.contains("inf")
        }
    }
}

/// `gestures eval` lists what became of every label and detection, with times.
@Suite struct GestureOutcomeListingTests {
    @Test func theJSONListsEveryOutcomeAndTheyAreTheCounts() throws {
        let corpus = TimelineCommandTests.corpus.path
        for arguments in [["--detector", "threshold", "--param", "threshold=0.3"], ["--detector", "threshold", "--sweep", "threshold=0.3:0.6:0.1"],
                          ["--detector", "badger-duck"]] {
            let result = try kinetrace(["gestures", "eval", "--format", "json"] + arguments + [corpus + "/ducker.jsonl", corpus + "/walking.jsonl",
                                                                                              corpus + "/weak.jsonl"])
            #expect(result.status == 0, "\(result.stderr)")
            let root = try TimelineCommandTests.json(result.stdout)
            let traces = try #require(root["traces"] as? [[String: Any]])
            var totals = [String: Int]()
            for trace in traces {
                let outcomes = try #require(trace["outcomes"] as? [[String: Any]])
                for (kind, key) in [("TP", "tp"), ("FN", "fn"), ("FP", "fp")] {
                    let n = outcomes.filter { $0["kind"] as? String == kind }.count
                    #expect(n == trace[key] as? Int, "\(arguments) \(trace["source"] ?? "") \(kind)")
                    totals[key, default: 0] += n
                }
                let start = try #require(trace["start_ms"] as? Double)
                for o in outcomes {
                    #expect(o["gesture"] is String && o["controller"] is String)
                    if let ms = o["label_ms"] as? Double { #expect(abs((ms - start) / 1000 - (o["label_s"] as! Double)) < 1e-6) }
                    if let ms = o["detection_ms"] as? Double { #expect(abs((ms - start) / 1000 - (o["detection_s"] as! Double)) < 1e-6) }
                    if o["kind"] as? String == "TP" {
                        #expect(abs((o["detection_ms"] as! Double) - (o["label_ms"] as! Double) - (o["delay_ms"] as! Double)) < 1e-6)
                    }
                }
            }
            let summary = try #require(root["summary"] as? [String: Any])
            for key in ["tp", "fn", "fp"] { #expect(totals[key] == summary[key] as? Int, "\(arguments) \(key)") }
        }
    }

    @Test func theJSONWithOutcomesValidatesAgainstTheSchema() throws {
        guard try Requirement.python("jsonschema").available() else { return }
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let out = dir.appendingPathComponent("eval.json").path
        let corpus = TimelineCommandTests.corpus.path
        let result = try kinetrace("gestures", "eval", "--detector", "threshold", "--param", "threshold=0.3", "--format", "json", "--out", out,
                                   corpus + "/walking.jsonl", corpus + "/weak.jsonl", corpus + "/steering.jsonl")
        #expect(result.status == 0, "\(result.stderr)")
        let schema = Fixture.packageRoot.appendingPathComponent("specs/gesture-eval-v1.schema.json").path
        let check = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            document = json.load(open(sys.argv[2]))
            jsonschema.Draft202012Validator(schema).validate(document)
            kinds = {o["kind"] for t in document["traces"] for o in t["outcomes"]}
            # A broken outcome is refused: a miss with a detection time.
            bad = json.loads(json.dumps(document))
            miss = next(o for t in bad["traces"] for o in t["outcomes"] if o["kind"] == "FN")
            miss["detection_ms"] = 1.0
            refused = not jsonschema.Draft202012Validator(schema).is_valid(bad)
            print("valid", sorted(kinds), refused)
            """, schema, out])
        #expect(check.status == 0 && check.stdout.contains("valid ['FN', 'FP', 'TP'] True"), "\(check.stdout)\(check.stderr)")
    }

    @Test func theTextListsMissesAndFalseDetectionsBounded() throws {
        let corpus = TimelineCommandTests.corpus.path
        let result = try kinetrace("gestures", "eval", "--detector", "threshold", "--param", "threshold=0.3", corpus + "/walking.jsonl",
                                   corpus + "/steering.jsonl")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let heading = try #require(lines.firstIndex { $0.hasPrefix("Misses (FN) and false detections (FP), the first 20 of ") })
        let listed = lines[(heading + 1)...].prefix { $0.hasPrefix("  FN ") || $0.hasPrefix("  FP ") }
        #expect(listed.count == 20)
        #expect(lines[heading + 21].hasPrefix("  … and ") && lines[heading + 21].hasSuffix(" more"))
        #expect(listed.contains { $0.contains("walking.jsonl") && $0.contains("detected at ") && $0.hasSuffix(" s") })
        // A run with nothing missed or false says nothing of them.
        let clean = try kinetrace("gestures", "eval", "--detector", "threshold", corpus + "/strong.jsonl")
        #expect(!clean.stdout.contains("Misses"), "\(clean.stdout)")
    }

    /// Without a sweep, --plot draws each trace's scores over its name.
    @Test func thePerTracePlotNamesTheTraces() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let plot = dir.appendingPathComponent("per-trace.svg").path
        let result = try kinetrace("gestures", "eval", "--detector", "threshold", "--plot", plot, TimelineCommandTests.corpus.path)
        #expect(result.status == 0, "\(result.stderr)")
        let svg = try String(contentsOfFile: plot, encoding: .utf8)
        let names = PlotCommandTests.elements(svg, class: "category").map(\.text)
        #expect(names == ["ducker.jsonl", "noisy.jsonl", "steady.jsonl", "steering.jsonl", "strong.jsonl", "tremor.jsonl", "walking.jsonl",
                          "weak.jsonl"])
        #expect(PlotCommandTests.elements(svg, class: "point").count == 3 * 8 - 1, "steering has no precision (nothing detected)")
    }
}
