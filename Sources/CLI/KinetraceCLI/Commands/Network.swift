import ArgumentParser
import Foundation
import KinetraceAnalysis
import KinetraceHash
import KinetraceJSON
import KinetracePlot
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
        abstract: "Fit a replay network (specs/networks/README.md) to a host-side recording: delay, loss, duplication and reordering, with each figure's evidence in its provenance.",
        discussion: """
            Reads a trace or capture recorded at the host (kinetrace host --trace, capture, or a pcap) \
            of a protocol whose samples carry the sender's clock. Per controller: one-way delay is \
            capture time − sender stamp, with the sender's clock skew removed by the linear lower \
            bound (Moon, Skelly and Towsley, 1999) when its samples span 30 s or more; a loss is a \
            stamp missing at the protocol's nominal rate (a gap of over 50 periods is a pause, not \
            loss); a duplicate is a stamp seen again; a reordering is a stamp below one already seen.

            Delay: each family the network format has (constant, uniform, normal, Pareto) is fitted \
            and scored by its Kolmogorov–Smirnov distance to the sample; the closest is written when \
            its p-value is above 0.05, else the empirical quantile table. Loss: Bernoulli and \
            Gilbert (bursts) fitted by maximum likelihood, the one with the lower BIC written. \
            The network's provenance lists the input, its size and digest, the counts, and every \
            fitted figure with its uncertainty, and says which members are defaults.

            The delay is absolute when the stamps are on the recording's clock (a replay with \
            --timestamps wallclock to a host on the same machine) or within a minute of it; \
            otherwise give --base-ms, the path's minimum one-way delay, which such a recording \
            cannot show. Needs at least 50 samples and 100 messages in sender order.
            """)

    @Argument(help: ArgumentHelp("The host-side trace or capture to fit.", valueName: "trace"), completion: .file())
    var trace: String

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Write the network here (a network-v1 JSON file).", valueName: "file"),
            completion: .file(extensions: ["json"]))
    var output: String

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
        if let baseMs { guard baseMs.isFinite, baseMs >= 0, baseMs <= 60_000 else { throw ValidationError("--base-ms must be a number of ms from 0 to 60000.") } }
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
    }

    static func fitRecording(_ trace: String, input: CaptureInputOptions, baseMs: Double?) throws -> Recording {
        let readable = try reportingFailures { () throws(TraceError) in try InputSpool.readablePath(trace) }
        let reader = try reportingFailures { () throws(TraceError) in
            try openInputReadingAhead(path: readable, wireProtocol: input.wire.given, port: input.port)
        }
        guard var evidence = PathEvidence(header: reader.header, wireProtocol: reader.wireProtocol) else {
            printError("\(trace): \(reader.wireProtocol.id) samples carry no sender clock, so one-way delay and loss cannot be read from the host's side alone")
            throw ExitStatus.dataError
        }
        var records = 0
        try reportingFailures { () throws(TraceError) in
            while let record = try reader.next() {
                evidence.add(record)
                records += 1
            }
        }
        if let truncation = reader.truncation { printWarning("\(trace): \(truncation)") }
        do throws(NetworkFitError) {
            return Recording(fitted: try NetworkFitter.fit(evidence, baseMs: baseMs), records: records, readablePath: readable,
                             protocolName: reader.wireProtocol.id.name)
        } catch {
            printError("\(trace): no network fitted: \(error.description)")
            throw ExitStatus.dataError
        }
    }

    func run() throws {
        let recording = try Self.fitRecording(trace, input: input, baseMs: baseMs)
        let fitted = recording.fitted, records = recording.records
        let digest = Self.digest(recording.readablePath)
        var network = ReplayNetwork(name: networkName,
                                    description: "Fitted by kinetrace network fit from \(Self.shown(trace)): \(fitted.controllers) controller(s), \(fitted.received) samples over \(SummaryRendering.ms(fitted.spanS, 1)) s.",
                                    provenance: Self.provenance(fitted, trace: trace, records: records, digest: digest, protocolName: recording.protocolName))
        network.basis = "measured"
        network.controllers = min(fitted.controllers, 65_536)
        network.impairments = Self.impairments(fitted)
        if let problem = network.impairments.problem {
            printError("\(trace): the fitted network is not valid: \(problem)")
            throw ExitStatus.dataError
        }
        // What is written must read back as a network: parse it before saying it was written.
        let text = network.document.jsonText + "\n"
        do throws(ReplayNetworkError) { _ = try ReplayNetwork.parse(Array(text.utf8), source: output) } catch {
            printError("the fitted network does not read back: \(error.description)")
            throw ExitStatus.dataError
        }
        try writeOutput(text, to: output, what: "the network")
        let summary = report.format == .json ? Self.json(fitted, network: network, output: output) : Self.text(fitted, network: network, trace: trace, output: output)
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
        guard !fitted.skews.isEmpty else { return "not fitted (no controller spanned \(Int(NetworkFitter.minimumSkewSpanS)) s)" }
        let ppm = fitted.skews.map(\.estimate.ppm).sorted()
        return "removed for \(ppm.count) controller(s): median \(fixed(ppm[ppm.count / 2], 2)) ppm (\(fixed(ppm[0], 2)) to \(fixed(ppm[ppm.count - 1], 2)))"
    }

    static func provenance(_ fitted: FittedPath, trace: String, records: Int, digest: String?, protocolName: String) -> String {
        let q = Dictionary(fitted.delay.quantiles.map { ($0.p, $0.ms) }, uniquingKeysWith: { a, _ in a })
        let quantiles = [0.5, 0.9, 0.99].compactMap { p in q[p].map { "p\(Int(p * 100)) \(fixed($0, 2)) ms" } }.joined(separator: ", ")
        return "Measured by kinetrace network fit \(Kinetrace.version) from \(shown(trace)) (\(digest ?? "not digested: over 64 MiB or not a file"), "
            + "\(records) records, \(protocolName), \(fitted.controllers) controller(s), \(fitted.received) distinct samples over \(fixed(fitted.spanS, 1)) s). "
            + "Clocks: " + (fitted.clocksComparable ? "the sender stamps are on the recording's clock, so delays are absolute. "
                            : "the sender stamps are not on the recording's clock; each controller's lower bound was placed at \(fixed(fitted.baseMs ?? 0, 3)) ms (assumed, --base-ms). ")
            + "Skew: \(skewPhrase(fitted)). "
            + "Delay (measured): \(delayPhrase(fitted)); sample \(quantiles). "
            + "Loss (measured): \(lossPhrase(fitted.loss)). "
            + "Duplicate (measured): \(fitted.duplicates) of \(fitted.received) (\(fixed(100 * fitted.duplicateRate, 3)) %). "
            + "Reordering (measured): \(fitted.reordered) of \(fitted.received) (\(fixed(100 * fitted.reorderRate, 3)) %), left to the delays (preserve_order \(fitted.reordered == 0)). "
            + "Defaults, not measured: no corruption or truncation (a recording of valid messages cannot show them), no rate limit, stagger 100 ms."
            + (fitted.notes.isEmpty ? "" : " Notes: " + fitted.notes.joined(separator: "; ") + ".")
    }

    static func text(_ fitted: FittedPath, network: ReplayNetwork, trace: String, output: String) -> String {
        var lines = ["fitted \(shown(trace)): \(fitted.controllers) controller(s), \(fitted.received) distinct samples over \(fixed(fitted.spanS, 1)) s; "
                     + (fitted.clocksComparable ? "delays absolute (one clock)" : "delays placed at --base-ms \(fixed(fitted.baseMs ?? 0, 3)) ms (clocks not comparable)")]
        lines.append("skew      \(skewPhrase(fitted))")
        lines.append("delay     \(delayPhrase(fitted))")
        for candidate in fitted.delay.candidates {
            lines.append("          \(describe(candidate.family)): KS D \(fixed(candidate.ks.distance, 4)), p \(fixed(candidate.ks.pValue, 3))")
        }
        lines.append("loss      \(lossPhrase(fitted.loss))")
        lines.append("duplicate \(fitted.duplicates) (\(fixed(100 * fitted.duplicateRate, 3)) %), reordered \(fitted.reordered) (\(fixed(100 * fitted.reorderRate, 3)) %)")
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
            "clocks_comparable": .bool(fitted.clocksComparable),
            "skew_ppm": .array(fitted.skews.map { .object(["controller": .string($0.controller.description), "ppm": .number($0.estimate.ppm),
                                                              "span_s": .number($0.estimate.spanS)]) }),
            "delay": .object([
                "choice": .string({ if case .family(let f) = fitted.delay.choice { return f.distributionName } else { return "quantiles" } }()),
                "samples": .integer(Int64(fitted.delay.samples)),
                "candidates": .array(fitted.delay.candidates.map { .object(["family": .string($0.family.distributionName),
                                                                           "ks_distance": .number($0.ks.distance), "p_value": .number($0.ks.pValue)]) }),
            ]),
            "loss": .object(loss),
            "duplicates": .integer(Int64(fitted.duplicates)), "reordered": .integer(Int64(fitted.reordered)), "pauses": .integer(Int64(fitted.pauses)),
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

    @OptionGroup var report: ReportOptions<OutputFormat>
    @OptionGroup var input: CaptureInputOptions

    func validate() throws {
        guard traces.count == 2 else { throw ValidationError("Give two recordings: the event's, then the replay's.") }
        if let baseMs { guard baseMs.isFinite, baseMs >= 0, baseMs <= 60_000 else { throw ValidationError("--base-ms must be a number of ms from 0 to 60000.") } }
        _ = try plotFormat.format(for: plot)
    }

    func run() throws {
        let converter = try plotFormat.converter(for: plot)
        let first = try NetworkFit.fitRecording(traces[0], input: input, baseMs: baseMs)
        let second = try NetworkFit.fitRecording(traces[1], input: input, baseMs: baseMs)
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
