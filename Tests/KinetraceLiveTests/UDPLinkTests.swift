#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTransport
import Testing

/// The replayer's UDP link at scale: replies come through a readiness set
/// (epoll) that reports only the ready sockets, and carry the kernel's
/// arrival stamp, so a reply read late is still timed when it arrived.
@Suite struct UDPLinkTests {
    /// A bare UDP socket on 127.0.0.1, port 0: the "host".
    final class PlainHost {
        let fd: Int32
        let port: UInt16

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            try #require(fd >= 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(bound == 0)
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            self.fd = fd
            port = UInt16(bigEndian: address.sin_port)
        }

        deinit { close(fd) }

        /// Receives one datagram (blocking) and sends `reply` back to its sender.
        func answer(with reply: [UInt8]) -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: 2048)
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = withUnsafeMutablePointer(to: &peer) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
            }
            _ = withUnsafePointer(to: &peer) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, reply, reply.count, 0, $0, length) }
            }
            return Array(buffer.prefix(max(0, n)))
        }
    }

    @Test func aReplyReadLateIsTimedWhenItArrived() throws {
        let host = try PlainHost()
        let link = openLinkForTest(port: host.port)
        defer { _ = link.finish(graceMs: 0) }
        _ = try link.openControllers(3)
        #if os(Linux)
        #expect(link.stampsArrivals, "Linux stamps each reply's arrival (SO_TIMESTAMPNS)")
        #endif
        // On a loaded machine the kernel may deliver a loopback datagram late (its softirq deferred to
        // ksoftirqd): then the reply really arrived late, and the attempt says nothing. Up to 5 attempts.
        for attempt in 1...5 {
            let sentMono = SystemClock.monotonicNs()
            #expect(link.send([1, 2, 3], from: 1, deadlineMonotonicNs: sentMono + 1_000_000_000) == nil)
            #expect(host.answer(with: [9, 8]) == [1, 2, 3])
            let answeredMono = SystemClock.monotonicNs()
            usleep(80_000)  // the reply waits, unread, for 80 ms
            var events: [LinkEvent] = []
            for _ in 0..<50 where events.isEmpty { link.receive(timeoutMs: 20) { events.append($0) } }
            let readMono = SystemClock.monotonicNs()
            guard case .datagram(let controller, let payload, let arrival)? = events.first else {
                Issue.record("no reply: \(events)"); return
            }
            #expect(controller == 1 && payload == [9, 8])
            #expect(arrival >= sentMono && arrival <= readMono)
            guard link.stampsArrivals else { return }
            if arrival - answeredMono > 20_000_000 && attempt < 5 { continue }  // delivered late by the kernel: try again
            #expect(readMono - arrival >= 60_000_000, "stamped on arrival, not on reading: read \(Double(readMono - arrival) / 1e6) ms later")
            return
        }
    }

    /// Of 2,000 watched sockets, a wait reports the one that has input, by its tag.
    @Test func aReadinessSetReportsOnlyTheReadySocket() throws {
        guard let set = ReadinessSet() else { return }  // no epoll here: callers poll, and so does this link
        let host = try PlainHost()
        let link = openLinkForTest(port: host.port)
        _ = try link.openControllers(2_000)
        let sender = 1_234
        #expect(link.send([7], from: sender, deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000) == nil)
        _ = host.answer(with: [42])
        var ready: [Int] = []
        for _ in 0..<50 where ready.isEmpty {
            link.receive(timeoutMs: 20) { event in
                if case .datagram(let controller, _, _) = event { ready.append(controller) }
            }
        }
        #expect(ready == [sender])
        // The set itself: an unwatched wait times out with nothing.
        var tags: [UInt32] = []
        set.wait(timeoutMs: 1) { tags.append($0) }
        #expect(tags.isEmpty)
        _ = link.finish(graceMs: 0)
    }

    private func openLinkForTest(port: UInt16) -> NetworkControllerLink {
        NetworkControllerLink(target: TransportTarget(Transports.udp, try! SocketAddressBox.resolve("127.0.0.1:\(port)")))
    }
}
