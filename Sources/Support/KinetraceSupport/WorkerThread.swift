#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain pthread for an engine's loop (a receive loop, a sender with
/// absolute deadlines). Foundation's Thread is avoided to keep engines
/// Foundation-free.
package final class WorkerThread: @unchecked Sendable {  // `thread` is written once, before the body can run
    private var thread: pthread_t?
    private var joined = false
    private let body: () -> Void

    package init(_ body: @escaping () -> Void) {
        self.body = body
        let box = Unmanaged.passRetained(self)
        #if canImport(Darwin)
        var handle: pthread_t?
        #else
        var handle = pthread_t()
        #endif
        pthread_create(&handle, nil, { context in
            let me = Unmanaged<WorkerThread>.fromOpaque(context!).takeRetainedValue()
            me.body()
            return nil
        }, box.toOpaque())
        thread = handle
    }

    /// Waits for the body to return (once; later calls return at once).
    package func join() {
        guard !joined, let thread else { return }
        joined = true
        pthread_join(thread, nil)
    }
}

/// Process-wide descriptor limits.
package enum DescriptorLimit {
    /// Raises the soft limit on open files to the hard limit, so a replay can
    /// hold one socket per controller (1,000 controllers exceed the usual
    /// soft limit of 1,024 once files and pipes are counted). Returns the new soft limit.
    @discardableResult
    package static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    #if canImport(Glibc)
    private static let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
    #endif
}
