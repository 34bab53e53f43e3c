import ArgumentParser
import KinetraceSimulation
import KinetraceTrace
import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `kinetrace synth`: writes a synthetic session trace, offline.
struct Synth: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a synthetic, seeded session trace without touching the network.",
        discussion: """
            Models what a capture at the host of a session of phones as controllers would \
            hold: each controller streams the protocol's samples at its \
            nominal rate with sensor noise and jump gestures, every sample arrives after a \
            one-way latency drawn from the source paper's lab figures (mean 70.4 ms, sd \
            3.7 ms, clamped to 52.2–82.2 ms), and a reference host answers as the protocol's \
            host model says (a reply per decision, for a protocol with replies). Each \
            jump is recorded as a ground-truth label.

            With --persona, models a phone-as-controller session for evaluating gesture \
            detectors instead: each controller records device-motion samples (user \
            acceleration, rotation rate, gravity, attitude) at --motion-hz, sends samples made \
            from them at --rate with the same latency model (no replies), and the persona (a \
            synthetic user) decides how the phone is held and moved (noise, tremor, walking) \
            and which gestures are performed (jump, duck, tilt_left, tilt_right), each \
            recorded as a ground-truth label.

            The same options and seed give a byte-identical file: the header is stamped \
            with the model's clock, not the wall clock.
            """)

    @Option(name: .shortAndLong, help: ArgumentHelp("The trace file to write.", valueName: "file"), completion: .file())
    var out: String

    @Option(help: ArgumentHelp("Number of controllers (players).", valueName: "n"))
    var controllers = 1

    @Option(help: ArgumentHelp("Session length in seconds.", valueName: "seconds"))
    var duration: Double = 60

    @OptionGroup var wire: ProtocolOptions
    @OptionGroup var traceOutput: TraceOutputOptions

    @Option(help: ArgumentHelp("Samples per second per controller (default: the protocol's nominal rate).", valueName: "hz"))
    var rate: Double?

    @Option(help: ArgumentHelp("When players jump: idle (never), jumps (every 2–4 s) or random (Poisson, 3 s mean).", valueName: "script"))
    var script: ScriptName = .jumps

    @Option(help: ArgumentHelp("Seed for every random choice; the same seed gives the same trace.", valueName: "n"))
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Probability that a frame arrives with one bit flipped (0–1).", valueName: "p"))
    var corrupt: Double = 0

    @Option(name: .customLong("start-ms"), help: ArgumentHelp("Sender clock of the first frame, in ms since the UNIX epoch.", valueName: "ms"))
    var startMs: UInt64 = SessionSynthesizer.Configuration().startMs

    @Option(help: ArgumentHelp(
        "Simulate a phone-as-controller session of this persona (a synthetic user), with device-motion samples and gesture labels.",
        valueName: "name"))
    var persona: PersonaName?

    /// `--user`, the name of `--persona` until personas were called personas.
    @Option(name: .customLong("user"), help: .hidden)
    var legacyUser: PersonaName?

    @Option(name: .customLong("motion-hz"), help: ArgumentHelp(
        "Device-motion samples per second per controller with --persona, from 1 to 1000 (100 when omitted).", valueName: "hz"))
    var motionHz: Double?

    /// A preset `Persona`, by name.
    struct PersonaName: ExpressibleByArgument {
        var persona: Persona
        init?(argument: String) {
            guard let persona = Persona.preset(named: argument) else { return nil }
            self.persona = persona
        }
        static var allValueStrings: [String] { Persona.presets.map(\.name) }
    }

    /// The persona given by either spelling.
    var chosenPersona: Persona? { (persona ?? legacyUser)?.persona }

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
        if traceOutput.compression != .none && TraceOutput.form(forPath: out) != .mcap {
            throw ValidationError("--compression \(traceOutput.compression.rawValue) compresses an MCAP trace's chunks: name the output .mcap.")
        }
        guard (1...100_000).contains(controllers) else { throw ValidationError("--controllers must be between 1 and 100000.") }
        guard duration.isFinite, duration > 0, duration <= 30 * 86_400 else {
            throw ValidationError("--duration must be a positive number of seconds, at most 30 days.")
        }
        // Slower than a frame in 1000 s is a mistake, and its period would leave Int64 ns.
        if let rate { guard rate.isFinite, rate >= 0.001, rate <= 10_000 else { throw ValidationError("--rate must be in [0.001, 10000] Hz.") } }
        if persona != nil && legacyUser != nil { throw ValidationError("Give --persona once (--user is its old name).") }
        guard wire.wireProtocol.sample(MotionReading(), timeMs: 0) != nil else {
            throw ValidationError("--protocol \(wire.wireProtocol.id) has no samples to synthesize.")
        }
        guard corrupt.isFinite, (0...1).contains(corrupt) else { throw ValidationError("--corrupt must be a probability in [0, 1].") }
        // The session (at most 30 days, plus latency) must end inside a trace's time range (TR-TIME-1).
        guard startMs < UInt64(TraceRecord.timeRangeNs.upperBound / 1_000_000) - 40 * 86_400_000 else {
            throw ValidationError("--start-ms is too far in the future for nanosecond timestamps.")
        }
        if let motionHz {
            guard chosenPersona != nil else { throw ValidationError("--motion-hz applies only with --persona.") }
            guard motionHz.isFinite, (1...1000).contains(motionHz) else { throw ValidationError("--motion-hz must be in [1, 1000] Hz.") }
        }
        // The persona decides the gestures, and its samples are never corrupted.
        if chosenPersona != nil, script != .jumps { throw ValidationError("--script cannot be combined with --persona; the persona decides the gestures.") }
        if chosenPersona != nil, corrupt != 0 { throw ValidationError("--corrupt cannot be combined with --persona.") }
    }

    func run() throws {
        if legacyUser != nil { printWarning("--user is now --persona; the old name goes away in the next minor version") }
        let rate = self.rate ?? wire.wireProtocol.nominalRateHz
        if let persona = chosenPersona {
            var configuration = GestureSessionSynthesizer.Configuration()
            configuration.wireProtocol = wire.wireProtocol
            configuration.persona = persona
            configuration.controllers = controllers
            configuration.durationS = duration
            configuration.frameHz = rate
            configuration.motionHz = motionHz ?? configuration.motionHz
            configuration.seed = seed
            configuration.startMs = startMs
            var synthesizer = GestureSessionSynthesizer(configuration)
            let count = try write(header: synthesizer.header(tool: "kinetrace \(Kinetrace.version)")) { synthesizer.next() }
            print("wrote \(count) records to \(out) (persona \(persona.name), seed \(seed))")
            return
        }
        // The scripted motion is an acceleration pulse: a protocol whose samples cannot carry it sends only level samples.
        let pulse = MotionReading(userAcceleration: Vector3(0, 1, 0), rotationRate: Vector3(0, 1, 0))
        if wire.wireProtocol.sample(pulse, timeMs: 0) == wire.wireProtocol.sample(MotionReading(), timeMs: 0) {
            printWarning("\(wire.wireProtocol.id) samples carry none of the scripted motion (an acceleration pulse), so every sample is level; --persona gives the protocol's motion")
        }
        var configuration = SessionSynthesizer.Configuration()
        configuration.wireProtocol = wire.wireProtocol
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
            let writer = try TraceOutput.create(path: out, header: header, policy: .bulk, compression: traceOutput.compression)
            PartialOutputs.begin(out)
            defer { PartialOutputs.end(out) }
            do throws(TraceError) {
                var progress = Progress(label: "records written")
                while let record = next() {
                    try writer.write(record)
                    progress.update(writer.recordCount)
                }
                progress.finish()
                try writer.close()
                return writer.recordCount
            } catch {
                // A synth that fails part way (a full disk) leaves no output: half a session passes for a whole one.
                unlink(out)
                throw error
            }
        }
    }
}
