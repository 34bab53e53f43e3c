import Foundation
import KinetraceJSON
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// KeepCalm through simulate → host on UDP, and both new protocols through
/// the stdio host's observation channel.
@Suite(.serialized) struct NewProtocolHostTests {
    @Test func keepCalmJumpsAreDecidedOncePerLabelledJumpAndRecorded() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let hostTrace = dir.appendingPathComponent("host.jsonl").path
        let simTrace = dir.appendingPathComponent("sim.jsonl").path
        let host = try Background.kinetrace("host", "--protocol", "keepcalm-json", "--port", "0", "--trace", hostTrace, "--format", "json", "-v")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let sim = try kinetrace("simulate", "--protocol", "keepcalm-json", "--to", "127.0.0.1:\(port)", "--controllers", "2",
                                "--duration", "9", "--script", "jumps", "--seed", "3", "--trace", simTrace, "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        let hostResult = try host.stop(SIGTERM)
        #expect(hostResult.status == 0, "\(hostResult.stderr)")

        let sent = try TraceStreams(path: simTrace)
        let received = try TraceStreams(path: hostTrace)
        #expect(sent.chunks.count == 2)
        var predictedTotal = 0
        for (controller, messages) in sent.chunks {
            // Every datagram arrived as sent (loopback), each a valid KeepCalm message.
            #expect(received.chunks[controller] == messages)
            #expect(messages.allSatisfy { KeepCalmJSON.facts($0).isValid })
            // The host's decisions are exactly what the latch predicts at the host's own receive times.
            var model = KeepCalmHostModel(rule: .default)
            var predicted: [[Double]] = []
            for (payload, timeNs) in zip(received.chunks[controller] ?? [], received.messageTimes[controller] ?? []) {
                if let decision = model.accept(KeepCalmJSON.facts(payload), from: 0, receivedNs: timeNs).decision { predicted.append(decision.values) }
            }
            let decided = received.decisions[controller] ?? []
            #expect(decided.allSatisfy { $0.name == "jump" })
            #expect(decided.map(\.values) == predicted)
            predictedTotal += predicted.count

            // One jump per labelled jump, decided on a sample sent while that jump was under way.
            let labels = sent.labels.filter { $0.controller == controller && $0.gesture == "jump" }.sorted { $0.timeNs < $1.timeNs }
            #expect(labels.count >= 2)
            let sendTimes = Dictionary(zip(messages.map { KeepCalmJSON.facts($0).motion!.own!.y }, sent.messageTimes[controller]!),
                                       uniquingKeysWith: { first, _ in first })
            // The sample's value is the motion at its schedule; it left at or after it (1 s of slack for a busy machine).
            let windowNs = Int64(MotionSignalModelJumpMs) * 1_000_000 + 1_000_000_000
            var decisionsPerLabel = [Int](repeating: 0, count: labels.count)
            for decision in decided {
                let sentNs = try #require(sendTimes[decision.values[0]])
                let owner = labels.lastIndex { $0.timeNs <= sentNs }
                #expect(owner.map { sentNs < labels[$0].timeNs + windowNs } == true, "a jump decided with no labelled jump under way")
                if let owner { decisionsPerLabel[owner] += 1 }
            }
            // Jumps whose pulse ended before the last sample were each decided exactly once.
            let lastSentNs = sent.messageTimes[controller]!.max()!
            for (label, count) in zip(labels, decisionsPerLabel) where label.timeNs + Int64(MotionSignalModelJumpMs) * 1_000_000 < lastSentNs {
                #expect(count == 1, "jump labelled at \(label.timeNs)")
            }
        }
        #expect(predictedTotal > 0)
        let hostReport = try lastJSONLine(hostResult.stdout)
        #expect(hostReport["triggers"] as? Int == predictedTotal)
        #expect(hostReport["replies_sent"] as? Int == 0)
        // -v logs every decision.
        #expect(hostResult.stderr.components(separatedBy: "jump").count - 1 >= predictedTotal)
        let simReport = try lastJSONLine(sim.stdout)
        #expect(simReport["replies_received"] as? Int == 0)
    }

    /// Runs `kinetrace host --stdio` on `input`; returns its observations per controller.
    func stdioObservations(_ protocolName: String, input: [UInt8]) throws -> (observations: [UInt16: [Observation]], stderr: String, status: Int32) {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let inPath = dir.appendingPathComponent("in.bin").path
        let outPath = dir.appendingPathComponent("out.bin").path
        try Data(input).write(to: URL(fileURLWithPath: inPath))
        let binary = try Fixture.binary.path
        let result = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "'\(binary)' host --stdio --observe --protocol \(protocolName) < '\(inPath)' > '\(outPath)'"])
        var decoder = StdioRecordDecoder()
        decoder.append(try Data(contentsOf: URL(fileURLWithPath: outPath)))
        var observations: [UInt16: [Observation]] = [:]
        while let record = try decoder.next() {
            #expect(record.kind == .observation)
            observations[record.controller, default: []].append(try Observation.decode(record.payload))
        }
        #expect(decoder.pendingBytes == 0)
        return (observations, result.stderr, result.status)
    }

    @Test func theStdioHostFramesEachControllersStreamAndObservesEveryAttitude() throws {
        var generator = SeededGenerator(seed: 77)
        var records: [UInt16: [[UInt8]]] = [:]
        var streams: [UInt16: [UInt8]] = [:]
        for controller in [0, 1, 2] as [UInt16] {
            records[controller] = (0..<20).map { _ in
                AttitudeRecord(roll: Float32(generator.unit() * 6 - 3), pitch: Float32(generator.unit() * 3 - 1.5), yaw: Float32(generator.unit() * 6 - 3)).encoded()
            }
            streams[controller] = records[controller]!.flatMap { $0 }
        }
        // Writes of 1 to 29 bytes, the controllers' records interleaved: no record boundary is a message boundary.
        var input: [UInt8] = []
        var offsets: [UInt16: Int] = [0: 0, 1: 0, 2: 0]
        while offsets.contains(where: { $0.value < streams[$0.key]!.count }) {
            for controller in [0, 1, 2] as [UInt16] {
                let at = offsets[controller]!, stream = streams[controller]!
                guard at < stream.count else { continue }
                let n = min(1 + Int(generator.next() % 29), stream.count - at)
                input += StdioRecord(kind: .controllerToHost, controller: controller, payload: Array(stream[at..<at + n])).encoded()
                offsets[controller] = at + n
            }
        }
        // Controller 3 ends 7 bytes into a record.
        input += StdioRecord(kind: .controllerToHost, controller: 3, payload: Array(repeating: 0, count: 7)).encoded()
        let result = try stdioObservations("attitude-stream", input: input)
        #expect(result.status == 0, "\(result.stderr)")
        for controller in [0, 1, 2] as [UInt16] {
            let observed = result.observations[controller] ?? []
            #expect(observed.allSatisfy { $0.decision == "attitude" })
            #expect(observed.map(\.values) == records[controller]!.map(attitudeValues))
        }
        #expect(result.observations[3] == nil)
    }

    @Test func theStdioHostObservesKeepCalmJumps() throws {
        func message(y: Double, id: UInt64) -> [UInt8] {
            KeepCalmMotion(id: MessageID(randomHigh: id, randomLow: ~id), x: 0.01, y: y, z: -0.02).encoded()
        }
        // Controller 0: a jump, then more high samples at once (the latch holds: one jump). Controller 1: never high.
        var input: [UInt8] = []
        for (i, y) in [0.1, 0.9, 1.2, 0.8, 0.2].enumerated() {
            input += StdioRecord(kind: .controllerToHost, controller: 0, payload: message(y: y, id: UInt64(i))).encoded()
            input += StdioRecord(kind: .controllerToHost, controller: 1, payload: message(y: 0.3, id: UInt64(100 + i))).encoded()
        }
        let result = try stdioObservations("keepcalm-json", input: input)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.observations[0] == [Observation(decision: "jump", values: [0.9])])
        #expect(result.observations[1] == nil)
    }
}

/// How long a scripted jump's pulse lasts (MotionSignalModel.Jump.durationMs), ms.
private let MotionSignalModelJumpMs = 450
