import ArgumentParser
import KinetraceJSON
import KinetraceCapture
import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import Logging

/// `kinetrace capture`: live capture to pcap and trace at once.
struct Capture: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Capture a protocol's traffic live with libpcap, to a nanosecond pcap, a trace, or both at once.",
        discussion: """
            Captures both directions of the host's port on IPv4 and IPv6 with nanosecond \
            timestamps, and flushes its files several times a second, \
            so a killed capture leaves readable files. On SIGINT or SIGTERM, or when \
            --duration or --count runs out, it drains everything the kernel has captured \
            before stopping, then prints the packets captured and the packets the kernel \
            dropped. Prints "capturing on INTERFACE" once the capture is active.

            Live capture needs root or CAP_NET_RAW, only to open the capture: once the \
            capture and its files are open, it gives its privileges up, as tcpdump does. \
            With -Z USER it becomes that user (uid, gid, no supplementary groups); without, \
            it keeps its uid and clears every capability. It says which on standard error, \
            and stops rather than capture with privileges it could not drop.

            The spellings are tcpdump's where they mean the same: -i, -w, -c, -s, -B (KiB), \
            -G, -C, -Z and a trailing BPF expression, as in `kinetrace capture -i lo -w s.pcap \
            -c 100 udp src host 10.0.0.7`. Each rotated pcap and trace is complete on its own \
            (a byte stream's trace then begins mid-stream). The summary lists the files written.

            Every write is checked. When one fails (a full disk), the capture stops, cuts each \
            file back to its last whole packet or record, prints the summary with what \
            reached the disk (pcap_packets_on_disk and trace_records_on_disk in JSON) and \
            exits 74. A -G template whose names would come round within --duration (or a \
            day) is refused before capturing, since a later file would overwrite an earlier one.

            With --transport ws the host is a WebSocket host (`kinetrace host --transport \
            ws`): the filter is tcp port PORT, and the trace holds what `kinetrace convert \
            --transport ws` reads from the pcap: one message per WebSocket message, the \
            first close of each connection as a websocket_close event, and a \
            websocket_error event for whatever cannot be read. A wss:// session cannot be \
            read from a capture: record it with `kinetrace host --trace`.

            Exit status 77 when permission is denied or privileges cannot be dropped, 64 \
            for an unknown interface, a bad filter, an unknown -Z user or a -G template \
            that repeats, 73 when a file cannot be created (also a rotated one, which stops \
            the capture), 74 when a write fails.
            """)

    @Option(name: .shortAndLong, help: ArgumentHelp("The interface to capture on, e.g. lo or eth0.", valueName: "interface"))
    var interface: String

    @Argument(help: ArgumentHelp(
        "A BPF expression, as tcpdump takes it after the options, that narrows the default (udp port PORT, or tcp port PORT for a byte-stream protocol or --transport ws) further.",
        valueName: "expression"))
    var expression: [String] = []

    @Option(help: ArgumentHelp("The BPF expression as one option (the same as a trailing expression; give one or the other).", valueName: "bpf"))
    var filter: String?

    @OptionGroup var wire: ProtocolOptions

    @OptionGroup var transport: CaptureTransportOptions

    @Option(help: ArgumentHelp("The host's port (default: the protocol's, \(ProtocolRegistry.defaultProtocol.defaultPort) for \(ProtocolRegistry.defaultID)).", valueName: "port"))
    var port: UInt16?

    @Option(name: [.customShort("w"), .customLong("pcap")], help: ArgumentHelp(
        "The pcap file to write, nanosecond timestamps (tcpdump's -w). Give -w, --trace or both.", valueName: "file"),
        completion: .file())
    var pcap: String?

    @Option(help: ArgumentHelp("The trace file to write, beside or instead of the pcap.", valueName: "file"), completion: .file())
    var trace: String?

    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(name: [.customShort("c"), .customLong("count")], help: ArgumentHelp("Stop after this many packets (tcpdump's -c).", valueName: "n"))
    var count: Int?

    @Option(name: [.customShort("s"), .customLong("snaplen")], help: ArgumentHelp(
        "Bytes kept of each packet, 262144 by default and for 0, as tcpdump's -s. A byte-stream protocol always keeps 262144.",
        discussion: """
            The kernel ring (-B) packs packets at the length kept, so a large -s costs no \
            ring space for small datagrams: with the default -B of 32768 KiB, the ring held \
            97,500 36-byte datagrams on lo while the capture was paused, at -s 262144 as at \
            -s 256.
            """,
        valueName: "bytes"))
    var snaplen: Int32 = LiveCapture.Configuration.defaultSnaplen

    @Option(name: [.customShort("B"), .customLong("buffer-size")], help: ArgumentHelp(
        "The kernel capture buffer (ring) in KiB, as tcpdump's -B; 32768 by default. It holds what arrives while the capture is busy (about 3,000 packets per MiB of 36-byte datagrams).", valueName: "kib"))
    var bufferKiB: Int?

    @Option(name: .customLong("buffer-mib"), help: ArgumentHelp("The kernel capture buffer in MiB (the older spelling of -B).", valueName: "mib", visibility: .hidden))
    var bufferMiB: Int?

    @Option(name: [.customShort("G"), .customLong("rotate-seconds")], help: ArgumentHelp(
        "Start new files every this many seconds, as tcpdump's -G: the -w and --trace names go through strftime (local time), so they need a % conversion such as %H%M%S.",
        valueName: "seconds"))
    var rotateSeconds: Int?

    @Option(name: [.customShort("C"), .customLong("file-size")], help: ArgumentHelp(
        "Start new files once the pcap holds this many millions of bytes, as tcpdump's -C: the second pair of files gets 1 appended to its names, the third 2, and so on. Needs -w.",
        valueName: "mb"))
    var fileSizeMB: Int?

    @Option(name: [.customShort("Z"), .customLong("user")], help: ArgumentHelp(
        "Become this user once the capture and files are open (tcpdump's -Z); without it, keep the uid and drop every capability. Rotated files are created as that user.",
        valueName: "user"))
    var user: String?

    @OptionGroup var summaryFormat: SummaryFormatOptions

    /// The BPF text from either spelling.
    var bpf: String? { expression.isEmpty ? filter : expression.joined(separator: " ") }

    func validate() throws {
        // Checked before anything is opened, so a typo leaves no files behind.
        if let user, !Privileges.userExists(user) { throw ValidationError("-Z \(user): no such user.") }
        guard pcap != nil || trace != nil else { throw ValidationError("Give a file to write: -w FILE (pcap), --trace FILE, or both.") }
        if !expression.isEmpty && filter != nil { throw ValidationError("Give the BPF expression once: after the options or as --filter, not both.") }
        if duration != nil && count != nil { throw ValidationError("Give --duration or --count, not both.") }
        // A billion seconds (31 years), like replay's --timeout: the deadline stays in Int64 ns.
        if let duration { guard duration.isFinite, duration > 0, duration <= 1e9 else { throw ValidationError("--duration must be a positive number of seconds, at most 1000000000.") } }
        if let count { guard count > 0 else { throw ValidationError("-c must be positive.") } }
        guard snaplen == 0 || (64...LiveCapture.Configuration.defaultSnaplen).contains(snaplen) else {
            throw ValidationError("-s must be 0 or between 64 and 262144.")
        }
        if bufferKiB != nil && bufferMiB != nil { throw ValidationError("Give -B (KiB) or --buffer-mib, not both.") }
        if let bufferKiB { guard (64...1_048_576).contains(bufferKiB) else { throw ValidationError("-B must be between 64 and 1048576 KiB (1 GiB).") } }
        if let bufferMiB { guard (1...1024).contains(bufferMiB) else { throw ValidationError("--buffer-mib must be between 1 and 1024.") } }
        if let rotateSeconds {
            guard (1...31_536_000).contains(rotateSeconds) else { throw ValidationError("-G must be between 1 and 31536000 seconds (a year).") }
            for name in [pcap, trace].compactMap({ $0 }) where !name.contains("%") {
                throw ValidationError("-G \(rotateSeconds): \(name) has no strftime conversion (e.g. %H%M%S), so every file would overwrite the last.")
            }
            // tcpdump would overwrite a file whose name comes round again; refuse before capturing.
            // The horizon is --duration, or a day without one (a repeat later still stops the capture rather than overwrite).
            let now = Int64(SystemClock.realtimeNs() / 1_000_000_000)
            let horizon = duration.map { Int64($0.rounded(.up)) } ?? 86_400
            for name in [pcap, trace].compactMap({ $0 }) {
                if let clash = firstRepeatedRotationName(template: name, periodSeconds: rotateSeconds, startSeconds: now, horizonSeconds: horizon) {
                    throw ValidationError("-G \(rotateSeconds): \(name) gives the same name, \(clash.name), to files \(clash.again - clash.first) s apart, so the later would overwrite the earlier; add finer or wider strftime conversions (e.g. %Y%m%d-%H%M%S).")
                }
            }
        }
        if let fileSizeMB {
            guard (1...1_000_000).contains(fileSizeMB) else { throw ValidationError("-C must be between 1 and 1000000 (millions of bytes).") }
            guard pcap != nil else { throw ValidationError("-C measures the pcap: give -w FILE.") }
        }
        if let pcap, let trace, pcap == trace { throw ValidationError("-w and --trace name the same file.") }
        _ = try transport.carrier(for: wire.wireProtocol)
    }

    func run() throws {
        var configuration = LiveCapture.Configuration(wireProtocol: wire.wireProtocol, interface: interface, pcapPath: pcap, tracePath: trace)
        configuration.port = port
        configuration.carrier = try transport.carrier(for: wire.wireProtocol)
        configuration.filter = bpf
        configuration.durationS = duration
        configuration.count = count
        configuration.snaplen = snaplen == 0 ? LiveCapture.Configuration.defaultSnaplen : snaplen
        configuration.bufferBytes = Int32(bufferKiB.map { $0 << 10 } ?? bufferMiB.map { $0 << 20 } ?? Int(configuration.bufferBytes))
        configuration.rotateSeconds = rotateSeconds
        configuration.rotateBytes = fileSizeMB.map { Int64($0) * 1_000_000 }
        let capture: LiveCapture
        do throws(CaptureError) {
            capture = try LiveCapture(configuration: configuration, logger: Logger(label: "kinetrace.capture"))
        } catch {
            printError(error.description)
            switch error.code {
            case .permissionDenied: throw ExitCode(77)
            case .noSuchInterface, .badFilter: throw ExitCode.validationFailure
            case .cannotCreate: throw ExitStatus.cannotCreate
            case .io: throw ExitStatus.ioError
            default: throw ExitStatus.unavailable
            }
        }
        // Before any thread starts: capabilities belong to threads.
        do throws(Privileges.Failure) {
            writeStandardError("kinetrace: capture: \(try Privileges.drop(toUser: user))\n")
        } catch {
            printError(error.description)
            throw error.description.hasSuffix("no such user") ? ExitCode.validationFailure : ExitCode(77)
        }
        printNow("capturing on \(interface) (filter: \(configuration.effectiveFilter))")
        let signals = onTermination { _ in capture.stop() }
        defer { _ = signals }
        let report: CaptureReport
        do throws(CaptureError) {
            report = try capture.run()
        } catch {
            // A failed write or rotation: what was captured and what reached the disk, then the one-line error.
            if let partial = error.report { printSummary(partial, failed: true) }
            printError(error.description)
            throw error.code == .io ? ExitStatus.ioError : ExitStatus.cannotCreate
        }
        printSummary(report, failed: false)
    }

    func printSummary(_ report: CaptureReport, failed: Bool) {
        switch summaryFormat.format {
        case .text:
            let skipped = report.skipped.keys.sorted().map { "\($0) \(report.skipped[$0]!)" }.joined(separator: ", ")
            printNow("captured \(report.packets) packets (\(report.messages["c2h"] ?? 0) controller→host, "
                     + "\(report.messages["h2c"] ?? 0) host→controller messages; skipped: \(skipped.isEmpty ? "none" : skipped)); "
                     + "kernel dropped \(report.kernelDropped), interface dropped \(report.interfaceDropped)"
                     + (report.reassembly.map { "; stream gaps \($0.gaps) (\($0.missingBytes) bytes missing), \($0.duplicateBytes) duplicate bytes" } ?? "")
                     + (report.webSocket.map { "; WebSocket: \($0.upgradesAccepted) upgrades, \($0.messages) messages, \($0.errors) websocket_error events" } ?? ""))
            if failed { printNow("on disk: \(report.onDiskSummary(captured: report.packets, pcap: pcap != nil, trace: trace != nil))") }
            if rotateSeconds != nil || fileSizeMB != nil || failed { printNow("wrote \(report.files.count) files: \(report.files.joined(separator: ", "))") }
        case .json:
            var object: [String: JSONValue] = [
                "packets": .integer(Int64(report.packets)),
                "pcap_packets_on_disk": .integer(Int64(report.pcapPacketsOnDisk)),
                "trace_records_on_disk": .integer(Int64(report.traceRecordsOnDisk)),
                "complete": .bool(!failed),
                "messages": .object(report.messages.mapValues { .integer(Int64($0)) }),
                "skipped": .object(report.skipped.mapValues { .integer(Int64($0)) }),
                "kernel_received": .integer(Int64(report.kernelReceived)),
                "kernel_dropped": .integer(Int64(report.kernelDropped)),
                "interface_dropped": .integer(Int64(report.interfaceDropped)),
                "files": .array(report.files.map { .string($0) }),
            ]
            if let reassembly = report.reassembly {
                // A byte stream's: the stream events written and what reassembly found.
                object["stream_events"] = .object(report.streamEvents.mapValues { .integer(Int64($0)) })
                object["stream_gaps"] = .integer(Int64(reassembly.gaps))
                object["stream_missing_bytes"] = .integer(Int64(reassembly.missingBytes))
                object["stream_duplicate_bytes"] = .integer(Int64(reassembly.duplicateBytes))
            }
            if let ws = report.webSocket {
                object["websocket"] = .object([
                    "upgrades_accepted": .integer(Int64(ws.upgradesAccepted)), "messages": .integer(Int64(ws.messages)),
                    "close_frames": .integer(Int64(ws.closeFrames)), "errors": .integer(Int64(ws.errors)),
                ])
            }
            printNow(JSONValue.object(object).jsonText)
        }
    }
}
