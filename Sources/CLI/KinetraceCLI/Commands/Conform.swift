import ArgumentParser
import Foundation
import KinetraceAnalysis
import KinetraceConformance
import KinetraceHost
import KinetraceJSON
import KinetracePcap
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging

/// `kinetrace conform`: a protocol's conformance suite.
struct Conform: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a live host (active cases) or a capture (passive cases) against its protocol's spec.",
        discussion: """
            Each case names the requirements of the protocol's spec it checks (`kinetrace \
            protocol show NAME` lists them) and returns PASS, FAIL, NON-STRICT (a SHOULD missed, \
            or timing inside a grace band), INFORMATIONAL, INCONCLUSIVE (not enough evidence) \
            or ERROR (a fault of the harness). Timing cases print their measurements whatever \
            the verdict.

            --host runs the active cases against a host on UDP, TCP or WebSocket (a bare HOST:PORT: the protocol's own): \
            each case opens fresh controllers, \
            sends crafted messages and judges the replies: for a protocol whose host answers \
            on the wire, the threshold boundary, the window, stale, duplicate and invalid \
            messages, two controllers at once, 100 timed triggers, 1,000 messages/s from 50 \
            controllers, and 3 s from 8 controllers through each of the lab-5ghz, \
            crowded-event and harsh replay networks' loss, jitter, duplication and \
            reordering, recovery from a forged far-future stamp (--stale-resync-ms), and one \
            message each from an eighth more new controllers than --max-controllers, from \
            distinct 127.101.0.0/16 sources (so only against a loopback host, on Linux). \
            Sample values come from \
            the rule given with --threshold and --refractory-ms. Reply delays are round trips on \
            this machine's clock, so they include the path both ways. With no target, the suite \
            runs against the built-in reference host on loopback. --exec runs the active cases \
            against a host started as a command that speaks the stdio adapter on its standard \
            input and output; its reply delays include the pipe both ways.

            Hosts of protocols without replies answer nothing on the wire: a jump or an \
            applied attitude shows only on screen. Their active cases judge it through the \
            stdio adapter's observation channel (--exec 'HOST --stdio --observe'; with no \
            target, the reference host is run that way), and over --host say INCONCLUSIVE \
            with the reason, except what the network shows: a UDP host that is gone (ICMP port \
            unreachable), a TCP host that closes or resets a connection or stops reading (its \
            send queue, SIOCOUTQ).

            Every case's controllers are new to the host (no source port or stdio id is reused \
            in a run) and stamp samples with this machine's wall clock, so one host can be \
            checked run after run. A hostile host cannot grow the harness: of each reply only \
            its length and first 512 bytes are kept, and a case that gets more than 1,000 \
            replies plus 10 per message it sent FAILs as flooded and ends the run.

            --capture reads a trace, a pcap or a pcapng and checks the controllers' samples and \
            rate and, when the capture holds both directions, the host's replies. It reads the \
            capture once, judging every case as it goes, and keeps no message: what stays in \
            memory is per controller (its newest stamp), per trigger (about 150 bytes with its index: when, \
            which sample, its replies), and for the rate cases each sample's stamp (12 bytes), since \
            a window's loss threshold comes from the controller's median interval. A check of \
            message ids keeps each message's id. Invalid messages, repeated, unexpected and \
            misdirected replies are counted in full and kept as a sample of 1,000 for evidence.

            --format junit writes one testcase per case (FAIL, and NON-STRICT under --strict, \
            as a failure; INCONCLUSIVE skipped; ERROR an error) in the form Jenkins' xunit \
            plugin (junit-10.xsd) and Surefire's readers accept. A harness error still writes \
            a report, whose one testcase is the error, and exits with its own status.

            Exit status: 0 when no MUST case fails (and, with --strict, no SHOULD case is \
            missed); 1 when one does, when no case could decide (NOTHING JUDGED), or when no case \
            that judges the host's decisions could (DECISIONS NOT JUDGED: a host that reports no \
            observation, or one on a socket whose decisions never show on the wire); 64 for bad usage; 65 for a capture that is not valid \
            data; 66 for a capture that is missing or unreadable; 69 when no host is there \
            (nothing listens, or the exec host cannot start, ends before answering, or dies during \
            the run: SA-ERROR-2); 76 when an exec host breaks the stdio adapter's framing \
            (SA-ERROR-1); the report is still written, naming the case the host ended in; 73 when \
            the report cannot be written.
            """)

    @Option(help: ArgumentHelp("The live host to check, as udp://HOST:PORT, tcp://HOST:PORT, ws://HOST:PORT/PATH or wss://HOST:PORT/PATH; a bare HOST:PORT or [IPV6]:PORT is on the protocol's own transport.", valueName: "host:port"))
    var host: String?

    @Option(help: ArgumentHelp("A host to run and check through the stdio adapter (specs/stdio-adapter-v1.md), as a /bin/sh command.",
                               valueName: "command"))
    var exec: String?

    @Option(help: ArgumentHelp("The capture to check: a kinetrace trace, a pcap or a pcapng.", valueName: "file"), completion: .file())
    var capture: String?

    @OptionGroup var input: CaptureInputOptions
    @OptionGroup var ruleOptions: GestureRuleOptions

    @Option(name: .customLong("reply-deadline-ms"),
            help: ArgumentHelp("The reply deadline the MUST case holds a host to, for protocols with replies.", valueName: "ms"))
    var replyDeadlineMs: Double = 50

    @Option(name: .customLong("min-samples"), help: ArgumentHelp("Timing cases with fewer samples are INCONCLUSIVE.", valueName: "n"))
    var minSamples = 20

    @Option(name: .customLong("max-controllers"),
            help: ArgumentHelp("The host's controller cap : AC-STATE-BOUND sends from an eighth more new controllers than this and expects the least recently heard to be forgotten.",
                               valueName: "n"))
    var maxControllers = 65_536

    @Option(name: .customLong("max-connections"),
            help: ArgumentHelp("A TCP host's connection bound: the connection-flood case opens 64 more idle connections than this and expects phones still to be served.",
                               valueName: "n"))
    var maxConnections = 1_024

    @Flag(help: "Count SHOULD cases too: a NON-STRICT verdict fails the run.")
    var strict = false

    @Option(name: .customLong("cases"), help: ArgumentHelp("Run only the cases whose ID matches this glob (repeatable), e.g. 'PC-RATE-*'.", valueName: "glob"))
    var include: [String] = []

    @Option(help: ArgumentHelp("Skip the cases whose ID matches this glob (repeatable).", valueName: "glob"))
    var exclude: [String] = []

    @Flag(help: "List the cases, their requirements and levels, and exit.")
    var list = false

    @OptionGroup var tls: TLSClientOptions
    @OptionGroup var report: ReportOptions<ConformFormat>

    enum ConformFormat: String, ReportFormat {
        case text, json, junit, html
        static var defaultFormat: ConformFormat { .text }
        static var formatHelp: String { "text for people, json for machines, junit for CI, html for one self-contained page" }
    }

    func validate() throws {
        guard replyDeadlineMs.isFinite, replyDeadlineMs > 0, replyDeadlineMs <= 3_600_000 else {
            throw ValidationError("--reply-deadline-ms must be a positive number of ms, at most 3600000 (an hour).")
        }
        guard minSamples >= 1 else { throw ValidationError("--min-samples must be at least 1.") }
        guard (1...900_000).contains(maxControllers) else { throw ValidationError("--max-controllers must be from 1 to 900000.") }
        guard (1...16_320).contains(maxConnections) else { throw ValidationError("--max-connections must be from 1 to 16320.") }
        if [host, exec, capture].compactMap({ $0 }).count > 1 { throw ValidationError("Give one of --host, --exec and --capture.") }
        var secure = false
        if let host { do { secure = try TransportTarget.parse(host, fallback: Transports.udp).transport.isSecure } catch { throw ValidationError("--host \(error.description)") } }
        try tls.validate(secure: secure, flag: host == nil ? "the run" : "--host")
        if capture == nil, ConformanceSuite.suite(for: input.wire.wireProtocol) == nil {
            throw ValidationError("--protocol \(input.wire.wireProtocol.id) has no conformance suite.")
        }
    }

    func run() throws {
        let junit = JUnitErrorGuard(command: "kinetrace conform", enabled: report.format == .junit && !list, path: report.out)
        try junit.run { try check(junit) }
    }

    private func check(_ junit: JUnitErrorGuard) throws {
        var parameters = SuiteParameters()
        parameters.rule = ruleOptions.rule(for: input.wire.wireProtocol)
        parameters.replyDeadlineMs = replyDeadlineMs
        parameters.minimumTimingSamples = minSamples
        parameters.maxControllers = maxControllers
        parameters.maxConnections = maxConnections
        if list { return try listCases(suite(for: input.wire.wireProtocol)) }
        let result: SuiteReport
        if let capture {
            result = try checkCapture(capture, parameters)
        } else {
            let suite = try suite(for: input.wire.wireProtocol)
            let active = ConformanceSuite.select(suite.activeCases, include: include, exclude: exclude)
            guard !active.isEmpty else { throw ValidationError("No active case matches the --cases and --exclude given.") }
            result = try runActive(active, of: suite, parameters)
            let brokeFraming: Bool = { if case .brokeFraming? = result.hostEnd { return true } else { return false } }()
            if !brokeFraming, result.results.allSatisfy({ if case .error = $0.verdict { return true } else { return false } }) {
                // A harness error, yet each case's error says more than one line would.
                if report.format == .junit { try junit.write(JUnitRendering.conform(result, strict: strict, startedEpochNs: junit.startedEpochNs)) }
                printError("every case failed to run against \(result.target): \(result.results.first?.verdict.reason ?? "")")
                throw ExitStatus.unavailable
            }
        }
        try emit(result, junit)
    }

    private func suite(for wireProtocol: any WireProtocol) throws -> ProtocolSuite {
        guard let suite = ConformanceSuite.suite(for: wireProtocol) else {
            throw ValidationError("--protocol \(wireProtocol.id) has no conformance suite.")
        }
        return suite
    }

    private func listCases(_ suite: ProtocolSuite) throws {
        let active = ConformanceSuite.select(suite.activeCases, include: include, exclude: exclude)
        let passive = ConformanceSuite.select(suite.passiveCases, include: include, exclude: exclude)
        let infos = active.map(\.info) + passive.map(\.info)
        switch report.format {
        case .json:
            let cases: [JSONValue] = infos.map { info in
                .object(["id": .string(info.id), "requirements": .array(info.requirements.map { .string($0) }),
                         "level": .string(info.level.rawValue), "summary": .string(info.summary),
                         "mode": .string(info.id.hasPrefix("PC-") ? "passive" : "active")])
            }
            try writeOutput(JSONValue.object(["spec_version": .string(suite.specVersion), "cases": .array(cases)]).jsonText + "\n",
                            to: report.out)
        default:
            let text = infos.map { "\($0.id)  \($0.level.rawValue)  \($0.requirements.joined(separator: ", "))\n    \($0.summary)" }
            try writeOutput(text.joined(separator: "\n") + "\n", to: report.out)
        }
    }

    private func runActive(_ cases: [any ActiveCase], of suite: ProtocolSuite, _ parameters: SuiteParameters) throws -> SuiteReport {
        var reference: ReferenceHost?
        // A declared protocol reaches the stdio reference host as its canonical declaration in a file of its own.
        var temporary: URL?
        defer { if let temporary { try? FileManager.default.removeItem(at: temporary) } }
        let link: any ControllerLink
        let target: String
        if let exec {
            do { link = try StdioControllerLink(command: exec) } catch {
                printError("cannot run the host: \(error.description)")
                throw ExitStatus.unavailable
            }
            target = "exec: \(exec)"
        } else if let host {
            let hostTarget: TransportTarget
            do {
                // A bare HOST:PORT is on the protocol's own transport: TCP for a byte stream, UDP for datagrams.
                hostTarget = try TransportTarget.parse(host, fallback: Transports.native(for: suite.wireProtocol))
            } catch { throw ValidationError("--host \(error.description)") }
            if let problem = hostTarget.transport.problem(carrying: suite.wireProtocol) { throw ValidationError("--host \(problem)") }
            let network = LinkTarget.network(hostTarget.fitted(to: suite.wireProtocol))
            do { link = try openLink(to: network, options: ConnectionOptions(tlsTrust: try tls.trust())) } catch let error as SocketError {
                printError("cannot reach the host: \(error.description)")
                throw ExitStatus.unavailable
            }
            target = "host \(network)"
        } else if suite.judgesObservations {
            // Decisions that show nowhere on the wire: the reference host behind the stdio adapter, reporting them.
            var protocolArgument = suite.wireProtocol.id.name
            if let declaration = suite.wireProtocol.declaration {
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kinetrace-conform-\(UUID().uuidString)")
                let file = directory.appendingPathComponent("\(declaration.name).json")
                do {
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    temporary = directory
                    try Data(declaration.canonicalText.utf8).write(to: file)
                } catch {
                    printError("cannot write the declaration for the reference host: \(error.localizedDescription)")
                    throw ExitStatus.cannotCreate
                }
                protocolArgument = file.path
            }
            let command = referenceStdioCommand(protocolArgument, parameters.rule)
            do { link = try StdioControllerLink(command: command) } catch {
                printError("cannot start the reference host: \(error.description)")
                throw ExitStatus.unavailable
            }
            target = "the reference host through the stdio adapter (host --stdio --observe)"
        } else {
            // The README's main job: the whole suite against the reference host on loopback.
            var configuration = ReferenceHost.Configuration(wireProtocol: suite.wireProtocol)
            configuration.port = 0
            configuration.rule = parameters.rule
            do {
                let started = try ReferenceHost(configuration: configuration, logger: Logger(label: "kinetrace.conform.host") { _ in SwiftLogNoOpLogHandler() })
                reference = started
                let address = try SocketAddressBox.resolve("127.0.0.1:\(started.localAddress.port ?? 0)")
                link = try openLink(to: .network(address, for: suite.wireProtocol))
                target = "the reference host on \(address)"
            } catch {
                printError("cannot start the reference host: \(error)")
                throw ExitStatus.unavailable
            }
        }
        defer { _ = try? reference?.shutdown() }
        var progress = Progress(label: "conform")
        var done = 0
        let result = ConformanceSuite.run(cases, of: suite, over: link, target: target, parameters: parameters) { _ in
            done += 1
            progress.step(done, of: cases.count, unit: "cases")
        }
        progress.finish()
        _ = link.finish(graceMs: 1_000)
        return result
    }

    /// This very program as the stdio reference host of the protocol (a name or a declaration file), told the rule under test.
    private func referenceStdioCommand(_ protocolArgument: String, _ rule: GestureRule) -> String {
        func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        return "\(quoted(executable)) host --stdio --observe --protocol \(quoted(protocolArgument)) --threshold=\(rule.threshold) --refractory-ms \(rule.refractoryMs)"
    }

    /// The passive cases in one pass over the capture as it is read.
    private func checkCapture(_ path: String, _ parameters: SuiteParameters) throws -> SuiteReport {
        let source = try reportingFailures { () throws(TraceError) -> any TraceRecordSource in
            try openInput(path: path, wireProtocol: input.wire.given, port: input.port)
        }
        let suite = try suite(for: source.wireProtocol)
        let passive = ConformanceSuite.select(suite.passiveCases, include: include, exclude: exclude)
        guard !passive.isEmpty else { throw ValidationError("No passive case matches the --cases and --exclude given.") }
        let (report, summary) = try reportingFailures { () throws(TraceError) -> (report: SuiteReport, summary: PassiveSummary) in
            try ConformanceSuite.run(passive, of: suite, reading: source, parameters: parameters)
        }
        if let truncation = summary.truncation {
            printWarning("\(path): \(truncation.description); checked what precedes it")
        }
        return report
    }

    private func emit(_ result: SuiteReport, _ junit: JUnitErrorGuard) throws {
        let text: String
        switch report.format {
        case .text: text = ConformanceRendering.text(result, strict: strict)
        case .json: text = ConformanceRendering.json(result, strict: strict)
        case .junit:
            try junit.write(JUnitRendering.conform(result, strict: strict, startedEpochNs: junit.startedEpochNs))
            try exitForHostEnd(result)
            if result.failed(strict: strict) { throw ExitCode.failure }
            return
        case .html:
            // A capture's report also shows its latencies, read again with the latency command's analysis.
            let latency = capture.flatMap { path in
                (try? Latency.analyse(path: path, input: input, options: .init())).map { LatencyReport(source: path, analysis: $0) }
            }
            text = ConformanceHTML.render(result, strict: strict, latency: latency?.analysis.measures.isEmpty == false ? latency : nil)
        }
        try writeOutput(text, to: report.out)
        try exitForHostEnd(result)
        if result.failed(strict: strict) { throw ExitCode.failure }
    }

    /// A host behind the stdio adapter that died (SA-ERROR-2) or broke the framing (SA-ERROR-1) during
    /// the run: the report is written, with the case it ended in, and the exit status says which.
    private func exitForHostEnd(_ result: SuiteReport) throws {
        switch result.hostEnd {
        case .died(let why)?:
            printError("the host died during the run: \(why)")
            throw ExitStatus.unavailable
        case .brokeFraming(let why)?:
            printError("the host broke the stdio adapter's framing: \(why)")
            throw ExitStatus.protocolFailure
        case nil:
            return
        }
    }
}
