import Foundation
import KinetraceSimulation
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// One synthesized session, split by record kind.
private struct Session {
    var header: TraceHeader
    var records: [TraceRecord] = []
    var samples: [MotionSampleRecord] = []
    var frames: [(record: MessageRecord, frame: MotionFrame)] = []
    var labels: [LabelRecord] = []

    init(_ configure: (inout GestureSessionSynthesizer.Configuration) -> Void) {
        var configuration = GestureSessionSynthesizer.Configuration()
        configure(&configuration)
        var synthesizer = GestureSessionSynthesizer(configuration)
        header = synthesizer.header(tool: "test")
        while let record = synthesizer.next() {
            records.append(record)
            switch record {
            case .motion(let sample): samples.append(sample)
            case .label(let label): labels.append(label)
            case .message(let message):
                if case .success(.frame(let frame)) = message.decoded(as: MotionLinkV1()) { frames.append((message, frame)) }
            case .event: break
            }
        }
    }

    var bytes: [UInt8] { try! TraceEncoder.document(header: header, records: records) }

    func samples(during label: LabelRecord, from start: Double = 0, to end: Double = 1) -> [MotionSampleRecord] {
        let onset = Double(label.senderTimeMs!), duration = Double(label.durationMs!)
        return samples.filter {
            $0.controller == label.controller && Double($0.senderTimeMs) >= onset + start * duration && Double($0.senderTimeMs) < onset + end * duration
        }
    }

    /// Samples outside every gesture window of their controller.
    var samplesBetweenGestures: [MotionSampleRecord] {
        samples.filter { sample in
            !labels.contains { $0.controller == sample.controller && sample.senderTimeMs >= $0.senderTimeMs! && sample.senderTimeMs < $0.senderTimeMs! + $0.durationMs! }
        }
    }

    func labels(_ gesture: String) -> [LabelRecord] { labels.filter { $0.gesture == gesture } }
}

/// Steering angle: how far gravity leans towards the device's +y, degrees.
private func tiltDegrees(_ sample: MotionSampleRecord) -> Double {
    let g = sample.gravity!
    return atan2(g.y, (g.x * g.x + g.z * g.z).squareRoot()) * 180 / Double.pi
}

private func standardDeviation(_ values: [Double]) -> Double {
    let mean = values.reduce(0, +) / Double(values.count)
    return (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count)).squareRoot()
}

@Suite struct GestureSessionTests {
    @Test func sameSeedGivesTheSameBytesAndAnotherSeedDiffers() {
        let a = Session { $0.persona = .ducker; $0.controllers = 2; $0.durationS = 8; $0.seed = 4 }
        let b = Session { $0.persona = .ducker; $0.controllers = 2; $0.durationS = 8; $0.seed = 4 }
        let c = Session { $0.persona = .ducker; $0.controllers = 2; $0.durationS = 8; $0.seed = 5 }
        // Bools, not array comparisons: on failure swift-testing would diff the whole arrays, which takes minutes.
        let sameRecords = a.records == b.records, sameBytes = a.bytes == b.bytes, otherSeedDiffers = a.bytes != c.bytes
        #expect(sameRecords)
        #expect(sameBytes)
        #expect(otherSeedDiffers)
    }

    @Test func addingAControllerLeavesTheOthersUnchanged() {
        let one = Session { $0.persona = .walking; $0.durationS = 6 }
        let three = Session { $0.persona = .walking; $0.controllers = 3; $0.durationS = 6 }
        let first = Endpoint(host: "10.0.0.10", port: 50_000)
        let sameSamples = one.samples == three.samples.filter { $0.controller == first }
        let sameLabels = one.labels == three.labels.filter { $0.controller == first }
        #expect(sameSamples)
        #expect(sameLabels)
    }

    @Test func recordsComeOutInTimeOrder() {
        let session = Session { $0.persona = .steering; $0.controllers = 5; $0.durationS = 12; $0.motionHz = 100 }
        #expect(zip(session.records, session.records.dropFirst()).allSatisfy { $0.timeNs <= $1.timeNs })
        #expect(session.samples.count == 5 * 1200)
        #expect(session.frames.count == 5 * 120)
    }

    @Test func headerNamesTheUserSeedAndRate() {
        let header = Session { $0.persona = .tremor; $0.durationS = 1; $0.motionHz = 50; $0.seed = 77 }.header
        #expect(header.capturePoint == .synthetic)
        #expect(header.clock == .model)
        #expect(header.extra["seed"] == .integer(77))
        #expect(header.extra["user"] == .string("tremor"))
        #expect(header.extra["motion_hz"] == .number(50))
        #expect(header.notes.contains("user tremor"))
        #expect(header.notes.contains("seed 77"))
    }

    /// Frames carry the latest sample at or before their send time (the same
    /// instant when the rates divide), and arrive within the latency clamp.
    @Test(arguments: [50.0, 100, 30, 5])
    func samplesAndFramesComeAtTheirRates(motionHz: Double) throws {
        let session = Session { $0.persona = .ducker; $0.controllers = 2; $0.durationS = 10; $0.motionHz = motionHz }
        for index in 0..<2 {
            let endpoint = Endpoint(host: "10.0.0.\(10 + index)", port: UInt16(50_000 + index))
            let samples = session.samples.filter { $0.controller == endpoint }
            #expect(samples.count == Int(10 * motionHz))
            let periodNs = 1e9 / motionHz
            #expect(zip(samples, samples.dropFirst()).allSatisfy { abs(Double($1.timeNs - $0.timeNs) - periodNs) <= 1 })
            #expect(samples.allSatisfy { $0.senderTimeMs == UInt64($0.timeNs / 1_000_000) })

            let frames = session.frames.filter { $0.record.source == endpoint }
            #expect(frames.count == 100)
            for (record, frame) in frames {
                #expect(record.destination == Endpoint(host: "10.0.0.1", port: 47110))
                #expect(record.direction == .controllerToHost)
                let latencyMs = Double(record.timeNs - Int64(frame.tMs) * 1_000_000) / 1e6
                #expect(latencyMs >= 52.2 && latencyMs <= 83.2)  // t_ms is floored: up to 1 ms above the clamp
                let source = try #require(samples.last { $0.senderTimeMs <= frame.tMs })
                #expect(frame.ay == Float(source.userAcceleration.y))
                #expect(frame.wz == Float(source.rotationRate.z))
            }
        }
        // Every message is a valid frame: no acks, nothing corrupted.
        #expect(session.records.filter { if case .message = $0 { true } else { false } }.count == session.frames.count)
    }

    /// Values are rounded to 1e-6, so a unit vector's length is off by at
    /// most √3·5e-7 (gravity) or √4·5e-7 (attitude).
    @Test(arguments: Persona.presets.map(\.name))
    func gravityAndAttitudeAreUnitAndAgree(user: String) throws {
        let persona = try #require(Persona.preset(named: user))
        let session = Session { $0.persona = persona; $0.durationS = 10; $0.motionHz = 50; $0.seed = 3 }
        for sample in session.samples {
            let g = try #require(sample.gravity), q = try #require(sample.attitude)
            #expect(abs(g.length - 1) <= 1e-6)
            #expect(abs((q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z).squareRoot() - 1) <= 1.0001e-6)
            // Gravity is the attitude applied backwards to (0, 0, −1).
            let fromAttitude = Vector3(2 * (q.w * q.y - q.x * q.z), -2 * (q.w * q.x + q.y * q.z), 2 * (q.x * q.x + q.y * q.y) - 1)
            #expect(abs(fromAttitude.x - g.x) < 1e-5 && abs(fromAttitude.y - g.y) < 1e-5 && abs(fromAttitude.z - g.z) < 1e-5)
        }
        // At rest, portrait gravity is about (0, −1, 0) and landscape gravity about (−1, 0, 0).
        for sample in session.samplesBetweenGestures {
            let g = sample.gravity!
            if persona.orientation == .portrait {
                #expect(g.y < -0.8 && abs(g.x) < 0.15)
            } else {
                #expect(g.x < -0.8 && abs(g.y) < 0.15)
            }
        }
    }

    /// With the noise off, the rotation rate is the attitude's own angular
    /// velocity: compare it with the turn between consecutive attitudes.
    @Test(arguments: ["steering", "ducker", "walking", "tremor"])
    func rotationRateIsTheAttitudesAngularVelocity(user: String) throws {
        var persona = try #require(Persona.preset(named: user))
        persona.accelerationNoiseSd = 0
        persona.rotationRateNoiseSd = 0
        persona.meanGestureIntervalS = 1.5
        let session = Session { $0.persona = persona; $0.durationS = 4; $0.motionHz = 1000 }
        #expect(!session.labels.isEmpty)
        var worst = 0.0
        for (a, b) in zip(session.samples, session.samples.dropFirst()) {
            let p = a.attitude!, q = b.attitude!
            // Body-frame turn p⁻¹·q ≈ (1, ω·dt/2).
            let x = p.w * q.x - p.x * q.w - p.y * q.z + p.z * q.y
            let y = p.w * q.y + p.x * q.z - p.y * q.w - p.z * q.x
            let z = p.w * q.z - p.x * q.y + p.y * q.x - p.z * q.w
            let dt = Double(b.timeNs - a.timeNs) / 1e9
            let mean = [a.rotationRate.x + b.rotationRate.x, a.rotationRate.y + b.rotationRate.y, a.rotationRate.z + b.rotationRate.z].map { $0 / 2 }
            for (measured, expected) in zip([2 * x / dt, 2 * y / dt, 2 * z / dt], mean) { worst = max(worst, abs(measured - expected)) }
        }
        // Attitudes are rounded to 1e-6, which alone makes up to ~0.004 rad/s at 1 ms.
        #expect(worst < 0.03, "largest mismatch \(worst) rad/s")
    }

    /// Steady jumps: push-off of 0.8–1.5 g along "up", which is +y leaning
    /// back by 15–25°, so ay peaks at ≥ 0.8·cos 25° ≈ 0.72 g (sampled within
    /// 10 ms of the peak: ≥ 0.71 g), minus noise (sd 0.012 g). Between
    /// gestures ay is noise and a 0.02 g sway only, far below 0.35 g.
    @Test func steadyJumpsShowOnAyAndNothingElseComesClose() {
        let session = Session { $0.persona = .steady; $0.controllers = 2; $0.durationS = 30; $0.motionHz = 50; $0.seed = 8 }
        #expect(session.labels.count >= 12)
        #expect(session.labels.allSatisfy { $0.gesture == "jump" && $0.durationMs == 450 && Int64($0.senderTimeMs!) * 1_000_000 == $0.timeNs })
        for label in session.labels {
            let window = session.samples(during: label)
            #expect(window.map(\.userAcceleration.y).max()! > 0.6)
            // The wrist flick: 3 (rad/s)/g × 0.8–1.5 g about y.
            #expect(window.map(\.rotationRate.y).max()! > 2)
        }
        #expect(session.samplesBetweenGestures.allSatisfy { $0.userAcceleration.y < 0.35 })
    }

    /// Weak jumps peak at 0.35–0.8 g, so ay stays under 0.8·cos 15° + noise,
    /// and most would slip under a 0.6 g threshold.
    @Test func weakJumpsMostlyStayUnderAHighThreshold() {
        let session = Session { $0.persona = .weak; $0.durationS = 60; $0.motionHz = 50; $0.seed = 8 }
        let peaks = session.labels.map { session.samples(during: $0).map(\.userAcceleration.y).max()! }
        #expect(peaks.count >= 12)
        #expect(peaks.allSatisfy { (0.25...0.9).contains($0) })
        #expect(peaks.filter { $0 < 0.6 }.count * 2 >= peaks.count)
    }

    /// tilt_left leans gravity towards +y by asin(cos β · sin θ) ≥
    /// asin(cos 25° · sin 15°) ≈ 13.6° during the hold (the middle third of the
    /// window is always inside it), tilt_right mirrors it; jumps show on ax.
    @Test func steeringTiltsTurnGravityAndJumpsShowOnAx() {
        let session = Session { $0.persona = .steering; $0.controllers = 2; $0.durationS = 60; $0.motionHz = 50; $0.seed = 2 }
        let left = session.labels("tilt_left"), right = session.labels("tilt_right")
        #expect(left.count >= 5 && right.count >= 5)
        for label in left + right {
            let sign = label.gesture == "tilt_left" ? 1.0 : -1.0
            #expect((1200...1800).contains(label.durationMs!))
            #expect(session.samples(during: label, from: 1 / 3, to: 2 / 3).allSatisfy { sign * tiltDegrees($0) > 10 })
            // Turning in: rotation rate about the screen normal, in the tilt's direction.
            let turnIn = session.samples(during: label, to: 300 / Double(label.durationMs!))
            #expect(turnIn.map { sign * $0.rotationRate.z }.max()! > 0.5)
        }
        #expect(session.samplesBetweenGestures.allSatisfy { abs(tiltDegrees($0)) < 6 })
        for jump in session.labels("jump") {
            #expect(session.samples(during: jump).map(\.userAcceleration.x).max()! > 0.6)
        }
    }

    /// A duck accelerates down first (≥ 0.3 g · cos 25°) and then stops.
    @Test func duckerDucksDipBeforeTheyStop() {
        let session = Session { $0.persona = .ducker; $0.durationS = 60; $0.motionHz = 50; $0.seed = 6 }
        #expect(session.labels("duck").count >= 5 && session.labels("jump").count >= 5)
        for label in session.labels("duck") {
            #expect(label.durationMs == 600)
            let ay = session.samples(during: label).map(\.userAcceleration.y)
            let lowest = ay.indices.min { ay[$0] < ay[$1] }!, highest = ay.indices.max { ay[$0] < ay[$1] }!
            #expect(ay[lowest] < -0.2)
            #expect(lowest < highest)
        }
    }

    /// Walking puts step bumps of 0.2–0.45 g (· cos β) on ay between
    /// gestures, every 1/2.1–1/1.6 s: what fires a low threshold. A steady
    /// player has none.
    @Test func walkingStepsBumpAyBetweenGestures() {
        let walking = Session { $0.persona = .walking; $0.durationS = 30; $0.motionHz = 50; $0.seed = 1 }
        let steady = Session { $0.persona = .steady; $0.durationS = 30; $0.motionHz = 50; $0.seed = 1 }
        let between = walking.samplesBetweenGestures
        #expect(between.filter { $0.userAcceleration.y > 0.2 }.count > 40)
        #expect(steady.samplesBetweenGestures.allSatisfy { $0.userAcceleration.y < 0.2 })
        // Bumps above 0.15 g, separated by dips below 0: their spacing is the step period.
        var bumpTimes: [Double] = [], armed = true
        for sample in walking.samples {
            if armed, sample.userAcceleration.y > 0.15 { bumpTimes.append(Double(sample.timeNs) / 1e9); armed = false }
            if sample.userAcceleration.y < 0 { armed = true }
        }
        let gaps = zip(bumpTimes, bumpTimes.dropFirst()).map { $1 - $0 }.sorted()
        #expect(gaps.count > 40)
        #expect((0.42...0.7).contains(gaps[gaps.count / 2]))
    }

    /// The tremor's 8–12 Hz oscillation dominates az between gestures, and
    /// rotation rate about x carries the matching 0.3–0.9 rad/s wobble.
    @Test func tremorOscillatesAtEightToTwelveHertz() {
        let tremor = Session { $0.persona = .tremor; $0.durationS = 20; $0.motionHz = 100; $0.seed = 5 }
        let steady = Session { $0.persona = .steady; $0.durationS = 20; $0.motionHz = 100; $0.seed = 5 }
        let between = tremor.samplesBetweenGestures
        var crossings = 0, armed = false, spanNs: Int64 = 0
        for (a, b) in zip(between, between.dropFirst()) where b.timeNs - a.timeNs < 15_000_000 {
            spanNs += b.timeNs - a.timeNs
            if b.userAcceleration.z < -0.02 { armed = true }
            if armed, b.userAcceleration.z > 0.02 { crossings += 1; armed = false }
        }
        let hertz = Double(crossings) / (Double(spanNs) / 1e9)
        #expect((7.5...12.5).contains(hertz), "\(hertz) Hz")
        #expect(standardDeviation(between.map(\.rotationRate.x)) > 0.15)
        #expect(standardDeviation(steady.samplesBetweenGestures.map(\.rotationRate.x)) < 0.1)
    }

    /// Noise is white, so sample-to-sample differences measure it apart from the slow sway.
    @Test func noisyHasThreeTimesTheSensorNoise() {
        func noise(_ persona: Persona) -> Double {
            let between = Session { $0.persona = persona; $0.durationS = 20; $0.motionHz = 50 }.samplesBetweenGestures
            return standardDeviation(zip(between, between.dropFirst()).map { $1.userAcceleration.x - $0.userAcceleration.x })
        }
        let ratio = noise(.noisy) / noise(.steady)
        #expect((2.6...3.4).contains(ratio), "\(ratio)")
    }

    /// captures/gestures/make-corpus.sh's settings: the bundled files must
    /// be what the synthesizer makes from them, byte for byte.
    static let corpus: [(file: String, controllers: Int, seed: UInt64)] = [
        ("steady", 2, 101), ("weak", 1, 102), ("strong", 1, 103), ("noisy", 1, 104),
        ("tremor", 1, 105), ("walking", 2, 106), ("ducker", 1, 107), ("steering", 1, 308),
    ]

    @Test func corpusHeadersMatchTheScriptSettings() throws {
        #expect(Self.corpus.map(\.file) == Persona.presets.map(\.name))
        for entry in Self.corpus {
            let header = try TraceReader(path: Self.corpusPath(entry.file)).header
            #expect(header.extra["user"] == .string(entry.file))
            #expect(header.extra["seed"] == .integer(Int64(entry.seed)))
            #expect(header.extra["motion_hz"] == .number(50))
            #expect(header.notes.contains("\(entry.controllers) controller(s), 60.0 s"))
        }
    }

    @Test(arguments: ["weak", "steering"])
    func bundledCorpusFileIsReproducedByteForByte(file: String) throws {
        let entry = try #require(Self.corpus.first { $0.file == file })
        let bundled = try Data(contentsOf: URL(fileURLWithPath: Self.corpusPath(file)))
        var configuration = GestureSessionSynthesizer.Configuration()
        configuration.persona = try #require(Persona.preset(named: file))
        configuration.controllers = entry.controllers
        configuration.durationS = 60
        configuration.motionHz = 50
        configuration.seed = entry.seed
        var synthesizer = GestureSessionSynthesizer(configuration)
        // The tool (kinetrace's version) is the one thing the model does not decide.
        let tool = try TraceReader(path: Self.corpusPath(file)).header.tool
        var records: [TraceRecord] = []
        while let record = synthesizer.next() { records.append(record) }
        let generated = try TraceEncoder.document(header: synthesizer.header(tool: tool), records: records)
        // A byte offset, not an array comparison: swift-testing would diff megabytes on failure.
        let expected = [UInt8](bundled), common = min(generated.count, expected.count)
        let firstDifference = (0..<common).first { generated[$0] != expected[$0] } ?? (generated.count == expected.count ? nil : common)
        #expect(firstDifference == nil, "captures/gestures/\(file).jsonl differs from byte \(firstDifference ?? 0); rerun captures/gestures/make-corpus.sh")
    }

    static func corpusPath(_ name: String) -> String {
        Fixture.packageRoot.appendingPathComponent("captures/gestures/\(name).jsonl").path
    }
}
