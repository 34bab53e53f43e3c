#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import NIOConcurrencyHelpers

/// A command run through `/bin/sh -c`, with one end of a UNIX stream
/// socketpair as its stdin and stdout (specs/stdio-adapter-v1.md) and
/// stderr inherited. A socket rather than two pipes: writes can say
/// "no SIGPIPE" per call, so a dead child is an EPIPE, not a killed replayer.
package final class ChildProcess: @unchecked Sendable {  // fd and pid are immutable; status is guarded by `lock`
    package let command: String
    package let pid: pid_t
    /// Our end of the socketpair, non-blocking.
    package let fd: Int32
    private var status: Int32?
    private let lock = NIOLock()

    package init(command: String) throws(SocketError) {
        self.command = command
        var pair: [Int32] = [-1, -1]
        #if canImport(Glibc) || canImport(Musl)
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let type = SOCK_STREAM
        #endif
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { throw .fromErrno("socketpair") }
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(pair[0], SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
        posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child gets default signal handling even if we ignore or catch some.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // Its own process group: `sh -c` may fork rather than exec, so signals go to the whole group.
        posix_spawnattr_setpgroup(&attributes, 0)
        // …and no blocked signals, whatever this process blocks (its signal thread blocks SIGINT and SIGTERM).
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK))
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        defer { argv.forEach { free($0) } }
        var child = pid_t()
        let spawned = posix_spawn(&child, "/bin/sh", &actions, &attributes, argv, environ)
        close(pair[1])
        guard spawned == 0 else {
            close(pair[0])
            throw SocketError("cannot run /bin/sh -c \(command): \(String(cString: strerror(spawned)))")
        }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        pid = child
        fd = pair[0]
    }

    deinit {
        _ = terminate(graceMs: 0)
        close(fd)
    }

    /// Writes all of `bytes`, waiting for room up to `deadlineMonotonicNs`.
    /// Returns errno on failure (EPIPE: the child closed its stdin or died;
    /// ETIMEDOUT: it stopped reading).
    package func write(_ bytes: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + written, raw.count - written, noSignal)
            }
            if n > 0 { written += n; continue }
            let error = errno
            guard n < 0, error == EAGAIN || error == EWOULDBLOCK || error == EINTR else { return n == 0 ? EPIPE : error }
            let remainingMs = (deadlineMonotonicNs - SystemClock.monotonicNs()) / 1_000_000
            guard remainingMs > 0 else { return ETIMEDOUT }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&pfd, 1, Int32(min(remainingMs, 1000)))
        }
        return nil
    }

    /// Closes our write side: the child reads end of file on stdin.
    package func closeInput() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// The exit status if the child has exited (reaps it), else nil.
    package func exitStatus() -> Int32? {
        lock.withLock {
            if let status { return status }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
            return status
        }
    }

    /// Waits up to `graceMs` for the child to exit, then sends SIGTERM, waits
    /// again, then SIGKILL. Returns the raw wait status.
    @discardableResult
    package func terminate(graceMs: Int) -> Int32 {
        func waitFor(_ ms: Int) -> Int32? {
            let deadline = SystemClock.monotonicNs() + Int64(ms) * 1_000_000
            repeat {
                if let status = exitStatus() { return status }
                usleep(5_000)
            } while SystemClock.monotonicNs() < deadline
            return exitStatus()
        }
        if let status = waitFor(graceMs) { return status }
        kill(-pid, SIGTERM)
        if let status = waitFor(1_000) { kill(-pid, SIGKILL); return status }  // leftovers of the group, if any
        kill(-pid, SIGKILL)
        return lock.withLock {
            var raw: Int32 = 0
            if status == nil, waitpid(pid, &raw, 0) == pid { status = raw }
            return status ?? raw
        }
    }

    /// "exited with status 3", "was killed by signal 9".
    package static func describe(status raw: Int32) -> String {
        let signal = raw & 0x7F
        if signal == 0 { return "exited with status \((raw >> 8) & 0xFF)" }
        return "was killed by signal \(signal) (\(String(cString: strsignal(signal))))"
    }

    #if canImport(Glibc) || canImport(Musl)
    private let noSignal = Int32(MSG_NOSIGNAL)
    #else
    private let noSignal: Int32 = 0  // SO_NOSIGPIPE is set on the socket instead
    #endif
}
