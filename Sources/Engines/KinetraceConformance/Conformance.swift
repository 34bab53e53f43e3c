import KinetraceTransport
import KinetraceWire

/// The conformance suite as a library, for a host's own tests: what `kinetrace conform`
/// runs, against a host in this process, on the network or behind the stdio adapter, with
/// typed verdicts back. A stable entry point: new cases may be added to a suite, but this
/// API and the meaning of a `SuiteReport` stay.
///
/// ```swift
/// let report = try Conformance.check(try .named(protocolName), against: .inProcess { datagram, controller in
///     myHost.receive(datagram, from: controller)   // the replies to send back
/// })
/// #expect(!report.failed(strict: false), "\(report.results.filter { $0.fails(strict: false) })")
/// ```
public enum Conformance {
    /// What a host in this process is given and returns: a datagram and its controller's
    /// address ("127.0.0.1:50001") in, the replies for that controller out.
    public typealias DatagramHandler = @Sendable (_ datagram: [UInt8], _ controller: String) -> [[UInt8]]

    public enum Target: Sendable {
        /// A host listening at `host:port`: on UDP, or TCP for a byte-stream protocol.
        case network(host: String, port: UInt16)
        /// A host program behind the stdio adapter (specs/stdio-adapter-v1.md), run with `/bin/sh -c`.
        case exec(String)
        /// A host in this process: each datagram a controller sends, with the controller's
        /// address ("127.0.0.1:50001"), in; the replies for that controller out. Called from
        /// one thread, in arrival order. Datagram protocols only.
        case inProcess(DatagramHandler)
    }

    /// Which cases run, and the rule and limits they judge by (`kinetrace conform`'s options).
    public struct Options: Sendable {
        /// Case IDs or prefixes to run (`AC-ACK`); empty: every active case.
        public var cases: [String] = []
        /// Case IDs or prefixes to leave out, e.g. the timing cases on a noisy CI machine.
        public var exclude: [String] = []
        package var parameters = SuiteParameters()
        public init() {}

        /// The host's controller cap, which the state-exhaustion case floods past.
        public var maxControllers: Int {
            get { parameters.maxControllers }
            set { parameters.maxControllers = newValue }
        }
        /// A byte-stream host's connection bound, which the flood case opens idle connections past.
        public var maxConnections: Int {
            get { parameters.maxConnections }
            set { parameters.maxConnections = newValue }
        }
        /// The reply deadline in ms that a MUST case holds a replying host to.
        public var replyDeadlineMs: Double {
            get { parameters.replyDeadlineMs }
            set { parameters.replyDeadlineMs = newValue }
        }
    }

    /// Why the suite could not run at all (a case that cannot decide is a verdict, not this).
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public struct Code: Hashable, Sendable {
            public let name: String
            /// The protocol has no conformance suite.
            public static let noSuite = Code(name: "no_suite")
            /// No active case matches the selection.
            public static let noCases = Code(name: "no_cases")
            /// The host cannot be reached or started.
            public static let unreachable = Code(name: "unreachable")
            /// An option is out of its range (`description` names it).
            public static let badOptions = Code(name: "bad_options")
        }
        public var code: Code
        public var description: String
    }

    /// Runs the active cases of `wireProtocol`'s suite against `target`; `progress` is told each case's result as it ends.
    public static func check(_ wireProtocol: WireProtocolHandle, against target: Target, options: Options = Options(),
                             progress: (CaseResult) -> Void = { _ in }) throws(Failure) -> SuiteReport {
        // Checked where they enter, with `kinetrace conform`'s limits: never clamped in silence.
        guard (1...900_000).contains(options.maxControllers) else {
            throw Failure(code: .badOptions, description: "maxControllers must be from 1 to 900000, not \(options.maxControllers)")
        }
        guard (1...16_320).contains(options.maxConnections) else {
            throw Failure(code: .badOptions, description: "maxConnections must be from 1 to 16320, not \(options.maxConnections)")
        }
        guard options.replyDeadlineMs.isFinite, options.replyDeadlineMs > 0, options.replyDeadlineMs <= 3_600_000 else {
            throw Failure(code: .badOptions, description: "replyDeadlineMs must be a number of ms above 0 and at most 3600000 (an hour), not \(options.replyDeadlineMs)")
        }
        return try check(wireProtocol.wireProtocol, against: target, options: options, progress: progress)
    }

    /// Runs the active cases of `wireProtocol`'s suite against `target`; `progress` is told each case's result as it ends.
    package static func check(_ wireProtocol: any WireProtocol, against target: Target, options: Options = Options(),
                             progress: (CaseResult) -> Void = { _ in }) throws(Failure) -> SuiteReport {
        guard let suite = ConformanceSuite.suite(for: wireProtocol) else {
            throw Failure(code: .noSuite, description: "\(wireProtocol.id) has no conformance suite")
        }
        let cases = ConformanceSuite.select(suite.activeCases, include: options.cases, exclude: options.exclude)
        guard !cases.isEmpty else { throw Failure(code: .noCases, description: "no active case matches \(options.cases) without \(options.exclude)") }
        var inProcess: InProcessDatagramHost?
        defer { inProcess?.stop() }
        let link: any ControllerLink
        let name: String
        do throws(SocketError) {
            switch target {
            case .network(let host, let port):
                let linkTarget = LinkTarget.network(try SocketAddressBox.resolve(host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"),
                                                    for: wireProtocol)
                link = try openLink(to: linkTarget)
                name = "host \(linkTarget)"
            case .exec(let command):
                link = try StdioControllerLink(command: command)
                name = "exec: \(command)"
            case .inProcess(let handler):
                guard wireProtocol.transport == .datagram else {
                    throw SocketError("an in-process host takes datagrams; \(wireProtocol.id) is a byte stream: use .network or .exec")
                }
                let host = try InProcessDatagramHost(handler: handler)
                inProcess = host
                link = try openLink(to: .network(TransportTarget(Transports.udp, try SocketAddressBox.resolve("127.0.0.1:\(host.port)"))))
                name = "an in-process host on 127.0.0.1:\(host.port)"
            }
        } catch {
            throw Failure(code: .unreachable, description: error.description)
        }
        let report = ConformanceSuite.run(cases, of: suite, over: link, target: name, parameters: options.parameters) { result in progress(result) }
        _ = link.finish(graceMs: 1_000)
        return report
    }
}
