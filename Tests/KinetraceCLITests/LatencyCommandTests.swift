import Foundation
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace latency` as a user runs it, checked against numpy reading the
/// same trace with its own parser.
@Suite struct LatencyCommandTests {
    /// Three controllers whose clocks are 0, +1234.567 and −500 ms off the host's; one-way latency
    /// N(70.4, 3.7) ms at ns resolution with 1 % outliers 30–60 ms late; an ack to every 20th frame,
    /// 0.2–0.6 ms after it arrived. Seeded, so every run builds the same trace.
    static func knownTrace(at path: String, framesPerController: Int = 2000) throws {
        var random = SplitMix64(seed: 20261123)
        let host = Endpoint(host: "127.0.0.1", port: 47110)
        let offsetsNs: [Int64] = [0, 1_234_567_000, -500_000_000]
        var records: [TraceRecord] = []
        let startMs: UInt64 = 1_795_000_000_000
        for i in 0..<framesPerController {
            for (c, offset) in offsetsNs.enumerated() {
                let controller = Endpoint(host: "10.0.0.\(c + 10)", port: UInt16(50000 + c))
                let tMs = startMs + UInt64(i * 100 + c * 7)
                var latencyMs = 70.4 + 3.7 * random.normal()
                if random.unit() < 0.01 { latencyMs += 30 + 30 * random.unit() }
                // The host sees the stamp on the controller's clock: host time = stamp − offset + latency.
                let arrivalNs = Int64(tMs) * 1_000_000 - offset + Int64((latencyMs * 1e6).rounded())
                records.append(.message(MessageRecord(timeNs: arrivalNs, direction: .controllerToHost, source: controller,
                                                      destination: host, payload: MotionFrame(tMs: tMs, ay: 0.01).encoded())))
                if i % 20 == 0 {
                    let turnaroundNs = 200_000 + Int64(400_000 * random.unit())
                    records.append(.message(MessageRecord(timeNs: arrivalNs + turnaroundNs, direction: .hostToController,
                                                          source: host, destination: controller,
                                                          payload: HapticAck(echoTMs: tMs).encoded())))
                }
            }
        }
        records.sort { $0.timeNs < $1.timeNs }
        let header = TraceHeader(created: "2026-11-23T00:00:00.000Z", tool: "LatencyCommandTests", capturePoint: .host, clock: .realtime)
        try Data(TraceEncoder.document(header: header, records: records)).write(to: URL(fileURLWithPath: path))
    }

    /// Parses the trace with Python's json, struct and zlib, computes every measure with numpy, and
    /// compares with kinetrace's JSON: Table I to 1e-9 relative, HDR percentiles within their bucket.
    static let numpyCheck = #"""
        import json, math, struct, sys, zlib
        from fractions import Fraction
        import numpy as np
        trace, report, sigmas, base, scope = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
        frames, acks, seen = {}, {}, {}
        one_way, echo, turn = {}, {}, {}
        lines = open(trace).read().splitlines()
        for line in lines[1:]:
            r = json.loads(line)
            if r["kind"] != "msg": continue
            p = bytes.fromhex(r["payload"])
            if r["dir"] == "c2h" and len(p) == 36 and zlib.crc32(p[:32]) == struct.unpack("<I", p[32:])[0]:
                c, t_ms = r["src"], struct.unpack("<Q", p[:8])[0]
                one_way.setdefault(c, []).append((r["t_ns"] - t_ms * 10**6) / 1e6)
                seen.setdefault(c, {}).setdefault(t_ms, r["t_ns"])
            elif r["dir"] == "h2c" and len(p) == 20 and zlib.crc32(p[:16]) == struct.unpack("<I", p[16:])[0]:
                c, e = r["dst"], struct.unpack("<Q", p[:8])[0]
                echo.setdefault(c, []).append((r["t_ns"] - e * 10**6) / 1e6)
                if e in seen.get(c, {}): turn.setdefault(c, []).append((r["t_ns"] - seen[c][e]) / 1e6)
        def relative(series):
            everything = np.array(sum(series.values(), []))
            median = {c: float(np.median(np.array(v) if scope == "controller" else everything)) for c, v in series.items()}
            return {c: [x - median[c] + base for x in v] for c, v in series.items()}
        expected = {"one_way_raw": one_way, "one_way_relative": relative(one_way),
                    "reply_echo_raw": echo, "reply_echo_relative": relative(echo), "reply_turnaround": turn}
        def table(values):
            x = np.array(values)
            m, s = x.mean(), x.std(ddof=1)
            k = x[np.abs(x - m) <= sigmas * s] if sigmas > 0 else x
            return len(x), len(k), {"mean": k.mean(), "p95": np.percentile(k, 95), "max": k.max(), "min": k.min(), "sd": k.std(ddof=1)}
        ours = json.load(open(report))["traces"][0]
        checked, bad = 0, []
        def close(a, b, tol):
            return abs(a - b) <= tol
        for m in ours["measures"]:
            series = expected.pop(m["measure"])
            rows = [("all", sum((series[c] for c in sorted(series)), []), m["all"])]
            rows += [(row["controller"], series[row["controller"]], row) for row in m["per_controller"]]
            for name, values, got in rows:
                n, kept, t = table(values)
                if (got["n"], got["n_kept"]) != (n, kept): bad.append(f'{m["measure"]} {name}: N {got["n"]}/{got["n_kept"]}, numpy {n}/{kept}')
                for key, value in t.items():
                    checked += 1
                    if not close(got["table_ms"][key], float(value), 1e-9 * max(1.0, abs(float(value)))):
                        bad.append(f'{m["measure"]} {name} {key}: ours {got["table_ms"][key]!r}, numpy {float(value)!r}')
                x = np.sort(np.array(values))
                for key, p in [("p50", "50"), ("p90", "90"), ("p99", "99"), ("p99.9", "99.9")]:
                    checked += 1
                    # Nearest rank in exact arithmetic: numpy's inverted_cdf rounds 0.999 × 2000 up to 1999.
                    want = float(x[max(1, math.ceil(Fraction(p) / 100 * len(x))) - 1])
                    tol = (want - x.min()) / 1000 + 1e-6   # three significant digits above the series minimum
                    if not close(got["percentiles_ms"][key], want, tol):
                        bad.append(f'{m["measure"]} {name} {key}: ours {got["percentiles_ms"][key]!r}, numpy {want!r}')
        if expected: bad.append(f"measures missing from the report: {sorted(expected)}")
        print("\n".join(bad[:20]))
        print(f"checked {checked}")
        sys.exit(1 if bad else 0)
        """#

    @Test(arguments: [("3", "0", "controller"), ("2.5", "70.4", "controller"), ("0", "0", "controller"), ("3", "70.4", "dataset")])
    func tableIMatchesNumpy(sigmas: String, base: String, scope: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("known.jsonl").path, report = dir.appendingPathComponent("report.json").path
        try Self.knownTrace(at: trace)
        let result = try kinetrace(["latency", trace, "--format", "json", "--out", report, "--sigmas", sigmas, "--base-ms", base,
                                    "--median-scope", scope])
        #expect(result.status == 0, "\(result.stderr)")
        let numpy = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", Self.numpyCheck, trace, report, sigmas, base, scope])
        #expect(numpy.status == 0, "\(numpy.stdout)\(numpy.stderr)")
        // 5 measures × (all + 3 controllers) × (5 table values + 4 percentiles).
        #expect(numpy.stdout.contains("checked 180"), "\(numpy.stdout)")
    }

    /// The relative latency removes each controller's clock offset: with base 70.4 the table
    /// lands on the generated distribution, while raw one-way carries the offsets.
    @Test func relativeLatencyRecoversTheGeneratedDistribution() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("known.jsonl").path
        try Self.knownTrace(at: trace)
        let result = try kinetrace("latency", trace, "--format", "json", "--base-ms", "70.4")
        #expect(result.status == 0, "\(result.stderr)")
        let measures = try Self.measures(result.stdout)
        let relative = try #require(measures["one_way_relative"]?["all"] as? [String: Any])
        let table = try #require(relative["table_ms"] as? [String: Double])
        #expect(abs(table["mean"]! - 70.4) < 0.3, "\(table)")
        #expect(abs(table["sd"]! - 3.7) < 0.3, "\(table)")
        // About 1 % outliers were added; 3σ removal takes most of them.
        let n = try #require(relative["n"] as? Int), kept = try #require(relative["n_kept"] as? Int)
        #expect(n == 6000 && (6000 - 90)...(6000 - 20) ~= kept, "kept \(kept)")
        let raw = try #require((measures["one_way_raw"]?["all"] as? [String: Any])?["table_ms"] as? [String: Double])
        #expect(raw["min"]! < -1000, "the +1234.567 ms clock offset shows in raw latency")
    }

    @Test func textLabelsEveryLatencyAndSaysWhatIsMissing() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("known.jsonl").path
        try Self.knownTrace(at: trace, framesPerController: 100)
        let result = try kinetrace("latency", trace)
        #expect(result.status == 0, "\(result.stderr)")
        for expected in ["recorded at host (clock realtime), 3 controller(s)", "One-way latency, raw (c2h samples: t_receive − sender time), ms",
                         "One-way latency, relative (raw − median), ms", "Reply turnaround on the capture clock",
                         "Reply round trip on the controller's clock: not available: needs a trace recorded at the controller",
                         "10.0.0.11:50001", "p99.9", "median"] {
            #expect(result.stdout.contains(expected), "missing \(expected) in\n\(result.stdout)")
        }
    }

    @Test func csvHasARowPerMeasureAndController() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("known,1.jsonl").path
        try Self.knownTrace(at: trace, framesPerController: 100)
        let result = try kinetrace("latency", trace, "--format", "csv")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first == "trace,measure,controller,n,n_kept,mean_ms,p95_ms,max_ms,min_ms,sd_ms,p50_ms,p90_ms,p99_ms,p99_9_ms")
        #expect(lines.count == 1 + 5 * 4)
        // The comma in the file name is quoted; every row has 14 fields after that.
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("\"\(trace)\",") && $0.split(separator: ",", omittingEmptySubsequences: false).count == 15 })
    }

    @Test func jsonValidatesAgainstTheSchema() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("known.jsonl").path, report = dir.appendingPathComponent("r.json").path
        try Self.knownTrace(at: trace, framesPerController: 50)
        // Two traces in one report: a host trace and the bundled synthetic session.
        let result = try kinetrace("latency", trace, Fixture.bundledTrace, "--format", "json", "--out", report)
        #expect(result.status == 0, "\(result.stderr)")
        let schema = Fixture.packageRoot.appendingPathComponent("specs/latency-report-v2.schema.json").path
        let check = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))
            print("valid")
            """, schema, report])
        #expect(check.status == 0 && check.stdout.contains("valid"), "\(check.stdout)\(check.stderr)")
    }

    /// The plot is SVG that parses as XML and that librsvg renders at its declared size.
    @Test func plotRendersWithRsvg() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("known.jsonl").path
        let svg = dir.appendingPathComponent("fig.svg").path, png = dir.appendingPathComponent("fig.png").path
        try Self.knownTrace(at: trace, framesPerController: 300)
        let result = try kinetrace("latency", trace, "--plot", svg, "--base-ms", "70.4")
        #expect(result.status == 0, "\(result.stderr)")
        let text = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(text.hasPrefix("<svg") && text.contains("latency (relative) per frame") && !text.contains("Figure 2") && text.contains("10.0.0.12:50002"))
        #expect(!text.lowercased().contains("nan") && !text.contains("inf\""))
        let render = try run(try Fixture.tool("rsvg-convert"), ["-o", png, svg])
        #expect(render.status == 0, "\(render.stderr)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: png)))
        try #require(bytes.count > 24 && bytes[1...3] == [0x50, 0x4E, 0x47][...])
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        let declared = try #require(text.firstMatch(of: /width="(\d+)" height="(\d+)"/))
        #expect(width == Int(declared.1) && height == Int(declared.2))
        #expect(height > 600, "three panels")
    }

    @Test func badInputGetsOneLineAndItsOwnExitCode() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let missing = try kinetrace("latency", "/nonexistent/t.jsonl")
        #expect(missing.status == 66 && missing.stderr.split(separator: "\n").count == 1)

        let broken = dir.appendingPathComponent("broken.jsonl").path
        try Self.knownTrace(at: broken, framesPerController: 3)
        var lines = try String(contentsOfFile: broken, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[2] = "{\"kind\":\"msg\",\"t_ns\":\"soon\"}"
        try (lines.joined(separator: "\n") + "\n").write(toFile: broken, atomically: true, encoding: .utf8)
        let malformed = try kinetrace("latency", broken)
        #expect(malformed.status == 65 && malformed.stderr.contains("line 3"), "\(malformed.stderr)")
        #expect(malformed.stderr.split(separator: "\n").count == 1)

        let empty = dir.appendingPathComponent("empty.jsonl").path
        try (lines[0] + "\n").write(toFile: empty, atomically: true, encoding: .utf8)
        let nothing = try kinetrace("latency", empty)
        #expect(nothing.status == 65 && nothing.stderr == "kinetrace: error: \(empty): no latency to measure: no valid samples or replies\n")

        let host = dir.appendingPathComponent("host.jsonl").path
        try Self.knownTrace(at: host, framesPerController: 3)
        let noRTT = try kinetrace("latency", host, "--plot", dir.appendingPathComponent("x.svg").path, "--plot-measure", "reply-rtt")
        #expect(noRTT.status == 65 && noRTT.stderr.contains("no reply_rtt samples to plot"), "\(noRTT.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("x.svg").path))

        let usage = try kinetrace("latency", host, "--sigmas", "-1")
        #expect(usage.status == 64)
    }

    /// Traces from the other commands, made by real processes: the host's own trace, the
    /// controller's (simulate), a replay's record, and the bundled loopback pcap.
    @Test func readsTracesFromEveryRecorder() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path, simTrace = dir.appendingPathComponent("sim.jsonl").path
        let replayTrace = dir.appendingPathComponent("replay.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0", "--trace", hostTrace)
        let address = try host.waitForLine(startingWith: "listening on ").replacingOccurrences(of: "listening on ", with: "")
        #expect(try kinetrace("simulate", "--to", address, "--controllers", "2", "--duration", "3", "--script", "jumps",
                              "--seed", "3", "--trace", simTrace).status == 0)
        #expect(try kinetrace("replay", simTrace, "--to", address, "--timestamps", "wallclock", "--record", replayTrace).status == 0)
        #expect(try host.stop(SIGTERM).status == 0)

        let expectations: [(String, [String], String)] = [
            (hostTrace, ["one_way_raw", "one_way_relative", "reply_echo_raw", "reply_turnaround"], "host"),
            (simTrace, ["one_way_raw", "reply_echo_raw", "reply_rtt"], "controller"),
            (replayTrace, ["one_way_raw", "reply_rtt"], "controller"),
            (Fixture.packageRoot.appendingPathComponent("captures/loopback-session.pcap").path, ["one_way_raw", "reply_turnaround"], "network"),
        ]
        for (path, wanted, point) in expectations {
            let result = try kinetrace("latency", path, "--format", "json", "--port", "41448")
            #expect(result.status == 0, "\(path): \(result.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let trace = try #require((object["traces"] as? [[String: Any]])?.first)
            #expect(trace["capture_point"] as? String == point)
            let measures = try Self.measures(result.stdout)
            for name in wanted { #expect(measures[name] != nil, "\(path) lacks \(name)") }
            // Loopback: every one-way latency at the host or the capture is under a second and never negative.
            if point != "controller", let table = (measures["one_way_raw"]?["all"] as? [String: Any])?["table_ms"] as? [String: Double] {
                #expect(table["min"]! >= 0 && table["max"]! < 1000, "\(path): \(table)")
            }
        }
    }

    /// The controller's and the host's traces of one loopback session, joined: both directions'
    /// one-way latencies are positive (the host stamps an ack before sending it) and small.
    @Test func joinGivesOneWayLatencyBothWays() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path, simTrace = dir.appendingPathComponent("sim.jsonl").path
        let host = try Background.kinetrace("host", "--port", "0", "--trace", hostTrace)
        let address = try host.waitForLine(startingWith: "listening on ").replacingOccurrences(of: "listening on ", with: "")
        #expect(try kinetrace("simulate", "--to", address, "--controllers", "3", "--duration", "4", "--script", "random",
                              "--seed", "4", "--trace", simTrace).status == 0)
        #expect(try host.stop(SIGTERM).status == 0)
        let result = try kinetrace("latency", "--join", simTrace, hostTrace, "--format", "json")
        #expect(result.status == 0, "\(result.stderr)")
        let measures = try Self.measures(result.stdout)
        for name in ["one_way_joined", "reply_one_way_joined"] {
            let table = try #require((measures[name]?["all"] as? [String: Any])?["table_ms"] as? [String: Double], "\(name)")
            #expect(table["min"]! > 0 && table["max"]! < 100, "\(name): \(table)")
        }
        let wrongOrder = try kinetrace("latency", "--join", hostTrace)
        #expect(wrongOrder.status == 64)
    }

    static func measures(_ json: String) throws -> [String: [String: Any]] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let trace = try #require((object["traces"] as? [[String: Any]])?.first)
        let list = try #require(trace["measures"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: list.map { ($0["measure"] as! String, $0) })
    }
}

