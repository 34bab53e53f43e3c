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
        abstract: "Capture a protocol's traffic live with libpcap, to a nanosecond pcap and a trace at once.",
        discussion: """
            Captures both directions of the host's port on IPv4 and IPv6, in immediate \
            mode with nanosecond timestamps, and flushes both files several times a second, \
            so a killed capture leaves readable files. On SIGINT or SIGTERM, or when \
            --duration or --count runs out, it drains everything the kernel has captured \
            before stopping, then prints the packets captured and the packets the kernel \
            dropped. Prints "capturing on INTERFACE" once the capture is active.

            Live capture needs root or CAP_NET_RAW, only to open the capture: once the \
            capture and both files are open, it gives its privileges up, as tcpdump does. \
            With -Z USER it becomes that user (uid, gid, no supplementary groups); without, \
            it keeps its uid and clears every capability. It says which on standard error, \
            and stops rather than capture with privileges it could not drop.

            Exit status 77 when permission is denied or privileges cannot be dropped, 64 \
            for an unknown interface, a bad filter or an unknown -Z user.
            """)

    @Option(name: .shortAndLong, help: ArgumentHelp("The interface to capture on, e.g. lo or eth0.", valueName: "interface"))
    var interface: String

    @Option(help: ArgumentHelp("A BPF filter that narrows the default (udp port PORT, or tcp port PORT for a byte-stream protocol) further.", valueName: "bpf"))
    var filter: String?

    @OptionGroup var wire: ProtocolOptions

    @Option(help: ArgumentHelp("The host's port (default: the protocol's, 47110 for motionlink-v1).", valueName: "port"))
    var port: UInt16?

    @Option(help: ArgumentHelp("The pcap file to write (nanosecond timestamps).", valueName: "file"), completion: .file())
    var pcap: String

    @Option(help: ArgumentHelp("The trace file to write.", valueName: "file"), completion: .file())
    var trace: String

    @Option(help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("Stop after this many packets.", valueName: "n"))
    var count: Int?

    @Option(help: ArgumentHelp("Bytes kept of each packet; MotionLink needs under 200.", valueName: "bytes"))
    var snaplen: Int32 = 2048

    @Option(name: .customLong("buffer-mib"), help: ArgumentHelp("Kernel capture buffer in MiB; it holds about buffer ÷ snaplen packets.", valueName: "mib"))
    var bufferMiB: Int32 = 32

    @Option(name: [.customShort("Z"), .customLong("user")], help: ArgumentHelp(
        "Become this user once the capture and files are open (tcpdump's -Z); without it, keep the uid and drop every capability.",
        valueName: "user"))
    var user: String?

    @OptionGroup var summaryFormat: SummaryFormatOptions

    func validate() throws {
        // Checked before anything is opened, so a typo leaves no files behind.
        if let user, !Privileges.userExists(user) { throw ValidationError("-Z \(user): no such user.") }
        if duration != nil && count != nil { throw ValidationError("Give --duration or --count, not both.") }
        // A billion seconds (31 years), like replay's --timeout: the deadline stays in Int64 ns.
        if let duration { guard duration.isFinite, duration > 0, duration <= 1e9 else { throw ValidationError("--duration must be a positive number of seconds, at most 1000000000.") } }
        if let count { guard count > 0 else { throw ValidationError("--count must be positive.") } }
        guard (64...65535).contains(snaplen) else { throw ValidationError("--snaplen must be between 64 and 65535.") }
        guard (1...1024).contains(bufferMiB) else { throw ValidationError("--buffer-mib must be between 1 and 1024.") }
    }

    func run() throws {
        var configuration = LiveCapture.Configuration(wireProtocol: wire.wireProtocol, interface: interface, pcapPath: pcap, tracePath: trace)
        configuration.port = port
        configuration.filter = filter
        configuration.durationS = duration
        configuration.count = count
        configuration.snaplen = snaplen
        configuration.bufferBytes = bufferMiB << 20
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
            printError(error.description)
            throw ExitStatus.ioError
        }
        switch summaryFormat.format {
        case .text:
            let skipped = report.skipped.keys.sorted().map { "\($0) \(report.skipped[$0]!)" }.joined(separator: ", ")
            printNow("captured \(report.packets) packets (\(report.messages["c2h"] ?? 0) controller→host, "
                     + "\(report.messages["h2c"] ?? 0) host→controller messages; skipped: \(skipped.isEmpty ? "none" : skipped)); "
                     + "kernel dropped \(report.kernelDropped), interface dropped \(report.interfaceDropped)"
                     + (report.reassembly.map { "; stream gaps \($0.gaps) (\($0.missingBytes) bytes missing), \($0.duplicateBytes) duplicate bytes" } ?? ""))
        case .json:
            var object: [String: JSONValue] = [
                "packets": .integer(Int64(report.packets)),
                "messages": .object(report.messages.mapValues { .integer(Int64($0)) }),
                "skipped": .object(report.skipped.mapValues { .integer(Int64($0)) }),
                "kernel_received": .integer(Int64(report.kernelReceived)),
                "kernel_dropped": .integer(Int64(report.kernelDropped)),
                "interface_dropped": .integer(Int64(report.interfaceDropped)),
            ]
            if let reassembly = report.reassembly {
                // A byte stream's: the stream events written and what reassembly found.
                object["stream_events"] = .object(report.streamEvents.mapValues { .integer(Int64($0)) })
                object["stream_gaps"] = .integer(Int64(reassembly.gaps))
                object["stream_missing_bytes"] = .integer(Int64(reassembly.missingBytes))
                object["stream_duplicate_bytes"] = .integer(Int64(reassembly.duplicateBytes))
            }
            printNow(JSONValue.object(object).jsonText)
        }
    }
}
