import ArgumentParser
import Foundation
import KinetraceAnalysis
import KinetracePcap
import KinetraceTrace
import KinetraceWire

/// `kinetrace latency TRACE...`: the source paper's latency analysis of a trace.
struct Latency: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure latency in traces the way the source paper does: its Table I, percentiles and Figure 2.",
        discussion: """
            Each latency the trace's capture point allows, labelled in the output:
              one-way-raw           valid samples: capture time − sender time
              one-way-relative      raw − its median (+ --base-ms), the paper's method
              reply-echo-raw        valid replies: capture time − the sender time they echo
              reply-echo-relative   raw − its median (+ --base-ms)
              reply-rtt             sample sent → its reply received, controller's clock
              reply-turnaround      sample seen → its reply seen, host's or capture's clock
            With --join CONTROLLER_TRACE HOST_TRACE, per message, both recorders' clocks:
              one-way-joined        a sample's send (controller) → its receipt (host)
              reply-one-way-joined  a reply's send (host) → its receipt (controller)
            Raw one-way latency is true one-way latency only when the controller's clock \
            is the recorder's or synchronised to it (loopback); the relative latency needs \
            no common clock but keeps only the variation. When the clocks cannot be \
            compared (a replay's record without --timestamps wallclock, or a raw \
            difference over a minute), the raw figures are withheld, with the reason.

            Each series goes through one pass of 3σ outlier removal (--sigmas) and gives \
            the paper's Table I (mean, p95, max, min and sample sd, in ms, with N before \
            and after removal), and the percentiles p50, p90, p99 and p99.9 of every \
            sample from an HDR histogram (three significant digits), for all controllers \
            together and for each one.

            Reads traces from capture, simulate, replay --record, host --trace and synth, \
            and pcap or pcapng files (capture point "network"). Samples are held in \
            memory: about 100 bytes a frame (126 MB at peak for a million frames).
            """)

    @Argument(help: ArgumentHelp("The traces to analyse: kinetrace trace v1 (JSON Lines), pcap or pcapng; each is reported on its own.", valueName: "trace"),
              completion: .file())
    var traces: [String]

    @OptionGroup var report: ReportOptions<LatencyFormat>

    @Option(help: ArgumentHelp("Outlier removal keeps samples within this many sample standard deviations of the mean; 0 keeps every sample.", valueName: "k"))
    var sigmas: Double = 3

    @Option(name: .customLong("base-ms"), help: ArgumentHelp("A known base latency in ms, added to the relative latencies to compare them with a published table.", valueName: "ms"))
    var baseMs: Double = 0

    @Option(name: .customLong("median-scope"), help: ArgumentHelp("The median the relative latencies subtract: each controller's own (each phone has its own clock) or one over the dataset.", valueName: "scope"))
    var medianScope: MedianScope = .controller

    @Option(help: ArgumentHelp("Draw the paper's Figure 2 (latency per frame) with a histogram and a CDF to this file, in the format --plot-format chooses.", valueName: "file"))
    var plot: String?

    @OptionGroup var plotFormat: PlotFormatOptions

    @Option(name: .customLong("plot-measure"), help: ArgumentHelp("The latency to plot, named as in the list above.", valueName: "measure"))
    var plotMeasureName: PlotMeasure = .oneWayRelative
    var plotMeasure: LatencyMeasure {
        join && plotMeasureName == .oneWayRelative ? .joinedOneWay : plotMeasureName.measure
    }

    @Flag(help: ArgumentHelp("Join two recordings of one session, the controller's trace then the host's (or a capture beside it), for one-way latency each way per message."))
    var join = false

    @OptionGroup var input: CaptureInputOptions
    @OptionGroup var timeWindow: TraceWindowOptions

    func validate() throws {
        guard !traces.isEmpty else { throw ValidationError("Name at least one trace.") }
        _ = try plotFormat.format(for: plot)
        if join {
            guard traces.count == 2 else { throw ValidationError("--join takes two traces: the controller's, then the host's.") }
            guard [PlotMeasure.oneWayRelative, .joinedOneWay, .joinedReplyOneWay].contains(plotMeasureName) else {
                throw ValidationError("With --join, --plot-measure is one-way-joined or reply-one-way-joined.")
            }
        }
        // Past 1000 σ nothing is ever removed; the bound keeps the removal bounds finite.
        guard sigmas.isFinite, sigmas >= 0, sigmas <= 1000 else { throw ValidationError("--sigmas must be a number from 0 to 1000.") }
        // A base latency of an hour is already absurd; the bound keeps shifted samples in Int64 ns.
        guard baseMs.isFinite, abs(baseMs) <= 3_600_000 else { throw ValidationError("--base-ms must be a number of ms from -3600000 to 3600000 (an hour).") }
    }

    func run() throws {
        let converter = try plotFormat.converter(for: plot)
        let options = LatencyOptions(sigmas: sigmas, medianScope: medianScope, baseMs: baseMs)
        var reports: [LatencyReport] = []
        for path in join ? [] : traces {
            let analysis = try reportingFailures { () throws(TraceError) -> LatencyAnalysis in
                try Self.analyse(path: path, input: input, options: options, window: timeWindow.window)
            }
            guard !analysis.measures.isEmpty else {
                printError("\(path): no latency to measure: no valid samples or replies")
                throw ExitStatus.dataError
            }
            reports.append(LatencyReport(source: path, analysis: analysis))
        }
        if join {
            let analysis = try reportingFailures { () throws(TraceError) -> LatencyAnalysis in
                let controller = try openInput(path: traces[0], wireProtocol: input.wire.given, port: input.port, window: timeWindow.window)
                let host = try openInput(path: traces[1], wireProtocol: controller.wireProtocol, port: input.port, window: timeWindow.window)
                return try LatencyJoin.join(controller: controller, host: host, options: options)
            }
            guard !analysis.measures.isEmpty else {
                let ambiguity = analysis.notes.last { $0.hasPrefix("ambiguous") }.map { " (\($0))" } ?? ""
                printError("\(traces[0]) and \(traces[1]) have no message in common\(ambiguity); are they the same session (controller's first)?")
                throw ExitStatus.dataError
            }
            reports.append(LatencyReport(source: "\(traces[0]) + \(traces[1])", analysis: analysis))
        }
        if let plot {
            guard reports.allSatisfy({ $0.analysis.result(for: plotMeasure) != nil }) else {
                let missing = reports.first { $0.analysis.result(for: plotMeasure) == nil }!
                let why = missing.analysis.unavailable.first { $0.measure == plotMeasure }?.reason ?? "none"
                printError("\(missing.source): no \(plotMeasure.rawValue) samples to plot: \(why)")
                throw ExitStatus.dataError
            }
            try plotFormat.write(LatencyFigures.figure(reports, measure: plotMeasure), to: plot, converter: converter)
        }
        let stream = try ReportStream(to: report.out)
        switch report.format {
        case .text: LatencyRendering.write(text: reports, to: stream)
        case .json: LatencyRendering.write(json: reports, to: stream)
        case .csv: LatencyRendering.write(csv: reports, to: stream)
        }
        try stream.finish()
    }

    static func analyse(path: String, input: CaptureInputOptions, options: LatencyOptions, window: TraceWindow? = nil) throws(TraceError) -> LatencyAnalysis {
        let reader = try openInputReadingAhead(path: path, wireProtocol: input.wire.given, port: input.port, window: window)
        var collector = LatencyCollector(header: reader.header, wireProtocol: reader.wireProtocol)
        var progress = Progress(label: "\(path): records read")
        var count = 0
        while let record = try reader.next() {
            collector.add(record)
            count += 1
            progress.update(count)
        }
        progress.finish()
        if let truncation = reader.truncation { printWarning("\(path): \(truncation)") }
        return collector.analysis(options: options)
    }
}

enum LatencyFormat: String, ReportFormat {
    case text, json, csv
    static var defaultFormat: LatencyFormat { .text }
    static var formatHelp: String { "text for people, json or csv for machines" }
}

extension MedianScope: ExpressibleByArgument {}

/// The measures by their command-line names.
enum PlotMeasure: String, ExpressibleByArgument, CaseIterable {
    case oneWayRaw = "one-way-raw", oneWayRelative = "one-way-relative", replyEchoRaw = "reply-echo-raw"
    case replyEchoRelative = "reply-echo-relative", replyRTT = "reply-rtt", replyTurnaround = "reply-turnaround"
    case joinedOneWay = "one-way-joined", joinedReplyOneWay = "reply-one-way-joined"

    var measure: LatencyMeasure { LatencyMeasure(rawValue: rawValue.replacingOccurrences(of: "-", with: "_"))! }
}

/// One trace's analysis, under the name the user gave it.
struct LatencyReport {
    var source: String
    var analysis: LatencyAnalysis
}
