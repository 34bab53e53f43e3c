#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport

/// One datagram each from many distinct loopback sources (address and port), to a host on
/// IPv4 loopback: what a spoofer with a million addresses looks like to a host's controller
/// table, without leaving the machine. Linux answers for all of 127.0.0.0/8; macOS only for
/// the addresses configured on lo0, where binding fails and the caller learns why.
package enum LoopbackSources {
    /// Sources are 127.101.X.Y (Y from 1 to 250) with ports from `firstPort`, `portsPerAddress` each.
    static let firstPort: UInt16 = 40_000
    static let portsPerAddress = 1_000

    package enum Outcome: Sendable {
        /// Sent from this many distinct sources (binds refused as in use are skipped).
        case sent(Int)
        /// The host is not on IPv4 loopback, or the machine cannot bind such sources: why.
        case unavailable(String)
    }

    /// Sends `payload(i)` from the i-th of `count` distinct sources, pacing at about
    /// `perSecond` datagrams so a host's receive buffer is not simply overrun. Sources
    /// are numbered from `firstSource`, so calls in turn can use sources none used before.
    package static func send(count: Int, firstSource: Int = 0, to host: SocketAddressBox, perSecond: Int = 50_000,
                            payload: (Int) -> [UInt8]) -> Outcome {
        guard host.family == AF_INET else { return .unavailable("the host is not on IPv4 loopback") }
        let hostIPv4 = withUnsafeBytes(of: host.storage) { raw in
            raw.load(fromByteOffset: MemoryLayout<sockaddr_in>.offset(of: \sockaddr_in.sin_addr)!, as: in_addr.self)
        }
        guard UInt32(bigEndian: hostIPv4.s_addr) >> 24 == 127 else {
            return .unavailable("the host is not on loopback: distinct sources are made on 127.0.0.0/8 only")
        }
        guard count > 0, firstSource >= 0, firstSource + count <= 250 * 250 * portsPerAddress else {
            return .unavailable("cannot make sources \(firstSource) to \(firstSource + count)")
        }
        var sent = 0, attempt = firstSource
        let batch = max(1, perSecond / 100)
        var batchStarted = SystemClock.monotonicNs()
        while sent < count {
            // Skip sources in use; give up when far more binds fail than succeed.
            guard attempt - firstSource < 2 * count + 1_000, attempt < 250 * 250 * portsPerAddress else { return .unavailable("only \(sent) of \(count) loopback sources could be bound") }
            let address = attempt / portsPerAddress
            let port = firstPort + UInt16(attempt % portsPerAddress)
            attempt += 1
            var source = sockaddr_in()
            source.sin_family = sa_family_t(AF_INET)
            source.sin_port = port.bigEndian
            source.sin_addr.s_addr = (UInt32(127) << 24 | UInt32(101) << 16 | UInt32(address / 250) << 8 | UInt32(address % 250 + 1)).bigEndian
            #if canImport(Glibc) || canImport(Musl)
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            #else
            let fd = socket(AF_INET, SOCK_DGRAM, 0)
            #endif
            guard fd >= 0 else { return .unavailable("socket: \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            let bound = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound != 0 {
                if errno == EADDRINUSE { continue }
                return .unavailable("cannot bind a source on 127.101.0.0/16 (\(String(cString: strerror(errno)))): "
                                    + "this machine's loopback answers for 127.0.0.1 only")
            }
            var target = host.storage
            let bytes = payload(sent)
            let n = bytes.withUnsafeBytes { raw in
                withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, host.length) }
                }
            }
            guard n == bytes.count else { return .unavailable("sendto: \(String(cString: strerror(errno)))") }
            sent += 1
            if sent % batch == 0 {
                // Each batch takes at least 10 ms: about `perSecond` in all.
                let due = batchStarted + 10_000_000
                let now = SystemClock.monotonicNs()
                if due > now { usleep(UInt32((due - now) / 1_000)) }
                batchStarted = max(due, SystemClock.monotonicNs())
            }
        }
        return .sent(sent)
    }
}
