import ArgumentParser
import Dispatch
import KinetraceHost
import KinetraceJSON
import KinetracePhone
import KinetraceQR
import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging
import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `kinetrace phone`: phones as controllers, from their browsers.
struct Phone: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a web page that makes phones into controllers, and record their motion, labels and the host's decisions.",
        discussion: """
            Prints the page's address, and shows it as a QR code on a terminal. A phone that opens \
            it asks for motion access on a tap (as iOS requires), then streams its device motion \
            over wss:// in --protocol, at the protocol's nominal rate (the newest reading at each \
            tick), to the reference host on the same port. Any built-in or declared protocol \
            whose samples carry motion works. The host's decisions come back to the phone, which \
            vibrates where the browser can and flashes where it cannot (iOS).

            The page always runs on HTTPS, since browsers give motion sensors only to secure \
            pages: with --certificate and --private-key, or a self-signed certificate made on \
            first use and kept (as host --transport wss does); the page explains the browser's \
            warning. Labels: in guided mode the phone is cued to a gesture (--gestures) every \
            --cue-every seconds, and the label carries the moment of the cue on the phone's \
            clock; in free mode the player taps "I just jumped" (or ducked, or tilted) and the label covers the 700 ms \
            before the tap. Each phone is a controller named by its player; the operator's page \
            (/operator) lists them live.

            With --trace the host records everything: capture point host, each phone's samples \
            as they came, the replies and decisions, each label, and a "phone" event naming each \
            player's controller, ready for gestures eval, latency and network fit. Stops on \
            SIGINT or SIGTERM with a summary; exits 1 when no phone streamed a sample.
            """)

    @Option(help: ArgumentHelp("The address to bind: 0.0.0.0 or :: for phones on the network, 127.0.0.1 for this machine only.", valueName: "address"))
    var bind = "0.0.0.0"

    @Option(help: ArgumentHelp("The port to serve the page and the stream on; 0 picks a free one.", valueName: "port"))
    var port = 47443

    @Option(name: .customLong("url-host"), help: ArgumentHelp(
        "The address phones reach this machine at, for the printed URL and QR code (default: the bound address, or this machine's first non-loopback IPv4 address).",
        valueName: "address"))
    var urlHost: String?

    @OptionGroup var wire: ProtocolOptions
    @OptionGroup var ruleOptions: GestureRuleOptions
    @OptionGroup var tlsServer: TLSServerOptions

    @Option(help: ArgumentHelp("Record the session to this trace file.", valueName: "file"), completion: .file())
    var trace: String?

    @Option(help: ArgumentHelp("The mode a phone starts in: guided (the phone cues each gesture) or free (the player says what they did). A player can switch.", valueName: "mode"))
    var mode = "guided"

    @Option(help: ArgumentHelp("The gestures to cue and label, separated by commas: \(PhoneSite.knownGestures.joined(separator: ", ")).", valueName: "list"))
    var gestures = "jump"

    @Option(name: .customLong("cue-every"), help: ArgumentHelp(
        "Guided mode: seconds between cues, as MIN:MAX (each a seeded uniform draw) or one number.", valueName: "seconds"))
    var cueEvery = "4:8"

    @Option(help: ArgumentHelp("The seed of the cues' times and gestures (recorded in the trace).", valueName: "n"))
    var seed: UInt64 = 1

    @Option(name: .customLong("max-phones"), help: ArgumentHelp("Phones served at once.", valueName: "n"))
    var maximumPhones = 256

    @Flag(inversion: .prefixedNo, help: ArgumentHelp("Show the page's address as a QR code (default: when standard output is a terminal)."))
    var qr: Bool?

    @OptionGroup var summaryFormat: SummaryFormatOptions

    @Flag(name: .shortAndLong, help: "Log every decision to standard error.")
    var verbose = false

    func validate() throws {
        try tlsServer.validate(secure: true)
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") }
        guard mode == "guided" || mode == "free" else { throw ValidationError("--mode must be guided or free, not \(mode).") }
        _ = try gestureList()
        _ = try cueRange()
        guard (1...65536).contains(maximumPhones) else { throw ValidationError("--max-phones must be from 1 to 65536.") }
        if let urlHost {
            guard !urlHost.isEmpty, urlHost.utf8.count <= 253, urlHost.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && !"/?#@".unicodeScalars.contains($0) }) else {
                throw ValidationError("--url-host must be a host name or address: printable ASCII, no spaces or / ? # @, at most 253 bytes.")
            }
        }
        do { _ = try SampleTemplate(wire.wireProtocol) } catch {
            throw ValidationError("--protocol \(wire.wireProtocol.id): the page cannot stream it: \(error.description).")
        }
    }

    private func gestureList() throws -> [String] {
        let list = gestures.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
        guard !list.isEmpty, list.count <= 8, list.allSatisfy(PhoneSite.knownGestures.contains) else {
            throw ValidationError("--gestures must list gestures from \(PhoneSite.knownGestures.joined(separator: ", ")), separated by commas.")
        }
        return list
    }

    private func cueRange() throws -> ClosedRange<Int> {
        let parts = cueEvery.split(separator: ":", omittingEmptySubsequences: false).map { Double($0) }
        guard (1...2).contains(parts.count), parts.allSatisfy({ $0.map { $0.isFinite && $0 >= 0.5 && $0 <= 600 } ?? false }) else {
            throw ValidationError("--cue-every must be seconds from 0.5 to 600, as MIN:MAX or one number.")
        }
        let low = Int((parts[0]! * 1000).rounded()), high = Int((parts.last!! * 1000).rounded())
        guard low <= high else { throw ValidationError("--cue-every MIN:MAX needs MIN ≤ MAX.") }
        return low...high
    }

    func run() throws {
        var logger = Logger(label: "kinetrace.phone") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = verbose ? .info : .warning
        let identity: TLSServerIdentity
        do { identity = try tlsServer.identity(note: printNote) } catch let error as ValidationError {
            printError(error.message)
            throw ExitStatus.unavailable
        }
        var settings = PhoneSite.Settings(wireProtocol: wire.wireProtocol)
        settings.gestures = try gestureList()
        settings.cueIntervalMs = try cueRange()
        settings.seed = seed
        settings.guided = mode == "guided"
        // A stream and a side channel per phone, and the page's requests: all descriptors, under the open-file limit.
        let (allowed, descriptors) = ServingStartup.connectionsWithinDescriptorLimit(maximumPhones * 2 + 16)
        let phonesAllowed = Swift.max(1, Swift.min(maximumPhones, (allowed - 16) / 2))
        if phonesAllowed < maximumPhones {
            printWarning("the open-file limit is \(descriptors): serving at most \(phonesAllowed) phones, not \(maximumPhones) (raise ulimit -n)")
        }
        settings.maximumPhones = phonesAllowed
        var configuration = PhoneSession.Configuration(site: settings, tlsIdentity: identity)
        configuration.rule = ruleOptions.rule(for: wire.wireProtocol)
        configuration.bindHost = bind
        configuration.port = port
        configuration.tracePath = trace
        configuration.maximumConnections = allowed
        let session = try ServingStartup.starting("serve on", Endpoint(host: bind, port: UInt16(clamping: port))) {
            try PhoneSession(configuration: configuration, logger: logger)
        }
        let bound = Endpoint(session.localAddress)
        let address = urlHost ?? Self.reachableAddress(bound: bind)
        let url = "https://\(address.contains(":") ? "[\(address)]" : address):\(bound.port)/"
        printNow("phone page: \(url)")
        printNow("operator:   \(url)operator")
        printNow("listening on \(bound)")
        if qr ?? (isatty(STDOUT_FILENO) != 0) {
            do { printNow(try QRCode(url).terminalText()) } catch { printWarning("no QR code: \(error.description)") }
        }
        let done = DispatchSemaphore(value: 0)
        let signals = onTermination { _ in done.signal() }
        done.wait()
        _ = signals
        let stats: HostStatistics
        do {
            stats = try session.shutdown()
        } catch let error as TraceError {
            printError(error.description)
            throw ExitStatus.forTraceError(error)
        }
        let phones = session.site.phonesInOrder
        let samples = phones.reduce(0) { $0 + $1.samples }
        printSummary(phones: phones, stats: stats, refused: session.site.refusedMessages)
        if samples == 0 {
            printError("no phone streamed a sample\(trace.map { ": \($0) holds no motion" } ?? "")")
            throw ExitCode.failure
        }
    }

    private func printSummary(phones: [PhoneSite.Phone], stats: HostStatistics, refused: Int) {
        let samples = phones.reduce(0) { $0 + $1.samples }, labels = phones.reduce(0) { $0 + $1.labels }
        let cues = phones.reduce(0) { $0 + $1.cues }, decisions = phones.reduce(0) { $0 + $1.decisions }
        switch summaryFormat.format {
        case .text:
            let names = phones.map { $0.name.isEmpty ? "(unnamed)" : $0.name }.joined(separator: ", ")
            printNow("\(phones.count) phone(s)\(names.isEmpty ? "" : " (\(names))"): \(samples) samples (\(stats.validFrames) valid), "
                     + "\(cues) cues, \(labels) labels, \(decisions) decisions; \(refused) side-channel messages refused"
                     + (trace.map { "; recorded to \($0)" } ?? ""))
        case .json:
            printNow(JSONValue.object([
                "phones": .array(phones.map { p in
                    .object(["name": .string(p.name), "controller": p.controller.map { .string($0.description) } ?? .null,
                             "samples": .integer(Int64(p.samples)), "labels": .integer(Int64(p.labels)),
                             "cues": .integer(Int64(p.cues)), "decisions": .integer(Int64(p.decisions))])
                }),
                "samples": .integer(Int64(samples)), "valid": .integer(Int64(stats.validFrames)), "labels": .integer(Int64(labels)),
                "cues": .integer(Int64(cues)), "decisions": .integer(Int64(decisions)), "refused": .integer(Int64(refused)),
                "trace": trace.map { .string($0) } ?? .null,
            ]).jsonText)
        }
    }

    /// The address to print: the bound one when specific, else this machine's first
    /// non-loopback IPv4 address (what a phone on the same network reaches), else localhost.
    static func reachableAddress(bound: String) -> String {
        if bound != "0.0.0.0" && bound != "::" { return bound }
        let devices = (try? System.enumerateDevices()) ?? []
        for device in devices {
            guard case .v4? = device.address, let ip = device.address?.ipAddress, !ip.hasPrefix("127.") else { continue }
            return ip
        }
        return "localhost"
    }
}
