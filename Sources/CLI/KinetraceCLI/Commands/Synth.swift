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
    }

    func run() throws {
        var configuration = SessionSynthesizer.Configuration()
        configuration.controllers = controllers
        configuration.durationS = duration
        configuration.rateHz = rate
        configuration.script = script.script
        configuration.seed = seed
        configuration.corruptProbability = corrupt
        configuration.startMs = startMs
        var synthesizer = SessionSynthesizer(configuration)
        let count = try reportingFailures { () throws(TraceError) -> Int in
            let writer = try TraceWriter(path: out, header: synthesizer.header(tool: "kinetrace \(Kinetrace.version)"))
            var progress = Progress(label: "records written")
            while let record = synthesizer.next() {
                try writer.write(record)
                progress.update(writer.recordCount)
            }
            progress.finish()
            try writer.close()
            return writer.recordCount
        }
        print("wrote \(count) records to \(out) (seed \(seed))")
    }
}
