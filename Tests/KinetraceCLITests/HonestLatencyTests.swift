import Foundation
import KinetraceJSON
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// Issue 27, item 3: `latency` never prints a raw figure across clocks that cannot be compared
/// without saying so, and a replay says what network its figures went through (item 4).
@Suite struct HonestLatencyTests {
    /// A host's trace of a phone whose clock is 329 days behind: one-way 70 ms, offset huge.
    static func offsetTrace(at path: String, offsetDays: Int64 = 329) throws {
        let host = Endpoint(host: "127.0.0.1", port: 47110)
        let controller = Endpoint(host: "10.0.0.7", port: 50000)
        let offsetNs = offsetDays * 86_400_000_000_000
        var records: [TraceRecord] = []
        let startMs: UInt64 = 1_767_225_600_000
        for i in 0..<200 {
            let tMs = startMs + UInt64(i * 100)
            let arrivalNs = Int64(tMs) * 1_000_000 + offsetNs + 70_000_000 + Int64(i % 7) * 100_000
            records.append(.message(MessageRecord(timeNs: arrivalNs, direction: .controllerToHost, source: controller,
                                                  destination: host, payload: MotionFrame(tMs: tMs, ay: 0.01).encoded())))
        }
        let header = TraceHeader(created: "2026-11-26T00:00:00.000Z", tool: "HonestLatencyTests", capturePoint: .host, clock: .realtime)
        try Data(TraceEncoder.document(header: header, records: records)).write(to: URL(fileURLWithPath: path))
    }

    @Test func aClockDaysOffWithholdsTheRawFigureAndSaysWhy() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("host.jsonl").path
        try Self.offsetTrace(at: trace)

        let text = try kinetrace("latency", trace)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(!text.stdout.contains("One-way latency, raw (c2h samples: t_receive − sender time), ms"), "no raw table: \(text.stdout)")
        #expect(text.stdout.contains("raw figures withheld"))
        #expect(text.stdout.contains("differ by 329 days"))
        #expect(text.stdout.contains("One-way latency, relative"))
        // The 329-day offset (28,425,600,000 ms) shows only as a median the text says is no latency.
        for line in text.stdout.split(separator: "\n") where line.contains("28425") {
            #expect(line.hasSuffix("28425600070.300"), "only in the median column: \(line)")
        }
        #expect(text.stdout.contains("median*") && text.stdout.contains("* median: the offset between the two clocks"))

        let json = try kinetrace("latency", trace, "--format", "json")
        #expect(json.status == 0, "\(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let first = try #require((report["traces"] as? [[String: Any]])?.first)
        let measures = (first["measures"] as? [[String: Any]] ?? []).compactMap { $0["measure"] as? String }
        #expect(!measures.contains("one_way_raw") && measures.contains("one_way_relative"), "\(measures)")
        let unavailable = first["unavailable"] as? [[String: Any]] ?? []
        let reason = unavailable.first { $0["measure"] as? String == "one_way_raw" }?["reason"] as? String
        #expect(reason?.contains("different clocks") == true, "\(unavailable)")

        // Asking to plot it is refused with the same reason, not drawn.
        let plot = try kinetrace("latency", trace, "--plot", dir.appendingPathComponent("f.svg").path, "--plot-measure", "one-way-raw")
        #expect(plot.status == 65)
        #expect(plot.stderr.contains("different clocks"), "\(plot.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("f.svg").path))
    }

    /// A header's `replay` member is input: its texts reach the terminal escaped, and a malformed
    /// one (an unknown timestamp policy) is ignored rather than trusted.
    @Test func aHostileReplayMemberStaysText() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostile = "\u{1B}]0;owned\u{07}\u{1B}[2J\r\nkinetrace: error: forged"
        for (timestamps, honoured) in [("shift", true), ("sometimes", false)] {
            let plain = dir.appendingPathComponent("plain.jsonl").path
            try Self.offsetTrace(at: plain, offsetDays: 0)
            var lines = try String(contentsOfFile: plain, encoding: .utf8).split(separator: "\n").map(String.init)
            var header = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
            header["replay"] = ["source": hostile, "timestamps": timestamps, "network": hostile, "basis": "assumed", "provenance": hostile]
            lines[0] = String(decoding: try JSONSerialization.data(withJSONObject: header), as: UTF8.self)
            let path = dir.appendingPathComponent("hostile-\(timestamps).jsonl").path
            try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            let result = try kinetrace("latency", path)
            #expect(result.status == 0, "\(result.stderr)")
            let raw = result.stdout.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7F }
            #expect(raw.isEmpty, "raw control characters \(raw.map(\.value))")
            #expect(!result.stdout.split(separator: "\n").contains { $0.hasPrefix("kinetrace: error: forged") })
            #expect(result.stdout.contains("withheld") == honoured, "\(timestamps)")
        }
    }

    /// A clock a second off is a plausible network figure: shown as measured (the bound is a minute).
    @Test func aSmallOffsetIsStillShown() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("host.jsonl").path
        try Self.offsetTrace(at: trace, offsetDays: 0)
        let text = try kinetrace("latency", trace)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("One-way latency, raw (c2h samples: t_receive − sender time), ms"))
        #expect(!text.stdout.contains("withheld"))
    }

    /// A real replay through lab-5ghz to a real host process: the record keeps the capture's stamps
    /// by default (raw withheld, said why), and with --timestamps wallclock the raw one-way figure
    /// is the emulated delay; both outputs and the record carry the network's provenance.
    @Test func aReplaysRecordSaysWhatItsFiguresMean() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let binary = try Fixture.binary.path
        for timestamps in ["shift", "wallclock"] {
            let record = dir.appendingPathComponent("replay-\(timestamps).jsonl").path
            let replay = try kinetrace(["replay", Fixture.bundledTrace, "--exec", "exec '\(binary)' host --stdio", "--duration", "3",
                                        "--network", "lab-5ghz", "--timestamps", timestamps, "--record", record, "--format", "json"])
            #expect(replay.status == 0, "\(replay.stderr)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(replay.stdout.utf8)) as? [String: Any])
            let network = summary["network"] as? [String: Any]
            #expect(network?["name"] as? String == "lab-5ghz" && network?["basis"] as? String == "cited", "\(String(describing: network))")
            #expect((network?["provenance"] as? String)?.hasPrefix("Paper figures") == true)
            // The round trip from the scheduled departure includes the 70 ms the network adds; the one from the send does not.
            let actual = summary["round_trip_ms"] as? [String: Any], path = summary["round_trip_path_ms"] as? [String: Any]
            let actualP50 = try #require(actual?["p50"] as? Double), pathP50 = try #require(path?["p50"] as? Double)
            #expect(pathP50 - actualP50 > 40, "path \(pathP50) ms against actual \(actualP50) ms")

            let header = try #require(try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").first)
            let headerObject = try #require(try JSONSerialization.jsonObject(with: Data(header.utf8)) as? [String: Any])
            let provenance = headerObject["replay"] as? [String: Any]
            #expect(provenance?["timestamps"] as? String == timestamps && provenance?["network"] as? String == "lab-5ghz")

            let latency = try kinetrace("latency", record)
            #expect(latency.status == 0, "\(latency.stderr)")
            #expect(latency.stdout.contains("network lab-5ghz (cited)"), "the provenance is repeated: \(latency.stdout.prefix(600))")
            if timestamps == "shift" {
                #expect(latency.stdout.contains("--timestamps shift"))
                #expect(latency.stdout.contains("raw figures withheld"))
                #expect(!latency.stdout.contains("One-way latency, raw (c2h samples: t_receive − sender time), ms"))
            } else {
                #expect(!latency.stdout.contains("withheld"))
                #expect(latency.stdout.contains("the lab-5ghz network's delay, as emulated"))
                let json = try kinetrace("latency", record, "--format", "json")
                let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
                let measures = (report["traces"] as? [[String: Any]])?.first?["measures"] as? [[String: Any]] ?? []
                let raw = try #require(measures.first { $0["measure"] as? String == "one_way_raw" })
                let mean = try #require(((raw["all"] as? [String: Any])?["table_ms"] as? [String: Any])?["mean"] as? Double)
                // lab-5ghz's delay has mean 70.4 ms: the stamps are the scheduled departures.
                #expect(mean > 60 && mean < 120, "one-way raw mean \(mean) ms")
            }
        }
    }
}
