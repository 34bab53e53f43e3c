import Foundation
import KinetraceTestSupport
import Testing

/// Issue 16, item 5: convert writes pcapng with nanosecond resolution, one interface
/// description, and the trace's labels and events as packet comments on the nearest
/// packet; reading it back restores them. tshark and tcpdump are the independent readers.
@Suite(.enabled(if: Requirement.tools("tshark", "tcpdump", "editcap").runs, "needs tshark, tcpdump and editcap; with CI set this fails instead"))
struct PcapngOutTests {
    init() throws { try Requirement.tools("tshark", "tcpdump", "editcap").check() }

    static let session = Fixture.packageRoot.appendingPathComponent("captures/synthetic-session.jsonl").path

    /// The record lines of a trace, without the header and the informative members a reader may add.
    func records(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").dropFirst().map { line in
            var object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            object["decoded"] = nil
            object["valid"] = nil
            return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        }
    }

    @Test func labelsAndEventsGoThroughPcapngAndBack() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcapng = dir.appendingPathComponent("s.pcapng").path, back = dir.appendingPathComponent("back.jsonl").path
        let out = try kinetrace(["convert", Self.session, pcapng, "--format", "json"])
        #expect(out.status == 0, "\(out.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
        let original = try records(Self.session)
        let annotations = original.filter { $0.contains("\"kind\":\"label\"") || $0.contains("\"kind\":\"event\"") }
        #expect(annotations.count == 66)
        #expect(summary["comments_written"] as? Int == annotations.count)

        // tshark: the comments are Wireshark's frame.comment, each a record line; tcpdump reads every packet.
        let comments = try run(URL(fileURLWithPath: "/usr/bin/env"), ["tshark", "-r", pcapng, "-Y", "frame.comment", "-T", "fields", "-e", "frame.comment"])
        #expect(comments.status == 0, "\(comments.stderr)")
        // A frame with two comments lists both on its line: count the record lines themselves.
        #expect(comments.stdout.components(separatedBy: "{\"kind\":").count - 1 == annotations.count, "\(comments.stdout.prefix(400))")
        #expect(comments.stdout.contains("\"event\":\"seed\""))
        let packets = try run(URL(fileURLWithPath: "/usr/bin/env"), ["tcpdump", "-nn", "-r", pcapng])
        #expect(packets.stdout.split(separator: "\n").count == summary["records_written"] as? Int)

        // Nanosecond resolution: the first packet's time is the first message's t_ns exactly.
        let firstTime = try run(URL(fileURLWithPath: "/usr/bin/env"), ["tshark", "-r", pcapng, "-c", "1", "-T", "fields", "-e", "frame.time_epoch"])
        let firstMessage = try #require(original.first { $0.contains("\"kind\":\"msg\"") })
        let tNs = try #require(firstMessage.firstMatch(of: /"t_ns":(\d+)/)).1
        #expect(firstTime.stdout.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ".", with: "") == String(tNs))

        // Back to a trace: every record, in the same order.
        let read = try kinetrace(["convert", pcapng, back, "--port", "47110"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(try records(back) == original)
    }

    /// Anyone else's packet comment (Wireshark's "Packet Comment…", here editcap's) reads as a pcapng_comment event.
    @Test func aForeignCommentIsAnEvent() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let plain = dir.appendingPathComponent("plain.pcapng").path, commented = dir.appendingPathComponent("c.pcapng").path
        let back = dir.appendingPathComponent("back.jsonl").path
        #expect(try kinetrace(["convert", Fixture.packageRoot.appendingPathComponent("captures/loopback-session.jsonl").path, plain]).status == 0)
        let edit = try run(URL(fileURLWithPath: "/usr/bin/env"), ["editcap", "-a", "3:checked by hand, see ticket 7", plain, commented])
        #expect(edit.status == 0, "\(edit.stderr)")
        let read = try kinetrace(["convert", commented, back, "--port", "41448"])
        #expect(read.status == 0, "\(read.stderr)")
        let lines = try records(back)
        let events = lines.filter { $0.contains("pcapng_comment") }
        #expect(events.count == 1 && events[0].contains("checked by hand, see ticket 7"), "\(events)")
        #expect(lines.firstIndex { $0.contains("pcapng_comment") }.map { $0 >= 2 && $0 <= 3 } == true, "beside packet 3")
    }

    /// Mutated pcapngs with comments never trap the reader or the comment walker: each run ends
    /// with an exit status from the documented set.
    @Test func mutatedPcapngsFailCleanly() async throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcapng = dir.appendingPathComponent("s.pcapng")
        let head = dir.appendingPathComponent("head.jsonl")
        let lines = try String(contentsOfFile: Self.session, encoding: .utf8).split(separator: "\n").prefix(120)
        try (lines.joined(separator: "\n") + "\n").write(to: head, atomically: true, encoding: .utf8)
        #expect(try kinetrace(["convert", head.path, pcapng.path]).status == 0)
        let bytes = try [UInt8](Data(contentsOf: pcapng))
        await seededPropertyCheck(count: 40, draw: { rng in
            (0..<Int.random(in: 1...6, using: &rng)).map { _ in (Int.random(in: 0..<bytes.count, using: &rng), UInt8.random(in: 0...255, using: &rng)) }
        }) { edits in
            var mutated = bytes
            for (at, value) in edits { mutated[at] = value }
            let path = dir.appendingPathComponent("m.pcapng")
            try Data(mutated).write(to: path)
            let result = try kinetrace(["inspect", path.path, "--port", "47110"])
            #expect(!result.signalled, "trapped on \(edits)")
            #expect([0, 65].contains(result.status), "\(edits): \(result.status) \(result.stderr)")
        }
    }
}
