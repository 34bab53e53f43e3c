import ArgumentParser
import Foundation
import KinetraceAnalysis
import KinetraceHash
import KinetraceJSON
import KinetraceReplay
import KinetraceSupport
import KinetraceTrace

/// `kinetrace network`: replay networks made from measurements.
struct NetworkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "network",
        abstract: "Make replay networks from measurements: fit one from a host's recording.",
        subcommands: [NetworkFit.self])
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

    func run() throws {
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
        let fitted: FittedPath
        do throws(NetworkFitError) {
            fitted = try NetworkFitter.fit(evidence, baseMs: baseMs)
        } catch {
            printError("\(trace): no network fitted: \(error.description)")
            throw ExitStatus.dataError
        }
        let digest = Self.digest(readable)
        var network = ReplayNetwork(name: networkName,
                                    description: "Fitted by kinetrace network fit from \(Self.shown(trace)): \(fitted.controllers) controller(s), \(fitted.received) samples over \(SummaryRendering.ms(fitted.spanS, 1)) s.",
                                    provenance: Self.provenance(fitted, trace: trace, records: records, digest: digest, protocolName: reader.wireProtocol.id.name))
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
