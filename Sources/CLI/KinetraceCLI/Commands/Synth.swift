import ArgumentParser
import KinetraceSimulation
import KinetraceTrace
import KinetraceWire

/// `kinetrace synth`: writes a synthetic session trace, offline.
struct Synth: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a synthetic, seeded session trace without touching the network.",
        discussion: """
            Models what a capture at the host of a KeepCalm-like session would hold: each \
            controller streams MotionFrames at the nominal rate with sensor noise and jump \
            gestures, every frame arrives after a one-way latency drawn from the source \
            paper's lab figures (mean 70.4 ms, sd 3.7 ms, clamped to 52.2–82.2 ms), and a \
            reference host acks the frames the gesture rule triggers on. Each jump is \
            recorded as a ground-truth label.

            With --user, models a phone-as-controller session for evaluating gesture \
            detectors instead: each controller records device-motion samples (user \
            acceleration, rotation rate, gravity, attitude) at --motion-hz, sends MotionFrames \
            made from them at --rate with the same latency model (no acks), and the user \
            profile decides how the phone is held and moved (noise, tremor, walking) and \
            which gestures are performed (jump, duck, tilt_left, tilt_right), each recorded \
            as a ground-truth label.

            The same options and seed give a byte-identical file: the header is stamped \
            with the model's clock, not the wall clock.
            """)

    @Option(name: .shortAndLong, help: ArgumentHelp("The trace file to write.", valueName: "file"), completion: .file())
    var out: String

    @Option(help: ArgumentHelp("Number of controllers (players).", valueName: "n"))
    var controllers = 1

    @Option(help: ArgumentHelp("Session length in seconds.", valueName: "seconds"))
    var duration: Double = 60

    @Option(help: ArgumentHelp("Frames per second per controller.", valueName: "hz"))
    var rate: Double = 10

    @Option(help: ArgumentHelp("When players jump: idle (never), jumps (every 2–4 s) or random (Poisson, 3 s mean).", valueName: "script"))
    var script: ScriptName = .jumps

    @Option(help: ArgumentHelp("Seed for every random choice; the same seed gives the same trace.", valueName: "n"))
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Probability that a frame arrives with one bit flipped (0–1).", valueName: "p"))
    var corrupt: Double = 0

    @Option(name: .customLong("start-ms"), help: ArgumentHelp("Sender clock of the first frame, in ms since the UNIX epoch.", valueName: "ms"))
    var startMs: UInt64 = SessionSynthesizer.Configuration().startMs

    @Option(help: ArgumentHelp(
        "Simulate a phone-as-controller session of this user profile, with device-motion samples and gesture labels.",
        valueName: "profile"))
    var user: UserProfileName?

    @Option(name: .customLong("motion-hz"), help: ArgumentHelp(
        "Device-motion samples per second per controller with --user, from 1 to 1000 (100 when omitted).", valueName: "hz"))
    var motionHz: Double?

    /// A preset of `GestureUserProfile`, by name.
    struct UserProfileName: ExpressibleByArgument {
        var profile: GestureUserProfile
        init?(argument: String) {
            guard let profile = GestureUserProfile.preset(named: argument) else { return nil }
            self.profile = profile
        }
        static var allValueStrings: [String] { GestureUserProfile.presets.map(\.name) }
    }

    enum ScriptName: String, ExpressibleByArgument, CaseIterable {
        case idle, jumps, random
        var script: GestureScript {
            switch self {
            case .idle: return .idle
            case .jumps: return .jumps
            case .random: return .random
            }
        }
    }

    func validate() throws {
        guard (1...100_000).contains(controllers) else { throw ValidationError("--controllers must be between 1 and 100000.") }
        guard duration.isFinite, duration > 0, duration <= 30 * 86_400 else {
            throw ValidationError("--duration must be a positive number of seconds, at most 30 days.")
        }
        guard rate.isFinite, rate > 0, rate <= 10_000 else { throw ValidationError("--rate must be in (0, 10000] Hz.") }
        guard corrupt.isFinite, (0...1).contains(corrupt) else { throw ValidationError("--corrupt must be a probability in [0, 1].") }
        guard startMs < UInt64(Int64.max / 1_000_000) - 40 * 86_400_000 else {
            throw ValidationError("--start-ms is too far in the future for nanosecond timestamps.")
        }
        if let motionHz {
            guard user != nil else { throw ValidationError("--motion-hz applies only with --user.") }
            guard motionHz.isFinite, (1...1000).contains(motionHz) else { throw ValidationError("--motion-hz must be in [1, 1000] Hz.") }
        }
        // The user profile decides the gestures, and its frames are never corrupted.
        if user != nil, script != .jumps { throw ValidationError("--script cannot be combined with --user; the profile decides the gestures.") }
        if user != nil, corrupt != 0 { throw ValidationError("--corrupt cannot be combined with --user.") }
    }

    func run() throws {
        if let user {
            var configuration = GestureSessionSynthesizer.Configuration()
            configuration.profile = user.profile
            configuration.controllers = controllers
            configuration.durationS = duration
            configuration.frameHz = rate
            configuration.motionHz = motionHz ?? configuration.motionHz
            configuration.seed = seed
            configuration.startMs = startMs
            var synthesizer = GestureSessionSynthesizer(configuration)
            let count = try write(header: synthesizer.header(tool: "kinetrace \(Kinetrace.version)")) { synthesizer.next() }
            print("wrote \(count) records to \(out) (user \(user.profile.name), seed \(seed))")
            return
        }
        var configuration = SessionSynthesizer.Configuration()
        configuration.controllers = controllers
        configuration.durationS = duration
        configuration.rateHz = rate
        configuration.script = script.script
        configuration.seed = seed
        configuration.corruptProbability = corrupt
        configuration.startMs = startMs
        var synthesizer = SessionSynthesizer(configuration)
        let count = try write(header: synthesizer.header(tool: "kinetrace \(Kinetrace.version)")) { synthesizer.next() }
        print("wrote \(count) records to \(out) (seed \(seed))")
    }

    /// Writes `header` and every record `next` yields to `out`; returns the record count.
    private func write(header: TraceHeader, next: () -> TraceRecord?) throws -> Int {
        try reportingFailures { () throws(TraceError) -> Int in
            let writer = try TraceWriter(path: out, header: header)
            var progress = Progress(label: "records written")
            while let record = next() {
                try writer.write(record)
                progress.update(writer.recordCount)
            }
            progress.finish()
            try writer.close()
            return writer.recordCount
        }
    }
}
