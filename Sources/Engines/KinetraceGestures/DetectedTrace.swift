import KinetraceTrace
import KinetraceWire

/// One trace's detections under every detector setting, and what scoring needs of its
/// samples, without the samples: `read` runs the detectors as the trace is read, so
/// evaluating a trace takes memory for its detections and labels, not for its samples
/// (a million samples held are 180 MB).
package struct DetectedTrace: Sendable {
    package var source: String
    package var header: TraceHeader
    package var controllers: [Endpoint]
    /// Which kind of record each controller's samples came from.
    package var sampleKinds: [SampleSource]
    /// Samples evaluated per controller (stale ones left out).
    package var sampleCounts: [Int]
    /// What every one of a controller's samples carries.
    package var sampleContents: [SampleContents]
    /// Whether any of a controller's samples lacks gravity.
    package var lacksGravity: [Bool]
    package var labels: [GestureLabel]
    package var kind: DetectorKind
    package var settingCount: Int
    /// Per controller, per setting: its detections in controller-clock order.
    package var detections: [[[Detection]]]

    package var sampleCount: Int { sampleCounts.reduce(0, +) }
    package var protocolID: ProtocolID { header.protocolID }

    /// The detections over samples already in memory.
    package init(_ trace: GestureTrace, settings: [DetectorSettings]) {
        let kind = settings.first?.kind ?? .threshold
        source = trace.source
        header = trace.header
        controllers = trace.controllers
        sampleKinds = trace.sampleKinds
        sampleCounts = trace.samples.map(\.count)
        sampleContents = trace.sampleContents
        lacksGravity = trace.samples.map { samples in samples.contains { $0.gravity == nil } }
        labels = trace.labels
        self.kind = kind
        settingCount = settings.count
        detections = settings.isEmpty ? trace.samples.map { _ in [] } : trace.samples.map { GestureEvaluation.detect(kind, settings, $0, wireProtocol: trace.wireProtocol) }
    }

    /// Reads every record once, feeding each controller's samples to every setting's detector as
    /// they come. What it finds equals `init(GestureTrace.read(reader, source:), settings:)`:
    /// the same samples are chosen (device-motion or frames, as `source` says), stale ones are
    /// left out the same way, and each detector sees them in the same order.
    ///
    /// Detector state costs memory per controller and setting, samples per sample: a trace of
    /// many controllers with few samples each, swept over many settings, would cost more
    /// streamed than held. So at most `streamingBudget` detectors run as the trace is read;
    /// the controllers beyond keep their samples, and are detected when the trace ends.
    package static func read<R: TraceRecordSource>(_ reader: R, source: SampleSource = .auto, settings: [DetectorSettings],
                                                   streamingBudget: Int = defaultStreamingBudget) throws(TraceError) -> DetectedTrace {
        return try GestureEvaluation.withDetectors(settings.first?.kind ?? .threshold, settings, wireProtocol: reader.wireProtocol,
                                                   ReadingVisitor(reader: reader, source: source, settings: settings,
                                                                  budget: streamingBudget)).get()
    }

    /// Detectors run as a trace is read, at most: about 80 MB of detector state (a detector and
    /// its list of detections are some 80 bytes), e.g. 10,000 controllers × 100 settings.
    package static let defaultStreamingBudget = 1_000_000

    fileprivate static func read<D: GestureDetector>(_ reader: any TraceRecordSource, source: SampleSource, settings: [DetectorSettings],
                                                     detectors: [D], budget: Int) throws(TraceError) -> DetectedTrace {
        // With `auto` a controller's samples are its device-motion ones if it has any, which only the end
        // of the trace tells: both lanes detect until then.
        var frames: [Lane<D>] = [], motion: [Lane<D>] = []
        var labels: [GestureLabel] = []
        var budget = budget
        let feedFrames = source != .motion, feedMotion = source != .frames
        let order = try GestureTrace.scan(reader, newController: {
            frames.append(Lane(evaluated: feedFrames))
            motion.append(Lane(evaluated: feedMotion))
        }, frame: { frames[$0].accept($1, detectors, &budget) }, motion: { motion[$0].accept($1, detectors, &budget) },
           label: { labels.append($0) })
        var chosen: [Lane<D>] = [], kinds: [SampleSource] = []
        for c in order.indices {
            let useMotion = switch source {
            case .auto: motion[c].received > 0
            case .frames: false
            case .motion: true
            }
            chosen.append(useMotion ? motion[c] : frames[c])
            kinds.append(useMotion ? .motion : .frames)
        }
        return DetectedTrace(source: reader.source, header: reader.header, controllers: order, sampleKinds: kinds,
                             sampleCounts: chosen.map(\.count), sampleContents: chosen.map(\.contents),
                             lacksGravity: chosen.map(\.lacksGravity), labels: labels, kind: settings.first?.kind ?? .threshold,
                             settingCount: settings.count,
                             detections: chosen.map { $0.detections(detectors) })
    }

    private init(source: String, header: TraceHeader, controllers: [Endpoint], sampleKinds: [SampleSource], sampleCounts: [Int],
                 sampleContents: [SampleContents], lacksGravity: [Bool], labels: [GestureLabel], kind: DetectorKind,
                 settingCount: Int, detections: [[[Detection]]]) {
        self.source = source
        self.header = header
        self.controllers = controllers
        self.sampleKinds = sampleKinds
        self.sampleCounts = sampleCounts
        self.sampleContents = sampleContents
        self.lacksGravity = lacksGravity
        self.labels = labels
        self.kind = kind
        self.settingCount = settingCount
        self.detections = detections
    }

    /// One controller's samples of one kind, as they arrive: counted, checked for staleness
    /// as `GestureTrace.dropStale` does, and fed to the detectors, made on the first sample while
    /// the budget lasts; past it, kept and detected at the end (`detections`).
    struct Lane<D: GestureDetector> {
        /// Whether this kind of sample is evaluated at all (`SampleSource`).
        let evaluated: Bool
        var received = 0
        var count = 0
        var contents = SampleContents.everything
        var lacksGravity = false
        var newestMs: UInt64?
        var detectors: [D] = []
        var found: [[Detection]] = []
        /// Samples kept for detection at the end, when the budget was spent before this lane's first.
        var held: [GestureSample]?

        init(evaluated: Bool) { self.evaluated = evaluated }

        mutating func accept(_ sample: GestureSample, _ template: [D], _ budget: inout Int) {
            received += 1
            guard evaluated else { return }
            if sample.contents.contains(.senderClock) {
                if let newestMs, sample.senderTimeMs <= newestMs { return }
                newestMs = sample.senderTimeMs
            }
            count += 1
            contents.formIntersection(sample.contents)
            if sample.gravity == nil { lacksGravity = true }
            if held != nil {
                held!.append(sample)
                return
            }
            if count == 1 {
                guard budget >= template.count else {
                    held = [sample]
                    return
                }
                budget -= template.count
                detectors = template
                found = Array(repeating: [], count: template.count)
            }
            GestureEvaluation.feed(sample, to: &detectors, into: &found)
        }

        /// Each setting's detections over the lane's samples.
        func detections(_ template: [D]) -> [[Detection]] {
            if let held { return GestureEvaluation.run(template, held) }
            return count == 0 ? Array(repeating: [], count: template.count) : found
        }
    }
}

/// Reads a trace with the detectors of the settings' kind (`DetectedTrace.read`). The reader is
/// held as an existential, so that the visitor is one concrete type and each detector type's
/// reading loop is specialised (a reader's generic parameter would keep the loop generic).
private struct ReadingVisitor: DetectorVisitor {
    let reader: any TraceRecordSource, source: SampleSource, settings: [DetectorSettings], budget: Int
    func visit<D: GestureDetector>(_ detectors: [D]) -> Result<DetectedTrace, TraceError> {
        Result { () throws(TraceError) in
            try DetectedTrace.read(reader, source: source, settings: settings, detectors: detectors, budget: budget)
        }
    }
}
