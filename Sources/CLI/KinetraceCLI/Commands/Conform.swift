import ArgumentParser
import Foundation
import KinetraceConformance
import KinetracePcap
import KinetraceTrace
import KinetraceWire

/// `kinetrace conform`: the MotionLink v1 conformance suite.
struct Conform: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check MotionLink v1 conformance: of the traffic in a capture (passive cases).",
        discussion: """
            Each case names the requirements of specs/motionlink-v1.md it checks and returns PASS, \
            FAIL, NON-STRICT (a SHOULD missed, or timing inside a grace band), INFORMATIONAL, \
            INCONCLUSIVE (not enough evidence) or ERROR (a fault of the harness). Timing cases \
            print their measurements whatever the verdict.

            --capture reads a trace, a pcap or a pcapng and checks the controllers' frames and \
            rate and, when the capture holds both directions, the host's acks. The active suite \
            (--host, --exec, and the reference host when no target is given) is not in this \
            version yet.

            Exit status: 0 when no MUST case fails (and, with --strict, no SHOULD case is \
            missed); 1 when one does; 2 on a harness error such as an unreadable capture; 64 \
            for bad usage.
            """)

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

    @Option(help: ArgumentHelp("Report format: text for people, json for machines, junit for CI.", valueName: "format"))
    var format: ConformFormat = .text

    @Option(help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "file"), completion: .file())
    var out: String?

    enum ConformFormat: String, ExpressibleByArgument, CaseIterable { case text, json, junit }

    func validate() throws {
        guard ackDeadlineMs.isFinite, ackDeadlineMs > 0 else { throw ValidationError("--ack-deadline-ms must be a positive number.") }
        guard minSamples >= 1 else { throw ValidationError("--min-samples must be at least 1.") }
        guard threshold.isFinite else { throw ValidationError("--threshold must be a number.") }
        if !list && capture == nil {
            throw ValidationError("Give --capture FILE: this version checks captures only (the active suite against a live host comes next).")
        }
    }

    func run() throws {
        let cases = ConformanceSuite.select(ConformanceSuite.passiveCases, include: include, exclude: exclude)
        if list {
            for c in cases {
                printNow("\(c.info.id)  \(c.info.level.rawValue)  \(c.info.requirements.joined(separator: ", "))\n    \(c.info.summary)")
            }
            return
        }
        guard !cases.isEmpty else { throw ValidationError("No case matches --cases \(include.joined(separator: " ")) without --exclude \(exclude.joined(separator: " ")).") }
        var parameters = SuiteParameters()
        parameters.rule = GestureRule(threshold: threshold, refractoryMs: refractoryMs)
        parameters.ackDeadlineMs = ackDeadlineMs
        parameters.minimumTimingSamples = minSamples
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
        let report = ConformanceSuite.run(cases, on: observation, parameters: parameters)
        let text: String
        switch format {
        case .text: text = ConformanceRendering.text(report, strict: strict)
        case .json: text = ConformanceRendering.json(report, strict: strict)
        case .junit: text = ConformanceRendering.junit(report, strict: strict)
        }
        if let out {
            guard FileManager.default.createFile(atPath: out, contents: Data(text.utf8)) else {
                printError("\(out): cannot write the report")
                throw ExitCode(2)
            }
        } else {
            print(text, terminator: "")
        }
        if report.failed(strict: strict) { throw ExitCode.failure }
    }
}
