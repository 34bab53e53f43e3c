#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CKinetraceSystem

/// Wall-clock and monotonic time without Foundation.
package enum SystemClock {
    /// CLOCK_REALTIME in nanoseconds since the UNIX epoch.
    package static func realtimeNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    package static func monotonicNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// Sleeps until an absolute CLOCK_MONOTONIC deadline: no drift accumulates,
/// however long each send took.
package enum DeadlineClock {
    /// Sleeps until `spinNs` before the deadline, then spins on the clock for
    /// the rest: kernel wake-ups land tens to hundreds of µs late (timer slack,
    /// a virtual CPU's scheduling), a short spin does not.
    /// A deadline already past, or within the spin, costs no system call: at
    /// 100,000 sends a second each sleep call would cost more than the send.
    package static func wait(untilMonotonicNs deadline: Int64, spinNs: Int64) {
        let now = SystemClock.monotonicNs()
        guard now < deadline else { return }
        if deadline - now > spinNs { sleep(untilMonotonicNs: spinNs > 0 ? deadline - spinNs : deadline) }
        while spinNs > 0 && SystemClock.monotonicNs() < deadline {}
    }

    package static func sleep(untilMonotonicNs deadline: Int64) {
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

extension DeadlineClock {
    /// Linux lets a normal thread's timed sleeps end up to 50 µs late (timer
    /// slack) to batch wake-ups; a sender wants its deadline, not a batch.
    /// Applies to the calling thread; false where unsupported.
    @discardableResult
    package static func tightenTimerSlack() -> Bool { kinetrace_set_timer_slack(1) == 0 }
}

/// How well this machine's wall clock is disciplined, as its kernel reports it: what a
/// replay started on one agreed instant by several machines is off by (their clocks'
/// errors add directly to every send's timing error).
package struct ClockDiscipline: Hashable, Sendable {
    /// Whether NTP or PTP keeps CLOCK_REALTIME synchronised (the kernel's STA_UNSYNC is clear).
    package var synchronized: Bool
    /// The offset the discipline last corrected, ns.
    package var offsetNs: Int64
    /// The kernel's maximum and estimated error of CLOCK_REALTIME, ns.
    package var maxErrorNs: Int64
    package var estimatedErrorNs: Int64

    /// The kernel's current view (Linux adjtimex, read only); nil where unsupported.
    package static func current() -> ClockDiscipline? {
        var synchronized: Int32 = 0
        var offset: Int64 = 0, maxError: Int64 = 0, estimated: Int64 = 0
        guard kinetrace_clock_discipline(&synchronized, &offset, &maxError, &estimated) == 0 else { return nil }
        return ClockDiscipline(synchronized: synchronized != 0, offsetNs: offset, maxErrorNs: maxError, estimatedErrorNs: estimated)
    }
}
