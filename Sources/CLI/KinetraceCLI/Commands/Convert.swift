import ArgumentParser
import KinetraceJSON
import KinetracePcap
import KinetraceTrace
import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `kinetrace convert IN OUT`: between traces and packet captures.
struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert between kinetrace traces and packet captures (pcap and pcapng in, pcap out).",
        discussion: """
            Reads a trace, a pcap or a pcapng and writes a trace, a nanosecond pcap or a \
            pcapng. The output format comes from OUT's extension (.pcap, .pcapng, .jsonl \
            or .ktrace for a JSON Lines trace, .jsonl.gz for a gzip-compressed one, .mcap \
            for an MCAP trace) unless --to names it. Every command reads a gzip-compressed \
            trace, whatever its name, and an MCAP trace. Between the two trace forms, a \
            conversion keeps every record exactly.

            From a capture, a datagram to the host's port (--protocol and --port) becomes a \
            controller→host message and one from it a host→controller message, with its \
            nanosecond timestamp. Other packets (IP fragments, other protocols, other ports) \
            are skipped and counted by reason.

            With --transport ws, the capture's TCP connections to the host's port are read \
            as plain WebSocket sessions (ws://), as `kinetrace host --transport ws` serves \
            them: each WebSocket message becomes one message record, and the first close \
            of each connection a websocket_close event, as the host's own trace records \
            them. What cannot be read (a stream gap, a refused upgrade, a frame that breaks \
            RFC 6455 or the host's limits) becomes a websocket_error event, and the rest of \
            that direction of that connection is not read. A wss:// session cannot be read \
            from a capture: record it with `kinetrace host --trace`.

            To pcap, each message becomes an Ethernet, IPv4 or IPv6, and UDP packet with \
            correct checksums; the controller's MAC address is 02:4b:54:00:00:01 and the \
            host's 02:4b:54:00:00:02. In a pcap, labels and events have no form: they are \
            counted and left out. A pcapng has nanosecond resolution (if_tsresol 9) and one \
            interface description for the synthesized Ethernet link; each label and event \
            becomes a comment (opt_comment, Wireshark's frame.comment) on the packet nearest \
            in time, holding the record's trace line, and on the section header when there is \
            no packet. Reading such a pcapng back restores them; anyone else's packet comment \
            reads as a pcapng_comment event.
            """)

    @Argument(help: ArgumentHelp("The file to read: a kinetrace trace, a pcap or a pcapng.", valueName: "in"), completion: .file())
    var input: String

    @Argument(help: ArgumentHelp("The file to write: .pcap, .pcapng, .jsonl, .ktrace or .mcap.", valueName: "out"), completion: .file())
    var output: String

    @Option(help: ArgumentHelp("Output type, overriding OUT's extension: trace (JSON Lines), mcap, pcap or pcapng.", valueName: "type"))
    var to: OutputKind?

    @OptionGroup var inputOptions: CaptureInputOptions
    @OptionGroup var timeWindow: TraceWindowOptions
    @OptionGroup var traceOutput: TraceOutputOptions
    @OptionGroup var transport: CaptureTransportOptions
    @OptionGroup var summaryFormat: SummaryFormatOptions

    enum OutputKind: String, ExpressibleByArgument, CaseIterable {
        case trace, mcap, pcap, pcapng
    }

    func validate() throws {
        let kind = try outputKind()
        if traceOutput.compression != .none && kind != .mcap {
            throw ValidationError("--compression \(traceOutput.compression.rawValue) compresses an MCAP trace's chunks: name the output .mcap (a JSON Lines trace is gzip-compressed by naming it .jsonl.gz).")
        }
        _ = try transport.carrier(for: inputOptions.wire.wireProtocol)
        var inputInfo = stat(), outputInfo = stat()
        if stat(input, &inputInfo) == 0, stat(output, &outputInfo) == 0,
           inputInfo.st_dev == outputInfo.st_dev, inputInfo.st_ino == outputInfo.st_ino {
            throw ValidationError("<in> and <out> are the same file; writing would destroy the input.")
        }
    }

    /// The output format: --to, else OUT's extension.
    func outputKind() throws -> OutputKind {
        var name = output.split(separator: "/").last.map(String.init) ?? output
        // A trace named .gz is written gzip-compressed; the extension before it says what it is.
        if name.lowercased().hasSuffix(".jsonl.gz") || name.lowercased().hasSuffix(".ktrace.gz") { name.removeLast(3) }
        let fileExtension = name.contains(".") ? String(name.split(separator: ".").last!).lowercased() : ""
        if let to { return to }
        switch fileExtension {
        case "pcap": return .pcap
        case "pcapng": return .pcapng
        case "jsonl", "ktrace": return .trace
        case "mcap": return .mcap
        default:
            throw ValidationError("Cannot tell the output format from '\(name)': name it .pcap, .pcapng, .jsonl, .ktrace, .jsonl.gz or .mcap, or pass --to.")
        }
    }

    func run() throws {
        let kind = try outputKind()
        let carrier = try transport.carrier(for: inputOptions.wire.wireProtocol)
        let summary = try reportingFailures { () throws(TraceError) -> ConversionSummary in
            // Records as stored: a byte-stream protocol's chunks keep their boundaries.
            let opened = try openInput(path: input, wireProtocol: inputOptions.wire.given, port: inputOptions.port, framed: false,
                                       carrier: carrier, window: timeWindow.window)
            // A capture's packet counts are read only after the last record: by then its reading thread is done.
            let capture = opened as? PcapTraceReader
            let reader = readingAhead(opened)
            var summary = ConversionSummary(input: input, inputFormat: capture?.fileFormat ?? .trace,
                                            output: output, outputKind: kind)
            if let capture { summary.linkType = capture.linkType.description }
            var progress = Progress(label: "records converted")
            // One copy loop for both outputs; only the writer differs.
            func copyRecords(_ write: (TraceRecord) throws(TraceError) -> Void) throws(TraceError) {
                while let record = try reader.next() {
                    summary.recordsRead += 1
                    do throws(TraceError) { try write(record) } catch {
                        guard error.code == .badRecord else { throw error }
                        // The record cannot take the output's form: the fault is in the input, so name its place there.
                        throw TraceError(.badRecord, source: input, line: reader.lastRecordLine,
                                         message: "cannot be written to \(output)\(reader.lastRecordLine == nil ? " (record \(summary.recordsRead))" : ""): \(error.message)")
                    }
                    progress.update(summary.recordsRead)
                }
            }
            // A conversion that fails part way leaves no output behind: half a file passes for a whole one.
            var outputCreated = false
            do throws(TraceError) {
                switch kind {
                case .trace, .mcap:
                    var header = reader.header
                    if capture != nil { header.tool = "kinetrace \(Kinetrace.version)" }
                    let writer: any TraceSink = kind == .mcap
                        ? try MCAPTraceWriter(path: output, header: header, policy: .bulk, compression: traceOutput.compression)
                        : try TraceWriter(path: output, header: header, policy: .bulk)
                    outputCreated = true
                    PartialOutputs.begin(output)
                    try copyRecords { (record) throws(TraceError) in try writer.write(record) }
                    try writer.close()
                    summary.recordsWritten = writer.recordCount
                case .pcap, .pcapng:
                    let writer = try PcapWriter(path: output, transport: IPTransport(reader.wireProtocol.transport),
                                                container: kind == .pcap ? .pcap : .pcapng, wireProtocol: reader.wireProtocol,
                                                interfaceDescription: "kinetrace convert of \(input)")
                    outputCreated = true
                    PartialOutputs.begin(output)
                    try copyRecords { (record) throws(TraceError) in try writer.write(record) }
                    try writer.close()
                    summary.recordsWritten = writer.packetCount
                    summary.commentsWritten = writer.comments
                    summary.labelsNotWritten = writer.labelsNotWritten
                    summary.eventsNotWritten = writer.eventsNotWritten
                    summary.motionSamplesNotWritten = writer.motionSamplesNotWritten
                }
            } catch {
                if outputCreated { unlink(output) }
                PartialOutputs.end(output)
                throw error
            }
            PartialOutputs.end(output)
            progress.finish()
            if let capture {
                summary.packetsRead = capture.packetCount
                summary.skipped = capture.skipped
                summary.transport = capture.carrier == .webSocket ? .tcp : IPTransport(capture.wireProtocol.transport)
                summary.webSocket = capture.webSocketCounts
            } else {
                summary.unknownRecords = reader.unknownRecordCount
            }
            summary.truncation = reader.truncation
            return summary
        }
        if let truncation = summary.truncation { printWarning("\(input): \(truncation)") }
        switch summaryFormat.format {
        case .text: print(summary.text, terminator: "")
        case .json: print(summary.json.jsonText)
        }
    }

    /// A missing directory or a refused create is an output problem (74), not a missing input (66).
}

/// What `convert` did, for its text or JSON summary.
struct ConversionSummary {
    var input: String
    var inputFormat: CaptureFileFormat
    var linkType: String?
    var output: String
    var outputKind: Convert.OutputKind
    var recordsRead = 0
    var recordsWritten = 0
    /// Labels and events written as pcapng comments.
    var commentsWritten = 0
    /// Capture input only.
    var packetsRead: Int?
    var skipped: PacketSkipCounts?
    var transport = IPTransport.udp
    /// Trace input only: records of kinds this version does not know.
    var unknownRecords = 0
    var labelsNotWritten = 0
    var eventsNotWritten = 0
    var motionSamplesNotWritten = 0
    var truncation: TraceTruncation?
    /// Capture input read as WebSocket sessions only.
    var webSocket: WebSocketSessionReader.Counts?

    var text: String {
        var out = ""
        let from = linkType.map { "\(inputFormat), link type \($0)" } ?? "\(inputFormat)"
        out += "Converted  \(input) (\(from)) to \(output) (\(outputKind.rawValue))\n"
        out += "Written    \(recordsWritten) \(outputKind == .trace || outputKind == .mcap ? "records" : "packets") from \(recordsRead) records read"
            + (outputKind == .pcapng ? ", \(commentsWritten) labels and events as packet comments" : "") + "\n"
        if let packetsRead, let skipped {
            out += "Packets    \(packetsRead) read, \(skipped.total) skipped" + (skipped.total > 0 ? ": \(skipped)" : "") + "\n"
        }
        if let ws = webSocket {
            out += "WebSocket  \(ws.upgradesAccepted) of \(ws.upgradeRequests) upgrades accepted, \(ws.messages) messages, \(ws.closeFrames) close frames, "
                + "\(ws.pings) pings, \(ws.pongs) pongs, \(ws.errors) websocket_error events"
                + (ws.messagesAfterClose > 0 ? ", \(ws.messagesAfterClose) messages after a close left out" : "") + "\n"
        }
        if unknownRecords > 0 { out += "Skipped    \(unknownRecords) records of unknown kinds\n" }
        if labelsNotWritten + eventsNotWritten + motionSamplesNotWritten > 0 {
            out += "Left out   \(labelsNotWritten) labels, \(eventsNotWritten) events and \(motionSamplesNotWritten) motion samples, which have no packet form\n"
        }
        return out
    }

    var json: JSONValue {
        var object: [String: JSONValue] = [
            "input": .string(input),
            "input_format": .string(inputFormat.name),
            "link_type": linkType.map(JSONValue.string) ?? .null,
            "output": .string(output),
            "output_format": .string(outputKind.rawValue),
            "records_read": .integer(Int64(recordsRead)),
            "records_written": .integer(Int64(recordsWritten)),
            "comments_written": .integer(Int64(commentsWritten)),
            "unknown_records": .integer(Int64(unknownRecords)),
            "not_written": .object(["label": .integer(Int64(labelsNotWritten)), "event": .integer(Int64(eventsNotWritten)),
                                     "motion": .integer(Int64(motionSamplesNotWritten))]),
            "truncation": truncation.map { .string($0.description) } ?? .null,
        ]
        if let ws = webSocket {
            object["websocket"] = .object([
                "upgrade_requests": .integer(Int64(ws.upgradeRequests)), "upgrades_accepted": .integer(Int64(ws.upgradesAccepted)),
                "frames": .integer(Int64(ws.frames)), "messages": .integer(Int64(ws.messages)),
                "messages_after_close": .integer(Int64(ws.messagesAfterClose)), "pings": .integer(Int64(ws.pings)),
                "pongs": .integer(Int64(ws.pongs)), "close_frames": .integer(Int64(ws.closeFrames)),
                "errors": .integer(Int64(ws.errors)), "bytes_not_read": .integer(Int64(ws.bytesNotRead)),
            ])
        }
        if let packetsRead, let skipped {
            object["packets_read"] = .integer(Int64(packetsRead))
            // The reasons that can apply to the protocol's transport.
            let reasons = PacketSkipReason.allCases.filter { $0 != (transport == .udp ? .notTCP : .notUDP) }
            object["packets_skipped"] = .object(Dictionary(uniqueKeysWithValues: reasons.map {
                ($0.rawValue, JSONValue.integer(Int64(skipped[$0])))
            }))
        } else {
            object["packets_read"] = .null
            object["packets_skipped"] = .null
        }
        return .object(object)
    }
}
