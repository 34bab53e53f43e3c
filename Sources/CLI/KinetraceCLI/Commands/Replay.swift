import ArgumentParser
import Foundation
import KinetraceSupport
import KinetraceJSON
import KinetraceAnalysis
import KinetraceImpairment
import KinetraceReplay
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging

/// `kinetrace replay`: sends a recorded session to a host again, with its
/// original timing or faster, fanned out and impaired on purpose.
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay recorded controller traffic to a host, with its original timing, seeded impairments and fan-out.",
        discussion: """
            Sends the controller→host messages of each INPUT (a trace, a pcap or a pcapng) to a \
            host: over a transport with --to, one socket per controller, or to a command run with --exec \
            behind the stdio adapter (specs/stdio-adapter-v1.md). Message i leaves at \
            anchor + (t_i − t_0) / speed on the monotonic clock, against absolute deadlines; \
            every send time is logged and the lateness reported.

            Impairments come from --network (a bundled name: lab-5ghz, crowded-event, perfect, \
            harsh; or a JSON file, see specs/networks/README.md) and from flags, which override \
            the network. Every random choice is drawn from --seed: the same seed, input and \
            options give the same schedule, byte for byte, and --record writes every decision as \
            an event, so a failing run can be reproduced exactly.

            Replies are matched to samples by the stamp they echo and compared with the replies \
            the protocol's host model predicts for what was actually sent (one reply per \
            decision that owes one). A replay never hangs: --timeout \
            bounds it.

            --format junit writes one testcase per controller, failed when its replies differ \
            from the prediction (missing or unexpected ones, what --strict exits 1 on; without \
            --strict the report still shows them and the exit status stays 0). For a protocol \
            whose host sends no replies the controllers are skipped, since there is nothing to \
            compare. A replay that stops early adds an error testcase saying why and skips the \
            controllers; a harness error before it starts (an input that is missing or not \
            valid) writes a report whose one testcase is the error. Either way the exit status \
            is the one below.

            Several processes or machines share one replay with --shard K/N: each sends the \
            controllers whose number mod N is K−1, and all of them plan the whole replay, so \
            together they send what one process would, draw for draw (see \
            docs/sharded-replay.md). --start-at starts them on one agreed wall-clock instant; \
            clock error between machines adds to every send's timing error. \
            `kinetrace merge` joins their records.

            Exit status: 0 done; 1 replies differ from the prediction (--strict only); \
            64 usage; 65 bad input or network; 66 an input is missing; 69 the host is unreachable \
            or died; 73 the record cannot be created; 75 timed out; 76 the host never answered, \
            broke the stdio framing, or flooded the replay with replies nobody asked for (more than \
            10,000 plus 10 per message); 130 interrupted.
            """)

    @Argument(help: ArgumentHelp("The recordings to replay: traces, pcaps or pcapngs.", valueName: "input"), completion: .file())
    var inputs: [String]

    @Option(help: ArgumentHelp("Send to the host at udp://HOST:PORT, tcp://HOST:PORT, ws://HOST:PORT/PATH or wss://HOST:PORT/PATH (WebSocket, one message per message); a bare HOST:PORT is on the protocol's own transport, UDP, or TCP for a byte-stream protocol (one connection per controller).", valueName: "host:port"))
    var to: String?

    @Option(help: ArgumentHelp("Run this command (with /bin/sh -c) as the host and feed it through the stdio adapter.", valueName: "command"))
    var exec: String?

    @OptionGroup var input: CaptureInputOptions

    // Timing, with tcpreplay's spellings
    @Option(name: [.customShort("x"), .customLong("multiplier"), .customLong("speed")], help: ArgumentHelp(
        "Play this many times faster than recorded, as tcpreplay's -x (0.5 is half speed; --speed is the older name).", valueName: "x"))
    var speed: Double = 1

    @Flag(name: [.customShort("t"), .customLong("topspeed")], help: "Send back to back, in order, as fast as the sockets take them (tcpreplay's -t).")
    var topspeed = false

    @Option(help: ArgumentHelp("original: keep the recorded spacing (divided by -x); fast: the same as -t.", valueName: "mode"))
    var timing: ReplayOptions.Timing?

    @Option(name: [.customShort("p"), .customLong("pps")], help: ArgumentHelp(
        "Send this many messages a second, in recorded order, ignoring the recorded spacing (tcpreplay's -p); impairments still apply.",
        valueName: "rate"))
    var pps: Double?

    @Option(name: [.customShort("l"), .customLong("loop")], help: ArgumentHelp(
        "Play the input this many times, each pass starting where the last ended; 0 plays until interrupted, --duration or -L ends it (as tcpreplay's --loop 0; at most 30 days).",
        valueName: "n"))
    var loops = 1

    @Option(name: [.customShort("L"), .customLong("limit")], help: ArgumentHelp("Stop after sending this many messages (tcpreplay's -L).", valueName: "n"))
    var limit: Int?

    @Option(name: .customLong("duration"), help: ArgumentHelp("Stop sending this many seconds after the start (tcpreplay's --duration); replies still settle.", valueName: "seconds"))
    var duration: Double?

    @Option(help: ArgumentHelp("Skip messages before this many seconds after each input's first controller→host message; an MCAP trace (.mcap) seeks there through its index.", valueName: "seconds"))
    var start: Double = 0

    @Option(help: ArgumentHelp("Stop at this many seconds after each input's first controller→host message.", valueName: "seconds"))
    var end: Double?

    // Controllers
    @Option(help: ArgumentHelp("Replay as this many controllers; more than the input has fans it out (default: as recorded, or the network's).", valueName: "n"))
    var controllers: Int?

    @Option(name: .customLong("stagger-ms"), help: ArgumentHelp("Fanned-out copies start at a seeded offset below this many ms (default: 100, or the network's).", valueName: "ms"))
    var staggerMs: Double?

    @Option(help: ArgumentHelp("A byte-stream protocol's writes: recorded (as the trace's chunks), record (one per record), random (seeded cuts), or byte (one byte each).", valueName: "mode"))
    var segmentation: Segmentation = .recorded

    @Option(help: ArgumentHelp("Frame timestamps: shift (keep them rising across passes and copies), original, or wallclock.", valueName: "mode"))
    var timestamps: ReplayOptions.Timestamps = .shift

    // Impairments
    @Option(help: ArgumentHelp("The network to replay through: a bundled name (\(BundledNetworks.json.keys.sorted().joined(separator: ", "))) or a network JSON file.",
                               valueName: "name|file"), completion: .custom { _, _, _ in Replay.networkCompletions() })
    var network: String?

    /// `--profile`, the name of `--network` until networks were called networks.
    @Option(name: .customLong("profile"), help: .hidden)
    var legacyProfile: String?

    @Option(help: ArgumentHelp("Seed for every random choice (impairments, fan-out offsets).", valueName: "n"))
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Extra one-way delay: MS, uniform:MIN:MAX, normal:MEAN:SD[:MIN:MAX], pareto:SCALE:SHAPE, or empirical:TRACE (half of each round trip in TRACE).", valueName: "spec"))
    var delay: String?

    @Option(help: ArgumentHelp("keep: a message never overtakes the one before it; jitter: delays may reorder, as netem's do (default: keep, or the network's).", valueName: "policy"))
    var order: OrderPolicy?

    @Option(help: ArgumentHelp("Loss: P or P% (independent), or gemodel:p:r:1-h:1-k (Gilbert–Elliott, netem's meaning).", valueName: "spec"))
    var loss: String?

    @Option(help: ArgumentHelp("Probability that a message is sent twice.", valueName: "p"))
    var duplicate: String?

    @Option(help: ArgumentHelp("Probability that a message is held back behind its controller's next one.", valueName: "p"))
    var reorder: String?

    @Option(help: ArgumentHelp("Probability that a message has bits flipped (its checksum then fails).", valueName: "p"))
    var corrupt: String?

    @Option(name: .customLong("corrupt-bits"), help: ArgumentHelp("Bits flipped in a corrupted message.", valueName: "n"))
    var corruptBits: Int?

    @Option(help: ArgumentHelp("Probability that a message is cut to a random shorter length.", valueName: "p"))
    var truncate: String?

    @Option(help: ArgumentHelp("Link-rate limit, RATE[@SECONDS] (e.g. 1mbit, then 64kbit@20); repeat for changes over time.", valueName: "rate"))
    var rate: [String] = []

    // The rule the replies are predicted with
    @OptionGroup var ruleOptions: GestureRuleOptions

    // Running
    @Option(help: ArgumentHelp("Record everything sent, impaired and received to this trace.", valueName: "file"), completion: .file())
    var record: String?

    @Option(help: ArgumentHelp("Give up after this many seconds (default: the planned duration plus 10 s and 10 %).", valueName: "seconds"))
    var timeout: Double?

    @Option(name: .customLong("settle-ms"), help: ArgumentHelp("Wait up to this long for outstanding replies after the last message.", valueName: "ms"))
    var settleMs: Int64 = 500

    @Option(name: .customLong("spin-us"), help: ArgumentHelp("Spin at least this many µs before each deadline instead of sleeping (after long gaps, up to 2 % of the gap, at most 2 ms); 0 only sleeps.", valueName: "µs"))
    var spinUs: Int64 = 200

    @Flag(help: "Ask for real-time (SCHED_FIFO) priority for the sending thread; needs privilege, and is skipped without it.")
    var realtime = false

    @Flag(name: .customLong("dry-run"), help: "Plan the replay and report it without sending anything.")
    var dryRun = false

    @Flag(name: [.customShort("q"), .customLong("quiet")], help: "Print no progress and no text summary, only errors (tcpreplay's -q); --format json or junit still writes its report.")
    var quiet = false

    @Option(name: .customLong("stats"), help: ArgumentHelp("Print a line of statistics to standard error every this many seconds while sending (tcpreplay's --stats).", valueName: "seconds"))
    var statsInterval: Int?

    @Flag(help: "Exit 1 when the replies differ from the gesture rule's prediction.")
    var strict = false

    // Spreading one replay over several processes or machines
    @Option(help: ArgumentHelp(
        "Send only share K of N (1-based): the controllers whose number mod N is K−1, the same share for every seed. auto reads K from JOB_COMPLETION_INDEX (Kubernetes), SLURM_ARRAY_TASK_ID (Slurm) or PARALLEL_SEQ (GNU parallel), and N from auto/N or SLURM_ARRAY_TASK_COUNT.",
        valueName: "k/n|auto[/n]"))
    var shard: String?

    @Option(name: .customLong("start-at"), help: ArgumentHelp(
        "Start on this wall-clock instant, RFC 3339 (2026-11-25T20:00:00Z) or +SECONDS from now, so that shards on several machines start together.",
        valueName: "time"))
    var startAt: String?

    @OptionGroup var tls: TLSClientOptions
    @OptionGroup var report: ReportOptions<ReplayFormat>

    enum ReplayFormat: String, ReportFormat {
        case text, json, junit
        static var defaultFormat: ReplayFormat { .text }
        static var formatHelp: String { "text for people, json for machines, junit for CI (one testcase per controller)" }
    }

    enum OrderPolicy: String, ExpressibleByArgument, CaseIterable { case keep, jitter }

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("Give at least one input to replay.") }
        if !dryRun {
            guard (to == nil) != (exec == nil) else { throw ValidationError("Give exactly one of --to HOST:PORT and --exec COMMAND.") }
        }
        var secure = false
        if let to { do { secure = try TransportTarget.parse(to, fallback: Transports.udp).transport.isSecure } catch { throw ValidationError("--to \(error.description)") } }
        try tls.validate(secure: secure, flag: to == nil ? "--exec" : "--to")
        guard speed.isFinite, speed > 0 else { throw ValidationError("--speed must be a positive number.") }
        guard loops >= 0 else { throw ValidationError("--loop must be at least 0 (0: until interrupted).") }
        if loops == 0 && dryRun && limit == nil && duration == nil {
            throw ValidationError("--loop 0 --dry-run would plan 30 days of sends: bound it with --duration or -L.")
        }
        if topspeed && timing == .original {
            throw ValidationError("-t sends back to back and --timing original keeps the spacing: give one.")
        }
        if let pps { guard pps.isFinite, pps > 0, pps <= 10_000_000 else { throw ValidationError("-p must be a rate above 0, at most 10000000 a second.") } }
        if pps != nil && (topspeed || timing == .fast) { throw ValidationError("-p sets a rate and -t sends at once: give one.") }
        if pps != nil && speed != 1 { throw ValidationError("-p sets the rate itself: -x has nothing to scale.") }
        if let limit { guard limit >= 1 else { throw ValidationError("-L must be at least 1.") } }
        if let duration { guard duration.isFinite, duration > 0, duration <= 1e9 else { throw ValidationError("--duration must be a positive number of seconds, at most 1000000000.") } }
        if let statsInterval { guard (1...86_400).contains(statsInterval) else { throw ValidationError("--stats must be from 1 to 86400 seconds.") } }
        // A billion seconds (31 years) is past any trace's span and keeps the offsets in Int64 ns.
        guard start.isFinite, start >= 0, start <= 1e9 else { throw ValidationError("--start must be a number of seconds from 0 to 1000000000.") }
        if let end { guard end.isFinite, end > start, end <= 1e9 else { throw ValidationError("--end must come after --start, at most 1000000000 s.") } }
        if let controllers { guard (1...65_536).contains(controllers) else { throw ValidationError("--controllers must be from 1 to 65536.") } }
        if let staggerMs {
            guard staggerMs.isFinite, staggerMs >= 0, staggerMs <= Double(ReplayOptions.maximumStaggerNs / 1_000_000) else {
                throw ValidationError("--stagger-ms must be from 0 to \(ReplayOptions.maximumStaggerNs / 1_000_000) (an hour).")
            }
        }
        if let timeout { guard timeout.isFinite, timeout > 0, timeout <= 1e9 else { throw ValidationError("--timeout must be a positive number of seconds, at most 1000000000.") } }
        guard (0...3_600_000).contains(settleMs) else { throw ValidationError("--settle-ms must be from 0 to 3600000 (an hour).") }
        guard (0...100_000).contains(spinUs) else { throw ValidationError("--spin-us must be between 0 and 100000.") }
        if network != nil && legacyProfile != nil { throw ValidationError("Give --network once (--profile is its old name).") }
        if let corruptBits { guard (1...64).contains(corruptBits) else { throw ValidationError("--corrupt-bits must be from 1 to 64.") } }
        if dryRun && report.format == .junit {
            throw ValidationError("--dry-run sends nothing, so there is nothing to judge: use --format text or json.")
        }
        _ = try resolvedShard()
        if let startAt {
            guard Self.startInstant(startAt, nowNs: 0) != nil else {
                throw ValidationError("--start-at \(startAt): expected an RFC 3339 time from 1970 to 2116 (2026-11-25T20:00:00Z, or with an offset such as +01:00), or +SECONDS (at most 86400).")
            }
            if dryRun { throw ValidationError("--dry-run sends nothing, so it has nothing to start: drop --start-at.") }
        }
    }

    private func resolvedShard() throws -> ReplayShard {
        guard let shard else { return .whole }
        switch ReplayShard.parse(shard, environment: ProcessInfo.processInfo.environment) {
        case .success(let value): return value
        case .failure(let error): throw ValidationError("--shard \(error.description)")
        }
    }

    /// The start instant in CLOCK_REALTIME ns: RFC 3339, or `+SECONDS` after `nowNs` (up to a day).
    static func startInstant(_ text: String, nowNs: Int64) -> Int64? {
        if text.hasPrefix("+") {
            guard let seconds = Double(text.dropFirst()), seconds.isFinite, seconds >= 0, seconds <= 86_400 else { return nil }
            return nowNs + Int64(seconds * 1e9)
        }
        return RFC3339.nanoseconds(from: text)
    }

    func run() throws {
        let junit = JUnitErrorGuard(command: "kinetrace replay", enabled: report.format == .junit, path: report.out)
        try junit.run { try replay(junit) }
    }

    private func replay(_ junit: JUnitErrorGuard) throws {
        var options = ReplayOptions()
        options.timing = topspeed ? .fast : timing ?? .original
        options.speed = speed
        options.loops = loops
        options.packetsPerSecond = pps
        options.sendLimit = limit
        options.durationLimitNs = duration.map { Int64($0 * 1e9) }
        // The inputs are cut as they are read (an MCAP trace seeks through its index), so the schedule takes them whole.
        let window = start > 0 || end != nil
            ? TraceWindow(startNs: Int64(start * 1e9), endNs: end.map { Int64($0 * 1e9) }, anchor: .firstControllerMessage) : nil
        options.timestamps = timestamps
        options.seed = seed
        options.impairments.allowReordering = false
        options.segmentation = segmentation
        options.shard = try resolvedShard()
        var recordExtra: [String: JSONValue] = ["command": .string(CommandLine.arguments.dropFirst().joined(separator: " "))]
        if legacyProfile != nil { printWarning("--profile is now --network; the old name goes away in the next minor version") }
        var loadedNetwork: ReplayNetwork?
        if let name = network ?? legacyProfile {
            let loaded = try loadNetwork(name)
            loadedNetwork = loaded
            options.impairments = loaded.impairments
            options.controllers = loaded.controllers
            if let stagger = loaded.staggerNs { options.staggerNs = stagger }
            recordExtra["network"] = .string(loaded.name)
        }
        try applyFlags(to: &options)
        if let problem = options.problem { throw ValidationError(problem) }
        // Said wherever the figures are used: what was replayed, on whose clock, through what network.
        let provenance = ReplayProvenance(source: inputs.joined(separator: ", "), timestamps: options.timestamps.rawValue,
                                          network: loadedNetwork?.name, basis: loadedNetwork?.basis, provenance: loadedNetwork?.provenance)
        recordExtra[ReplayProvenance.headerKey] = provenance.json

        var replayInput: ReplayInput = try reportingFailures { () throws(TraceError) in
            var readable: [String] = []
            for path in inputs { readable.append(try InputSpool.readablePath(path)) }
            return try ReplayInput.load(paths: readable, wireProtocol: input.wire.given, port: input.port, window: window)
        }
        for note in replayInput.readingNotes { printNote(note) }
        options.rule = ruleOptions.rule(for: replayInput.wireProtocol)
        for (path, truncation) in replayInput.truncations.sorted(by: { $0.key < $1.key }) {
            printWarning("\(path): \(truncation.description); replaying what precedes it")
        }
        var target: LinkTarget?
        if let to {
            let network: TransportTarget
            do { network = try TransportTarget.parse(to, fallback: Transports.native(for: replayInput.wireProtocol)) } catch { throw ValidationError("--to \(error.description)") }
            if let problem = network.transport.problem(carrying: replayInput.wireProtocol) { throw ValidationError("--to \(problem)") }
            target = .network(network)
        } else if let exec {
            target = .exec(exec)
        }
        // A dry run may have no target: it plans for the protocol's own transport.
        let carrier = target.map { Replayer.repairingCarrier($0, replayInput.wireProtocol) }
            ?? Replayer.repairingCarrier(Transports.native(for: replayInput.wireProtocol))
        if let problem = options.problem(repairingCarrier: carrier) ?? options.problem(planning: replayInput) {
            printError(problem)
            throw ExitCode.validationFailure
        }
        if replayInput.wireProtocol.transport == .byteStream {
            // Cut here, so a dry run plans the writes the replay makes.
            options.impairments.allowReordering = false
            do throws(WireError) { replayInput = try replayInput.segmented(segmentation, seed: seed) } catch {
                printError("--segmentation record: the stream cannot be framed: byte \(error.offset): expected \(error.expected)")
                throw ExitStatus.dataError
            }
        }
        if dryRun {
            let (lines, shareIsEmpty) = plan(input: replayInput, options: options, provenance: provenance)
            try emit(lines)
            if shareIsEmpty { try refuseEmptyShare(options.shard, controllers: options.controllers ?? replayInput.controllers.count) }
            return
        }

        var configuration = Replayer.Configuration(target: target!, input: replayInput)  // set unless --dry-run, which returned above
        configuration.options = options
        configuration.connectionOptions.tlsTrust = try tls.trust()
        configuration.recordPath = record
        configuration.recordExtra = recordExtra
        configuration.settleMs = settleMs
        configuration.timeoutNs = timeout.map { Int64($0 * 1e9) }
        configuration.spinNs = spinUs * 1000
        configuration.realtime = realtime
        configuration.startAtWallNs = startAt.flatMap { Self.startInstant($0, nowNs: SystemClock.realtimeNs()) }
        if let instant = configuration.startAtWallNs, !quiet {
            let ahead = Double(instant - SystemClock.realtimeNs()) / 1e9
            printNote("starting at \(RFC3339.string(fromNanoseconds: instant)), in \(String(format: "%.1f", ahead)) s")
        }
        // The progress line goes to standard error, so that is the terminal it needs.
        let showProgress = stderrIsTerminal && !quiet && statsInterval == nil
        if showProgress {
            configuration.progress = { p in
                let total = p.plannedNs > 0 ? String(format: " of %.1f s", Double(p.plannedNs) / 1e9) : ""
                writeStandardError(String(format: "\rreplay: %.1f s%@, %d sent, %d of %d replies…", Double(p.elapsedNs) / 1e9, total, p.sent, p.replies, p.predicted))
            }
        } else if let statsInterval {
            let printer = PeriodicStats(intervalNs: Int64(statsInterval) * 1_000_000_000)
            configuration.progress = { p in printer.update(p) }
        }
        // The report says what went wrong; the library's log is for embedders.
        let replayer = Replayer(configuration: configuration, logger: Logger(label: "kinetrace.replay") { _ in SwiftLogNoOpLogHandler() })
        let signals = onTermination { _ in replayer.stop() }
        defer { _ = signals }
        let report: ReplayReport
        do throws(ReplayError) {
            report = try replayer.run()
        } catch {
            if showProgress { writeStandardError("\r\u{1B}[K") }
            printError(error.description)
            if let trace = error.trace { throw ExitStatus.forTraceError(trace) }
            throw error.code == .badOptions || error.code == .startPassed ? ExitCode.validationFailure : ExitStatus.dataError
        }
        if showProgress { writeStandardError("\r\u{1B}[K") }
        let wireProtocol = replayInput.wireProtocol
        if self.report.format == .junit {
            let networkName: String? = if case .string(let name) = recordExtra["network"] { name } else { nil }
            try junit.write(JUnitRendering.replay(report, inputs: inputs, protocolName: wireProtocol.id.name, replies: wireProtocol.hostReplies,
                                                  strict: strict, network: networkName, startedEpochNs: junit.startedEpochNs))
        } else if !(quiet && self.report.format == .text) {
            try emit(render(report, options: options, replies: wireProtocol.hostReplies, protocolName: wireProtocol.id.name, provenance: provenance))
        }
        if let detail = report.detail, report.outcome != .completed { printError(detail) }
        // Never green on nothing: a shard whose controllers had nothing planned sent nothing.
        if report.outcome == .completed && report.shard != .whole && report.scheduled == 0 && (report.impaired["lost"] ?? 0) == 0 {
            try refuseEmptyShare(report.shard, controllers: report.plannedControllers)
        }
        switch report.outcome {
        case .completed:
            if strict && !report.repliesAsPredicted {
                printError("the replies differ from the gesture rule's prediction: \(report.repliesMissing) missing, \(report.repliesUnexpected) unexpected")
                throw ExitCode.failure
            }
        case .unreachable, .hostDied: throw ExitStatus.unavailable
        case .silent, .protocolError, .flooded: throw ExitStatus.protocolFailure
        case .timedOut: throw ExitStatus.timedOut
        case .interrupted: throw ExitStatus.interrupted
        }
    }

    // MARK: Options

    /// For shell completion: the bundled networks' names, then the JSON files in the current directory.
    static func networkCompletions() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: ".")) ?? []
        return BundledNetworks.json.keys.sorted() + files.filter { $0.hasSuffix(".json") }.sorted()
    }

    private func loadNetwork(_ nameOrPath: String) throws -> ReplayNetwork {
        let bytes: [UInt8]
        let source: String
        if let bundled = BundledNetworks.json[nameOrPath] {
            bytes = Array(bundled.utf8)
            source = "network \(nameOrPath)"
        } else if let data = FileManager.default.contents(atPath: nameOrPath) {
            bytes = Array(data)
            source = nameOrPath
        } else {
            printError("\(nameOrPath): no such network file, and not a bundled network (\(BundledNetworks.json.keys.sorted().joined(separator: ", ")))")
            throw ExitStatus.noInput
        }
        do throws(ReplayNetworkError) {
            return try ReplayNetwork.parse(bytes, source: source)
        } catch {
            printError(error.description)
            throw ExitStatus.dataError
        }
    }

    private func applyFlags(to options: inout ReplayOptions) throws {
        if let controllers { options.controllers = controllers }
        if let staggerMs { options.staggerNs = Int64(staggerMs * 1e6) }
        if let order { options.impairments.allowReordering = order == .jitter }
        if let delay {
            if delay.hasPrefix("empirical:") {
                let path = String(delay.dropFirst("empirical:".count))
                let samples = try reportingFailures { () throws(TraceError) in
                    try MeasuredDelays.oneWayMs(path: path, wireProtocol: input.wire.given, port: input.port)
                }
                guard let distribution = DelayDistribution.empirical(samplesMs: samples) else {
                    throw ValidationError("--delay \(delay): \(path) holds no measured round trips (rtt_ns) to draw delays from.")
                }
                // The delays come from the file's rtt_ns: out of range is the file's data, not the flag.
                if let problem = distribution.problem {
                    printError("\(path): rtt_ns: \(problem)")
                    throw ExitStatus.dataError
                }
                options.impairments.delay = distribution
            } else {
                options.impairments.delay = try parsed(ImpairmentSpec.delay(delay), "--delay")
            }
        }
        if let loss { options.impairments.loss = try parsed(ImpairmentSpec.loss(loss), "--loss") }
        func probability(_ text: String?, _ flag: String) throws -> Double? {
            guard let text else { return nil }
            guard let p = ImpairmentSpec.probability(text) else { throw ValidationError("\(flag) \(text): expected a probability from 0 to 1, or a percentage such as 5%.") }
            return p
        }
        if let p = try probability(duplicate, "--duplicate") { options.impairments.duplicate = p }
        if let p = try probability(reorder, "--reorder") { options.impairments.reorder = p }
        if let p = try probability(corrupt, "--corrupt") { options.impairments.corrupt = p }
        if let p = try probability(truncate, "--truncate") { options.impairments.truncate = p }
        if let corruptBits { options.impairments.corruptBits = corruptBits }
        if !rate.isEmpty {
            options.impairments.rate = try rate.map { try parsed(ImpairmentSpec.rate($0), "--rate") }.sorted { $0.fromNs < $1.fromNs }
        }
    }

    private func parsed<T>(_ result: Result<T, SpecError>, _ flag: String) throws -> T {
        switch result {
        case .success(let value): return value
        case .failure(let error): throw ValidationError("\(flag) \(error.description)")
        }
    }

    // MARK: Dry run

    private func refuseEmptyShare(_ shard: ReplayShard, controllers: Int) throws -> Never {
        printError("shard \(shard) had nothing to send: none of its \(shard.controllers(of: controllers)) controller(s) has a message in the selected range")
        throw ExitStatus.dataError
    }

    /// The plan's report, and whether the shard asked for has nothing to send (nor lose).
    private func plan(input: ReplayInput, options: ReplayOptions, provenance: ReplayProvenance) -> (lines: [String], shareIsEmpty: Bool) {
        var lines: [String] = []
        var schedule = ReplaySchedule(input: input, options: options, anchorWallNs: SystemClock.realtimeNs())
        var digest = ScheduleDigest()
        var share = ShareDigest()
        var sends = 0, predicted = 0, lastDeadline: Int64 = 0
        var impaired: [String: Int] = [:]
        let shard = options.shard
        while let step = schedule.next() {
            // The whole plan's digest in every shard (the same draws as one process); the rest counts the share.
            digest.add(step)
            guard shard.contains(controller: step.controller) else { continue }
            share.add(step)
            switch step {
            case .send(let send):
                sends += 1
                if send.predictedTrigger { predicted += 1 }
                lastDeadline = send.deadlineNs
            case .impairment(let record):
                let d = record.decision
                for (name, applies) in [("lost", d.lost), ("delayed", d.delayNs != 0), ("duplicated", d.duplicates > 0),
                                        ("reordered", d.reordered), ("corrupted", !d.flippedBits.isEmpty), ("truncated", d.truncatedTo != nil)]
                where applies { impaired[name, default: 0] += 1 }
            }
        }
        switch self.report.format {
        case .text, .junit:  // validate() refuses junit for a dry run
            if let network = provenance.networkLine { lines.append(TerminalText.escaped(network)) }
            lines.append("plan: \(sends) message(s) from \(schedule.messages.count) input message(s) as \(schedule.controllerCount) controller(s) over \(SummaryRendering.ms(Double(lastDeadline) / 1e6, 1)) ms, seed \(options.seed)")
            if !impaired.isEmpty {
                lines.append("impaired: " + impaired.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            lines.append(input.wireProtocol.hostReplies ? "replies predicted by the gesture rule: \(predicted)" : "replies: none in \(input.wireProtocol.id.name)")
            lines.append("schedule digest: \(digest)")
            if self.shard != nil {
                lines.append("shard \(shard): \(shard.controllers(of: schedule.controllerCount)) of the \(schedule.controllerCount) controllers; share digest \(share) (the N shares' digests add up, mod 2^64, to --shard 1/1's)")
            }
        case .json:
            var plan: [String: JSONValue] = [
                "dry_run": .bool(true), "sends": .integer(Int64(sends)), "input_messages": .integer(Int64(schedule.messages.count)),
                "controllers": .integer(Int64(schedule.controllerCount)), "last_deadline_ns": .integer(lastDeadline),
                "impaired": .object(impaired.mapValues { .integer(Int64($0)) }), "replies_predicted": .integer(Int64(predicted)),
                "seed": .integer(Int64(bitPattern: options.seed)), "schedule_digest": .string(digest.description),
            ]
            if provenance.network != nil { plan["network"] = Self.networkJSON(provenance) }
            // Only when sharded: a plain dry run's report stays as it was (the byte-identity checks compare it).
            if self.shard != nil {
                plan["shard"] = .string(shard.description)
                plan["shard_controllers"] = .integer(Int64(shard.controllers(of: schedule.controllerCount)))
                plan["share_digest"] = .string(share.description)
            }
            lines.append(JSONValue.object(plan).jsonText)
        }
        return (lines, self.shard != nil && sends == 0 && impaired.isEmpty)
    }

    // MARK: Report

    /// The network and where its numbers come from, for the JSON reports.
    static func networkJSON(_ provenance: ReplayProvenance) -> JSONValue {
        .object(["name": provenance.network.map { .string($0) } ?? .null, "basis": provenance.basis.map { .string($0) } ?? .null,
                 "provenance": provenance.provenance.map { .string($0) } ?? .null])
    }

    private func render(_ report: ReplayReport, options: ReplayOptions, replies: Bool, protocolName: String,
                        provenance: ReplayProvenance) -> [String] {
        var lines: [String] = []
        func statsJSON(_ d: DurationStatistics, scale: Double) -> JSONValue {
            guard d.count > 0 else { return .object(["count": .integer(0)]) }
            return .object(["count": .integer(Int64(d.count)), "p50": .number(d.percentileMs(50)! * scale),
                            "p99": .number(d.percentileMs(99)! * scale), "max": .number(d.maxMs! * scale),
                            "mean": .number(d.meanMs! * scale)])
        }
        switch self.report.format {
        case .json:
            lines.append(JSONValue.object([
                "outcome": .string(report.outcome.rawValue), "detail": report.detail.map { .string($0) } ?? .null,
                "target": .string(report.target), "seed": .integer(Int64(bitPattern: report.seed)),
                "inputs": .array(inputs.map { .string($0) }), "elapsed_s": .number(Double(report.elapsedNs) / 1e9),
                "scheduled": .integer(Int64(report.scheduled)), "sent": .integer(Int64(report.sent)),
                "send_errors": .object(report.sendErrors.mapValues { .integer(Int64($0)) }),
                "impaired": .object(report.impaired.mapValues { .integer(Int64($0)) }),
                "datagrams_received": .integer(Int64(report.datagramsReceived)),
                "observations": .integer(Int64(report.observations)),
                "replies": .object(["predicted": .integer(Int64(report.repliesPredicted)), "matched": .integer(Int64(report.repliesMatched)),
                                 "missing": .integer(Int64(report.repliesMissing)), "unexpected": .integer(Int64(report.repliesUnexpected)),
                                 "invalid_received": .integer(Int64(report.invalidReceived))]),
                "lateness_us": statsJSON(report.lateness, scale: 1000),
                "round_trip_ms": statsJSON(report.roundTrips, scale: 1),
                "round_trip_path_ms": statsJSON(report.pathRoundTrips, scale: 1),
                "network": provenance.network == nil ? .null : Self.networkJSON(provenance),
                "timestamps": .string(provenance.timestamps),
                "realtime": .bool(report.realtime), "host_exit": report.hostExit.map { .string($0) } ?? .null,
                "anchor_wall_ns": .integer(report.anchorWallNs),
                "shard": .string(report.shard.description), "planned_controllers": .integer(Int64(report.plannedControllers)),
                "start_late_ms": .number(Double(report.startLateNs) / 1e6),
                "clock": report.clock.map { clock in
                    .object(["synchronized": .bool(clock.synchronized), "offset_ms": .number(Double(clock.offsetNs) / 1e6),
                             "max_error_ms": .number(Double(clock.maxErrorNs) / 1e6),
                             "estimated_error_ms": .number(Double(clock.estimatedErrorNs) / 1e6)])
                } ?? .null,
                "controllers": .array(report.controllers.map { c in
                    .object(["endpoint": .string(c.endpoint.description), "source": .string(c.source.description),
                             "number": .integer(Int64(c.number)),
                             "offset_ms": .number(Double(c.offsetNs) / 1e6), "scheduled": .integer(Int64(c.scheduled)),
                             "sent": .integer(Int64(c.sent)), "lost": .integer(Int64(c.lost)), "send_errors": .integer(Int64(c.sendErrors)),
                             "replies_predicted": .integer(Int64(c.repliesPredicted)), "replies_matched": .integer(Int64(c.repliesMatched)),
                             "replies_unexpected": .integer(Int64(c.repliesUnexpected)),
                             "loss_rate": .number(c.scheduled + c.lost == 0 ? 0 : Double(c.lost) / Double(c.scheduled + c.lost)),
                             "round_trip_ms": statsJSON(c.roundTrips, scale: 1)])
                }),
                "triggers": .array(report.triggers.map { t in
                    .object(["controller": .integer(Int64(t.controller)), "sender_time_ms": .integer(Int64(t.senderTimeMs)),
                             "predicted": .bool(t.predicted),
                             "round_trip_ms": t.roundTripNs.map { .number(Double($0) / 1e6) } ?? .null])
                }),
            ]).jsonText)
        case .text, .junit:  // junit is JUnitRendering.replay
            let count = report.controllers.count
            let share = report.shard == .whole ? "\(count) controller(s)" : "\(count) of \(report.plannedControllers) controller(s) (shard \(report.shard))"
            lines.append("replayed \(inputs.joined(separator: ", ")) to \(report.target) as \(share), seed \(report.seed): \(report.outcome.rawValue)")
            if let network = provenance.networkLine { lines.append(TerminalText.escaped(network)) }
            if startAt != nil {
                var clock = "clock: "
                if let c = report.clock {
                    clock += c.synchronized
                        ? "synchronised (kernel: offset \(SummaryRendering.ms(Double(c.offsetNs) / 1e6, 3)) ms, max error \(SummaryRendering.ms(Double(c.maxErrorNs) / 1e6, 1)) ms)"
                        : "NOT synchronised by NTP or PTP (kernel max error \(SummaryRendering.ms(Double(c.maxErrorNs) / 1e6, 0)) ms): other machines' shards may start that far apart"
                } else {
                    clock += "its discipline is unknown on this system"
                }
                let late = report.startLateNs > 0 ? ", \(SummaryRendering.ms(Double(report.startLateNs) / 1e6, 1)) ms too soon to get ready (the first sends were late)" : ""
                lines.append("started at \(RFC3339.string(fromNanoseconds: report.anchorWallNs)) as agreed\(late); \(clock)")
            }
            var sentLine = "sent \(report.sent) message(s) in \(SummaryRendering.ms(Double(report.elapsedNs) / 1e9, 2)) s"
            if !report.sendErrors.isEmpty {
                sentLine += " (" + report.sendErrors.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ") + ")"
            }
            lines.append(sentLine)
            if !report.impaired.isEmpty {
                lines.append("impaired: " + report.impaired.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            if replies {
                lines.append("replies: \(report.repliesPredicted) predicted by the gesture rule, \(report.repliesMatched) matched, \(report.repliesMissing) missing, \(report.repliesUnexpected) unexpected"
                             + (report.invalidReceived > 0 ? ", \(report.invalidReceived) invalid datagram(s)" : ""))
            } else {
                // Nothing to match: the host's decisions show only on an observation channel (conform judges them).
                lines.append("replies: none in \(protocolName), so none were matched; conform judges the host's decisions"
                             + (report.invalidReceived > 0 ? " (\(report.invalidReceived) unexpected message(s) came back)" : ""))
            }
            let rt = report.roundTrips
            if rt.count > 0 {
                let path = report.pathRoundTrips
                let delayed = (report.impaired["delayed"] ?? 0) > 0
                lines.append("round trip from the actual send\(delayed ? " (after the emulated delay)" : ""): p50 \(SummaryRendering.ms(rt.percentileMs(50)!, 3)) ms, p99 \(SummaryRendering.ms(rt.percentileMs(99)!, 3)) ms, max \(SummaryRendering.ms(rt.maxMs!, 3)) ms")
                if delayed, path.count > 0 {
                    lines.append("round trip including the emulated path (from the scheduled departure): p50 \(SummaryRendering.ms(path.percentileMs(50)!, 3)) ms, p99 \(SummaryRendering.ms(path.percentileMs(99)!, 3)) ms, max \(SummaryRendering.ms(path.maxMs!, 3)) ms")
                }
            }
            let late = report.lateness
            if late.count > 0 {
                lines.append("send lateness: p50 \(SummaryRendering.ms(late.percentileMs(50)! * 1000, 0)) µs, p99 \(SummaryRendering.ms(late.percentileMs(99)! * 1000, 0)) µs, max \(SummaryRendering.ms(late.maxMs! * 1000, 0)) µs"
                         + (report.realtime ? " (real-time priority)" : ""))
            }
            if let hostExit = report.hostExit { lines.append("host process \(hostExit)") }
            if count > 1 && count <= 32 {
                lines.append("per controller:")
                lines.append("  controller              source                  sent   lost   replies  missing  unexpected  rtt p50 ms")
                for c in report.controllers {
                    let p50 = c.roundTrips.count > 0 ? SummaryRendering.ms(c.roundTrips.percentileMs(50)!, 3) : "–"
                    lines.append("  " + [pad(c.endpoint.description, 22), pad(c.source.description, 22), lpad(c.sent, 6), lpad(c.lost, 6),
                                     lpad(c.repliesMatched, 6), lpad(c.repliesPredicted - c.repliesMatched, 8), lpad(c.repliesUnexpected, 11),
                                     String(repeating: " ", count: max(0, 11 - p50.count)) + p50].joined(separator: " "))
                }
            } else if count > 32 {
                lines.append("(per-controller figures for all \(count) controllers: --format json)")
            }
        }
        return lines
    }

    /// Writes the report's lines to --out or standard output.
    private func emit(_ lines: [String]) throws {
        try writeOutput(lines.joined(separator: "\n") + "\n", to: self.report.out)
    }

    private func pad(_ s: String, _ width: Int) -> String { s + String(repeating: " ", count: max(0, width - s.count)) }
    private func lpad(_ n: Int, _ width: Int) -> String { let s = String(n); return String(repeating: " ", count: max(0, width - s.count)) + s }
}

/// --stats: one line each interval, from the replayer's progress snapshots (about four a second).
private final class PeriodicStats: @unchecked Sendable {  // called on the sending thread only
    private let intervalNs: Int64
    private var nextNs: Int64
    private var lastSent = 0
    private var lastNs: Int64 = 0

    init(intervalNs: Int64) {
        self.intervalNs = intervalNs
        nextNs = intervalNs
    }

    func update(_ p: ReplayProgress) {
        guard p.elapsedNs >= nextNs else { return }
        let seconds = Double(p.elapsedNs - lastNs) / 1e9
        let rate = seconds > 0 ? Double(p.sent - lastSent) / seconds : 0
        writeStandardError(String(format: "replay: %.1f s: %d sent (%.1f/s over the last %.1f s), %d of %d replies\n",
                                  Double(p.elapsedNs) / 1e9, p.sent, rate, seconds, p.replies, p.predicted))
        lastSent = p.sent
        lastNs = p.elapsedNs
        while nextNs <= p.elapsedNs { nextNs += intervalNs }
    }
}

extension ReplayOptions.Timing: ExpressibleByArgument {}
extension ReplayOptions.Timestamps: ExpressibleByArgument {}
extension Segmentation: ExpressibleByArgument {}
