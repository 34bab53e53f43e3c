import ArgumentParser
import KinetraceAnalysis
import KinetracePcap
import KinetraceTrace
import KinetraceWire

/// `kinetrace inspect FILE`: summarises a trace.
struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a trace: traffic per direction and controller, sample intervals, validity and gestures.",
        discussion: """
            Reads the trace in one pass, in constant memory. The protocol's host model is \
            run over the samples exactly as a conforming host applies it (the rule its spec \
            or declaration states), and the decisions it makes are matched with the replies \
            in the trace.

            A trace whose last line was cut short by a crash is read up to its last complete \
            record, with a warning.
            """)

    @Argument(help: ArgumentHelp("The trace to read: kinetrace trace v1 (JSON Lines), pcap or pcapng.", valueName: "file"), completion: .file())
    var file: String

    @OptionGroup var input: CaptureInputOptions
    @OptionGroup var timeWindow: TraceWindowOptions
    @OptionGroup var ruleOptions: GestureRuleOptions
    @OptionGroup var report: ReportOptions<OutputFormat>

    func run() throws {
        var bytes: (file: Int, uncompressed: Int)?
        var mcap = false
        let summary = try reportingFailures { () throws(TraceError) -> TraceSummary in
            let reader = try openInputReadingAhead(path: file, wireProtocol: input.wire.given, port: input.port, window: timeWindow.window)
            // The readable path, not the name: a FIFO's private copy (opening the FIFO again would wait for a writer).
            mcap = (try? MCAPTraceReader.hasMagic(path: InputSpool.readablePath(file))) ?? false
            var summarizer = TraceSummarizer(source: reader.source, header: reader.header, wireProtocol: reader.wireProtocol,
                                             rule: ruleOptions.rule(for: reader.wireProtocol))
            var progress = Progress(label: "records read")
            var recordCount = 0
            while let record = try reader.next() {
                summarizer.add(record)
                recordCount += 1
                progress.update(recordCount)
            }
            progress.finish()
            summarizer.finish(reader)
            bytes = reader.bytesRead
            return summarizer.summary
        }
        if let truncation = summary.truncation { printWarning("\(file): \(truncation)") }
        switch report.format {
        case .text:
            try writeOutput(SummaryRendering.text(summary, bytes: bytes, mcap: mcap), to: report.out)
        case .json: try writeOutput(SummaryRendering.jsonLine(summary, bytes: bytes), to: report.out)
        }
    }
}
