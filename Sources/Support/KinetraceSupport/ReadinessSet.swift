#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CKinetraceSystem

/// Descriptors watched for input, each with a tag, where a wait returns only
/// the ready ones: epoll on Linux. `poll` walks every descriptor on every
/// call, which with ten thousand controller sockets costs milliseconds per
/// wait; this costs what the ready ones cost. Nil where unsupported: callers
/// keep a `poll` path.
package final class ReadinessSet: @unchecked Sendable {  // the descriptor is fixed; the tag buffer belongs to the waiting thread
    private let descriptor: Int32
    private var tags = [UInt32](repeating: 0, count: 256)

    package init?() {
        let descriptor = kinetrace_readiness_create()
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Watches `fd` for input, reported as `tag`; errno on failure.
    package func add(_ fd: Int32, tag: UInt32) -> Int32? {
        kinetrace_readiness_add(descriptor, fd, tag) == 0 ? nil : errno
    }

    /// Stops watching `fd` (a connection that ended: it would poll ready forever); errno on failure.
    package func remove(_ fd: Int32) -> Int32? {
        kinetrace_readiness_remove(descriptor, fd) == 0 ? nil : errno
    }

    /// Waits up to `timeoutMs` and hands each ready tag to `handle`, at most 256 a call.
    package func wait(timeoutMs: Int32, _ handle: (UInt32) -> Void) {
        let count = tags.withUnsafeMutableBufferPointer { kinetrace_readiness_wait(descriptor, $0.baseAddress, Int32($0.count), timeoutMs) }
        guard count > 0 else { return }
        for index in 0..<Int(count) { handle(tags[index]) }
    }
}
