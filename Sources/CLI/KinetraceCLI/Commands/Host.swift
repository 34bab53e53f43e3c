import ArgumentParser
import Dispatch
import KinetraceJSON
import KinetraceSupport
import KinetraceHost
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging

/// `kinetrace host`: the reference host.
struct Host: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the reference host: detect jumps and answer each as the protocol says.",
        discussion: """
            Listens on the protocol's own transport (UDP for datagrams, TCP for a byte \
            stream) or the one --transport names, IPv4 or IPv6, for any number of controllers. Every \
            message goes through the protocol's host model for its controller (source address \
            and port): its threshold and window, each decision logged and, when the protocol \
            has a reply, answered with exactly one (`kinetrace protocol show NAME` says what \
            the protocol's host does). Invalid datagrams are \
            dropped silently and the host keeps serving. Prints "listening on ADDRESS:PORT" \
            once bound (use --port 0 for any free port) and a summary on SIGINT or SIGTERM.

            With --transport ws the host is a WebSocket server (RFC 6455) at --path, and with \
            wss the same over TLS: --certificate and --private-key name its PEM files, or else \
            it serves a self-signed certificate for localhost and this machine, made on first \
            use and kept in $XDG_DATA_HOME/kinetrace/tls (~/.local/share/kinetrace/tls), \
            which controllers trust with --cacert. Each controller is one connection opened by \
            an HTTP upgrade, and each WebSocket message \
            is one of the protocol's messages (a byte-stream protocol's stream is the messages \
            in order). Frames must be masked and carry no extension bits; a frame or message \
            over 64 KiB, a message in more than 64 fragments or an upgrade head over 8 KiB ends \
            the connection (close code 1009, or HTTP 400 for the head), a request for another path gets 404, \
            and every close is recorded as a "websocket_close" event with its code.

            On TCP and WebSocket each controller is one connection, and a byte-stream protocol's \
            connections are each framed on their own whatever their reads return; invalid records \
            are not applied and the connection stays open. A connection that delivers no whole \
            record for --connection-timeout is closed, and at --max-connections a new \
            connection closes the least recently active one (one that has sent no record yet \
            first), so idle or trickling connections cannot lock a streaming phone out. With \
            --trace every read is recorded as it came, and every decision that has no reply \
            on the wire (a jump shown only on screen, an attitude applied) as a "decision" event.

            With --stdio the host has no socket: it reads controller messages as stdio adapter \
            records on standard input and writes its replies as records on standard output \
            (specs/stdio-adapter-v1.md), as `kinetrace replay --exec` expects, and exits with \
            a summary on standard error at the end of its input. Decisions that have no reply \
            on the wire are written as observation records; --observe writes one for every \
            decision.
            """)

    @Option(help: ArgumentHelp("The address to bind: 127.0.0.1, ::1, 0.0.0.0 or ::.", valueName: "address"))
    var bind = "127.0.0.1"

    @Option(help: ArgumentHelp("The port to listen on (default: the protocol's, \(ProtocolRegistry.defaultProtocol.defaultPort) for \(ProtocolRegistry.defaultID)); 0 picks a free one.", valueName: "port"))
    var port: Int?

    @OptionGroup var wire: ProtocolOptions
    @OptionGroup var ruleOptions: GestureRuleOptions

    @Option(name: .customLong("transport"), help: ArgumentHelp(
        "The transport to serve: \(Transports.all.map(\.scheme).dropLast().joined(separator: ", ")) or \(Transports.all.last!.scheme) (default: the protocol's own, UDP for datagrams and TCP for a byte stream).",
        valueName: "name"))
    var transportName: String?

    @Option(help: ArgumentHelp("With --transport ws or wss, the URL path to serve (ws://HOST:PORT/PATH).", valueName: "path"))
    var path: String?

    @OptionGroup var tlsServer: TLSServerOptions

    @Option(help: ArgumentHelp("Record what the host received and sent, and its decisions, to this trace file.", valueName: "file"), completion: .file())
    var trace: String?

    @Option(name: .customLong("max-controllers"), help: ArgumentHelp(
        "Controllers held at once; beyond, the least recently heard is forgotten.", valueName: "n"))
    var maximumControllers = HostCore<Int>.defaultMaximumControllers

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp(
        "Forget a controller not heard from for this many seconds; 0 never forgets.", valueName: "seconds"))
    var idleTimeoutS = Double(HostCore<Int>.defaultIdleTimeoutNs) / 1e9

    @Option(name: .customLong("max-connections"), help: ArgumentHelp(
        "TCP and WebSocket hosts: connections open at once; at the limit a new one closes the least recently active.", valueName: "n"))
    var maximumConnections = 1024

    @Option(name: .customLong("connection-timeout"), help: ArgumentHelp(
        "TCP and WebSocket hosts: close a connection that delivers no whole record for this many seconds (a WebSocket handshake included); 0 never closes.", valueName: "seconds"))
    var connectionTimeoutS = Double(ReferenceHost.Configuration.defaultConnectionTimeoutNs) / 1e9

    @OptionGroup var summaryFormat: SummaryFormatOptions

    @Flag(name: .shortAndLong, help: "Log every decision (a trigger, a jump) to standard error.")
    var verbose = false

    @Flag(name: .customLong("immediate-mode"), help: ArgumentHelp(
        "Handle every datagram as it arrives, even under load (as tcpdump's --immediate-mode).",
        discussion: "By default a UDP host that finds four or more datagrams waiting reads again 100 µs later instead of being woken for each one, which costs a sender on the same machine far less; this adds up to 100 µs to a reply's latency, and only under load."))
    var immediateMode = false

    @Flag(help: "Serve the stdio adapter framing on standard input and output instead of a UDP socket.")
    var stdio = false

    @Flag(help: "With --stdio, also report decisions that have a reply on the observation channel.")
    var observe = false

    @Option(name: .customLong("fault"), help: ArgumentHelp(
        "With --stdio, be a wrong host on purpose, to show that a conformance suite fails it: \(HostFault.names.joined(separator: ", ")). Repeatable.",
        valueName: "fault"))
    var faultNames: [String] = []

    func validate() throws {
        if stdio, transportName != nil { throw ValidationError("--transport names a network transport; --stdio serves standard input and output instead.") }
        let served = stdio ? nil : try servedTransport()
        if let path {
            guard served?.takesPath ?? false else { throw ValidationError("--path applies to a WebSocket host (--transport ws or wss).") }
            guard path.hasPrefix("/"), path.utf8.count <= TransportTarget.maximumPathBytes,
                  path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "?" }) else {
                throw ValidationError("--path must start with /, be printable ASCII with no spaces or ?, and have at most \(TransportTarget.maximumPathBytes) bytes.")
            }
        }
        try tlsServer.validate(secure: served?.isSecure ?? false)
        guard (1...16_777_216).contains(maximumControllers) else { throw ValidationError("--max-controllers must be from 1 to 16777216.") }
        // Under a millisecond rounds to no timeout at all in ns, which the controller table refuses.
        guard idleTimeoutS.isFinite, idleTimeoutS == 0 || (0.001...86_400).contains(idleTimeoutS) else {
            throw ValidationError("--idle-timeout must be 0 (never) or from 0.001 to 86400 seconds.")
        }
        guard (1...1_048_576).contains(maximumConnections) else { throw ValidationError("--max-connections must be from 1 to 1048576.") }
        guard connectionTimeoutS.isFinite, connectionTimeoutS == 0 || (0.001...86_400).contains(connectionTimeoutS) else {
            throw ValidationError("--connection-timeout must be 0 (never) or from 0.001 to 86400 seconds.")
        }
        if let port { guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") } }
        if observe && !stdio { throw ValidationError("--observe applies only with --stdio.") }
        if !faultNames.isEmpty && !stdio { throw ValidationError("--fault applies only with --stdio.") }
        for name in faultNames where HostFault(name) == nil {
            throw ValidationError("--fault \(name): expected one of \(HostFault.names.joined(separator: ", ")) (late up to 10000 ms).")
        }
        let connected = stdio ? false : try servedTransport().hasConnections
        if immediateMode && (stdio || connected) {
            throw ValidationError("--immediate-mode applies to a UDP host: not with --stdio or a connection-oriented transport.")
        }
        if stdio && trace != nil { throw ValidationError("--trace records a UDP host; with --stdio, record on the replay side (kinetrace replay --record).") }
    }

    func run() throws {
        if stdio { return try runStdio() }
        var logger = Logger(label: "kinetrace.host") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .info : .warning
        var configuration = ReferenceHost.Configuration(wireProtocol: wire.wireProtocol)
        configuration.bindHost = bind
        configuration.port = port
        configuration.rule = ruleOptions.rule(for: wire.wireProtocol)
        configuration.tracePath = trace
        configuration.transport = try servedTransport()
        if let path { configuration.path = path }
        if configuration.servedTransport.isSecure {
            do { configuration.tlsIdentity = try tlsServer.identity(note: printNote) } catch let error as ValidationError {
                printError(error.message)
                throw ExitStatus.unavailable
            }
        }
        configuration.maximumControllers = maximumControllers
        configuration.idleTimeoutNs = idleTimeoutS == 0 ? nil : Int64(idleTimeoutS * 1e9)
        if immediateMode { configuration.readBatchIntervalNs = nil }
        configuration.maximumConnections = maximumConnections
        configuration.connectionTimeoutNs = connectionTimeoutS == 0 ? nil : Int64(connectionTimeoutS * 1e9)
        if configuration.servedTransport.hasConnections {
            let (allowed, descriptors) = ServingStartup.connectionsWithinDescriptorLimit(maximumConnections)
            if allowed < maximumConnections {
                configuration.maximumConnections = allowed
                printWarning("the open-file limit is \(descriptors): serving at most \(allowed) connections, not \(maximumConnections) (raise ulimit -n)")
            }
        }
        let host = try ServingStartup.starting("listen on", Endpoint(host: bind, port: UInt16(configuration.boundPort))) {
            try ReferenceHost(configuration: configuration, logger: logger)
        }
        printNow("listening on \(Endpoint(host.localAddress))")
        let done = DispatchSemaphore(value: 0)
        let signals = onTermination { _ in done.signal() }
        done.wait()
        _ = signals
        let stats: HostStatistics
        do {
            stats = try host.shutdown()
        } catch let error as TraceError {
            printError(error.description)
            throw ExitStatus.forTraceError(error)
        }
        printSummary(stats, toStandardError: false)
    }

    /// The transport `--transport` names, or the protocol's own.
    private func servedTransport() throws -> any Transport {
        guard let transportName else { return Transports.native(for: wire.wireProtocol) }
        guard let transport = Transports.named(transportName) else {
            throw ValidationError("--transport must be one of \(Transports.all.map(\.scheme).joined(separator: ", ")), not \(transportName).")
        }
        if let problem = transport.problem(carrying: wire.wireProtocol) { throw ValidationError("--transport \(problem)") }
        return transport
    }

    private func runStdio() throws {
        var host = StdioHost(wireProtocol: wire.wireProtocol)
        host.rule = ruleOptions.rule(for: wire.wireProtocol)
        host.observeAll = observe
        host.faults = Set(faultNames.compactMap(HostFault.init))
        host.maximumControllers = maximumControllers
        let stats: HostStatistics
        do throws(StdioHostError) {
            stats = try host.run()
        } catch {
            printError(error.description)
            throw ExitStatus.protocolFailure  // SA-ERROR-3
        }
        // Standard output carries the framing, so the summary goes to standard error.
        printSummary(stats, toStandardError: true)
    }

    private func printSummary(_ stats: HostStatistics, toStandardError: Bool) {
        let emit: (String) -> Void = toStandardError ? { writeStandardError($0 + "\n") } : { printNow($0) }
        switch summaryFormat.format {
        case .text:
            let invalid = stats.invalidByReason.keys.sorted().map { "\($0) \(stats.invalidByReason[$0]!)" }.joined(separator: ", ")
            if (try? servedTransport())?.hasConnections ?? false {
                emit("received \(stats.datagrams) records on \(stats.connections) connection(s): \(stats.validFrames) valid"
                         + ", invalid: \(invalid.isEmpty ? "none" : invalid); \(stats.triggers) decisions; "
                         + "\(stats.closedMidRecord) closed inside a record, \(stats.framingErrors) unframeable; closed \(stats.connectionsTimedOut) idle, "
                         + "\(stats.connectionsDisplaced) to admit new ones at the limit, \(stats.connectionsUnnamed) unnamed")
                return
            }
            let forgotten = stats.forgottenIdle + stats.forgottenOverCapacity == 0 ? ""
                : "; forgot \(stats.forgottenIdle) idle controller(s) and \(stats.forgottenOverCapacity) over the maximum"
            let paced = stats.deferredReads == 0 ? "" : "; under load, \(stats.deferredReads) reads put off by 100 µs"
            // Only the words the protocol has: stale samples need a sender clock, replies a replying host.
            let carriesClock = wire.wireProtocol.samplesCarrySenderClock, replies = wire.wireProtocol.hostReplies
            emit("received \(stats.datagrams) datagrams from \(stats.controllers) controller(s): \(stats.validFrames) valid"
                     + (carriesClock ? " frames (\(stats.staleFrames) stale)" : "") + ", invalid: \(invalid.isEmpty ? "none" : invalid); "
                     + (replies ? "\(stats.triggers) triggers, \(stats.repliesSent) replies sent" : "\(stats.triggers) decisions, no replies in \(wire.wireProtocol.id)")
                     + forgotten + paced)
        case .json:
            var members: [String: JSONValue] = [
                "datagrams": .integer(Int64(stats.datagrams)), "valid_frames": .integer(Int64(stats.validFrames)),
                "stale_frames": .integer(Int64(stats.staleFrames)), "controllers": .integer(Int64(stats.controllers)),
                "invalid_by_reason": .object(stats.invalidByReason.mapValues { .integer(Int64($0)) }),
                "triggers": .integer(Int64(stats.triggers)), "replies_sent": .integer(Int64(stats.repliesSent)),
                "forgotten_idle": .integer(Int64(stats.forgottenIdle)), "forgotten_over_maximum": .integer(Int64(stats.forgottenOverCapacity)),
            ]
            if (try? servedTransport())?.hasConnections ?? false {
                members["connections"] = .integer(Int64(stats.connections))
                members["connections_displaced"] = .integer(Int64(stats.connectionsDisplaced))
                members["connections_timed_out"] = .integer(Int64(stats.connectionsTimedOut))
                members["connections_unnamed"] = .integer(Int64(stats.connectionsUnnamed))
                members["closed_mid_record"] = .integer(Int64(stats.closedMidRecord))
                members["framing_errors"] = .integer(Int64(stats.framingErrors))
            } else if !stdio {
                members["deferred_reads"] = .integer(Int64(stats.deferredReads))
            }
            emit(JSONValue.object(members).jsonText)
        }
    }
}
