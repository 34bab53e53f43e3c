import ArgumentParser
import Foundation
import KinetraceAnalysis
import KinetraceHash
import KinetraceJSON
import KinetracePlot
import KinetraceImpairment
import KinetraceReplay
import KinetraceSupport
import KinetraceTrace

/// `kinetrace network`: replay networks made from measurements.
struct NetworkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "network",
        abstract: "Make replay networks from measurements: fit one to a host's recording, and compare two recordings' conditions.",
        subcommands: [NetworkFit.self, NetworkCompare.self])
}

/// `kinetrace network fit TRACE -o NAME.json`.
struct NetworkFit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fit",
        abstract: "Fit a replay network (specs/networks/README.md) to a recording: delay, loss, duplication, reordering and rate steps, with each figure's evidence in its provenance.",
        discussion: """
            Reads one of three kinds of input:
              TRACE                  a host-side trace or capture (kinetrace host --trace, capture, a
                                     pcap) of a protocol whose samples carry the sender's clock: delay is
                                     capture time − sender stamp, loss a stamp missing at the nominal rate
              --join SENDER HOST     the sender's recording (a capture beside the phone, simulate --trace,
                                     or replay --record, which records sends after the replay's own
                                     network) and the host's, joined by message bytes as latency --join
                                     does: true one-way delay and exact loss
              --arrivals TRACE       a host-side recording of unstamped messages: lateness against the
                                     nominal rate (jitter) and loss from gaps; the delay itself, the
                                     sender's own jitter, duplicates and reordering cannot be known

            Per controller, the sender's clock skew is removed by the linear lower bound (Moon, \
            Skelly and Towsley, 1999) when its samples span 30 s or more and both halves agree on \
            it. A gap of over 50 periods is a pause, not loss. Delay: each family the network \
            format has (constant, uniform, normal, Pareto) is scored by its Kolmogorov–Smirnov \
            distance to the sample; the closest is written when its p-value is above 0.05, else \
            the empirical quantile table. Loss: Bernoulli and Gilbert (bursts) by maximum \
            likelihood, the lower BIC written.

            --segment auto splits the recording where the delay's level changes (binary \
            segmentation with Pettitt's rank test, p < 0.001, 10 s and 100 delays each side); \
            --segment 60s splits it every 60 s. A segment whose 10th-percentile delay is clearly \
            above the fastest segment's is written as a rate step: the rate at which a message of \
            the recording's size takes that much longer. Without --segment, change points found \
            are reported, not written.

            The delay is absolute when the sender's times are on the recording's clock (a replay \
            with --timestamps wallclock to a host on the same machine, or a join on one machine); \
            otherwise give --base-ms, the path's minimum one-way delay, which such a recording \
            cannot show. The report lists the minimum evidence each figure needs and what the \
            input had. Exit status: 0 written; 64 a protocol without a sender clock given neither \
            --join nor --arrivals; 65 an input that cannot be fitted (too short, a join that \
            matches nothing, clocks that cannot be compared without --base-ms); 66 unreadable.
            """)

    @Argument(help: ArgumentHelp("The recording to fit; with --join, the sender's recording, then the host's.", valueName: "trace"),
              completion: .file())
    var traces: [String]

    @Flag(help: "Join the sender's recording (first) with the host's (second) by message bytes: true one-way delay and exact loss.")
    var join = false

    @Flag(help: "Fit unstamped messages by their arrivals against the protocol's nominal rate (jitter and gap loss); needs --base-ms.")
    var arrivals = false

    @Option(help: ArgumentHelp("Split the recording where conditions change (auto) or every DURATION (60s, 2m, 500ms), and write slower segments as rate steps.",
                               valueName: "auto|duration"))
    var segment: String?

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Write the network here (a network-v1 JSON file).", valueName: "file"),
            completion: .file(extensions: ["json"]))
    var output: String

    @Option(name: .customLong("lab-baseline"),
            help: ArgumentHelp("A host's recording of a replay through the perfect network in the lab where this network will be replayed: its median delay, what the lab's own path adds, is taken out of the delay written.",
                               valueName: "trace"), completion: .file())
    var labBaseline: String?

    @Option(help: ArgumentHelp("The network's name (default: the output file's name without .json).", valueName: "name"))
    var name: String?

    @Option(name: .customLong("base-ms"), help: ArgumentHelp("The path's minimum one-way delay in ms, for a recording whose clocks cannot be compared.", valueName: "ms"))
    var baseMs: Double?

    @OptionGroup var report: ReportOptions<OutputFormat>
    @OptionGroup var input: CaptureInputOptions

    /// Inputs up to this size are digested (SHA-256) into the provenance; larger ones are named by size.
    static let digestLimit = 64 * 1024 * 1024

    var networkName: String {
        name ?? String(URL(fileURLWithPath: output).deletingPathExtension().lastPathComponent)
    }

    func validate() throws {
        if join && arrivals { throw ValidationError("--join and --arrivals are two different inputs: give one.") }
        guard traces.count == (join ? 2 : 1) else {
            throw ValidationError(join ? "--join takes two recordings: the sender's, then the host's." : "Give one recording (two with --join).")
        }
        if let baseMs { guard baseMs.isFinite, baseMs >= 0, baseMs <= 60_000 else { throw ValidationError("--base-ms must be a number of ms from 0 to 60000.") } }
        _ = try segmentPolicy()
        let chosen = networkName
        guard !chosen.isEmpty, chosen.count <= 64, chosen.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)) }) else {
            throw ValidationError("A network's name is 1 to 64 letters, digits, '-', '_' or '.': give --name.")
        }
    }

    /// A recording read and fitted: what `fit` writes as a network and `compare` sets beside another.
    struct Recording {
        var fitted: FittedPath
        var records: Int
        var readablePath: String
        var protocolName: String
        /// A joined fit's sender recording (`readablePath` is the host's).
        var senderPath: String?
    }

    /// What `--segment` asks for.
    func segmentPolicy() throws -> SegmentPolicy {
        guard let segment else { return .whole }
        if segment == "auto" { return .changePoints }
        guard let seconds = Self.seconds(segment), seconds >= ChangePoints.minimumSpanS, seconds <= 86_400 else {
            throw ValidationError("--segment is auto or a duration from 10s to 24h (60s, 2m, 10000ms), not '\(segment)'.")
        }
        return .every(seconds: seconds)
    }

    /// `60`, `60s`, `2m`, `1h` or `500ms` in seconds; nil when it is none of these or not finite.
    static func seconds(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            guard let value = Double(text.dropLast(suffix.count)), value.isFinite else { return nil }
            return value * scale
        }
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    static func fitRecording(_ trace: String, input: CaptureInputOptions, baseMs: Double?, arrivals: Bool = false,
                             segments: SegmentPolicy = .whole, labPathMs: Double = 0) throws -> Recording {
        let readable = try reportingFailures { () throws(TraceError) in try InputSpool.readablePath(trace) }
        let reader = try reportingFailures { () throws(TraceError) in
            try openInputReadingAhead(path: readable, wireProtocol: input.wire.given, port: input.port)
        }
        var records = 0
        let set: PathSet
        if arrivals {
            guard var evidence = ArrivalEvidence(wireProtocol: reader.wireProtocol) else {
                printError("\(trace): \(reader.wireProtocol.id) has no nominal rate, so arrivals have no schedule to be measured against")
                throw ExitStatus.dataError
            }
            try reportingFailures { () throws(TraceError) in
                while let record = try reader.next() { evidence.add(record); records += 1 }
            }
            set = evidence.pathSet
        } else {
            guard var evidence = PathEvidence(header: reader.header, wireProtocol: reader.wireProtocol) else {
                printError("\(trace): \(reader.wireProtocol.id) samples carry no sender clock, so one-way delay and loss cannot be read from the host's side alone: give --join SENDER HOST, or --arrivals for jitter and gap loss")
                throw ExitCode.validationFailure
            }
            try reportingFailures { () throws(TraceError) in
                while let record = try reader.next() { evidence.add(record); records += 1 }
            }
            set = evidence.pathSet
        }
        if let truncation = reader.truncation { printWarning("\(trace): \(truncation)") }
        return try fitted(set, source: trace, records: records, readablePath: readable, protocolName: reader.wireProtocol.id.name,
                          baseMs: baseMs, segments: segments, labPathMs: labPathMs)
    }

    static func fitJoined(sender: String, host: String, input: CaptureInputOptions, baseMs: Double?, segments: SegmentPolicy,
                          labPathMs: Double) throws -> Recording {
        let senderPath = try reportingFailures { () throws(TraceError) in try InputSpool.readablePath(sender) }
        let hostPath = try reportingFailures { () throws(TraceError) in try InputSpool.readablePath(host) }
        let sent = try reportingFailures { () throws(TraceError) in
            try openInputReadingAhead(path: senderPath, wireProtocol: input.wire.given, port: input.port)
        }
        let wireProtocol = sent.wireProtocol
        guard wireProtocol.transport != .byteStream else {
            printError("\(sender): \(wireProtocol.id) is a byte stream, which loses nothing and re-frames what it carries: a join cannot show its loss; fit the host's recording with --arrivals")
            throw ExitCode.validationFailure
        }
        let received = try reportingFailures { () throws(TraceError) in
            try openInputReadingAhead(path: hostPath, wireProtocol: wireProtocol, port: input.port)
        }
        var evidence = JoinedEvidence(wireProtocol: wireProtocol)
        var records = 0
        try reportingFailures { () throws(TraceError) in
            while let record = try sent.next() { evidence.addSent(record); records += 1 }
            while let record = try received.next() { evidence.addReceived(record); records += 1 }
        }
        if let truncation = sent.truncation { printWarning("\(sender): \(truncation)") }
        if let truncation = received.truncation { printWarning("\(host): \(truncation)") }
        return try fitted(evidence.pathSet, source: "\(shown(sender)) joined with \(shown(host))", records: records, readablePath: hostPath,
                          protocolName: wireProtocol.id.name, baseMs: baseMs, segments: segments, labPathMs: labPathMs,
                          joinedSenderPath: senderPath)
    }

    static func fitted(_ set: PathSet, source: String, records: Int, readablePath: String, protocolName: String, baseMs: Double?,
                       segments: SegmentPolicy, labPathMs: Double = 0, joinedSenderPath: String? = nil) throws -> Recording {
        do throws(NetworkFitError) {
            var recording = Recording(fitted: try NetworkFitter.fit(set, baseMs: baseMs, segments: segments, labPathMs: labPathMs), records: records,
                                      readablePath: readablePath, protocolName: protocolName)
            recording.senderPath = joinedSenderPath
            return recording
        } catch {
            printError("\(source): no network fitted: \(error.description)")
            throw ExitStatus.dataError
        }
    }

    func run() throws {
        let policy = try segmentPolicy()
        var labPathMs = 0.0
        if let labBaseline {
            // The lab's own path: a replay there through `perfect`, read as any recording is.
            let lab = try Self.fitRecording(labBaseline, input: input, baseMs: baseMs)
            let sorted = lab.fitted.delaysMs.sorted()
            labPathMs = sorted[sorted.count / 2]
            guard labPathMs.isFinite, labPathMs >= 0, labPathMs <= 10_000 else {
                printError("\(labBaseline): the lab's median delay is \(Self.fixed(labPathMs, 3)) ms: a replay through perfect to a host in the lab shows 0 to 10000 ms")
                throw ExitStatus.dataError
            }
        }
        let recording = join
            ? try Self.fitJoined(sender: traces[0], host: traces[1], input: input, baseMs: baseMs, segments: policy, labPathMs: labPathMs)
            : try Self.fitRecording(traces[0], input: input, baseMs: baseMs, arrivals: arrivals, segments: policy, labPathMs: labPathMs)
        let fitted = recording.fitted, records = recording.records
        let source = join ? "\(Self.shown(traces[0])) joined with \(Self.shown(traces[1]))" : Self.shown(traces[0])
        var digests = [Self.digest(recording.readablePath)]
        if let sender = recording.senderPath { digests.insert(Self.digest(sender), at: 0) }
        var network = ReplayNetwork(name: networkName,
                                    description: "Fitted by kinetrace network fit from \(source): \(fitted.controllers) controller(s), \(fitted.received) messages over \(SummaryRendering.ms(fitted.spanS, 1)) s.",
                                    provenance: Self.provenance(fitted, source: source, records: records, digests: digests, protocolName: recording.protocolName))
        network.basis = "measured"
        network.controllers = min(max(fitted.controllers, 1), 65_536)
        network.impairments = Self.impairments(fitted)
        if let problem = network.impairments.problem {
            printError("\(source): the fitted network is not valid: \(problem)")
            throw ExitStatus.dataError
        }
        // What is written must read back as a network: parse it before saying it was written.
        let text = network.document.jsonText + "\n"
        do throws(ReplayNetworkError) { _ = try ReplayNetwork.parse(Array(text.utf8), source: output) } catch {
            printError("the fitted network does not read back: \(error.description)")
            throw ExitStatus.dataError
        }
        try writeOutput(text, to: output, what: "the network")
        let summary = report.format == .json ? Self.json(fitted, network: network, output: output) : Self.text(fitted, network: network, source: source, output: output)
        try writeOutput(summary, to: report.out)
    }

    static func shown(_ path: String) -> String { path == "-" ? "standard input" : path }

    static func digest(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= digestLimit,
              let data = FileManager.default.contents(atPath: path) else { return nil }
        return "sha256:" + SHA256.hex(Array(data))
    }

    static func impairments(_ fitted: FittedPath) -> Impairments {
        var i = Impairments()
        switch fitted.delay.choice {
        case .family(.constant(let ms)): i.delay = .constant(ms: ms)
        case .family(.uniform(let lo, let hi)): i.delay = .uniform(minMs: lo, maxMs: hi)
        case .family(.normal(let mean, let sd)): i.delay = .normal(meanMs: mean, sdMs: sd)
        case .family(.pareto(let scale, let shape)): i.delay = .pareto(scaleMs: scale, shape: shape)
        // Microseconds: a recording's clock resolves no finer.
        case .quantiles: i.delay = .quantiles(fitted.delay.quantiles.map { QuantilePoint(p: $0.p, ms: ($0.ms * 1000).rounded() / 1000) })
        }
        if fitted.loss.lost > 0 {
            switch fitted.loss.choice {
            case .bernoulli: i.loss = .bernoulli(p: fitted.loss.rate)
            case .gilbert: i.loss = .gilbertElliott(p: fitted.loss.gilbertP, r: fitted.loss.gilbertR ?? 1, lossInBad: 1, lossInGood: 0)
            }
        }
        i.duplicate = min(1, fitted.duplicateRate)
        // Reordering seen is left to the delays: with order not preserved, a long delay lets later messages pass.
        i.allowReordering = fitted.reordered > 0
        i.rate = fitted.segments.rateSteps.map { RateStep(fromNs: Int64(($0.fromS * 1e9).rounded()), bitsPerSecond: $0.bitsPerS.rounded()) }
        return i
    }

    static func delayPhrase(_ fitted: FittedPath) -> String {
        let best = fitted.delay.candidates.first
        let ks = best.map { " (KS D \(fixed($0.ks.distance, 4)), p \(fixed($0.ks.pValue, 3)))" } ?? ""
        switch fitted.delay.choice {
        case .family(let family): return describe(family) + ks
        case .quantiles:
            return "the empirical quantile table (\(fitted.delay.quantiles.count) points): no family fits with p > \(DelayFit.acceptanceP)"
                + (best.map { "; closest " + describe($0.family) + ks } ?? "")
        }
    }

    static func describe(_ family: DelayFamily) -> String {
        switch family {
        case .constant(let ms): return "constant \(fixed(ms, 3)) ms"
        case .uniform(let lo, let hi): return "uniform \(fixed(lo, 3))–\(fixed(hi, 3)) ms"
        case .normal(let mean, let sd): return "normal mean \(fixed(mean, 3)) ms, sd \(fixed(sd, 3)) ms"
        case .pareto(let scale, let shape): return "Pareto scale \(fixed(scale, 3)) ms, shape \(fixed(shape, 3))"
        }
    }

    static func lossPhrase(_ loss: LossFit) -> String {
        let rate = "rate \(fixed(100 * loss.rate, 2)) % (95 % interval \(fixed(100 * loss.rateInterval.lowerBound, 2))–\(fixed(100 * loss.rateInterval.upperBound, 2)) %, \(loss.lost) of \(loss.messages))"
        guard loss.lost > 0 else { return "none seen in \(loss.messages) messages (95 % interval up to \(fixed(100 * loss.rateInterval.upperBound, 2)) %)" }
        let model = loss.choice == .gilbert
            ? "Gilbert bursts, p \(fixed(loss.gilbertP, 5)), r \(loss.gilbertR.map { fixed($0, 4) } ?? "none")"
            : "Bernoulli"
        let burst = loss.bursts.meanLength.map { "mean burst \(fixed($0, 2)) messages (\(loss.bursts.count) bursts)" } ?? "no burst"
        return "\(model) (BIC \(fixed(loss.gilbertBIC, 1)) Gilbert, \(fixed(loss.bernoulliBIC, 1)) Bernoulli); \(rate); \(burst)"
    }

    static func skewPhrase(_ fitted: FittedPath) -> String {
        guard !fitted.skews.isEmpty else {
            return fitted.unskewedControllers >= fitted.controllers
                ? "not fitted (no controller spanned \(Int(NetworkFitter.minimumSkewSpanS)) s)"
                : "none removed (no controller's two halves agreed on a slope)"
        }
        let ppm = fitted.skews.map(\.estimate.ppm).sorted()
        return "removed for \(ppm.count) controller(s): median \(fixed(ppm[ppm.count / 2], 2)) ppm (\(fixed(ppm[0], 2)) to \(fixed(ppm[ppm.count - 1], 2)))"
    }

    static func evidencePhrase(_ fitted: FittedPath) -> String {
        switch fitted.evidence {
        case .senderClock: return "a host-side recording of stamped samples (delay = arrival − sender stamp; loss = stamps missing at the nominal rate)"
        case .joined: return "the sender's and the host's recordings joined by message bytes (true one-way delay; exact loss)"
        case .arrivals: return "a host-side recording of unstamped messages (lateness against the nominal rate; loss from gaps)"
        }
    }

    static func rate(_ bitsPerS: Double) -> String {
        if bitsPerS >= 1e9 { return "\(fixed(bitsPerS / 1e9, 3)) Gbit/s" }
        if bitsPerS >= 1e6 { return "\(fixed(bitsPerS / 1e6, bitsPerS >= 1e8 ? 0 : 3)) Mbit/s" }
        return "\(fixed(bitsPerS / 1e3, 3)) kbit/s"
    }

    static func segmentLines(_ fitted: FittedPath) -> [String] {
        fitted.segments.segments.map { s in
            var line = "\(fixed(s.startS, 1))–\(fixed(s.endS, 1)) s: \(s.samples) delays, p10 \(fixed(s.lowMs, 2)) ms (\(fixed(s.lowInterval.lowerBound, 2))–\(fixed(s.lowInterval.upperBound, 2))), median \(fixed(s.medianMs, 2)) ms, loss \(fixed(100 * s.lossRate, 2)) % of \(s.messages)"
            if let bits = s.bitsPerS, let interval = s.bitsPerSInterval {
                line += "; \(fixed(s.shiftMs, 2)) ms slower: rate \(rate(bits))" + (s.saturated ? " (saturated: throughput)" : " (\(rate(interval.lowerBound))–\(rate(interval.upperBound)))")
            } else if s.shiftMs == 0 {
                line += "; the fastest"
            } else {
                line += "; \(fixed(s.shiftMs, 2)) ms slower, not clear of 0 (\(fixed(s.shiftInterval.lowerBound, 2))–\(fixed(s.shiftInterval.upperBound, 2)) ms)"
            }
            return line
        }
    }

    static func ratePhrase(_ fitted: FittedPath) -> String {
        let steps = fitted.segments.rateSteps
        guard !steps.isEmpty else { return "" }
        return "Rate (measured, from the segments' delay steps): " + steps.map { step in
            step.bitsPerS == ConditionSegments.unlimitedBitsPerS ? "from \(fixed(step.fromS, 1)) s \(rate(step.bitsPerS)) (the fastest segment: its rate cannot be seen, assumed)"
                : "from \(fixed(step.fromS, 1)) s \(rate(step.bitsPerS))"
        }.joined(separator: ", ") + "; segments " + segmentLines(fitted).joined(separator: "; ") + ". "
    }

    static func provenance(_ fitted: FittedPath, source: String, records: Int, digests: [String?], protocolName: String) -> String {
        let q = Dictionary(fitted.delay.quantiles.map { ($0.p, $0.ms) }, uniquingKeysWith: { a, _ in a })
        let quantiles = [0.5, 0.9, 0.99].compactMap { p in q[p].map { "p\(Int(p * 100)) \(fixed($0, 2)) ms" } }.joined(separator: ", ")
        let digestText = digests.map { $0 ?? "not digested: over 64 MiB or not a file" }.joined(separator: ", ")
        let arrivals = fitted.evidence == .arrivals
        let orders = arrivals
            ? "Duplicate and reordering (not measurable: unstamped messages do not name themselves): written as 0 and order kept (assumed). "
            : "Duplicate (measured): \(fitted.duplicates) of \(fitted.received) (\(fixed(100 * fitted.duplicateRate, 3)) %). "
              + "Reordering (measured): \(fitted.reordered) of \(fitted.received) (\(fixed(100 * fitted.reorderRate, 3)) %), left to the delays (preserve_order \(fitted.reordered == 0)). "
        let rateDefault = fitted.segments.rateSteps.isEmpty ? ", no rate limit" : ""
        return "Measured by kinetrace network fit \(Kinetrace.version) from \(source) (\(digestText); "
            + "\(records) records, \(protocolName), \(fitted.controllers) controller(s), \(fitted.received) messages over \(fixed(fitted.spanS, 1)) s). "
            + "Evidence: \(evidencePhrase(fitted)). "
            + "Clocks: " + (fitted.clocksComparable ? "the sender's times are on the recording's clock, so delays are absolute. "
                            : "the sender's times are not on the recording's clock; each \(arrivals ? "run's" : "controller's") lower bound was placed at \(fixed(fitted.baseMs ?? 0, 3)) ms (assumed, --base-ms). ")
            + "Skew: \(skewPhrase(fitted)). "
            + "Delay (\(arrivals ? "measured lateness placed at --base-ms" : "measured")\(fitted.labPathMs > 0 ? ", less the lab's own path of \(fixed(fitted.labPathMs, 3)) ms measured by --lab-baseline" : "")): \(delayPhrase(fitted)); sample \(quantiles). "
            + "Loss (measured): \(lossPhrase(fitted.loss)). "
            + orders
            + ratePhrase(fitted)
            + "Defaults, not measured: no corruption or truncation (a recording of valid messages cannot show them)\(rateDefault), stagger 100 ms."
            + (fitted.notes.isEmpty ? "" : " Notes: " + fitted.notes.joined(separator: "; ") + ".")
    }

    static func text(_ fitted: FittedPath, network: ReplayNetwork, source: String, output: String) -> String {
        var lines = ["fitted \(source): \(fitted.controllers) controller(s), \(fitted.received) messages over \(fixed(fitted.spanS, 1)) s; "
                     + (fitted.clocksComparable ? "delays absolute (one clock)" : "delays placed at --base-ms \(fixed(fitted.baseMs ?? 0, 3)) ms (clocks not comparable)")]
        lines.append("evidence  \(evidencePhrase(fitted))")
        lines.append("skew      \(skewPhrase(fitted))")
        lines.append("delay     \(delayPhrase(fitted))")
        for candidate in fitted.delay.candidates {
            lines.append("          \(describe(candidate.family)): KS D \(fixed(candidate.ks.distance, 4)), p \(fixed(candidate.ks.pValue, 3))")
        }
        lines.append("loss      \(lossPhrase(fitted.loss))")
        if fitted.ordersKnown {
            lines.append("duplicate \(fitted.duplicates) (\(fixed(100 * fitted.duplicateRate, 3)) %), reordered \(fitted.reordered) (\(fixed(100 * fitted.reorderRate, 3)) %)")
        } else {
            lines.append("duplicate not measurable from unstamped arrivals (written as 0); reordering likewise (order kept)")
        }
        if fitted.segments.segments.count > 1 || !fitted.segments.rateSteps.isEmpty {
            for (i, line) in segmentLines(fitted).enumerated() { lines.append((i == 0 ? "segments  " : "          ") + line) }
            let steps = fitted.segments.rateSteps
            lines.append("rate      " + (steps.isEmpty ? "no segment clearly slower than the fastest: no rate steps"
                                         : steps.map { "\(fixed($0.fromS, 1)) s \(rate($0.bitsPerS))" }.joined(separator: ", ")))
        }
        for row in fitted.minimumEvidence {
            lines.append("needs     \(row.figure): \(row.needs); had \(row.had)\(row.met == false ? " (not met)" : "")")
        }
        for note in fitted.notes { lines.append("note      \(note)") }
        lines.append("wrote \(output): network \(network.name), basis measured")
        return lines.map { TerminalText.escaped($0) }.joined(separator: "\n") + "\n"
    }

    static func json(_ fitted: FittedPath, network: ReplayNetwork, output: String) -> String {
        var loss: [String: JSONValue] = [
            "model": .string(fitted.loss.lost == 0 ? "none" : fitted.loss.choice.rawValue), "messages": .integer(Int64(fitted.loss.messages)),
            "lost": .integer(Int64(fitted.loss.lost)), "rate": .number(fitted.loss.rate),
            "rate_interval": .array([.number(fitted.loss.rateInterval.lowerBound), .number(fitted.loss.rateInterval.upperBound)]),
            "gilbert_p": .number(fitted.loss.gilbertP), "bernoulli_bic": .number(fitted.loss.bernoulliBIC), "gilbert_bic": .number(fitted.loss.gilbertBIC),
            "bursts": .integer(Int64(fitted.loss.bursts.count)),
        ]
        if let r = fitted.loss.gilbertR { loss["gilbert_r"] = .number(r) }
        if let mean = fitted.loss.bursts.meanLength { loss["mean_burst"] = .number(mean) }
        return JSONValue.object([
            "format": .string("kinetrace-network-fit"), "version": .integer(1), "output": .string(output),
            "network": network.document,
            "controllers": .integer(Int64(fitted.controllers)), "samples": .integer(Int64(fitted.received)), "span_s": .number(fitted.spanS),
            "clocks_comparable": .bool(fitted.clocksComparable), "lab_path_ms": .number(fitted.labPathMs),
            "skew_ppm": .array(fitted.skews.map { .object(["controller": .string($0.controller.description), "ppm": .number($0.estimate.ppm),
                                                              "span_s": .number($0.estimate.spanS)]) }),
            "delay": .object([
                "choice": .string({ if case .family(let f) = fitted.delay.choice { return f.distributionName } else { return "quantiles" } }()),
                "samples": .integer(Int64(fitted.delay.samples)),
                "candidates": .array(fitted.delay.candidates.map { .object(["family": .string($0.family.distributionName),
                                                                           "ks_distance": .number($0.ks.distance), "p_value": .number($0.ks.pValue)]) }),
            ]),
            "loss": .object(loss),
            "duplicates": fitted.ordersKnown ? .integer(Int64(fitted.duplicates)) : .null,
            "reordered": fitted.ordersKnown ? .integer(Int64(fitted.reordered)) : .null, "pauses": .integer(Int64(fitted.pauses)),
            "evidence": .string(fitted.evidence.rawValue), "unmatched": .integer(Int64(fitted.unmatched)),
            "segments": .array(fitted.segments.segments.map { s in
                var object: [String: JSONValue] = [
                    "start_s": .number(s.startS), "end_s": .number(s.endS), "samples": .integer(Int64(s.samples)),
                    "median_ms": .number(s.medianMs), "p10_ms": .number(s.lowMs),
                    "p10_interval_ms": .array([.number(s.lowInterval.lowerBound), .number(s.lowInterval.upperBound)]),
                    "messages": .integer(Int64(s.messages)), "lost": .integer(Int64(s.lost)),
                    "loss_interval": .array([.number(s.lossInterval.lowerBound), .number(s.lossInterval.upperBound)]),
                    "shift_ms": .number(s.shiftMs), "saturated": .bool(s.saturated),
                ]
                if let bits = s.bitsPerS { object["bits_per_s"] = .number(bits) }
                if let interval = s.bitsPerSInterval { object["bits_per_s_interval"] = .array([.number(interval.lowerBound), .number(interval.upperBound)]) }
                return .object(object)
            }),
            "change_points_s": .array(fitted.segments.changePointsS.map { .number($0) }),
            "rate_steps": .array(fitted.segments.rateSteps.map { .object(["from_s": .number($0.fromS), "bits_per_s": .number($0.bitsPerS)]) }),
            "minimum_evidence": .array(fitted.minimumEvidence.map {
                .object(["figure": .string($0.figure), "needs": .string($0.needs), "had": .string($0.had), "met": $0.met.map { .bool($0) } ?? .null])
            }),
            "notes": .array(fitted.notes.map { .string($0) }),
        ]).jsonText + "\n"
    }

    /// `value` with `digits` decimals.
    static func fixed(_ value: Double, _ digits: Int) -> String { SummaryRendering.ms(value, digits) }
}

/// `kinetrace network compare A B`: do two recordings show the same conditions?
struct NetworkCompare: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare the conditions two host-side recordings show: delay quantiles and the Kolmogorov–Smirnov distance, loss rate and bursts, reordering, duplication and skew.",
        discussion: """
            Each recording is read as `network fit` reads it (skew removed, losses from missing \
            stamps). They agree when the delays' two-sample KS distance is at most 0.05 (or the \
            test cannot tell them apart, p > 0.05), the loss rates' 95 % intervals overlap, and \
            the mean loss bursts are within 20 % of each other. Exit 0 when they agree, 1 when \
            they do not: how a researcher shows that a lab replay reproduces an event.
            """)

    @Argument(help: ArgumentHelp("The two recordings: the event's, then the replay's.", valueName: "trace"), completion: .file())
    var traces: [String]

    @Option(help: ArgumentHelp("Draw both delay distributions (CDF) to this file, in the format --plot-format chooses.", valueName: "file"))
    var plot: String?

    @OptionGroup var plotFormat: PlotFormatOptions

    @Option(name: .customLong("base-ms"), help: ArgumentHelp("The path's minimum one-way delay in ms, for recordings whose clocks cannot be compared.", valueName: "ms"))
    var baseMs: Double?

    @Flag(help: "Read both recordings as unstamped arrivals against the protocol's nominal rate (as network fit --arrivals); needs --base-ms.")
    var arrivals = false

    @OptionGroup var report: ReportOptions<OutputFormat>
    @OptionGroup var input: CaptureInputOptions

    func validate() throws {
        guard traces.count == 2 else { throw ValidationError("Give two recordings: the event's, then the replay's.") }
        if let baseMs { guard baseMs.isFinite, baseMs >= 0, baseMs <= 60_000 else { throw ValidationError("--base-ms must be a number of ms from 0 to 60000.") } }
        _ = try plotFormat.format(for: plot)
    }

    func run() throws {
        let converter = try plotFormat.converter(for: plot)
        let first = try NetworkFit.fitRecording(traces[0], input: input, baseMs: baseMs, arrivals: arrivals)
        let second = try NetworkFit.fitRecording(traces[1], input: input, baseMs: baseMs, arrivals: arrivals)
        guard let comparison = PathComparison.compare(first.fitted, second.fitted) else {
            printError("\(traces[0]) and \(traces[1]): no delays to compare")
            throw ExitStatus.dataError
        }
        if let plot {
            // Legends by file name; the second chart stops at the larger p99, where the body of a long tail shows.
            let names = zip(["A", "B"], traces).map { label, trace in
                "\(label): " + (trace == "-" ? NetworkFit.shown(trace) : URL(fileURLWithPath: trace).lastPathComponent)
            }
            let p99 = max(comparison.a.quantilesMs.first { $0.p == 0.99 }?.ms ?? .infinity, comparison.b.quantilesMs.first { $0.p == 0.99 }?.ms ?? .infinity)
            let distance = "KS distance \(NetworkFit.fixed(comparison.delay.distance, 4)), p \(NetworkFit.fixed(comparison.delay.pValue, 3))"
            let charts = [
                Charts.cdf(title: "One-way delay, skew removed: \(distance)", xLabel: "ms",
                           series: [CDFSeries(name: names[0], values: first.fitted.delaysMs), CDFSeries(name: names[1], values: second.fitted.delaysMs)]),
                Charts.cdf(title: "The same up to the larger p99 (\(NetworkFit.fixed(p99, 1)) ms)", xLabel: "ms",
                           series: [CDFSeries(name: names[0], values: first.fitted.delaysMs.filter { $0 <= p99 }),
                                    CDFSeries(name: names[1], values: second.fitted.delaysMs.filter { $0 <= p99 })]),
            ]
            try plotFormat.write(Charts.figure(title: "kinetrace network compare", charts: charts), to: plot, converter: converter)
        }
        try writeOutput(report.format == .json ? json(comparison) : text(comparison), to: report.out)
        if !comparison.agrees { throw ExitCode.failure }
    }

    func text(_ c: PathComparison) -> String {
        let f = NetworkFit.fixed
        func verdict(_ ok: Bool?) -> String { ok.map { $0 ? "agree" : "DIFFER" } ?? "no bursts to compare" }
        var lines = ["A \(NetworkFit.shown(traces[0])): \(c.a.samples) samples; B \(NetworkFit.shown(traces[1])): \(c.b.samples) samples"]
        lines.append("delay     KS D \(f(c.delay.distance, 4)), p \(f(c.delay.pValue, 3)): \(verdict(c.delayAgrees)) (D at most \(PathComparison.delayDistanceBound), or p > 0.05)")
        lines.append("          p        A ms        B ms")
        for (x, y) in zip(c.a.quantilesMs, c.b.quantilesMs) {
            lines.append("          " + f(x.p, 2).padding(toLength: 6, withPad: " ", startingAt: 0)
                         + f(x.ms, 3).leftPad(10) + f(y.ms, 3).leftPad(12))
        }
        func interval(_ s: PathComparison.Side) -> String {
            "\(f(100 * s.lossRate, 2)) % (\(f(100 * s.lossInterval.lowerBound, 2))–\(f(100 * s.lossInterval.upperBound, 2)) %)"
        }
        lines.append("loss      A \(interval(c.a)), B \(interval(c.b)): \(verdict(c.lossAgrees)) (95 % intervals overlap)")
        lines.append("bursts    A mean \(c.a.meanBurst.map { f($0, 2) } ?? "none"), B mean \(c.b.meanBurst.map { f($0, 2) } ?? "none"): \(verdict(c.burstsAgree)) (within 20 %)")
        lines.append("reorder   A \(f(100 * c.a.reorderRate, 3)) %, B \(f(100 * c.b.reorderRate, 3)) %; duplicate A \(f(100 * c.a.duplicateRate, 3)) %, B \(f(100 * c.b.duplicateRate, 3)) %")
        lines.append("skew      A \(c.a.medianSkewPPM.map { f($0, 2) + " ppm" } ?? "none removed"), B \(c.b.medianSkewPPM.map { f($0, 2) + " ppm" } ?? "none removed") (median)")
        lines.append(c.agrees ? "verdict   the two recordings' conditions agree" : "verdict   the two recordings' conditions DIFFER")
        return lines.map { TerminalText.escaped($0) }.joined(separator: "\n") + "\n"
    }

    func json(_ c: PathComparison) -> String {
        func side(_ s: PathComparison.Side, _ source: String) -> JSONValue {
            var object: [String: JSONValue] = [
                "source": .string(source), "samples": .integer(Int64(s.samples)),
                "quantiles_ms": .array(s.quantilesMs.map { .array([.number($0.p), .number($0.ms)]) }),
                "loss_rate": .number(s.lossRate), "loss_interval": .array([.number(s.lossInterval.lowerBound), .number(s.lossInterval.upperBound)]),
                "reorder_rate": .number(s.reorderRate), "duplicate_rate": .number(s.duplicateRate),
            ]
            if let burst = s.meanBurst { object["mean_burst"] = .number(burst) }
            if let skew = s.medianSkewPPM { object["median_skew_ppm"] = .number(skew) }
            return .object(object)
        }
        return JSONValue.object([
            "format": .string("kinetrace-network-compare"), "version": .integer(1),
            "a": side(c.a, traces[0]), "b": side(c.b, traces[1]),
            "delay": .object(["ks_distance": .number(c.delay.distance), "p_value": .number(c.delay.pValue),
                              "bound": .number(PathComparison.delayDistanceBound), "agrees": .bool(c.delayAgrees)]),
            "loss_agrees": .bool(c.lossAgrees), "bursts_agree": c.burstsAgree.map { .bool($0) } ?? .null,
            "agrees": .bool(c.agrees),
        ]).jsonText + "\n"
    }
}

private extension String {
    func leftPad(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
