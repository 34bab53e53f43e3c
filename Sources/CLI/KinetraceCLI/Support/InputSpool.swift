import Foundation
import KinetraceSupport
import KinetraceTrace
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Inputs that can be read only once: standard input (`-`), a pipe, a FIFO, `/dev/stdin`,
/// `<(zcat …)`, a character device. The readers open a file by path, sniff its first bytes,
/// and may read a capture twice (to find the host's port) or a trace twice (merge checks
/// before it writes); each of those opens of a FIFO took bytes the next one never saw, or
/// blocked for ever. Such an input is read once, in full, into a private file that the
/// readers then open as often as they need, and that is removed when the process ends
/// (normally, on an error, or by a signal). Regular files are read in place.
///
/// Messages and reports name the input as the user gave it, not the private copy.
enum InputSpool {
    private static let lock = NIOLock()
    nonisolated(unsafe) private static var copies: [(copy: String, original: String)] = []
    nonisolated(unsafe) private static var cleanupInstalled = false

    /// A path the readers may open as often as they need for the input the user named `path`.
    static func readablePath(_ path: String) throws(TraceError) -> String {
        if path != "-" {
            var info = stat()
            // A missing file, a directory or a regular file: the reader opens it and says what is wrong.
            guard stat(path, &info) == 0 else { return path }
            let type = info.st_mode & S_IFMT
            if type == S_IFREG || type == S_IFDIR { return path }
            // A pipe, a FIFO, a socket or a terminal is a stream someone writes; any other device
            // (/dev/zero, /dev/urandom) would be copied until the disk filled.
            if type == S_IFCHR || type == S_IFBLK, !isTerminal(path) {
                throw TraceError(.unreadable, source: path, message: "is a device, not a trace or capture (give a file, a pipe or -)")
            }
        }
        // Copies are registered under the name shown to the user: "-" is "standard input".
        let shownName = path == "-" ? "standard input" : path
        if let known = lock.withLock({ copies.first { $0.original == shownName }?.copy }) { return known }
        return try spool(path)
    }

    private static func isTerminal(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { _ = close(descriptor) }
        return isatty(descriptor) != 0
    }

    private static func spool(_ path: String) throws(TraceError) -> String {
        let shownName = path == "-" ? "standard input" : path
        let source: POSIXFile
        do throws(FileError) {
            source = try POSIXFile(path: path == "-" ? "/dev/stdin" : path, mode: .read)
        } catch {
            throw TraceError(error.code == .notFound ? .notFound : .unreadable, source: shownName, message: error.message)
        }
        let directory = temporaryDirectory()
        var template = Array("\(directory)/kinetrace-input-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw TraceError(.io, source: shownName, message: "cannot keep a copy of it to read in \(directory): \(String(cString: strerror(errno)))")
        }
        _ = close(descriptor)
        let copyPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        register(copy: copyPath, original: shownName)
        do throws(FileError) {
            let copy = try POSIXFile(path: copyPath, mode: .createTruncate)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                let n = try source.read(into: buffer)
                if n == 0 { break }
                try copy.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            }
            try copy.close()
            try source.close()
        } catch {
            unlink(copyPath)
            let place = error.path == copyPath ? "cannot keep a copy of it to read in \(directory): \(error.message)" : error.message
            throw TraceError(.io, source: shownName, message: place)
        }
        return copyPath
    }

    private static func temporaryDirectory() -> String {
        if let value = getenv("TMPDIR") {
            let directory = String(cString: value)
            var info = stat()
            if !directory.isEmpty, stat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { return directory }
        }
        return "/tmp"
    }

    private static func register(copy: String, original: String) {
        lock.withLock {
            copies.append((copy, original))
            if !cleanupInstalled {
                cleanupInstalled = true
                atexit { InputSpool.removeAll() }
            }
        }
    }

    /// `text` with every private copy's path replaced by the name the user gave.
    static func userFacing(_ text: String) -> String {
        let known = lock.withLock { copies }
        guard !known.isEmpty else { return text }
        var text = text
        for entry in known where text.contains(entry.copy) {
            text = text.replacingOccurrences(of: entry.copy, with: entry.original)
        }
        return text
    }

    /// `userFacing` for a chunk of a report; the bytes as they are when no copy was made.
    static func userFacing(bytes: [UInt8]) -> [UInt8] {
        guard lock.withLock({ !copies.isEmpty }) else { return bytes }
        return Array(userFacing(String(decoding: bytes, as: UTF8.self)).utf8)
    }

    /// Removes every private copy (at exit, and before a signal ends the process).
    static func removeAll() {
        let known = lock.withLock { copies }
        for entry in known { unlink(entry.copy) }
    }
}
