import ArgumentParser
import Foundation
import KinetraceGestures
import KinetraceJSON
import KinetracePlot
import KinetraceTrace
import KinetraceWire

/// `kinetrace plot`: figures of one trace.
struct Plot: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw figures of a trace: its motion over time, with the threshold, decisions and scored labels.",
        subcommands: [PlotTimeline.self])
}

/// A motion vector a timeline can draw, named as a declaration's roles name it.
enum TimelineVector: String, ExpressibleByArgument, CaseIterable, Sendable {
    case userAcceleration = "user_acceleration"
    case rotationRate = "rotation_rate"
    case gravity
    case attitude
    case own

    var slot: VectorSlot {
        switch self {
        case .userAcceleration: return .userAcceleration
        case .rotationRate: return .rotationRate
        case .gravity: return .gravity
        case .attitude: return .attitude
        case .own: return .own
        }
    }

    init(_ slot: VectorSlot) {
        switch slot {
        case .userAcceleration: self = .userAcceleration
        case .rotationRate: self = .rotationRate
        case .gravity: self = .gravity
        case .attitude: self = .attitude
        case .own: self = .own
        }
    }

    /// What a sample must carry for this vector to be drawn.
    var content: SampleContents {
        switch self {
        case .userAcceleration: return .userAcceleration
        case .rotationRate: return .rotationRate
        case .gravity: return .gravity
        case .attitude: return .attitude
        case .own: return .ownVector
        }
    }

    /// The order a timeline picks a vector in when nothing says which.
    static let preference: [TimelineVector] = [.userAcceleration, .own, .rotationRate, .attitude, .gravity]

    /// The vector's value in a sample, in the unit drawn (attitude in degrees); nil when the sample has none.
    func value(_ sample: GestureSample) -> Vector3? {
        guard sample.contents.contains(content) else { return nil }
        switch self {
        case .userAcceleration: return sample.userAcceleration
        case .rotationRate: return sample.rotationRate
        case .gravity: return sample.gravity
        case .attitude: return sample.attitude.map { Vector3($0.x * 180 / .pi, $0.y * 180 / .pi, $0.z * 180 / .pi) }
        case .own: return sample.own
        }
    }

    /// A value of this vector in the unit drawn, from the unit a threshold on it is stated in.
    func drawn(_ value: Double, unit: String) -> Double { self == .attitude && unit == "rad" ? value * 180 / .pi : value }
}

/// `kinetrace plot timeline TRACE`: one panel per controller (and vector), on one time axis.
struct PlotTimeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: "Draw a trace's motion over time, per controller: the quantities, the threshold, what crossed it, the host's decisions and replies, and the labels scored as hit, missed or false.",
        discussion: """
            Each panel is one controller's motion vector on the trace's time axis (seconds since \
            its first record, reading the controller's clock as the recorder's when they agree \
            within a minute): one line per quantity, named as the protocol names it, and the \
            threshold τ it is compared with as a dashed line, with the samples that crossed it \
            ringed. Above the plot, the host lane holds the decisions the protocol's own host \
            model makes over the trace's samples (▲), the decisions the trace records, and the \
            replies in it (▼); the labels lane holds each label scored as `gestures eval` scores \
            it: a green dot for a label a detection matched (TP, joined to the detection), a red \
            cross for one nothing matched (FN), an orange diamond for a detection no label \
            claimed (FP). The labels are shaded in their outcome's colour for as long as they \
            last; stretches with no sample for more than two sample periods are shaded grey, \
            and stream events (a connection's start and end) are dashed lines.

            The labels lane is drawn when a --detector is given, or when the trace has labels \
            (scored with host-model, the protocol's own host model). The samples are those \
            --source chooses, as for `gestures eval`. However many there are, each line keeps \
            the first, lowest, highest and last sample of each pixel column, so the file stays \
            small; values that are not finite are skipped and counted in the panel's note.

            -o names the file; its extension chooses the format: .svg is written directly, \
            .png (at twice the pixel size) and .pdf are converted by rsvg-convert, which must \
            be on PATH (exit 69 without it). An unknown --controller is a usage error (exit \
            64) naming the controllers the trace has; a window with no sample of the chosen \
            controllers writes nothing and exits 65.
            """)

    @Argument(help: ArgumentHelp("The trace to draw: kinetrace trace v1 (JSON Lines), pcap or pcapng.", valueName: "trace"), completion: .file())
    var trace: String

    @Option(name: [.customShort("o"), .customLong("output")],
            help: ArgumentHelp("The figure's file: .svg, .png or .pdf (by its extension; any other name gets SVG).", valueName: "file"),
            completion: .file(extensions: ["svg", "png", "pdf"]))
    var output: String

    @Option(name: .customLong("controller"),
            help: ArgumentHelp("A controller to draw, as the trace names it (ADDRESS:PORT); repeatable. Default: every controller when there are at most 3, else the first.",
                               valueName: "id"))
    var controllers: [String] = []

    @Option(help: ArgumentHelp("Start of the window, in seconds since the trace's first record.", valueName: "seconds"))
    var from: Double?

    @Option(help: ArgumentHelp("End of the window, in seconds since the trace's first record (default: the trace's end).", valueName: "seconds"))
    var to: Double?

    @Option(name: .customLong("vector"),
            help: ArgumentHelp("The motion vector to draw (own: the protocol's own vector); repeatable, one panel each. Default: the one the threshold watches, else the first the samples carry.",
                               valueName: "name"))
    var vectors: [TimelineVector] = []

    @Option(help: ArgumentHelp("Score the labels with this detector (as `gestures eval --detector`): \(DetectorKind.allCases.map(\.rawValue).joined(separator: ", ")). Default: host-model when the trace has labels.",
                               valueName: "name"),
            completion: .list(DetectorKind.allCases.map(\.rawValue)))
    var detector: String?

    @Option(name: .customLong("param"), help: ArgumentHelp("Set a detector parameter, e.g. --param threshold=0.6; repeat for more.", valueName: "name=value"))
    var params: [String] = []

    @Option(name: .customLong("window-ms"), help: ArgumentHelp("The match window around each label's onset, as BEFORE:AFTER in ms.", valueName: "before:after"))
    var windowMs = "100:700"

    @Option(help: ArgumentHelp("Which samples to draw and score: motion when a trace has them, else frames (auto); or only one kind.", valueName: "source"))
    var source: SampleSource = .auto

    @OptionGroup var input: CaptureInputOptions

    /// The largest time a window may name: 2^62 ns, the latest a trace may hold.
    static let maximumSeconds = 4_611_686_018.0
    /// Columns each line is reduced to while the trace is read (the drawing reduces it again, per pixel).
    static let readingColumns = 4096
    /// Crossings, replies and decisions kept per controller; the rest are counted.
    static let maximumMarks = 200_000
    /// Gaps kept per controller; closer ones are merged.
    static let maximumGaps = 10_000

    func validate() throws {
        for (name, value) in [("--from", from), ("--to", to)] {
            guard let value else { continue }
            guard value.isFinite, abs(value) <= Self.maximumSeconds else {
                throw ValidationError("\(name) takes seconds since the trace's start, from -\(Int(Self.maximumSeconds)) to \(Int(Self.maximumSeconds)).")
            }
        }
        if let from, let to, !(from < to) { throw ValidationError("--from must be before --to.") }
        if let detector { _ = try GesturesEval.detectorSettings(detector: detector, params: params, sweep: nil) }
        else if !params.isEmpty { throw ValidationError("--param sets a --detector's parameter: name the detector.") }
        _ = try GesturesEval.matchWindow(windowMs)
        for controller in controllers where controller.isEmpty { throw ValidationError("--controller takes a controller's ADDRESS:PORT.") }
    }

    func run() throws {
        // Before any work: a format that cannot be written stops the run at once.
        let format = PlotFormat(fileName: output) ?? .svg
        var converter: PlotConverter?
        if format != .svg {
            guard let executable = PlotConverter.findOnPath("rsvg-convert") else {
                printError("a \(format.rawValue) figure (-o \(output)) needs rsvg-convert (librsvg; Debian's librsvg2-bin) on PATH, and there is none; name the file .svg")
                throw ExitStatus.unavailable
            }
            converter = PlotConverter(executable: executable, format: format)
        }
        let window = try GesturesEval.matchWindow(windowMs)
        let given = try detector.map { try GesturesEval.detectorSettings(detector: $0, params: params, sweep: nil).0[0] }
        // Without a detector the protocol's own host model scores the labels, if there are any.
        let settings = try given ?? DetectorKind.hostModel.settings([:])

        // Read twice: a pipe or standard input is kept in a private copy once, and that is read both times.
        let path = try reportingFailures { () throws(TraceError) -> String in try InputSpool.readablePath(trace) }

        // First pass: the controllers, the samples each one has, the labels and the detections.
        let first = try reportingFailures { () throws(TraceError) -> (DetectedTrace, RecordTap) in
            let tap = RecordTap(try openInputReadingAhead(path: path, wireProtocol: input.wire.given, port: input.port))
            let detected = try DetectedTrace.read(tap, source: source, settings: [settings])
            if let truncation = tap.truncation { printWarning("\(trace): \(truncation)") }
            return (detected, tap)
        }
        let (detected, firstTap) = first
        guard let startNs = firstTap.firstNs, let endNs = firstTap.lastNs else {
            printError("\(trace): no records: nothing to plot")
            throw ExitStatus.dataError
        }
        guard !detected.controllers.isEmpty else {
            printError("\(trace): no motion samples of \(detected.protocolID) from any controller (--source \(source.rawValue)): nothing to plot")
            throw ExitStatus.dataError
        }
        let chosen = try chooseControllers(detected.controllers)

        let scoring = given != nil || !detected.labels.isEmpty
        var outcomes: [GestureOutcome] = []
        if scoring {
            do throws(GestureError) {
                _ = try GestureEvaluation.evaluate(detected, window: window)
            } catch {
                printError(error.description)
                throw ExitStatus.dataError
            }
            outcomes = GestureEvaluation.outcomes(detected, setting: 0, window: window)
        }

        // The window: as asked, inside the trace's span.
        let spanSeconds = Double(endNs - startNs) / 1e9
        let lower = max(from ?? 0, 0), upper = min(to ?? spanSeconds, spanSeconds)
        guard lower < upper || (from == nil && to == nil) else {
            printError("\(trace): the window \(Self.seconds(from ?? 0))–\(Self.seconds(to ?? spanSeconds)) s holds nothing: the trace spans 0–\(Self.seconds(spanSeconds)) s")
            throw ExitStatus.dataError
        }
        if let to, to > spanSeconds { printNote("the trace ends at \(Self.seconds(spanSeconds)) s: the window ends there") }

        let wireProtocol = firstTap.wireProtocol
        let thresholds = watchedThresholds(detected: detected, chosen: chosen, given: given, wireProtocol: wireProtocol)
        let drawnVectors = try pickVectors(detected: detected, chosen: chosen, threshold: thresholds.first)

        // Second pass: the samples of the chosen controllers, reduced as they come, and what the host did.
        var collector = TimelineCollector(
            startNs: startNs, window: TimelineSpan(start: lower, end: upper), controllers: chosen.map { detected.controllers[$0] },
            kinds: chosen.map { detected.sampleKinds[$0] }, vectors: drawnVectors, thresholds: thresholds,
            nominalPeriods: chosen.map { nominalPeriod(kind: detected.sampleKinds[$0], wireProtocol: wireProtocol, header: detected.header) },
            wireProtocol: wireProtocol)
        let slots = Dictionary(uniqueKeysWithValues: chosen.enumerated().map { ($1, $0) })
        try reportingFailures { () throws(TraceError) in
            let reader = try openInputReadingAhead(path: path, wireProtocol: input.wire.given, port: input.port)
            let tap = RecordTap(reader) { collector.note($0) }
            _ = try GestureTrace.scanSamples(tap, frame: { c, sample in
                if let slot = slots[c], collector.kinds[slot] == .frames { collector.add(sample, slot: slot) }
            }, motion: { c, sample in
                if let slot = slots[c], collector.kinds[slot] == .motion { collector.add(sample, slot: slot) }
            }, label: { _ in })
        }
        guard collector.samplesInWindow > 0 else {
            let names = chosen.map { detected.controllers[$0].description }.joined(separator: ", ")
            printError("\(trace): no sample of \(names) in the window \(Self.seconds(lower))–\(Self.seconds(upper)) s: nothing to plot")
            throw ExitStatus.dataError
        }
        for note in collector.notes { printNote(note) }
        if collector.dropped > 0 {
            printNote("\(collector.dropped) crossings, decisions, replies or gaps past the \(Self.maximumMarks) kept per controller were left out")
        }

        let (figure, counts) = makeFigure(detected: detected, chosen: chosen, collector: collector, outcomes: scoring ? outcomes : nil,
                                settings: settings, given: given != nil, window: TimelineSpan(start: lower, end: upper), matchWindow: window)
        let rendering = Timeline.render(figure)
        if rendering.skippedValues > 0 { printWarning("\(trace): \(rendering.skippedValues) non-finite value(s) skipped") }
        if let converter {
            let bytes = try converter.convert(rendering.svg)
            try PartialOutputs.writing(output) { try writeOutput(bytes: bytes, to: output, what: "the figure") }
        } else {
            try writeOutput(rendering.svg, to: output, what: "the figure")
        }

        var summary = "\(output): \(figure.panels.count) panel\(figure.panels.count == 1 ? "" : "s"), \(collector.samplesInWindow) samples "
            + "in \(Self.seconds(lower))–\(Self.seconds(upper)) s drawn as \(rendering.drawnPoints) points"
        if scoring {
            summary += "; \(settings.kind.rawValue) in the window: TP \(counts[.truePositive] ?? 0), FN \(counts[.falseNegative] ?? 0), FP \(counts[.falsePositive] ?? 0)"
        }
        print(summary)
    }

    static func seconds(_ value: Double) -> String { GestureRendering.number(value, 3).replacingOccurrences(of: ".000", with: "") }

    /// The controllers to draw, as indices into `controllers`; an unknown one is a usage error.
    func chooseControllers(_ all: [Endpoint]) throws -> [Int] {
        guard !controllers.isEmpty else {
            if all.count > 3 { printNote("\(trace) has \(all.count) controllers: drawing the first, \(all[0]); --controller chooses") }
            return all.count <= 3 ? Array(all.indices) : [0]
        }
        var chosen: [Int] = []
        for name in controllers {
            let wanted = Endpoint(name)
            guard let index = all.firstIndex(where: { $0 == wanted || $0.description == name }) else {
                let listed = all.prefix(8).map(\.description).joined(separator: ", ") + (all.count > 8 ? ", … (\(all.count) in all)" : "")
                printError("\(trace): no controller \(name); the trace has \(listed)")
                throw ExitCode.validationFailure
            }
            if !chosen.contains(index) { chosen.append(index) }
        }
        return chosen
    }

    /// The thresholds to draw: the detector's (when one was named and it compares one quantity),
    /// and the protocol's host rule's; one line when they are the same.
    func watchedThresholds(detected: DetectedTrace, chosen: [Int], given: DetectorSettings?, wireProtocol: any WireProtocol) -> [TimelineThreshold] {
        var out: [TimelineThreshold] = []
        let carried = chosen.reduce(SampleContents.everything) { $0.intersection(detected.sampleContents[$1]) }
        if let given, let watched = given.watchedThreshold(carrying: carried) {
            out.append(TimelineThreshold(watched: watched, source: given.kind.rawValue))
        }
        if let host = WatchedThreshold.host(of: wireProtocol, threshold: wireProtocol.defaultRule.threshold) {
            if let index = out.firstIndex(where: { $0.sameLine(as: host) }) {
                out[index].source += " and the host rule"
            } else {
                out.append(TimelineThreshold(watched: host, source: "host rule"))
            }
        }
        return out
    }

    /// The vectors to draw: those asked for, or the threshold's, or the first the samples carry.
    func pickVectors(detected: DetectedTrace, chosen: [Int], threshold: TimelineThreshold?) throws -> [TimelineVector] {
        let carried = chosen.reduce(SampleContents()) { $0.union(detected.sampleContents[$1]) }
        if !vectors.isEmpty {
            var picked: [TimelineVector] = []
            for vector in vectors where !picked.contains(vector) {
                guard carried.contains(vector.content) else {
                    let has = TimelineVector.allCases.filter { carried.contains($0.content) }.map(\.rawValue)
                    printError("\(trace): --vector \(vector.rawValue): the samples carry none; they carry \(has.isEmpty ? "no vector" : has.joined(separator: ", "))")
                    throw ExitStatus.dataError
                }
                picked.append(vector)
            }
            return picked
        }
        if let threshold, carried.contains(threshold.vector.content) { return [threshold.vector] }
        if let first = TimelineVector.preference.first(where: { carried.contains($0.content) }) { return [first] }
        printError("\(trace): the samples carry no motion vector to draw")
        throw ExitStatus.dataError
    }

    /// The time between samples a controller is expected to keep: the protocol's rate for its
    /// samples, the header's `motion_hz` for device-motion ones; nil when neither says (then the
    /// first intervals decide).
    func nominalPeriod(kind: SampleSource, wireProtocol: any WireProtocol, header: TraceHeader) -> Double? {
        let rate = kind == .motion ? header.extra["motion_hz"]?.doubleValue : wireProtocol.nominalRateHz
        guard let rate, rate.isFinite, rate > 0 else { return nil }
        return 1 / rate
    }

    func makeFigure(detected: DetectedTrace, chosen: [Int], collector: TimelineCollector, outcomes: [GestureOutcome]?,
                    settings: DetectorSettings, given: Bool, window: TimelineSpan, matchWindow: MatchWindow)
        -> (TimelineFigure, [TimelineOutcome.Kind: Int]) {
        let wireProtocol = collector.wireProtocol
        let declaration = wireProtocol.declaration ?? (type(of: wireProtocol) as? any CompiledWireProtocol.Type)?.builtInDeclaration?.declared
        let durations = Dictionary(detected.labels.compactMap { label -> (String, Double)? in
            label.durationMs.map { ("\(label.controller?.description ?? "")@\(label.senderTimeMs)", $0) }
        }, uniquingKeysWith: { a, _ in a })
        var panels: [TimelinePanel] = []
        // What the panels show, each controller once (its vectors' panels repeat its labels).
        var counts: [TimelineOutcome.Kind: Int] = [:]
        for (slot, c) in chosen.enumerated() {
            let controller = detected.controllers[c]
            let offsetMs = collector.offsetMs[slot]
            func seconds(_ ms: Double) -> Double { (ms + offsetMs - collector.startMs) / 1000 }
            // A missed label that names no controller goes on the first panel only, so each outcome is drawn once.
            let mine = outcomes.map { all in
                all.filter { $0.controller == controller || ($0.controller == nil && slot == 0) }.map { o in
                    TimelineOutcome(kind: TimelineOutcome.Kind(o.kind), labelTime: o.labelMs.map(seconds),
                                    detectionTime: o.detectionMs.map { seconds(Double($0)) },
                                    duration: o.labelMs.flatMap { durations["\(o.controller?.description ?? "")@\($0)"] }.map { $0 / 1000 })
                }
            }
            for outcome in mine ?? [] {
                guard let time = outcome.kind == .falsePositive ? outcome.detectionTime : outcome.labelTime,
                      time >= window.start, time <= window.end else { continue }
                counts[outcome.kind, default: 0] += 1
            }
            for vector in collector.vectors where detected.sampleContents[c].contains(vector.content) {
                let names = Self.quantityNames(vector, declaration: declaration)
                let series = (0..<3).map { axis in TimelineSeries(name: names[axis], points: collector.points(slot: slot, vector: vector, axis: axis)) }
                var lines: [ReferenceLine] = []
                var watched: Int?
                for threshold in collector.thresholds where threshold.vector == vector {
                    watched = watched ?? threshold.axis
                    let legend = "τ = \(threshold.valueText) on \(names[threshold.axis]) (\(threshold.source))"
                    for value in threshold.drawnValues {
                        lines.append(ReferenceLine(label: "τ = \(threshold.text(value))", value: value, legend: legend))
                    }
                }
                let kind = detected.sampleKinds[c] == .motion ? "device-motion samples" : "the protocol's samples"
                panels.append(TimelinePanel(
                    title: "\(controller) · \(Self.vectorName(vector, declaration: declaration)) · \(kind)",
                    yLabel: "\(Self.vectorName(vector, declaration: declaration)) (\(Self.unit(vector)))",
                    series: series, watched: watched, thresholds: lines,
                    triggers: collector.thresholds.first?.vector == vector ? collector.triggers[slot] : [],
                    decisions: collector.decisions[slot], replies: collector.replies[slot], recordedDecisions: collector.recorded[slot],
                    outcomes: mine, gaps: collector.gaps[slot], events: collector.events[slot],
                    skippedValues: collector.nonFinite[slot][vector] ?? 0))
            }
        }
        let name = trace == "-" ? "standard input" : (trace as NSString).lastPathComponent
        let who = chosen.count == 1 ? "\(detected.controllers[chosen[0]])" : "\(chosen.count) controllers"
        var subtitle = "trace start \(RFC3339.string(fromNanoseconds: collector.startNs)); window \(Self.seconds(window.start))–\(Self.seconds(window.end)) s"
        if outcomes != nil {
            let detector = given ? settings.kind.rawValue : "host-model (no --detector given)"
            let parameters = settings.description.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            subtitle += ": TP \(counts[.truePositive] ?? 0), FN \(counts[.falseNegative] ?? 0), FP \(counts[.falsePositive] ?? 0)"
                + "; scored with \(detector)\(parameters.isEmpty ? "" : " " + parameters), match window "
                + "−\(Self.seconds(matchWindow.beforeMs))…+\(Self.seconds(matchWindow.afterMs)) ms"
        }
        return (TimelineFigure(title: "\(name) · \(wireProtocol.id) · \(who)", subtitle: subtitle, window: window, panels: panels), counts)
    }

    /// The quantities' names: the protocol's field with that role when it declares one, else the vector's axis.
    static func quantityNames(_ vector: TimelineVector, declaration: ProtocolDeclaration?) -> [String] {
        (0..<3).map { axis in
            let role = FieldRole.motion(vector.slot, axis: axis)
            for kind in declaration?.kinds ?? [] where kind.direction == .controllerToHost {
                if let field = kind.field(withRole: role) { return kind.fields[field].name }
            }
            switch vector {
            case .attitude: return ["roll", "pitch", "yaw"][axis]
            default: return "\(vectorName(vector, declaration: declaration)) \(["x", "y", "z"][axis])"
            }
        }
    }

    static func vectorName(_ vector: TimelineVector, declaration: ProtocolDeclaration?) -> String {
        vector == .own ? declaration?.ownVector?.name ?? "own vector" : vector.rawValue.replacingOccurrences(of: "_", with: " ")
    }

    static func unit(_ vector: TimelineVector) -> String {
        switch vector {
        case .userAcceleration, .gravity: return "g"
        case .rotationRate: return "rad/s"
        case .attitude: return "°"
        case .own: return "the protocol's unit"
        }
    }
}

extension TimelineOutcome.Kind {
    init(_ kind: GestureOutcome.Kind) {
        switch kind {
        case .truePositive: self = .truePositive
        case .falseNegative: self = .falseNegative
        case .falsePositive: self = .falsePositive
        }
    }
}

/// A threshold to draw on a vector's panel, in the unit drawn, and whose it is.
struct TimelineThreshold {
    var vector: TimelineVector
    var axis: Int
    /// The values in the unit the threshold is stated in.
    var values: [Double]
    var unit: String
    /// Whose threshold: a detector's name, "host rule", or both.
    var source: String

    init(watched: WatchedThreshold, source: String) {
        vector = TimelineVector(watched.vector)
        axis = watched.axis
        values = watched.values
        unit = watched.unit
        self.source = source
    }

    var drawnValues: [Double] { values.map { vector.drawn($0, unit: unit) } }
    /// The threshold when it is crossed upwards, and the lower one crossed downwards (a two-sided one).
    var upper: Double { drawnValues.max() ?? 0 }
    var lower: Double? { values.count > 1 ? drawnValues.min() : nil }

    func sameLine(as other: WatchedThreshold) -> Bool {
        TimelineVector(other.vector) == vector && other.axis == axis
            && other.values.map { TimelineVector(other.vector).drawn($0, unit: other.unit) } == drawnValues
    }

    func text(_ value: Double) -> String {
        let shownUnit = vector == .attitude ? "°" : unit
        let number = GestureFigures.compact(value)
        return shownUnit.isEmpty ? number : shownUnit == "°" ? number + "°" : "\(number) \(shownUnit)"
    }

    var valueText: String { values.count > 1 ? "±" + text(upper) : text(upper) }
}

/// What the second pass over a trace gathers for the chosen controllers, in bounded memory:
/// each vector's axes reduced to a fixed number of columns, the crossings of the thresholds,
/// gaps, the host's decisions and replies, and stream events.
struct TimelineCollector {
    let startNs: Int64
    let startMs: Double
    let window: TimelineSpan
    let controllers: [Endpoint]
    let kinds: [SampleSource]
    let vectors: [TimelineVector]
    let thresholds: [TimelineThreshold]
    let nominalPeriods: [Double?]
    let wireProtocol: any WireProtocol

    private let slotOf: [Endpoint: Int]
    private var decimators: [[TimelineVector: [TimelineDecimator]]]
    private var hostModel: any HostModel
    private var numbering = ControllerNumbering<Endpoint>()
    private var newestMs: [UInt64?]
    private var previousTime: [Double?]
    private var previousValue: [[Double?]]
    private var intervals: [[Double]]
    private var period: [Double?]

    private(set) var offsetMs: [Double]
    private(set) var samplesInWindow = 0
    private(set) var nonFinite: [[TimelineVector: Int]]
    private(set) var triggers: [[PlotPoint]]
    private(set) var decisions: [[Double]]
    private(set) var replies: [[Double]]
    private(set) var recorded: [[Double]]
    private(set) var gaps: [[TimelineSpan]]
    private(set) var events: [[TimelineEvent]]
    private(set) var notes: [String] = []
    private(set) var dropped = 0

    init(startNs: Int64, window: TimelineSpan, controllers: [Endpoint], kinds: [SampleSource], vectors: [TimelineVector],
         thresholds: [TimelineThreshold], nominalPeriods: [Double?], wireProtocol: any WireProtocol) {
        self.startNs = startNs
        startMs = Double(startNs) / 1e6
        self.window = window
        self.controllers = controllers
        self.kinds = kinds
        self.vectors = vectors
        self.thresholds = thresholds
        self.nominalPeriods = nominalPeriods
        self.wireProtocol = wireProtocol
        slotOf = Dictionary(controllers.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let reducer = TimelineDecimator(lower: window.start, upper: window.end, columns: PlotTimeline.readingColumns)
        decimators = controllers.map { _ in Dictionary(uniqueKeysWithValues: vectors.map { ($0, [reducer, reducer, reducer]) }) }
        hostModel = wireProtocol.makeHostModel(rule: wireProtocol.defaultRule)
        let n = controllers.count
        newestMs = Array(repeating: nil, count: n)
        previousTime = Array(repeating: nil, count: n)
        previousValue = Array(repeating: Array(repeating: nil, count: thresholds.count), count: n)
        intervals = Array(repeating: [], count: n)
        period = nominalPeriods
        offsetMs = Array(repeating: 0, count: n)
        nonFinite = Array(repeating: [:], count: n)
        triggers = Array(repeating: [], count: n)
        decisions = Array(repeating: [], count: n)
        replies = Array(repeating: [], count: n)
        recorded = Array(repeating: [], count: n)
        gaps = Array(repeating: [], count: n)
        events = Array(repeating: [], count: n)
    }

    func slot(of controller: Endpoint?) -> Int? { controller.flatMap { slotOf[$0] } }

    func points(slot: Int, vector: TimelineVector, axis: Int) -> [PlotPoint] { decimators[slot][vector]?[axis].points ?? [] }

    private func seconds(ns: Int64) -> Double { Double(ns - startNs) / 1e9 }

    private static func keep(_ time: Double, in list: inout [Double], window: TimelineSpan, dropped: inout Int) {
        guard time >= window.start, time <= window.end else { return }
        if list.count < PlotTimeline.maximumMarks { list.append(time) } else { dropped += 1 }
    }

    /// One sample of a chosen controller, in arrival order; a stale one (not newer on the sender's clock) is left out, as scoring leaves it.
    mutating func add(_ sample: GestureSample, slot: Int) {
        if sample.contents.contains(.senderClock) {
            if let newest = newestMs[slot], sample.senderTimeMs <= newest { return }
            newestMs[slot] = sample.senderTimeMs
        }
        let senderMs = Double(sample.senderTimeMs)
        if previousTime[slot] == nil {
            // A controller clock more than a minute from the recorder's is placed on it by its first sample's arrival.
            let arrivalMs = Double(sample.timeNs) / 1e6
            if abs(arrivalMs - senderMs) > 60_000 {
                offsetMs[slot] = arrivalMs - senderMs
                notes.append("\(controllers[slot])'s clock is \(PlotTimeline.seconds((arrivalMs - senderMs) / 1000)) s from the recorder's; "
                             + "its times are shifted to its first sample's arrival")
            }
        }
        let time = (senderMs + offsetMs[slot] - startMs) / 1000
        if let previous = previousTime[slot] { noteInterval(from: previous, to: time, slot: slot) }
        previousTime[slot] = time
        let inWindow = time >= window.start && time <= window.end
        if inWindow { samplesInWindow += 1 }
        for vector in vectors {
            guard let value = vector.value(sample) else { continue }
            let components = [value.x, value.y, value.z]
            let before = decimators[slot][vector]!.reduce(0) { $0 + $1.nonFinite }
            for axis in 0..<3 { decimators[slot][vector]![axis].add(time: time, value: components[axis]) }
            let after = decimators[slot][vector]!.reduce(0) { $0 + $1.nonFinite }
            if after > before { nonFinite[slot][vector, default: 0] += after - before }
        }
        // The samples that crossed the first threshold (the detector's, when one was named): one "crossed τ" per panel.
        for (index, threshold) in thresholds.prefix(1).enumerated() {
            guard let vector = threshold.vector.value(sample) else { continue }
            let now = [vector.x, vector.y, vector.z][threshold.axis]
            guard now.isFinite else { continue }
            defer { previousValue[slot][index] = now }
            let before = previousValue[slot][index]
            let crossedUp = now > threshold.upper && (before.map { $0 <= threshold.upper } ?? true)
            let crossedDown = threshold.lower.map { lower in now < lower && (before.map { $0 >= lower } ?? true) } ?? false
            guard crossedUp || crossedDown, inWindow else { continue }
            if triggers[slot].count < PlotTimeline.maximumMarks { triggers[slot].append(PlotPoint(x: time, y: now)) } else { dropped += 1 }
        }
    }

    /// A gap is more than two sample periods without a sample; with no stated period, the median of the first 16 intervals is taken.
    private mutating func noteInterval(from previous: Double, to time: Double, slot: Int) {
        let interval = time - previous
        guard interval > 0 else { return }
        if period[slot] == nil {
            intervals[slot].append(interval)
            guard intervals[slot].count >= 16 else { return }
            let sorted = intervals[slot].sorted()
            period[slot] = sorted[sorted.count / 2]
            intervals[slot] = []
        }
        guard let period = period[slot], interval > 2 * period, time > window.start, previous < window.end else { return }
        // Gaps closer than a two-thousandth of the window merge: they could not be told apart.
        let close = (window.end - window.start) / 2000
        if let last = gaps[slot].last, previous - last.end <= close {
            gaps[slot][gaps[slot].count - 1].end = time
        } else if gaps[slot].count < PlotTimeline.maximumGaps {
            gaps[slot].append(TimelineSpan(start: previous, end: time))
        } else {
            dropped += 1
        }
    }

    /// Every record, as it passes: the host model's decisions over the samples, replies, recorded decisions and stream events.
    mutating func note(_ record: TraceRecord) {
        switch record {
        case .message(let m) where m.direction == .controllerToHost:
            let facts = m.facts(wireProtocol)
            let number = numbering.number(of: m.source)
            if case .decided = hostModel.accept(facts, from: number, receivedNs: m.timeNs), let slot = slotOf[m.source] {
                Self.keep(seconds(ns: m.timeNs), in: &decisions[slot], window: window, dropped: &dropped)
            }
        case .message(let m):
            guard let slot = slotOf[m.destination], m.facts(wireProtocol).isValid else { return }
            Self.keep(seconds(ns: m.timeNs), in: &replies[slot], window: window, dropped: &dropped)
        case .event(let e):
            if let stream = StreamEvent(e) {
                let slot = slotOf[stream.source] ?? slotOf[stream.destination]
                guard let slot else { return }
                let text: String
                switch stream {
                case .start: text = "stream start"
                case .gap(_, _, _, let missing): text = "stream gap (\(missing) bytes)"
                case .end(_, _, let how, _): text = "stream end (\(how.rawValue))"
                }
                let time = seconds(ns: e.timeNs)
                if time >= window.start, time <= window.end, events[slot].count < PlotTimeline.maximumMarks {
                    events[slot].append(TimelineEvent(time: time, text: text))
                }
            } else if let name = e.data["controller"]?.stringValue, let controller = Endpoint(name), let slot = slotOf[controller] {
                switch e.event {
                case "decision", "observation": Self.keep(seconds(ns: e.timeNs), in: &recorded[slot], window: window, dropped: &dropped)
                case "connection_ended":
                    let time = seconds(ns: e.timeNs)
                    if time >= window.start, time <= window.end, events[slot].count < PlotTimeline.maximumMarks {
                        events[slot].append(TimelineEvent(time: time, text: "connection ended"))
                    }
                default: break
                }
            }
        default:
            break
        }
    }
}
