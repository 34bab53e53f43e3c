import ArgumentParser
import Foundation
import KinetraceTrace
import KinetraceWire

/// A wire protocol named on the command line: a compiled protocol's name, a
/// declaration file, or a name found on the protocol search path.
struct ProtocolName: ExpressibleByArgument, Sendable {
    let wireProtocol: any WireProtocol

    init?(argument: String) {
        do throws(ProtocolCatalog.Failure) {
            wireProtocol = try ProtocolCatalog.resolve(argument)
        } catch {
            // Conversion cannot carry a status out: a bad declaration is a data error (65) with its
            // file:line:column, not a usage error, so it stops here, before any output exists.
            printError(error.message)
            exit(error.status.rawValue)
        }
    }

    static var allValueStrings: [String] { ProtocolRegistry.standard.names }
    static var defaultCompletionKind: CompletionKind { .file(extensions: ["json"]) }
}

/// `--protocol NAME|FILE` and `--protocol-path DIR`, shared by every command.
struct ProtocolOptions: ParsableArguments {
    @Option(name: .customLong("protocol"),
            help: ArgumentHelp("The wire protocol (default \(ProtocolRegistry.defaultID)): a compiled protocol's name, a declaration file (specs/protocol-declaration-v1.md), or the name of one found on the protocol path. A trace names its own in its header, and this must agree with it.",
                               valueName: "name|file"))
    var named: ProtocolName?

    @Option(name: .customLong("protocol-path"),
            help: ArgumentHelp("A directory where --protocol NAME finds NAME.json; repeatable, searched before \(ProtocolCatalog.environmentVariable) (colon-separated).",
                               valueName: "dir"), completion: .directory)
    var searchPath: [String] = []

    /// The protocol given, if one was.
    var given: (any WireProtocol)? { named?.wireProtocol }

    /// The protocol given, or the default.
    var wireProtocol: any WireProtocol { given ?? ProtocolRegistry.defaultProtocol }
}

/// `--protocol` and `--port` for commands that read captures: a pcap names
/// no protocol, and only the host's port tells which way a packet went.
struct CaptureInputOptions: ParsableArguments {
    @OptionGroup var wire: ProtocolOptions

    @Option(help: ArgumentHelp("The host's port in pcap and pcapng input, to tell which way a packet went. Without it, the port that valid messages of the protocol go to is inferred from the first 100,000 packets (fewer once 1,000 valid messages agree) and named on standard error when it is not the default (none found: the protocol's default port). A capture with none of the protocol's messages at the port is an error (exit 65) naming the ports it holds.",
                               valueName: "port"))
    var port: UInt16?
}

/// `--threshold`, `--refractory-ms` and `--stale-resync-ms`: the host's rule, each
/// defaulting to the protocol's own (its declaration's, or the compiled protocol's spec).
struct GestureRuleOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The host's threshold τ on the protocol's quantity (`kinetrace protocol show NAME` names it): a sample above it decides a jump. Default: the protocol's.", valueName: "value"))
    var threshold: Double?

    @Option(name: .customLong("refractory-ms"),
            help: ArgumentHelp("The host's window R in ms after a decision: a refractory period on the sender's clock or a latch on the host's arrival clock, as the protocol says. Default: the protocol's.", valueName: "ms"))
    var refractoryMs: UInt64?

    @Option(name: .customLong("stale-resync-ms"),
            help: ArgumentHelp("For a window on the sender's clock: how long the host hears only stale samples from a controller before it starts it afresh, in ms of arrival time; 0 never does. Default: the protocol's.",
                               valueName: "ms"))
    var staleResyncMs: UInt64?

    /// A phone's accelerometer reads at most ±16 g; a threshold far beyond is a mistake.
    static let thresholdLimit = 1_000.0
    /// An hour: longer windows are mistakes, and they would overflow nanosecond arithmetic.
    static let refractoryLimitMs: UInt64 = 3_600_000

    func validate() throws {
        if let threshold {
            guard threshold.isFinite, abs(threshold) <= Self.thresholdLimit else {
                throw ValidationError("--threshold must be a number from -1000 to 1000.")
            }
        }
        if let refractoryMs, refractoryMs > Self.refractoryLimitMs { throw ValidationError("--refractory-ms must be at most 3600000 (an hour).") }
        if let staleResyncMs, staleResyncMs > Self.refractoryLimitMs { throw ValidationError("--stale-resync-ms must be at most 3600000 (an hour).") }
    }

    /// The rule for `wireProtocol`: what was given, the protocol's own for the rest.
    func rule(for wireProtocol: any WireProtocol) -> GestureRule {
        let own = wireProtocol.defaultRule
        return GestureRule(threshold: threshold ?? own.threshold, refractoryMs: refractoryMs ?? own.refractoryMs,
                           staleResyncMs: staleResyncMs ?? own.staleResyncMs)
    }
}

/// A report format: the values of `--format` and the default.
protocol ReportFormat: ExpressibleByArgument, CaseIterable, RawRepresentable, Sendable where RawValue == String {
    static var defaultFormat: Self { get }
    /// What each format is for, as a phrase for `--format`'s help.
    static var formatHelp: String { get }
}

/// `--format` and `--out`, for commands that write a report.
struct ReportOptions<Format: ReportFormat>: ParsableArguments {
    @Option(help: ArgumentHelp("Report format: \(Format.formatHelp).", valueName: "format"))
    var format: Format = .defaultFormat

    @Option(help: ArgumentHelp("Write the report to this file instead of standard output.", valueName: "file"), completion: .file())
    var out: String?
}

/// `--format`, for commands that print a summary to standard output.
struct SummaryFormatOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Output format: text for people, json for machines.", valueName: "format"))
    var format: OutputFormat = .text
}

extension OutputFormat: ReportFormat {
    static var defaultFormat: OutputFormat { .text }
    static var formatHelp: String { "text for people, json for machines" }
}

/// What a plot file is written as.
enum PlotFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case svg, png, pdf

    /// The format a file name's extension names, if any.
    init?(fileName: String) {
        guard let dot = fileName.lastIndex(of: "."), !fileName[dot...].contains("/") else { return nil }
        self.init(rawValue: fileName[fileName.index(after: dot)...].lowercased())
    }
}

/// `--plot-format`, for commands that draw a plot to a file (`--plot`).
struct PlotFormatOptions: ParsableArguments {
    @Option(name: .customLong("plot-format"),
            help: ArgumentHelp("The plot's format: svg is written directly; png (at twice the SVG's pixel size) and pdf are converted from it by rsvg-convert (librsvg), which must be on PATH, or the command stops at once with exit 69. Without this option the --plot file's extension (.svg, .png or .pdf) chooses, and any other name gets svg. The file is written under exactly the name given: no extension is added or changed.",
                               valueName: "format"))
    var given: PlotFormat?

    /// The format for `path`, and a usage error when the option and the file's extension disagree.
    func format(for path: String?) throws -> PlotFormat {
        guard let path else {
            if given != nil { throw ValidationError("--plot-format needs --plot FILE.") }
            return .svg
        }
        let named = PlotFormat(fileName: path)
        if let given, let named, given != named {
            throw ValidationError("--plot \(path) names a .\(named.rawValue) file but --plot-format is \(given.rawValue); name the file for its format.")
        }
        return given ?? named ?? .svg
    }

    /// The converter for png and pdf, found before any work is done; exit 69 when it is missing.
    func converter(for path: String?) throws -> PlotConverter? {
        let format = try format(for: path)
        guard format != .svg else { return nil }
        guard let executable = PlotConverter.findOnPath("rsvg-convert") else {
            printError("a \(format.rawValue) plot (--plot-format \(format.rawValue)) needs rsvg-convert (librsvg; Debian's librsvg2-bin) on PATH, and there is none; use --plot-format svg")
            throw ExitStatus.unavailable
        }
        return PlotConverter(executable: executable, format: format)
    }

    /// Writes `svg` to `path` in the chosen format.
    func write(_ svg: String, to path: String, converter: PlotConverter?) throws {
        guard let converter else { return try writeOutput(svg, to: path, what: "the plot") }
        try writeOutput(bytes: try converter.convert(svg), to: path, what: "the plot")
    }
}

/// `--start` and `--end`: a stretch of the input by time. An MCAP trace seeks to it
/// through its chunk index; other inputs are read from the start and cut.
struct TraceWindowOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Read only records at least this many seconds after the input's first record. An MCAP trace (.mcap) seeks there through its index without reading what comes before.", valueName: "seconds"))
    var start: Double?

    @Option(help: ArgumentHelp("Read only records less than this many seconds after the input's first record.", valueName: "seconds"))
    var end: Double?

    func validate() throws {
        if let start { guard start.isFinite, start >= 0, start <= 1e9 else { throw ValidationError("--start must be a number of seconds from 0 to 1000000000.") } }
        if let end { guard end.isFinite, end > (start ?? 0), end <= 1e9 else { throw ValidationError("--end must be after --start (and above 0), at most 1000000000 s.") } }
    }

    /// The window, or nil for the whole input.
    var window: TraceWindow? {
        guard start != nil || end != nil else { return nil }
        return TraceWindow(startNs: Int64((start ?? 0) * 1e9), endNs: end.map { Int64($0 * 1e9) })
    }
}

extension TraceCompression: ExpressibleByArgument {}

/// `--compression`: how an MCAP trace's chunks are compressed.
struct TraceOutputOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Compress an MCAP trace's chunks (.mcap): none or zstd. A JSON Lines trace is gzip-compressed by naming it .jsonl.gz.", valueName: "method"))
    var compression: TraceCompression = .none
}
