import ArgumentParser
import Foundation
import KinetraceSupport
import KinetraceJSON
import KinetraceGestures
import KinetracePcap
import KinetraceImpairment
import KinetraceReplay
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging

/// `kinetrace gestures eval`: precision, recall and F1 of a detector over labelled traces.
struct GesturesEval: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eval",
        abstract: "Score a gesture detector against the labels in traces: TP, FP, FN, precision, recall, F1 and delay.",
        discussion: """
            Runs the detector offline over each trace's samples, as fast as the CPU allows: \
            the device-motion samples when the trace has them (trace minor 1 "motion" \
            records), otherwise the protocol's samples that reached the recorder (--source). \
            Each label takes the earliest detection of its gesture and controller from \
            --window-ms before its onset to after it; every other detection is a false \
            positive, every label without one a false negative. Delay is the detection's \
            time minus the label's onset, on the controller's clock (the recorder's, for \
            protocols whose samples carry no stamp). A detector that reads what a trace's \
            samples do not carry (a jump detector on samples of attitude only, attitude-tilt \
            on samples without attitude) is refused with the reason, exit 65.

            --sweep NAME=LO:HI:STEP evaluates every value in one pass over the samples and \
            reports the precision–recall trade-off and the best F1 (--plot draws it).

            --baseline FILE (a previous --format json result) gates the run: it fails, exit \
            status 1, when F1 or recall fall more than --margin below the baseline's. This is \
            the check to run in CI after touching a threshold.

            --live HOST:PORT replays each trace's frames to a running host instead and scores \
            its replies as jump detections, so a host's gesture logic is tested the same way. \
            A host that cannot be reached exits 69; one that floods replies stops the run, \
            exit 76, in bounded memory (as replay).

            --format junit writes one testcase per trace, with its scores and time, and one \
            per gate (--baseline, --min-f1, --min-recall), failed when the gate fails; a \
            harness error (a trace that is missing or not valid, a host that cannot be \
            reached) still writes a report, whose one testcase is the error, and exits with \
            its own status.

            A directory argument stands for the traces, pcaps and pcapngs in it.
            """)

    @Argument(help: ArgumentHelp("Labelled traces (or pcaps, or directories of them) to evaluate on.", valueName: "trace"),
              completion: .file())
    var traces: [String]

    @Option(help: ArgumentHelp("The detector: \(DetectorKind.allCases.map(\.rawValue).dropLast().joined(separator: ", ")) or \(DetectorKind.allCases.last!.rawValue).", valueName: "name"),
            completion: .list(DetectorKind.allCases.map(\.rawValue)))
    var detector: String?

    @Option(name: .customLong("param"), help: ArgumentHelp("Set a detector parameter, e.g. --param threshold=0.6; repeat for more.", valueName: "name=value"))
    var params: [String] = []

    @Option(help: ArgumentHelp("Evaluate a parameter over a range in one pass, e.g. threshold=0.2:1.2:0.01.", valueName: "name=lo:hi:step"))
    var sweep: String?

    @Option(name: .customLong("window-ms"), help: ArgumentHelp("The match window around each label's onset, as BEFORE:AFTER in ms.", valueName: "before:after"))
    var windowMs = "100:700"

    @Option(help: ArgumentHelp("Which samples to evaluate: motion when a trace has them, else frames (auto); or only one kind.", valueName: "source"))
    var source: SampleSource = .auto

    @Option(help: ArgumentHelp("A previous --format json result; fail when F1 or recall drop more than --margin below it.", valueName: "file"))
    var baseline: String?

    @Option(help: ArgumentHelp("How far F1 or recall may fall below the baseline before the run fails (absolute, 0 to 1).", valueName: "x"))
    var margin: Double = 0.02

    @Option(name: .customLong("min-f1"), help: ArgumentHelp("Fail when the total F1 is below this.", valueName: "x"))
    var minF1: Double?

    @Option(name: .customLong("min-recall"), help: ArgumentHelp("Fail when the total recall is below this.", valueName: "x"))
    var minRecall: Double?

    @OptionGroup var report: ReportOptions<GestureFormat>

    @Option(help: ArgumentHelp("Draw a plot to this file, in the format --plot-format chooses: for a sweep, the precision–recall curve through every value and F1, precision and recall against the value; else the scores per trace.", valueName: "file"))
    var plot: String?

    @OptionGroup var plotFormat: PlotFormatOptions

    @Option(help: ArgumentHelp("Replay each trace's frames to the host at HOST:PORT and score its replies as jumps.", valueName: "host:port"))
    var live: String?

    @Option(name: .customLong("live-speed"), help: ArgumentHelp("Replay speed for --live: 1 keeps the recorded timing.", valueName: "x"))
    var liveSpeed: Double = 1

    @OptionGroup var input: CaptureInputOptions
    @OptionGroup var timeWindow: TraceWindowOptions

    func validate() throws {
        guard !traces.isEmpty else { throw ValidationError("Name at least one trace.") }
        _ = try plotFormat.format(for: plot)
        if live == nil {
            guard let detector else { throw ValidationError("Choose a --detector (see `kinetrace gestures list`), or --live HOST:PORT.") }
            guard DetectorKind(rawValue: detector) != nil else {
                throw ValidationError("Unknown detector \"\(detector)\"; choose one of \(DetectorKind.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
        } else {
            guard detector == nil, params.isEmpty, sweep == nil else {
                throw ValidationError("--live scores the host's own replies: --detector, --param and --sweep do not apply.")
            }
            guard liveSpeed.isFinite, liveSpeed > 0 else { throw ValidationError("--live-speed must be a number > 0.") }
            do { _ = try SocketAddressBox.resolve(live!) } catch { throw ValidationError("--live \(error.description)") }
        }
        _ = try matchWindow()
        if live == nil { _ = try detectorSettings() }
        guard margin.isFinite, margin >= 0 else { throw ValidationError("--margin must be a number ≥ 0.") }
        for gate in [minF1, minRecall].compactMap({ $0 }) where !(0...1).contains(gate) {
            throw ValidationError("--min-f1 and --min-recall take a number from 0 to 1.")
        }
    }

    func matchWindow() throws -> MatchWindow { try Self.matchWindow(windowMs) }

    /// `--window-ms BEFORE:AFTER`, checked (`plot timeline` takes it too).
    static func matchWindow(_ windowMs: String) throws -> MatchWindow {
        let parts = windowMs.split(separator: ":").map { Double($0) }
        guard parts.count == 2, let before = parts[0], let after = parts[1], before >= 0, after >= 0, before.isFinite, after.isFinite else {
            throw ValidationError("--window-ms takes BEFORE:AFTER in ms, e.g. 100:700.")
        }
        // Like the detectors' time parameters, an hour at most.
        guard before <= 3_600_000, after <= 3_600_000 else { throw ValidationError("--window-ms \(windowMs): each side is at most 3600000 ms (an hour).") }
        return MatchWindow(beforeMs: before, afterMs: after)
    }

    func run() throws {
        let junit = JUnitErrorGuard(command: "kinetrace gestures eval", enabled: report.format == .junit, path: report.out)
        try junit.run { try evaluate(junit) }
    }

    private func evaluate(_ junit: JUnitErrorGuard) throws {
        // Before any work: a plot format that cannot be written stops the run at once.
        let converter = try plotFormat.converter(for: plot)
        let window = try matchWindow()
        let paths = try Self.expand(traces)
        let started = SystemClock.monotonicNs()
        let result: GestureReport
        var timing = GestureTiming()
        var outcomes: [TraceOutcomes]
        if let live {
            (result, outcomes) = try evaluateLive(paths: paths, host: live, window: window, timing: &timing)
        } else {
            let (settings, swept) = try detectorSettings()
            (result, outcomes) = try evaluateOffline(paths: paths, settings: settings, swept: swept, window: window, timing: &timing)
            if settings.count > 1 && report.format != .junit {
                // A sweep kept only counts: what became of each label is found again at the best setting alone.
                outcomes = try bestOutcomes(paths: paths, setting: settings[result.bestIndex], window: window)
            }
        }
        timing.totalNs = SystemClock.monotonicNs() - started

        var checks: [GestureBaseline.Check] = []
        var traceRegressions: [GestureBaseline.TraceRegression] = []
        if let baseline {
            let stored = try Self.loadBaseline(baseline)
            checks = stored.compare(with: result.totals[result.bestIndex], margin: margin)
            traceRegressions = stored.traceRegressions(in: result, margin: margin)
        }
        let baselineChecks = checks.count
        let best = result.totals[result.bestIndex]
        if let minF1 { checks.append(.init(metric: "f1", baseline: minF1, current: best.f1 ?? 0, margin: 0)) }
        if let minRecall { checks.append(.init(metric: "recall", baseline: minRecall, current: best.recall ?? 0, margin: 0)) }

        if let plot {
            try plotFormat.write(GestureFigures.figure(result), to: plot, converter: converter)
        }
        switch report.format {
        case .text:
            try writeOutput(GestureRendering.text(result, checks: checks, traceRegressions: traceRegressions, baselinePath: baseline, timing: timing,
                                                  outcomes: outcomes),
                            to: report.out)
        case .json:
            try writeOutput(GestureRendering.json(result, checks: checks, traceRegressions: traceRegressions, baselinePath: baseline, timing: timing,
                                                  outcomes: outcomes),
                            to: report.out)
        case .junit:
            try junit.write(JUnitRendering.gestures(result, checks: checks, baselineChecks: baselineChecks, traceRegressions: traceRegressions,
                                                    baselinePath: baseline, timing: timing, startedEpochNs: junit.startedEpochNs))
        }
        let failed = checks.filter(\.regressed)
        if !failed.isEmpty {
            printError(failed.map { "\($0.metric) \(GestureRendering.number($0.current)) is below \(GestureRendering.number($0.baseline))"
                                       + ($0.margin > 0 ? " − \(GestureRendering.number($0.margin))" : "") }.joined(separator: "; "))
            throw ExitCode.failure
        }
    }

    /// The settings to evaluate: one, or one per swept value.
    func detectorSettings() throws -> ([DetectorSettings], String?) {
        try Self.detectorSettings(detector: detector!, params: params, sweep: sweep)
    }

    /// The settings `--detector`, `--param` and `--sweep` name, checked (`plot timeline` takes the first two).
    static func detectorSettings(detector: String, params: [String], sweep: String?) throws -> ([DetectorSettings], String?) {
        guard let kind = DetectorKind(rawValue: detector) else {
            throw ValidationError("Unknown detector \"\(detector)\"; choose one of \(DetectorKind.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        var given: [String: String] = [:]
        for param in params {
            let parts = param.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else { throw ValidationError("--param takes NAME=VALUE, not \"\(param)\".") }
            given[parts[0]] = parts[1]
        }
        do throws(GestureError) {
            let base = try kind.settings(given)
            guard let sweep else { return ([base], nil) }
            let range = try SweepRange(parsing: sweep)
            guard let parameter = kind.parameters.first(where: { $0.name == range.parameter }) else {
                throw GestureError(.unknownParameter, "\(kind.rawValue) has no parameter \"\(range.parameter)\" to sweep")
            }
            guard parameter.choices.isEmpty else { throw GestureError(.badValue, "\(parameter.name) is a choice, not a number to sweep") }
            let settings = try range.values.map { (value: Double) throws(GestureError) -> DetectorSettings in
                var s = base
                s.values[parameter.name] = try parameter.parse(String(value))
                return s
            }
            return (settings, parameter.name)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func evaluateOffline(paths: [String], settings: [DetectorSettings], swept: String?, window: MatchWindow,
                         timing: inout GestureTiming) throws -> (GestureReport, [TraceOutcomes]) {
        var summaries: [GestureReport.TraceSummary] = []
        var outcomes: [TraceOutcomes] = []
        for (n, path) in paths.enumerated() {
            if stderrIsTerminal { writeStandardError("\rgestures: \(n + 1) of \(paths.count): \(path)\u{1B}[K") }
            let readStart = SystemClock.monotonicNs()
            // Detected as read: memory for the detections, not the samples.
            let (trace, startNs) = try reportingFailures { () throws(TraceError) -> (DetectedTrace, Int64?) in
                let reader = RecordTap(try openInputReadingAhead(path: path, wireProtocol: input.wire.given, port: input.port, window: timeWindow.window))
                let trace = try DetectedTrace.read(reader, source: source, settings: settings)
                if let truncation = reader.truncation { printWarning("\(path): \(truncation)") }
                return (trace, reader.firstNs)
            }
            let evaluateStart = SystemClock.monotonicNs()
            timing.readNs += evaluateStart - readStart
            defer {
                let end = SystemClock.monotonicNs()
                timing.evaluateNs += end - evaluateStart
                timing.perTraceNs.append(end - readStart)
            }
            let scores: [TraceScore]
            do throws(GestureError) {
                scores = try GestureEvaluation.evaluate(trace, window: window)
            } catch {
                if stderrIsTerminal { writeStandardError("\r\u{1B}[K") }
                printError(error.description)
                throw ExitStatus.dataError
            }
            summaries.append(summary(trace, path: path, scores: scores, gestures: settings[0].kind.gestures))
            outcomes.append(TraceOutcomes(startNs: startNs,
                                          outcomes: settings.count == 1 ? GestureEvaluation.outcomes(trace, setting: 0, window: window) : []))
        }
        if stderrIsTerminal { writeStandardError("\r\u{1B}[K") }
        let kind = settings[0].kind
        return (GestureReport(detector: kind.rawValue, gestures: kind.gestures, settings: settings, sweptParameter: swept,
                              window: window, traces: summaries), outcomes)
    }

    /// Each trace's outcomes at one setting (a sweep's best), read again with that setting alone.
    func bestOutcomes(paths: [String], setting: DetectorSettings, window: MatchWindow) throws -> [TraceOutcomes] {
        try paths.map { path in
            let (trace, startNs) = try reportingFailures { () throws(TraceError) -> (DetectedTrace, Int64?) in
                let reader = RecordTap(try openInputReadingAhead(path: path, wireProtocol: input.wire.given, port: input.port, window: timeWindow.window))
                return (try DetectedTrace.read(reader, source: source, settings: [setting]), reader.firstNs)
            }
            return TraceOutcomes(startNs: startNs, outcomes: GestureEvaluation.outcomes(trace, setting: 0, window: window))
        }
    }

    func summary(_ trace: DetectedTrace, path: String, scores: [TraceScore], gestures: [String]) -> GestureReport.TraceSummary {
        GestureReport.TraceSummary(source: path, controllers: trace.controllers.count, samples: trace.sampleCount,
                                   sampleKinds: Array(Set(trace.sampleKinds.map(\.rawValue))).sorted(),
                                   labels: trace.labels.filter { gestures.contains($0.gesture) }.count, scores: scores)
    }

    func summary(_ trace: GestureTrace, path: String, scores: [TraceScore], gestures: [String]) -> GestureReport.TraceSummary {
        GestureReport.TraceSummary(source: path, controllers: trace.controllers.count, samples: trace.sampleCount,
                                   sampleKinds: Array(Set(trace.sampleKinds.map(\.rawValue))).sorted(),
                                   labels: trace.labels.filter { gestures.contains($0.gesture) }.count, scores: scores)
    }

    /// Each trace replayed to the host; its replies are the detections.
    func evaluateLive(paths: [String], host: String, window: MatchWindow, timing: inout GestureTiming) throws -> (GestureReport, [TraceOutcomes]) {
        let address = try SocketAddressBox.resolve(host)
        var summaries: [GestureReport.TraceSummary] = []
        var outcomes: [TraceOutcomes] = []
        let signals = LiveStop()
        for (n, path) in paths.enumerated() {
            if stderrIsTerminal { writeStandardError("\rgestures: replaying \(n + 1) of \(paths.count): \(path)\u{1B}[K") }
            let traceStart = SystemClock.monotonicNs()
            let (trace, replayInput, startNs) = try reportingFailures { () throws(TraceError) -> (GestureTrace, ReplayInput, Int64?) in
                let reader = RecordTap(try openInput(path: path, wireProtocol: input.wire.given, port: input.port, window: timeWindow.window))
                return (try GestureTrace.read(reader, source: .frames),
                        try ReplayInput.load(paths: [try InputSpool.readablePath(path)], wireProtocol: input.wire.given, port: input.port,
                                             window: timeWindow.window),
                        reader.firstNs)
            }
            var configuration = Replayer.Configuration(target: .network(TransportTarget(Transports.udp, address)), input: replayInput)
            configuration.options.speed = liveSpeed
            let replayer = Replayer(configuration: configuration, logger: Logger(label: "kinetrace.gestures") { _ in SwiftLogNoOpLogHandler() })
            let report: ReplayReport
            do throws(ReplayError) {
                report = try signals.running(replayer) { (r: Replayer) throws(ReplayError) -> ReplayReport in try r.run() }
            } catch {
                if stderrIsTerminal { writeStandardError("\r\u{1B}[K") }
                // Options the planner refuses (a --live-speed that stretches the replay past 30 days) are usage errors.
                if error.code == .badOptions {
                    printError("\(path): --live-speed \(liveSpeed): \(error.description)")
                    throw ExitCode.validationFailure
                }
                printError("\(path): \(error.description)")
                throw ExitStatus.unavailable
            }
            switch report.outcome {
            case .completed: break
            case .interrupted: throw ExitStatus.interrupted
            default:
                if stderrIsTerminal { writeStandardError("\r\u{1B}[K") }
                printError("\(path): replay to \(host) \(report.outcome.rawValue): \(report.detail ?? "")")
                switch report.outcome {
                // A flood of replies (or broken stdio framing) is the host's fault, as replay reports it.
                case .protocolError, .flooded: throw ExitStatus.protocolFailure
                case .timedOut: throw ExitStatus.timedOut
                default: throw ExitStatus.unavailable
                }
            }
            // Every reply is a detection: the answered predictions, and every reply nobody predicted (echoing
            // an unsent stamp included: it still claims a jump at that time).
            let detections = report.triggers.filter { !$0.predicted || $0.roundTripNs != nil }.map { trigger in
                (controller: report.controllers[trigger.controller].source,
                 detection: Detection(gesture: "jump", senderTimeMs: trigger.senderTimeMs, timeNs: 0))
            }
            let labels = trace.labels.filter { $0.gesture == "jump" }
            let score = GestureScore.match(labels: labels, detections: detections, window: window)
            outcomes.append(TraceOutcomes(startNs: startNs, outcomes: GestureOutcome.match(labels: labels, detections: detections, window: window)))
            summaries.append(summary(trace, path: path, scores: [TraceScore(score: score, byGesture: ["jump": score], detections: detections.count)],
                                     gestures: ["jump"]))
            timing.perTraceNs.append(SystemClock.monotonicNs() - traceStart)
        }
        if stderrIsTerminal { writeStandardError("\r\u{1B}[K") }
        return (GestureReport(detector: "live \(host)", gestures: ["jump"], settings: [], sweptParameter: nil, window: window,
                              traces: summaries), outcomes)
    }

    /// Files named directly, and the traces, pcaps and pcapngs inside named directories (sorted).
    static func expand(_ arguments: [String]) throws -> [String] {
        var paths: [String] = []
        for argument in arguments {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
                printError("\(argument): cannot open: No such file or directory")
                throw ExitStatus.noInput
            }
            guard isDirectory.boolValue else { paths.append(argument); continue }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
            let found = names.filter { $0.hasSuffix(".jsonl") || $0.hasSuffix(".pcap") || $0.hasSuffix(".pcapng") }.sorted()
            guard !found.isEmpty else {
                printError("\(argument): no .jsonl, .pcap or .pcapng files in this directory")
                throw ExitStatus.noInput
            }
            paths += found.map { (argument as NSString).appendingPathComponent($0) }
        }
        return paths
    }

    static func loadBaseline(_ path: String) throws -> GestureBaseline {
        guard let data = FileManager.default.contents(atPath: path) else {
            printError("\(path): cannot read the baseline")
            throw ExitStatus.noInput
        }
        switch JSONValue.parse([UInt8](data)) {
        case .failure(let error):
            printError("\(path): not a gesture evaluation result: \(error)")
            throw ExitStatus.dataError
        case .success(let value):
            guard let baseline = GestureRendering.baseline(from: value) else {
                printError("\(path): not a gesture evaluation result: no \"summary\" with f1 and recall (write one with --format json)")
                throw ExitStatus.dataError
            }
            // A score outside [0, 1] would make the gate pass or fail whatever the run scores.
            let scores = [("summary f1", baseline.f1), ("summary recall", baseline.recall), ("summary precision", baseline.precision)]
                + baseline.traceF1.sorted { $0.key < $1.key }.map { ("f1 of trace \($0.key)", $0.value) }
            if let (member, value) = scores.first(where: { $0.1.map { !(0...1).contains($0) } ?? false }) {
                printError("\(path): \(member) is \(value!), not a score from 0 to 1")
                throw ExitStatus.dataError
            }
            return baseline
        }
    }
}

/// What became of each label and detection of one trace at the reported setting, and when the
/// trace starts (its first record), for times in seconds since then.
struct TraceOutcomes {
    var startNs: Int64?
    var outcomes: [GestureOutcome]
}

/// Where the time went: reading traces, and running and scoring the detectors (offline runs).
struct GestureTiming {
    var totalNs: Int64 = 0
    var readNs: Int64 = 0
    var evaluateNs: Int64 = 0
    /// Each trace's reading and scoring (or replay), in trace order.
    var perTraceNs: [Int64] = []
}

enum GestureFormat: String, ReportFormat {
    case text, json, junit
    static var defaultFormat: GestureFormat { .text }
    static var formatHelp: String { "text for people, json for machines (and --baseline), junit for CI" }
}

extension SampleSource: ExpressibleByArgument {}

/// Stops the replay in progress on SIGINT or SIGTERM.
final class LiveStop: @unchecked Sendable {  // `current` is behind `lock`
    private let lock = NSLock()
    private var current: Replayer?
    private var token: TerminationHandlerToken?

    init() {
        token = onTermination { [weak self] _ in
            guard let self else { return }
            self.lock.withLock { self.current }?.stop()
        }
    }

    func running<T>(_ replayer: Replayer, _ body: (Replayer) throws(ReplayError) -> T) throws(ReplayError) -> T {
        lock.withLock { current = replayer }
        defer { lock.withLock { current = nil } }
        return try body(replayer)
    }
}
