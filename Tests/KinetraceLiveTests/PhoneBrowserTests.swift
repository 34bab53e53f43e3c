import Foundation
import KinetraceJSON
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// `kinetrace phone` in a real browser: Debian's headless Chromium, its motion sensors
/// emulated through the DevTools protocol (Tests/Browser/phone_browser.py), against the real
/// command over HTTPS and wss://. What the emulated sensors said must be in the host's trace,
/// value for value, for every protocol the page offers; a cue and an emulated jump must give a
/// label and a decision that `gestures eval` scores.
@Suite(.serialized) struct PhoneBrowserTests {
    static let driver = Fixture.packageRoot.appendingPathComponent("Tests/Browser/phone_browser.py").path
    static let needs = Requirement.tools("chromium", "python3")
    static let g = 9.80665

    /// A running `kinetrace phone` on loopback, its certificate kept in a private directory.
    struct Session {
        let process: Background
        let url: String
        let directory: URL
        var trace: String { directory.appendingPathComponent("phone.jsonl").path }

        init(_ extra: [String]) throws {
            directory = try Fixture.temporaryDirectory()
            let trace = directory.appendingPathComponent("phone.jsonl").path
            process = try Background(URL(fileURLWithPath: "/usr/bin/env"), [
                "XDG_DATA_HOME=\(directory.path)", try Fixture.binary.path, "phone", "--bind", "127.0.0.1", "--port", "0",
                "--trace", trace, "--no-qr", "--format", "json",
            ] + extra)
            let line = try process.waitForLine(startingWith: "phone page: ")
            url = String(line.dropFirst("phone page: ".count))
        }

        /// Runs the driver's scenario; its JSON result.
        func drive(_ scenario: String, _ extra: [String] = []) throws -> [String: Any] {
            let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", PhoneBrowserTests.driver, "--url", url, "--scenario", scenario] + extra,
                                 timeout: 120)
            guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
                throw FixtureError("the browser driver failed (\(result.status)): \(result.stderr) \(result.stdout)")
            }
            return object
        }

        func stop() throws -> RunResult { try process.stop(SIGINT) }
    }

    static func records(_ path: String) throws -> (any WireProtocol, [TraceRecord]) {
        let reader = try TraceReader(path: path)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        return (reader.wireProtocol, records)
    }

    /// Chromium's readings as the page turns them into the trace's vectors (see PhonePage.swift).
    static func expected(_ reading: [String: [Double]], ownSumOf: [VectorSlot]) -> MotionReading {
        let user = reading["user_ms2"]!.map { $0 / g }, rate = reading["rate_dps"]!.map { $0 * .pi / 180 }
        let angles = reading["angles"]!  // alpha, beta, gamma in degrees
        var motion = MotionReading(userAcceleration: Vector3(user[0], user[1], user[2]), rotationRate: Vector3(rate[0], rate[1], rate[2]),
                                   gravity: Vector3(reading["gravity_ms2"]![0] / g, reading["gravity_ms2"]![1] / g, reading["gravity_ms2"]![2] / g),
                                   attitude: Vector3(angles[2] * .pi / 180, angles[1] * .pi / 180, angles[0] * .pi / 180))
        if !ownSumOf.isEmpty {
            let sum = (0..<3).map { axis in ownSumOf.reduce(0.0) { $0 + (motion.value($1, axis: axis) ?? 0) } }
            motion.own = Vector3(sum[0], sum[1], sum[2])
        }
        return motion
    }

    static let protocols = ["motionlink-v1", "keepcalm-json", "attitude-stream", "examples/protocols/osc-motion.json", "examples/protocols/ndjson-motion.json",
                                  "Tests/Browser/protocols/checked-binary.json", "Tests/Browser/protocols/line-text.json"]

    /// Every protocol the page offers: the held reading arrives in the trace, in every role the
    /// protocol's samples carry, as the sensors gave it (Chromium's 0.1 rounding kept exact by
    /// the values chosen; float32 fields within their rounding).
    @Test(.enabled(if: needs.runs), arguments: protocols)
    func theEmulatedMotionArrivesValueForValue(_ name: String) throws {
        try Self.needs.check()
        let argument = name.hasSuffix(".json") ? Fixture.packageRoot.appendingPathComponent(name).path : name
        let session = try Session(["--protocol", argument])
        defer { Fixture.remove(session.directory) }
        let result = try session.drive("values", ["--seconds", "2"])
        let stopped = try session.stop()
        #expect(stopped.status == 0, "\(stopped.stderr)")
        let reading = try #require(result["reading"] as? [String: [Double]])
        let heldFromMs = try #require(result["held_from_ms"] as? Double)
        let (wireProtocol, records) = try Self.records(session.trace)
        let template = try SampleTemplate(wireProtocol)
        let expected = Self.expected(reading, ownSumOf: template.ownSumOf)
        let roles = template.slots.compactMap { slot -> (VectorSlot, Int)? in
            if case .motion(let vector, let axis) = slot.content { return (vector, axis) } else { return nil }
        }
        #expect(!roles.isEmpty)
        var compared = 0
        for case .message(let message) in records where message.direction == .controllerToHost {
            let facts = message.payload.withUnsafeBytes { wireProtocol.facts($0) }
            #expect(facts.isValid, "an invalid sample from the page: \(message.payload.bytes)")
            // Arrivals a tick after the hold began carry it.
            guard message.timeNs >= Int64(heldFromMs * 1e6) + 50_000_000, let motion = facts.motion else { continue }
            compared += 1
            for (vector, axis) in roles {
                let got = try #require(motion.value(vector, axis: axis)), want = try #require(expected.value(vector, axis: axis))
                #expect(abs(got - want) <= 1e-6 + 1e-6 * abs(want), "\(name) \(vector).\(axis): \(got) in the trace, \(want) emulated")
            }
        }
        // 2 s at the protocol's rate, less a tick or two either side.
        #expect(Double(compared) >= wireProtocol.nominalRateHz * 1.5, "\(name): \(compared) samples compared")
        let status = try #require(result["status"] as? [String: Any])
        #expect(status["error"] as? String == "" && status["stalled"] as? Int == 0, "\(status)")
        // The free-mode tap: one label, covering the 700 ms before the tap on the phone's clock.
        let tapped = try #require(result["tapped_ms"] as? Double)
        let labels = records.compactMap { if case .label(let l) = $0 { return l } else { return nil } }
        #expect(labels.count == 1 && labels.first?.gesture == "jump" && labels.first?.durationMs == 700, "\(labels)")
        if let onset = labels.first?.senderTimeMs { #expect(abs(Double(onset) + 700 - tapped) < 250, "label at \(onset), tap at \(tapped)") }
    }

    /// Guided mode: each cue gives a label at the cue's time; an emulated jump after it gives a
    /// host decision (a haptic ack, which the page turns into a vibration); `gestures eval`
    /// scores the page's own labels against the host model: every jumped cue found, nothing
    /// false. The trace also reads for latency.
    @Test(.enabled(if: needs.runs)) func aCueAndAnEmulatedJumpGiveALabelAndADecision() throws {
        try Self.needs.check()
        let session = try Session(["--cue-every", "1.5", "--seed", "7"])
        defer { Fixture.remove(session.directory) }
        let result = try session.drive("jump", ["--cues", "3"])
        let stopped = try session.stop()
        #expect(stopped.status == 0, "\(stopped.stderr)")
        let jumps = try #require(result["jumps_ms"] as? [Double])
        #expect(jumps.count == 3)
        let (_, records) = try Self.records(session.trace)
        let labels = records.compactMap { if case .label(let l) = $0 { return l } else { return nil } }
        let acks = records.compactMap { record -> MessageRecord? in
            if case .message(let m) = record, m.direction == .hostToController { return m } else { return nil }
        }
        #expect(labels.count >= 3 && labels.allSatisfy { $0.gesture == "jump" && $0.controller != nil })
        for jump in jumps {
            // The label carries the cue's moment on the phone's clock: 300 ms before the jump, as driven.
            let cue = labels.first { Double($0.senderTimeMs ?? 0) <= jump && jump - Double($0.senderTimeMs ?? 0) < 600 }
            #expect(cue != nil, "no label within 600 ms before the jump at \(jump): \(labels)")
            #expect(acks.contains { Double($0.timeNs) / 1e6 >= jump && Double($0.timeNs) / 1e6 - jump < 400 }, "no decision after the jump at \(jump)")
        }
        let status = try #require(result["status"] as? [String: Any])
        #expect(status["decisions"] as? Int == acks.count && (status["vibrated"] as? Int ?? 0) + (status["flashed"] as? Int ?? 0) == acks.count, "\(status)")
        let phoneEvents = records.filter { if case .event(let e) = $0 { return e.event == "phone" } else { return false } }
        #expect(phoneEvents.count == 1)

        let eval = try kinetrace(["gestures", "eval", "--detector", "host-model", "--format", "json", session.trace])
        #expect(eval.status == 0, "\(eval.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(eval.stdout.utf8)) as? [String: Any])
        let summary = try #require(report["summary"] as? [String: Any])
        // Cues after the last jump (the session ran on a moment) are labels nobody jumped to.
        #expect(summary["tp"] as? Int == 3 && summary["fp"] as? Int == 0 && summary["fn"] as? Int == labels.count - 3, "\(summary)")
        let latency = try kinetrace(["latency", session.trace])
        #expect(latency.status == 0 && latency.stdout.contains("One-way latency"), "\(latency.stderr)")
    }

    /// Several phones at once, each its own window: each is a controller named by its player,
    /// in the trace and on the operator's list (one name is HTML, which stays text).
    @Test(.enabled(if: needs.runs)) func manyPhonesAreNamedControllers() throws {
        try Self.needs.check()
        let session = try Session(["--mode", "free"])
        defer { Fixture.remove(session.directory) }
        let result = try session.drive("many", ["--phones", "3", "--seconds", "1.5", "--hostile-name"])
        let stopped = try session.stop()
        #expect(stopped.status == 0, "\(stopped.stderr)")
        let names = try #require(result["names"] as? [String])
        let operatorList = try #require(result["operator"] as? [String: Any])
        let listed = try #require(operatorList["phones"] as? [[String: Any]])
        #expect(Set(listed.compactMap { $0["name"] as? String }) == Set(names))
        // A name written as HTML shows as its text on the operator's page, and makes no element.
        let rendered = try #require(result["operator_page"] as? [String: Any])
        #expect(rendered["markup"] as? Int == 0 && (rendered["names"] as? [String])?.contains(names[0]) == true, "\(rendered)")
        #expect(listed.allSatisfy { ($0["samples"] as? Int ?? 0) > 0 && $0["streaming"] as? Bool == true }, "\(listed)")
        let (_, records) = try Self.records(session.trace)
        var named: [String: String] = [:]
        for case .event(let e) in records where e.event == "phone" {
            if let controller = e.data["controller"]?.stringValue, let name = e.data["name"]?.stringValue { named[controller] = name }
        }
        #expect(Set(named.values) == Set(names) && named.count == 3)
        for controller in named.keys {
            let samples = records.filter { if case .message(let m) = $0 { return m.source.description == controller } else { return false } }
            #expect(samples.count >= 10, "\(controller) sent \(samples.count)")
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(stopped.stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
        #expect((summary["phones"] as? [Any])?.count == 3)
    }

    /// Motion access refused: the page says so and sends nothing, and a session that recorded no
    /// sample says so and exits 1 rather than 0.
    @Test(.enabled(if: needs.runs)) func refusedMotionSendsNothingAndTheSessionSaysSo() throws {
        try Self.needs.check()
        let session = try Session([])
        defer { Fixture.remove(session.directory) }
        let result = try session.drive("deny")
        let stopped = try session.stop()
        let status = try #require(result["status"] as? [String: Any])
        #expect((status["error"] as? String ?? "").contains("not allowed") && status["sent"] as? Int == 0, "\(status)")
        #expect(stopped.status == 1 && stopped.stderr.contains("no phone streamed a sample"), "\(stopped.status) \(stopped.stderr)")
    }
}
