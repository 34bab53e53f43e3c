import ArgumentParser
import Foundation
import KinetraceSupport
import KinetraceTrace
import KinetracePcap
import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The exit statuses every command uses: 0, 1 for a check that failed, and
/// sysexits(3) codes for everything else (usage errors, 64, come from
/// ArgumentParser). `kinetrace --help` lists them.
enum ExitStatus {
    static let dataError = ExitCode(65)
    static let noInput = ExitCode(66)
    /// A network service could not be had: a port in use, a host that refuses.
    static let unavailable = ExitCode(69)
    /// An output file cannot be created.
    static let cannotCreate = ExitCode(73)
    static let ioError = ExitCode(74)
    /// A run that ran out of time (EX_TEMPFAIL).
    static let timedOut = ExitCode(75)
    /// The peer broke the protocol or never answered (EX_PROTOCOL).
    static let protocolFailure = ExitCode(76)
    /// Stopped by SIGINT (130) or SIGTERM (143): 128 plus the signal's number, as shells report it.
    static var interrupted: ExitCode { ExitCode(TerminationSignals.interruptedStatus) }

    static func forTraceError(_ error: TraceError) -> ExitCode {
        switch error.code {
        case .notFound, .unreadable: return noInput
        case .cannotCreate: return cannotCreate
        case .io: return ioError
        default: return dataError
        }
    }
}

/// Prints one line to standard error (and keeps it for a harness-error report).
func printError(_ message: String) {
    // Messages quote input (paths, sources, header fields): one line, no control characters acting.
    let message = TerminalText.escaped(InputSpool.userFacing(message))
    ErrorLines.record(message)
    var stderr = StandardError()
    print("kinetrace: error: \(message)", to: &stderr)
}

func printWarning(_ message: String) {
    var stderr = StandardError()
    print("kinetrace: warning: \(TerminalText.escaped(InputSpool.userFacing(message)))", to: &stderr)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) { writeStandardError(string) }
}

/// Writes straight to file descriptor 2 (the C `stderr` global is not concurrency-safe).
func writeStandardError(_ string: String) {
    var bytes = Array(string.utf8)
    bytes.withUnsafeMutableBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = write(STDERR_FILENO, raw.baseAddress! + offset, raw.count - offset)
            if n <= 0 { if n < 0 && errno == EINTR { continue } else { return } }
            offset += n
        }
    }
}

/// Runs `body`, turning a `TraceError` into its one-line message and exit code.
func reportingFailures<T>(_ body: () throws(TraceError) -> T) throws -> T {
    do throws(TraceError) {
        return try body()
    } catch {
        printError(error.description)
        throw ExitStatus.forTraceError(error)
    }
}

/// Whether standard error, where progress lines are drawn, is a terminal.
var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }

/// A one-line progress counter on standard error, shown only when standard
/// error is a terminal and redrawn at most four times a second.
struct Progress {
    let enabled = stderrIsTerminal
    let label: String
    private var lastDrawNs: Int64 = 0

    init(label: String) { self.label = label }

    mutating func update(_ count: Int, of total: Int? = nil) {
        guard enabled, count & 0x3FFF == 0 else { return }
        let now = SystemClock.monotonicNs()
        guard now - lastDrawNs > 250_000_000 else { return }
        lastDrawNs = now
        let suffix = total.map { " of \($0)" } ?? ""
        writeStandardError("\r\(label): \(count)\(suffix)…")
    }

    /// Shows "LABEL: DONE of TOTAL UNIT…" after every step of a short count (a few dozen cases).
    mutating func step(_ done: Int, of total: Int, unit: String) {
        guard enabled else { return }
        lastDrawNs = SystemClock.monotonicNs()
        writeStandardError("\r\(label): \(done) of \(total) \(unit)…\u{1B}[K")
    }

    func finish() {
        if enabled && lastDrawNs != 0 { writeStandardError("\r\u{1B}[K") }
    }
}

enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case text, json
}

/// Writes `text` to the file at `path`, or to standard output when there is none.
/// A file that cannot be created is one line naming `what`, then `failure`; a
/// write that fails (a full disk, /dev/full) is one line and `ioError`. The file
/// is written in place: FileManager's atomic write renamed a temporary file over
/// the path, which replaced a device such as /dev/full with a regular file and
/// ignored the failed write.
func writeOutput(_ text: String, to path: String?, what: String = "the report", failure: ExitCode = ExitStatus.cannotCreate) throws {
    let text = InputSpool.userFacing(text)
    guard let path else {
        // Standard output is checked like a file: a report to a full disk or /dev/full is exit 74, not 0.
        let stream = try ReportStream(to: nil, what: what)
        stream.pending = Array(text.utf8)
        return try stream.finish()
    }
    try PartialOutputs.writing(path) { try writeOutput(bytes: Array(text.utf8), to: path, what: what, failure: failure) }
}

/// Writes `bytes` to the file at `path`, with the same one-line errors and exit codes.
func writeOutput(bytes: [UInt8], to path: String, what: String, failure: ExitCode = ExitStatus.cannotCreate) throws {
    let file: POSIXFile
    do throws(FileError) { file = try POSIXFile(path: path, mode: .createTruncate) } catch {
        printError("\(path): cannot write \(what): \(error.message)")
        throw failure
    }
    do {
        try bytes.withUnsafeBytes { try file.write($0) }
        try file.close()
    } catch {
        printError("\(path): cannot write \(what): \((error as? FileError)?.message ?? "\(error)")")
        throw ExitStatus.ioError
    }
}

/// Prints one note to standard error: how an input was read, worth knowing but no problem.
func printNote(_ message: String) {
    var stderr = StandardError()
    print("kinetrace: note: \(TerminalText.escaped(InputSpool.userFacing(message)))", to: &stderr)
}

/// Opens a trace or capture as `TraceInput.open` does, and says how a capture's host
/// port was found when it was inferred (so a run on the wrong traffic is noticed).
func openInput(path: String, wireProtocol: (any WireProtocol)? = nil, port: UInt16? = nil,
               framed: Bool = true, carrier: CaptureCarrier = .native, window: TraceWindow? = nil) throws(TraceError) -> any TraceRecordSource {
    let source = try TraceInput.open(path: try InputSpool.readablePath(path), wireProtocol: wireProtocol, port: port, framed: framed,
                                     carrier: carrier, window: window)
    if let note = source.readingNote { printNote(note) }
    return source
}

/// `openInput`, read ahead on a thread of its own when the caller does real work per record
/// (`PrefetchingRecordSource`). Byte streams stay as they are: their unfinished streams are
/// the framing source's to report.
func openInputReadingAhead(path: String, wireProtocol: (any WireProtocol)? = nil, port: UInt16? = nil,
                           framed: Bool = true, window: TraceWindow? = nil) throws(TraceError) -> any TraceRecordSource {
    readingAhead(try openInput(path: path, wireProtocol: wireProtocol, port: port, framed: framed, window: window))
}

/// The source read ahead on a thread of its own, unless it is a byte-stream framing source.
/// From here on only the result may read it; what it counted is safe to ask once the result has ended.
func readingAhead(_ source: any TraceRecordSource) -> any TraceRecordSource {
    source is FramingRecordSource ? source : PrefetchingRecordSource(source)
}

/// After a command that succeeded: flushes what `print` buffered for standard output and says
/// whether it all got there. A summary printed to a full disk or /dev/full is one line and exit
/// 74, never 0 (stdio keeps a failed write to itself until it is asked).
package func standardOutputStatus() -> Int32 {
    errno = 0
    guard fflush(nil) != 0 else { return 0 }
    printError("standard output: cannot write: \(String(cString: strerror(errno == 0 ? EIO : errno)))")
    return ExitStatus.ioError.rawValue
}
