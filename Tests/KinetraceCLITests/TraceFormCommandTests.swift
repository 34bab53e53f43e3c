import Foundation
import KinetraceTestSupport
import Testing

// The two forms of a trace through the commands: chosen by the output's name,
// read by every command whatever its name, cut by --start and --end the same way.
@Suite struct TraceFormCommandTests {
    /// JSON Lines → MCAP (plain and zstd) → JSON Lines is the same file, and a pcap converts to MCAP.
    @Test func convertRoundTripsThroughMCAP() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        for compression in ["none", "zstd"] {
            let mcap = path("session-\(compression).mcap"), back = path("back-\(compression).jsonl")
            let there = try kinetrace(["convert", Fixture.bundledTrace, mcap, "--compression", compression])
            #expect(there.status == 0, "\(there.stderr)")
            #expect(there.stdout.contains("(mcap)"))
            let again = try kinetrace(["convert", mcap, back])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(FileManager.default.contentsEqual(atPath: Fixture.bundledTrace, andPath: back), "\(compression)")
        }
        let pcap = path("session.pcap"), fromPcap = path("from-pcap.mcap")
        #expect(try kinetrace(["convert", Fixture.bundledTrace, pcap]).status == 0)
        let converted = try kinetrace(["convert", pcap, fromPcap])
        #expect(converted.status == 0, "\(converted.stderr)")
        let viaJSONL = path("from-pcap.jsonl"), viaMCAP = path("from-pcap-back.jsonl")
        #expect(try kinetrace(["convert", pcap, viaJSONL]).status == 0)
        #expect(try kinetrace(["convert", fromPcap, viaMCAP]).status == 0)
        // The headers differ only in the creation time a capture's conversion stamps; the records must not.
        let lines = { (p: String) in (try? String(contentsOfFile: p, encoding: .utf8))?.split(separator: "\n").dropFirst() ?? [] }
        #expect(!lines(viaJSONL).isEmpty)
        #expect(lines(viaJSONL) == lines(viaMCAP))
    }

    /// A window gives the same summary from either form; from MCAP it reads a fraction of the file.
    @Test func windowAgreesAcrossForms() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let jsonl = dir.appendingPathComponent("long.jsonl").path, mcap = dir.appendingPathComponent("long.mcap").path
        #expect(try kinetrace(["synth", "--out", jsonl, "--controllers", "40", "--duration", "600", "--seed", "30"]).status == 0)
        #expect(try kinetrace(["convert", jsonl, mcap]).status == 0)
        let window = ["--start", "300", "--end", "315", "--format", "json"]
        let fromJSONL = try kinetrace(["inspect", jsonl] + window)
        let fromMCAP = try kinetrace(["inspect", mcap] + window)
        #expect(fromJSONL.status == 0 && fromMCAP.status == 0, "\(fromJSONL.stderr) \(fromMCAP.stderr)")
        func withoutBytes(_ text: String) -> [String: Any] {
            var object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
            object["bytes"] = nil
            object["source"] = nil
            return object
        }
        let a = withoutBytes(fromJSONL.stdout), b = withoutBytes(fromMCAP.stdout)
        #expect(!a.isEmpty)
        #expect(NSDictionary(dictionary: a).isEqual(to: b), "the two forms summarise the window differently")
        let whole = try #require(FileManager.default.attributesOfItem(atPath: mcap)[.size] as? Int)
        let object = (try? JSONSerialization.jsonObject(with: Data(fromMCAP.stdout.utf8))) as? [String: Any]
        let read = try #require((object?["bytes"] as? [String: Any])?["file"] as? Int)
        #expect(read * 10 < whole, "a 15 s window of 600 s read \(read) of \(whole) bytes")
        // Replay plans the same window from either form.
        let plan = ["--dry-run", "--format", "json", "--start", "300", "--end", "302"]
        let replayJSONL = try kinetrace(["replay", jsonl] + plan), replayMCAP = try kinetrace(["replay", mcap] + plan)
        #expect(replayJSONL.status == 0, "\(replayJSONL.stderr)")
        let digest = { (text: String) in ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["schedule_digest"] as? String }
        #expect(digest(replayJSONL.stdout) != nil, "\(replayJSONL.stdout.prefix(300))")
        #expect(digest(replayJSONL.stdout) == digest(replayMCAP.stdout), "the two forms plan different schedules")
    }

    @Test func compressionNeedsMCAP() throws {
        let convert = try kinetrace(["convert", Fixture.bundledTrace, "/tmp/kinetrace-never.jsonl", "--compression", "zstd"])
        #expect(convert.status == 64)
        #expect(convert.stderr.contains("MCAP"))
        #expect(try kinetrace(["synth", "--out", "/tmp/kinetrace-never.jsonl", "--compression", "zstd"]).status == 64)
        #expect(try kinetrace(["convert", Fixture.bundledTrace, "/tmp/kinetrace-never.mcap", "--compression", "lz4"]).status == 64)
        #expect(try kinetrace(["inspect", Fixture.bundledTrace, "--start", "5", "--end", "2"]).status == 64)
        #expect(try kinetrace(["inspect", Fixture.bundledTrace, "--start", "nan"]).status == 64)
        // A window that selects nothing is not green: one line, exit 65, saying how far the input reaches.
        let trace = Fixture.bundledTrace
        for arguments in [["inspect", trace, "--start", "5000"],
                          ["convert", trace, "/tmp/kinetrace-never-written.jsonl", "--start", "5000"],
                          ["gestures", "eval", trace, "--detector", "threshold-refractory", "--start", "5000"],
                          ["latency", trace, "--start", "5000"]] {
            let result = try kinetrace(arguments)
            #expect(result.status == 65 && result.stderr.contains("--start 5000.000 s selects no record"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
        }
    }

    /// A damaged MCAP trace is one line naming the byte, and the data-error exit status.
    @Test func damagedMCAPIsNamed() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mcap = dir.appendingPathComponent("d.mcap").path
        #expect(try kinetrace(["convert", Fixture.bundledTrace, mcap]).status == 0)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: mcap)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: mcap))
        let result = try kinetrace(["inspect", mcap])
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("d.mcap: byte "))
        // gzip over an MCAP trace: named, with the way round it.
        let zipped = dir.appendingPathComponent("z.mcap").path
        #expect(try kinetrace(["convert", Fixture.bundledTrace, zipped]).status == 0)
        #expect(try run(URL(fileURLWithPath: "/usr/bin/env"), ["gzip", "-f", zipped]).status == 0)
        let gzipped = try kinetrace(["inspect", zipped + ".gz"])
        #expect(gzipped.status == 65 && gzipped.stderr.contains("gzip-compressed MCAP trace"), "\(gzipped.stderr)")
    }
}
