import ArgumentParser
import Foundation
import KinetraceConformance
import KinetraceHost
import KinetraceReplay
import KinetraceTransport
import Logging
import KinetracePcap
import KinetraceTrace
import KinetraceWire

/// `kinetrace conform`: the MotionLink v1 conformance suite.
struct Conform: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check MotionLink v1 conformance of a live host (active cases) or of a capture (passive cases).",
        discussion: """
            Each case names the requirements of specs/motionlink-v1.md it checks and returns PASS, \
            FAIL, NON-STRICT (a SHOULD missed, or timing inside a grace band), INFORMATIONAL, \
            INCONCLUSIVE (not enough evidence) or ERROR (a fault of the harness). Timing cases \
            print their measurements whatever the verdict.

            --host runs the active cases against a host on UDP: each case opens fresh controllers, \
            sends crafted frames (the threshold boundary, the refractory window, stale, \
            duplicate and invalid datagrams, two controllers at once, 100 timed triggers, 1,000 \
            frames/s from 50 controllers, and 3 s from 8 controllers through each of the lab-5ghz, \
            crowded-event and harsh replay profiles' loss, jitter, duplication and reordering) \
            and judges the replies. Ack delays are round trips on \
            this machine's clock, so they include the path both ways. With no target, the suite \
            runs against the built-in reference host on loopback. --exec runs the active cases \
            against a host started as a command that speaks the stdio adapter on its standard \
            input and output; its ack delays include the pipe both ways.

            Every case's controllers are new to the host (no source port or stdio id is reused \
            in a run) and stamp frames with this machine's wall clock, so one host can be \
            checked run after run.

            --capture reads a trace, a pcap or a pcapng and checks the controllers' frames and \
            rate and, when the capture holds both directions, the host's acks.

            Exit status: 0 when no MUST case fails (and, with --strict, no SHOULD case is \
            missed); 1 when one does; 2 on a harness error: an unreadable capture, or no host there \
            (nothing listens, or the exec host ends before answering); 64 for bad usage.
            """)

    @Option(help: ArgumentHelp("The live host to check, as HOST:PORT or [IPV6]:PORT.", valueName: "host:port"))
    var host: String?

    @Option(help: ArgumentHelp("A host to run and check through the stdio adapter (specs/stdio-adapter-v1.md), as a /bin/sh command.",
                               valueName: "command"))
    var exec: String?

    @Option(help: ArgumentHelp("The capture to check: a kinetrace trace, a pcap or a pcapng.", valueName: "file"), completion: .file())
    var capture: String?

    @Option(help: ArgumentHelp("The MotionLink host's UDP port in pcap and pcapng captures, to tell direction.", valueName: "port"))
    var port: UInt16 = MotionLinkV1.defaultPort

    @Option(help: ArgumentHelp("The host's jump threshold τ in g.", valueName: "g"))
    var threshold: Double = GestureRule.default.threshold

    @Option(name: .customLong("refractory-ms"), help: ArgumentHelp("The host's refractory period R in ms.", valueName: "ms"))
    var refractoryMs: UInt64 = GestureRule.default.refractoryMs

    @Option(name: .customLong("ack-deadline-ms"), help: ArgumentHelp("The ack deadline the MUST case holds the host to (ML-ACK-RULE-3).", valueName: "ms"))
    var ackDeadlineMs: Double = 50

    @Option(name: .customLong("min-samples"), help: ArgumentHelp("Timing cases with fewer samples are INCONCLUSIVE.", valueName: "n"))
    var minSamples = 20

    @Flag(help: "Count SHOULD cases too: a NON-STRICT verdict fails the run.")
    var strict = false

    @Option(name: .customLong("cases"), help: ArgumentHelp("Run only the cases whose ID matches this glob (repeatable), e.g. 'PC-ACK-*'.", valueName: "glob"))
    var include: [String] = []

    @Option(help: ArgumentHelp("Skip the cases whose ID matches this glob (repeatable).", valueName: "glob"))
    var exclude: [String] = []

    @Flag(help: "List the cases, their requirements and levels, and exit.")
    var list = false

    @Option(help: ArgumentHelp("Report format: text for people, json for machines, junit for CI, html for one self-contained page.",
                               valueName: "format"))
    var format: ConformFormat = .text

    @Option(help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "file"), completion: .file())
    var out: String?

    enum ConformFormat: String, ExpressibleByArgument, CaseIterable { case text, json, junit, html }

    func validate() throws {
        guard ackDeadlineMs.isFinite, ackDeadlineMs > 0 else { throw ValidationError("--ack-deadline-ms must be a positive number.") }
        guard minSamples >= 1 else { throw ValidationError("--min-samples must be at least 1.") }
        guard threshold.isFinite else { throw ValidationError("--threshold must be a number.") }
        if [host, exec, capture].compactMap({ $0 }).count > 1 { throw ValidationError("Give one of --host, --exec and --capture.") }
        if let host { do { _ = try SocketAddressBox.resolve(host) } catch { throw ValidationError("--host \(error.description)") } }
    }

    func run() throws {
        let active = ConformanceSuite.select(ConformanceSuite.activeCases + Self.impairedCases(), include: include, exclude: exclude)
        let passive = ConformanceSuite.select(ConformanceSuite.passiveCases, include: include, exclude: exclude)
        if list {
            for info in active.map(\.info) + passive.map(\.info) {
                printNow("\(info.id)  \(info.level.rawValue)  \(info.requirements.joined(separator: ", "))\n    \(info.summary)")
            }
            return
        }
        var parameters = SuiteParameters()
        parameters.rule = GestureRule(threshold: threshold, refractoryMs: refractoryMs)
        parameters.ackDeadlineMs = ackDeadlineMs
        parameters.minimumTimingSamples = minSamples
        let report: SuiteReport
        if capture == nil {
            guard !active.isEmpty else { throw ValidationError("No active case matches the --cases and --exclude given.") }
            report = try runActive(active, parameters)
        } else {
            guard !passive.isEmpty else { throw ValidationError("No passive case matches the --cases and --exclude given.") }
            report = try runPassive(passive, parameters)
        }
        try emit(report)
    }

    /// The impaired-path cases: the bundled replay profiles that impair the
    /// controller→host path, each over 8 controllers for 3 s.
    static func impairedCases() -> [any ActiveCase] {
        ["lab-5ghz", "crowded-event", "harsh"].compactMap { name in
            guard let json = BundledProfiles.json[name],
                  let profile = try? ReplayProfile.parse(Array(json.utf8), source: "profile \(name)") else { return nil }
            return ImpairedPathCase(profile: name, impairments: profile.impairments)
        }
    }

    private func runActive(_ cases: [any ActiveCase], _ parameters: SuiteParameters) throws -> SuiteReport {
        var reference: ReferenceHost?
        let transport: any ProbeTransport
        let target: String
        if let exec {
            do { transport = try StdioProbeTransport(command: exec) } catch {
                printError("cannot run the host: \(error.description)")
                throw ExitCode(2)
            }
            target = "exec: \(exec)"
        } else if let host {
            let address: SocketAddressBox
            do { address = try SocketAddressBox.resolve(host) } catch { throw ValidationError("--host \(error.description)") }
            transport = UDPProbeTransport(target: address)
            target = "host \(address)"
        } else {
            // The README's main job: the whole suite against the reference host on loopback.
            var configuration = ReferenceHost.Configuration()
            configuration.port = 0
            configuration.rule = parameters.rule
            do {
                let started = try ReferenceHost(configuration: configuration, logger: Logger(label: "kinetrace.conform.host") { _ in SwiftLogNoOpLogHandler() })
                reference = started
                let address = try SocketAddressBox.resolve("127.0.0.1:\(started.localAddress.port ?? 0)")
                transport = UDPProbeTransport(target: address)
                target = "the reference host on \(address)"
            } catch {
                printError("cannot start the reference host: \(error)")
                throw ExitCode(2)
            }
        }
        defer { _ = try? reference?.shutdown() }
        var progress = Progress(label: "conform")
        var done = 0
        let report = ConformanceSuite.run(cases, over: transport, target: target, parameters: parameters) { _ in
            done += 1
            progress.update(done << 14, of: nil)
        }
        progress.finish()
        _ = transport.close()
        if report.results.allSatisfy({ if case .error = $0.verdict { return true } else { return false } }) {
            printError("every case failed to run against \(target): \(report.results.first?.verdict.reason ?? "")")
            throw ExitCode(2)
        }
        return report
    }

    private func runPassive(_ cases: [any PassiveCase], _ parameters: SuiteParameters) throws -> SuiteReport {
        let observation: CaptureObservation
        do throws(TraceError) {
            observation = try CaptureObservation.read(try TraceInput.open(path: capture!, port: port))
        } catch {
            printError(error.description)
            throw ExitCode(2)
        }
        if let truncation = observation.truncation {
            printWarning("\(capture!): \(truncation.description); checking what precedes it")
        }
        return ConformanceSuite.run(cases, on: observation, parameters: parameters)
    }

    private func emit(_ report: SuiteReport) throws {
        let text: String
        switch format {
        case .text: text = ConformanceRendering.text(report, strict: strict)
        case .json: text = ConformanceRendering.json(report, strict: strict)
        case .junit: text = ConformanceRendering.junit(report, strict: strict)
        case .html:
            // A capture's report also shows its latencies, read again with the latency command's analysis.
            let latency = capture.flatMap { path in
                (try? Latency.analyse(path: path, port: port, options: .init())).map { LatencyReport(source: path, analysis: $0) }
            }
            text = ConformanceHTML.render(report, strict: strict, latency: latency?.analysis.measures.isEmpty == false ? latency : nil)
        }
        try writeOutput(text, to: out, failure: ExitCode(2))
        if report.failed(strict: strict) { throw ExitCode.failure }
    }
}
