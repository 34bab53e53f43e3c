import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace phone`'s pages and side channel under a lying client (Tests/Browser/phone_hostile.py,
/// over real TLS): every bad request or message gets its one answer, each limit holds, and the
/// session keeps serving the phone that behaves.
@Suite(.serialized) struct PhoneSiteHostileTests {
    static let script = Fixture.packageRoot.appendingPathComponent("Tests/Browser/phone_hostile.py").path

    @Test(.enabled(if: Requirement.python3.runs)) func everyBadRequestAndMessageIsRefusedAndTheSessionGoesOn() throws {
        try Requirement.python3.check()
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let phone = try Background(URL(fileURLWithPath: "/usr/bin/env"), [
            "XDG_DATA_HOME=\(directory.path)", try Fixture.binary.path, "phone", "--bind", "127.0.0.1", "--port", "0", "--no-qr",
            "--max-phones", "2", "--trace", directory.appendingPathComponent("t.jsonl").path,
        ])
        let port = try #require(try phone.waitForLine(startingWith: "listening on ").split(separator: ":").last.map(String.init))
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.script, "127.0.0.1", port, "--phones-full"], timeout: 60)
        let stopped = try phone.stop()
        #expect(result.status == 0, "\(result.stderr)")
        let r = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        // Pages: what is not served is 404, other methods 405, a head over 8 KiB 400, another upgrade path 404.
        #expect(r["unknown_path"] as? Int == 404 && r["post"] as? Int == 405 && r["huge_head"] as? Int == 400 && r["other_upgrade"] as? Int == 404)
        #expect((r["head"] as? [Int]) == [200, 0])
        // Each refusal names what was wrong.
        #expect((r["not_json"] as? String)?.contains("JSON object") == true)
        #expect((r["label_first"] as? String)?.contains("first message is hello") == true)
        #expect((r["bad_token"] as? String)?.contains("8 to 64 letters and digits") == true)
        #expect((r["control_name"] as? String)?.contains("no control characters") == true)
        #expect((r["long_name"] as? String)?.contains("1 to 32 characters") == true)
        #expect((r["label_before_stream"] as? String)?.contains("names no controller") == true)
        #expect((r["unknown_gesture"] as? String)?.contains("jump, duck, tilt_left, tilt_right") == true)
        #expect((r["label_a_year_off"] as? String)?.contains("within a day") == true)
        #expect((r["zero_duration"] as? String)?.contains("from 1 to 10000") == true)
        #expect((r["welcome"] as? [String: Any])?["controller"] as? String != nil)
        #expect((r["good_label"] as? [String: Any])?["labels"] as? Int == 1)
        // A burst of 5 labels (one already spent), then 2 a second: of 12 at once, 4 pass.
        let flood = try #require(r["label_flood"] as? [Int])
        #expect(flood.count == 2 && (4...5).contains(flood[0]) && flood[0] + flood[1] == 12, "\(flood)")
        // Closes: a second channel for one phone 1008, a message over 4 KiB 1009, binary 1003, 50 refusals 1008, a full session 1008.
        #expect(r["second_channel"] as? Int == 1008 && r["oversized_message"] as? Int == 1009 && r["binary_frame"] as? Int == 1003 && r["noisy"] as? Int == 1008)
        #expect((r["phones_full"] as? [Any])?.contains { $0 as? Int == 1008 } == true, "\(String(describing: r["phones_full"]))")
        // Fragments out of order: a continuation with no message, a new message inside one: 1002.
        #expect(r["orphan_continuation"] as? Int == 1002 && r["message_inside_message"] as? Int == 1002)
        // The phone that behaved is listed with its trimmed name and its labels.
        let listed = try #require((r["phones_after"] as? [String: Any])?["phones"] as? [[String: Any]])
        let eve = try #require(listed.first { $0["name"] as? String == "Eve" })
        #expect(eve["streaming"] as? Bool == true && eve["labels"] as? Int == 1 + flood[0])
        // No sample was streamed: the session says so and does not exit 0.
        #expect(stopped.status == 1 && stopped.stderr.contains("no phone streamed a sample"), "\(stopped.stderr)")
        let trace = try String(contentsOf: directory.appendingPathComponent("t.jsonl"), encoding: .utf8)
        #expect(trace.components(separatedBy: "\"kind\":\"label\"").count - 1 == 1 + flood[0])
    }

    /// A phone whose stream reconnects, and which switches modes, keeps one cadence of cues: a
    /// new introduction does not start a second chain (which would double the cue rate).
    @Test(.enabled(if: Requirement.python3.runs)) func aReconnectingPhoneKeepsOneCadenceOfCues() throws {
        try Requirement.python3.check()
        let directory = try Fixture.temporaryDirectory()
        defer { Fixture.remove(directory) }
        let phone = try Background(URL(fileURLWithPath: "/usr/bin/env"), [
            "XDG_DATA_HOME=\(directory.path)", try Fixture.binary.path, "phone", "--bind", "127.0.0.1", "--port", "0", "--no-qr", "--cue-every", "0.5",
        ])
        let port = try #require(try phone.waitForLine(startingWith: "listening on ").split(separator: ":").last.map(String.init))
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.script, "127.0.0.1", port, "--cue-chain"], timeout: 60)
        _ = try phone.stop()
        #expect(result.status == 0, "\(result.stderr)")
        let r = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        // 3 s at one cue each 0.5 s: 5 or 6; a chain per introduction would give about 30.
        let cues = try #require(r["cues_in_3s"] as? Int)
        #expect((4...7).contains(cues), "\(cues) cues in 3 s at one each 0.5 s")
    }
}
