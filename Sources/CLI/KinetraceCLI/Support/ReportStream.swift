import ArgumentParser
import KinetraceJSON
import KinetraceSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A report written to its destination as it is rendered, a chunk at a time, instead of
/// held whole: `latency` at a million frames made 67 MB of JSON, held as bytes, then as a
/// String, then as bytes again to write. Renderers put their bytes in `pending` and call
/// `flush()` between elements (a line, a controller's object), so a chunk never splits a
/// value and `InputSpool.userFacing` sees each path whole.
///
/// Every write is checked: the first failure (a full disk, /dev/full, a closed pipe) is
/// kept, later output is dropped, and `finish()` reports it as one line and exit 74, and
/// removes a partial output file. A file being written is in `PartialOutputs` until
/// `finish()`, so a signal removes it too.
final class ReportStream {
    /// Bytes rendered and not yet written.
    var pending: [UInt8] = []
    private let destination: Destination
    private let what: String
    private var writeError: String?
    /// What a `collected` report holds.
    private var collectedBytes: [UInt8] = []
    /// A chunk is written once this many bytes are pending.
    static let chunkBytes = 1 << 16

    private enum Destination {
        case standardOutput
        case file(POSIXFile, path: String)
        case memory
    }

    /// Opens the file at `path` (truncating it), or standard output when there is none.
    /// A file that cannot be created is one line naming `what`, then `failure`.
    init(to path: String?, what: String = "the report", failure: ExitCode = ExitStatus.cannotCreate) throws {
        self.what = what
        guard let path else {
            fflush(nil)  // anything printed before goes first
            destination = .standardOutput
            return
        }
        PartialOutputs.begin(path)
        do throws(FileError) {
            destination = .file(try POSIXFile(path: path, mode: .createTruncate), path: path)
        } catch {
            PartialOutputs.end(path)
            printError("\(path): cannot write \(what): \(error.message)")
            throw failure
        }
        pending.reserveCapacity(Self.chunkBytes + 4096)
    }

    /// Keeps everything in memory, for `text`: the whole report as one string.
    private init(collecting: Void) {
        what = "the report"
        destination = .memory
    }

    /// Renders with `render` into memory and returns the text, as the report's file would hold it.
    static func collected(_ render: (ReportStream) -> Void) -> String {
        let stream = ReportStream(collecting: ())
        render(stream)
        stream.flush(force: true)
        return String(decoding: stream.collectedBytes, as: UTF8.self)
    }

    /// Appends a line and its newline.
    func line(_ text: String) {
        var text = text
        text.withUTF8 { pending.append(contentsOf: $0) }
        pending.append(UInt8(ascii: "\n"))
        flush()
    }

    /// Writes what is pending once it reaches a chunk, or now with `force`.
    func flush(force: Bool = false) {
        guard force || pending.count >= Self.chunkBytes, !pending.isEmpty else { return }
        defer { pending.removeAll(keepingCapacity: true) }
        guard writeError == nil else { return }
        switch destination {
        case .memory:
            collectedBytes.append(contentsOf: pending)
        case .standardOutput:
            write(InputSpool.userFacing(bytes: pending), to: nil)
        case .file(let file, _):
            write(InputSpool.userFacing(bytes: pending), to: file)
        }
    }

    /// Writes all of `bytes` to `file`, or standard output; keeps the first failure.
    private func write(_ bytes: [UInt8], to file: POSIXFile?) {
        bytes.withUnsafeBytes { raw in
            do throws(FileError) {
                if let file { try file.write(raw) } else { try Self.writeStandardOutput(raw) }
            } catch {
                writeError = error.message
            }
        }
    }

    private static func writeStandardOutput(_ bytes: UnsafeRawBufferPointer) throws(FileError) {
        var offset = 0
        while offset < bytes.count {
            let n = writeDescriptor(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            throw FileError(.io, path: "standard output", message: "cannot write: \(String(cString: strerror(n < 0 ? errno : EIO)))")
        }
    }

    /// Writes the rest and closes the file; a write that failed is one line and exit 74, and
    /// the partial file is removed.
    func finish() throws {
        flush(force: true)
        guard case .file(let file, let path) = destination else {
            if let writeError {
                printError("standard output: cannot write \(what): \(writeError)")
                throw ExitStatus.ioError
            }
            return
        }
        defer { PartialOutputs.end(path) }
        if writeError == nil {
            do throws(FileError) { try file.close() } catch { writeError = error.message }
        }
        if let writeError {
            try? file.close()
            PartialOutputs.removeIfRegular(path)
            printError("\(path): cannot write \(what): \(writeError)")
            throw ExitStatus.ioError
        }
    }
}

extension ReportStream {
    /// Takes what `out` holds once it reaches a chunk (or now, with `force`), leaving it empty.
    func take(_ out: inout JSONOutput, force: Bool = false) {
        guard force || out.bytes.count >= Self.chunkBytes else { return }
        pending.append(contentsOf: out.bytes)
        out.bytes.removeAll(keepingCapacity: true)
        flush(force: force)
    }
}

/// write(2) under a name the class's own `write` does not shadow (Glibc.write is not Darwin's).
private func writeDescriptor(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
