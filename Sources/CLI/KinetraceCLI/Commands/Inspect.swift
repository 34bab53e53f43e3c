import ArgumentParser
import KinetraceAnalysis
import KinetracePcap
import KinetraceTrace
import KinetraceWire

/// `kinetrace inspect FILE`: summarises a trace.
struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a trace: traffic per direction and controller, frame intervals, validity and gestures.",
        discussion: """
            Reads the trace in one pass, in constant memory. The gesture rule is replayed \
            over the frames exactly as a conforming host applies it (specs/motionlink-v1.md, \
            ML-GESTURE-*), and the triggers it finds are matched with the acks in the trace.

            A trace whose last line was cut short by a crash is read up to its last complete \
            record, with a warning.
            """)

    @Argument(help: ArgumentHelp("The trace to read: kinetrace trace v1 (JSON Lines), pcap or pcapng.", valueName: "file"), completion: .file())
    var file: String

    @Option(help: ArgumentHelp("Output format: text for people, json for machines.", valueName: "format"))
    var format: OutputFormat = .text

    @Option(help: ArgumentHelp("Jump threshold τ in g: a frame triggers when ay exceeds it.", valueName: "g"))
    var threshold: Double = GestureRule.default.threshold

    @Option(name: .customLong("refractory-ms"), help: ArgumentHelp("Refractory period R in milliseconds of frame time between triggers.", valueName: "ms"))
    var refractoryMs: UInt64 = GestureRule.default.refractoryMs

    @Option(help: ArgumentHelp("UDP port of the MotionLink host, used to tell direction in pcap and pcapng input.", valueName: "port"))
    var port: UInt16 = MotionLinkV1.defaultPort

    func validate() throws {
        guard threshold.isFinite else { throw ValidationError("--threshold must be a finite number.") }
    }

    func run() throws {
        let rule = GestureRule(threshold: threshold, refractoryMs: refractoryMs)
        let summary = try reportingFailures { () throws(TraceError) -> TraceSummary in
            let reader = try TraceInput.open(path: file, port: port)
            var summarizer = TraceSummarizer(source: reader.source, header: reader.header, rule: rule)
            var progress = Progress(label: "records read")
            var recordCount = 0
            while let record = try reader.next() {
                summarizer.add(record)
                recordCount += 1
                progress.update(recordCount)
            }
            progress.finish()
            var summary = summarizer.summary
            summary.truncation = reader.truncation
            summary.unknownRecords = reader.unknownRecordCount
            return summary
        }
        if let truncation = summary.truncation { printWarning("\(file): \(truncation)") }
        switch format {
        case .text: print(SummaryRendering.text(summary), terminator: "")
        case .json: print(SummaryRendering.json(summary).jsonText)
        }
    }
}
