#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Sleeps until an absolute CLOCK_MONOTONIC deadline: no drift accumulates,
/// however long each send took.
public enum DeadlineClock {
    /// Sleeps until `spinNs` before the deadline, then spins on the clock for
    /// the rest: kernel wake-ups land tens to hundreds of µs late (timer slack,
    /// a virtual CPU's scheduling), a short spin does not.
    public static func wait(untilMonotonicNs deadline: Int64, spinNs: Int64) {
        if spinNs > 0 { sleep(untilMonotonicNs: deadline - spinNs) } else { sleep(untilMonotonicNs: deadline) }
        while spinNs > 0 && SystemClock.monotonicNs() < deadline {}
    }

    public static func sleep(untilMonotonicNs deadline: Int64) {
        #if os(Linux)
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
        #else
        let remaining = deadline - SystemClock.monotonicNs()
        guard remaining > 0 else { return }
        var ts = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
        while nanosleep(&ts, &ts) != 0 && errno == EINTR {}
        #endif
    }
}

/// A pthread mutex, for state an engine shares between its threads.
public final class Lock: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    public init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}
