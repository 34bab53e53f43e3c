#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import NIOConcurrencyHelpers

/// SIGINT and SIGTERM, taken with sigwait(2) on a thread of their own.
///
/// Dispatch signal sources proved unreliable on Linux: a signal the kernel
/// handed to one of NIO's or libdispatch's threads could stay pending there
/// and never reach the source, leaving a host that ignored SIGTERM. Blocking
/// both signals before any thread exists, so every thread inherits the
/// block, and waiting for them on one thread works whichever thread the
/// kernel picks.
package enum TerminationSignals {
    private static let lock = NIOLock()
    nonisolated(unsafe) private static var handler: (@Sendable (Int32) -> Void)?
    nonisolated(unsafe) private static var handled = false
    nonisolated(unsafe) private static var waiter: WorkerThread?
    nonisolated(unsafe) private static var received: Int32?

    /// Call first in `main`, before anything starts a thread.
    package static func install() {
        var set = terminationSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
        lock.withLock {
            guard waiter == nil else { return }
            waiter = WorkerThread { waitForever() }
        }
    }

    static func register(_ body: @escaping @Sendable (Int32) -> Void) {
        lock.withLock {
            handler = body
            handled = false
        }
    }

    static func unregister() { lock.withLock { handler = nil } }

    private static func waitForever() {
        var set = terminationSet()
        while true {
            var number: Int32 = 0
            guard sigwait(&set, &number) == 0 else { continue }
            let body: (@Sendable (Int32) -> Void)? = lock.withLock {
                if received == nil { received = number }
                guard let handler, !handled else { return nil }
                handled = true
                return handler
            }
            // A command that handles the signal gets the first one; without one,
            // or on a second signal, the process ends as the signal would end it.
            guard let body else {
                PartialOutputs.removeAll()
                InputSpool.removeAll()
                _exit(128 + number)
            }
            body(number)
        }
    }

    /// The exit status for a run a signal stopped: 128 plus the first signal's number, as a
    /// shell reports a command the signal killed (130 for SIGINT, 143 for SIGTERM).
    static var interruptedStatus: Int32 { 128 + (lock.withLock { received } ?? SIGINT) }

    private static func terminationSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        return set
    }
}

/// Runs `handler` on the first SIGINT or SIGTERM while the returned token
/// lives (on the signal thread, not in signal context); a second signal ends
/// the process. Without `TerminationSignals.install()` (embedding), it does nothing.
func onTermination(_ handler: @escaping @Sendable (Int32) -> Void) -> TerminationHandlerToken {
    TerminationSignals.register(handler)
    return TerminationHandlerToken()
}

final class TerminationHandlerToken {
    deinit { TerminationSignals.unregister() }
}

/// Prints a line and flushes, so a parent reading our stdout through a pipe sees it at once.
func printNow(_ line: String) {
    print(line)
    fflush(nil)  // flushes every stream; `stdout` itself is not concurrency-safe to name
}

/// Output files being written. A signal that ends the process before one is finished removes
/// it (half a file passes for a whole one) and says so; commands that stop cleanly on a signal
/// finish or remove theirs themselves. Only regular files are removed: never a device or pipe.
enum PartialOutputs {
    private static let lock = NIOLock()
    nonisolated(unsafe) private static var paths: [String] = []

    static func begin(_ path: String) { lock.withLock { paths.append(path) } }

    /// The file is complete, or its writer removed it.
    static func end(_ path: String) {
        lock.withLock { if let i = paths.lastIndex(of: path) { paths.remove(at: i) } }
    }

    /// Runs `body` with `path` counted as unfinished until it returns.
    static func writing<T, E: Error>(_ path: String, _ body: () throws(E) -> T) throws(E) -> T {
        begin(path)
        defer { end(path) }
        return try body()
    }

    fileprivate static func removeAll() {
        let unfinished = lock.withLock { paths }
        for path in unfinished where removeIfRegular(path) {
            writeStandardError("kinetrace: interrupted: removed the unfinished \(TerminalText.escaped(path))\n")
        }
    }

    /// Removes a half-written output, if it is a regular file (never a device such as /dev/full, or a pipe).
    @discardableResult
    static func removeIfRegular(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        return unlink(path) == 0
    }
}
