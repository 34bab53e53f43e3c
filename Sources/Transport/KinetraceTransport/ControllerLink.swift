#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import NIOConcurrencyHelpers

/// Where the host under test is, and how to reach it.
package enum LinkTarget: Sendable, CustomStringConvertible {
    /// A host on a transport: one connection per controller.
    case network(TransportTarget)
    /// A host run as `/bin/sh -c COMMAND` behind the stdio adapter (specs/stdio-adapter-v1.md).
    case exec(String)

    package var description: String {
        switch self {
        case .network(let target): return target.description
        case .exec(let command): return "exec: \(command)"
        }
    }

    /// A host at `address` on the transport a protocol travels on unless told otherwise.
    package static func network(_ address: SocketAddressBox, for wireProtocol: any WireProtocol) -> LinkTarget {
        .network(TransportTarget(Transports.native(for: wireProtocol), address))
    }

    /// True when each controller is a connection the host can close (`Transport.hasConnections`).
    package var controllersAreConnections: Bool { transport?.hasConnections ?? false }

    /// The same host, its transport set up for `wireProtocol` (`Transport.fitted(to:)`).
    package func fitted(to wireProtocol: any WireProtocol) -> LinkTarget {
        if case .network(let target) = self { return .network(target.fitted(to: wireProtocol)) }
        return self
    }

    /// The transport, for a host on one.
    package var transport: (any Transport)? {
        if case .network(let target) = self { return target.transport }
        return nil
    }
}

/// What the receive side of a controller link saw.
package enum LinkEvent: Sendable {
    /// A message from the host for a controller, stamped on CLOCK_MONOTONIC: as it arrived where the link has kernel stamps (`stampsArrivals`), else as it was read.
    case datagram(controller: Int, payload: [UInt8], receivedMonoNs: Int64)
    /// A decision the host reported about a controller on the stdio adapter's observation channel (SA-OBS-*).
    case observation(controller: Int, Observation, receivedMonoNs: Int64)
    /// A socket error on a controller's link (ECONNREFUSED: the host's port answered ICMP port unreachable).
    /// On TCP, the host ending a controller's connection, reported once: EPIPE when it
    /// closed it in order (FIN), ECONNRESET when it reset it; nothing more comes from it.
    case error(controller: Int, code: Int32)
    /// The host process closed its output or exited while it still had input to read.
    case hostEnded(String)
    /// The host process closed its output after its input ended, as it should (SA-END-2).
    case hostFinished
    /// The host process wrote something that is not a stdio record the harness can take.
    case protocolError(String)
}

/// The controllers' side of the link to a host under test: the replayer
/// and the conformance suite both send and receive through it. Controllers
/// are opened as needed and never reused within a link: a host keeps state
/// per controller, so a reused one would carry an earlier run's state.
///
/// One thread may send while another receives; opening controllers
/// concurrently with either is safe too.
package protocol ControllerLink: AnyObject, Sendable {
    var target: LinkTarget { get }
    /// The host's address as records name it.
    var hostEndpoint: Endpoint { get }
    /// Opens a controller the host has never seen; returns its index (0, 1, … in opening order).
    func openController() throws(SocketError) -> Int
    var controllerCount: Int { get }
    /// A controller's own address as records name it.
    func endpoint(of controller: Int) -> Endpoint
    /// Sends one message from a controller, waiting for room until `deadlineMonotonicNs`;
    /// errno on failure (EPIPE: an exec host closed its input; ETIMEDOUT: it stopped reading).
    func send(_ bytes: [UInt8], from controller: Int, deadlineMonotonicNs: Int64) -> Int32?
    /// Waits up to `timeoutMs` for traffic from the host and hands each event to `handle`.
    func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void)
    /// No more messages: an exec host reads end of file (SA-END-1).
    func endInput()
    /// True once the host can send nothing more (an exec host closed its output).
    var isDrained: Bool { get }
    /// Ends the link, giving an exec host `graceMs` to exit; how it ended, for exec.
    func finish(graceMs: Int) -> String?
    /// Bytes a controller wrote that the host has not yet taken (Linux SIOCOUTQ: TCP, and the
    /// exec link's one stream for all its controllers); nil where the link cannot tell (UDP, other platforms).
    func unsentBytes(of controller: Int) -> Int?
    /// Whether replies carry the kernel's arrival time (`LinkEvent.datagram`'s
    /// `receivedMonoNs`): then a late read costs no accuracy, and the receiving
    /// thread may batch its wake-ups.
    var stampsArrivals: Bool { get }
    /// Ends one controller's byte stream as closing its connection's write side would: TCP
    /// `shutdown(SHUT_WR)`, an exec host's empty record (SA-PAYLOAD-6). False where the link has no streams.
    func endStream(of controller: Int) -> Bool
}

extension ControllerLink {
    package func unsentBytes(of controller: Int) -> Int? { nil }
    package var stampsArrivals: Bool { false }
    package func endStream(of controller: Int) -> Bool { false }

    /// Opens `count` controllers.
    package func openControllers(_ count: Int) throws(SocketError) -> Range<Int> {
        let first = controllerCount
        for index in 0..<count {
            do throws(SocketError) { _ = try openController() } catch {
                throw SocketError("controller \(index + 1) of \(count): \(error.description)"
                                  + (errno == EMFILE ? " (raise the open-file limit: ulimit -n)" : ""))
            }
        }
        return first..<first + count
    }
}

/// Opens the link for a target.
package func openLink(to target: LinkTarget, options: ConnectionOptions = ConnectionOptions()) throws(SocketError) -> any ControllerLink {
    switch target {
    case .network(let target): return NetworkControllerLink(target: target, options: options)
    case .exec(let command): return try StdioControllerLink(command: command)
    }
}

/// A host on a transport: one connection per controller, all kept open until the link
/// finishes. Each `send` is one message, or one write of a stream (looping on partial
/// writes), so the caller's segmentation is what the host's reads can see. What the host
/// sends back arrives as `.datagram` events, one per read; a connection the host ends is
/// reported once as `.error` (EPIPE: closed in order; ECONNRESET: reset) and read no more.
/// Replies are waited for through a readiness set (epoll) where there is one, else `poll`.
package final class NetworkControllerLink: ControllerLink, @unchecked Sendable {  // connections behind `lock`; the buffer and poll set belong to the receiving thread
    package let transportTarget: TransportTarget
    package let hostEndpoint: Endpoint
    package let options: ConnectionOptions
    private let lock = NIOLock()
    private var connections: [any ControllerConnection] = []
    /// Kept after `finish`, so records and reports can still name every controller.
    private var endpoints: [Endpoint] = []
    private var polled: [pollfd] = []
    private let readiness = ReadinessSet()
    private var everyConnectionStamps = true
    // Big enough for any UDP reply, so a wrong one is judged as sent.
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    /// Connections a burst left holding input their descriptor's readiness does not show
    /// (`hasBufferedInput`): read before the next wait. The receiving thread's alone, so the
    /// sender never waits on a lock for it.
    private var buffered: [Int] = []
    /// Reads from one connection per `receive` call (up to 4 MiB of 64 KiB replies).
    static let readsPerBurst = 64

    package init(target: TransportTarget, options: ConnectionOptions = ConnectionOptions()) {
        transportTarget = target
        hostEndpoint = target.address.endpoint
        self.options = options
    }

    package var target: LinkTarget { .network(transportTarget) }

    package func openController() throws(SocketError) -> Int {
        let connection = try transportTarget.transport.connect(to: transportTarget, options: options)
        let index = lock.withLock {
            connections.append(connection)
            endpoints.append(connection.local)
            everyConnectionStamps = everyConnectionStamps && connection.stampsArrivals
            return connections.count - 1
        }
        if let readiness, let code = readiness.add(connection.descriptor, tag: UInt32(index)) {
            throw SocketError("watch controller \(index)'s connection for replies: \(String(cString: strerror(code)))")
        }
        return index
    }

    package var controllerCount: Int { lock.withLock { endpoints.count } }

    package var stampsArrivals: Bool { lock.withLock { everyConnectionStamps && !connections.isEmpty } }

    package func endpoint(of controller: Int) -> Endpoint { lock.withLock { endpoints[controller] } }

    private func connection(_ controller: Int) -> (any ControllerConnection)? {
        lock.withLock { controller < connections.count ? connections[controller] : nil }
    }

    /// Sends `bytes` whole; ETIMEDOUT when a stream's host stopped reading before all of it
    /// went (the stream then holds part of it); EBADF once the link has finished.
    package func send(_ bytes: [UInt8], from controller: Int, deadlineMonotonicNs: Int64) -> Int32? {
        guard let connection = connection(controller) else { return EBADF }
        return connection.send(bytes, deadlineMonotonicNs: deadlineMonotonicNs)
    }

    package func endStream(of controller: Int) -> Bool {
        connection(controller)?.endOutput() ?? false
    }

    package func unsentBytes(of controller: Int) -> Int? {
        connection(controller)?.unsentBytes
    }

    package func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void) {
        if !buffered.isEmpty {
            let held = buffered
            buffered.removeAll()
            for index in held { if let connection = connection(index) { drain(connection, index, handle) } }
            return
        }
        if let readiness {
            // An empty set still waits out the timeout, so callers never spin.
            readiness.wait(timeoutMs: timeoutMs) { tag in
                let index = Int(tag)
                guard let connection = connection(index) else { return }
                drain(connection, index, handle)
            }
            return
        }
        let open: [any ControllerConnection] = lock.withLock {
            if polled.count < connections.count {
                polled += connections[polled.count...].map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            }
            return connections
        }
        guard polled.contains(where: { $0.fd >= 0 }) else {
            // Nothing to wait on; still wait, so callers never spin.
            usleep(UInt32(clamping: Int64(max(timeoutMs, 0)) * 1000))
            return
        }
        guard poll(&polled, nfds_t(polled.count), timeoutMs) > 0 else { return }
        for index in polled.indices where polled[index].revents != 0 {
            polled[index].revents = 0
            drain(open[index], index, handle)
        }
    }

    /// At most a bounded burst per connection and call: a host flooding one controller must
    /// not keep the caller here (it checks its deadlines and flood limits between calls).
    private func drain(_ connection: any ControllerConnection, _ index: Int, _ handle: (LinkEvent) -> Void) {
        // Kernel stamps are on the realtime clock; the link reports monotonic time.
        let realtimeAhead = SystemClock.realtimeNs() - SystemClock.monotonicNs()
        draining: for _ in 0..<Self.readsPerBurst {
            switch connection.read(into: &buffer) {
            case .bytes(let n, let stamp):
                let arrival = stamp.map { $0 - realtimeAhead } ?? SystemClock.monotonicNs()
                handle(.datagram(controller: index, payload: Array(buffer[0..<n]), receivedMonoNs: arrival))
            case .nothing:
                break draining
            case .failed(let code, ended: false):
                handle(.error(controller: index, code: code))
            case .closed:
                stopReading(connection, index)
                handle(.error(controller: index, code: EPIPE))
                return
            case .failed(let code, ended: true):
                stopReading(connection, index)
                handle(.error(controller: index, code: code))
                return
            }
        }
        // The burst ended with messages decoded but not yet returned: read them before waiting again.
        if connection.hasBufferedInput { buffered.append(index) }
    }

    /// An ended connection is reported once: its descriptor leaves the wait.
    private func stopReading(_ connection: any ControllerConnection, _ index: Int) {
        if let readiness {
            _ = readiness.remove(connection.descriptor)
        } else if index < polled.count {
            polled[index].fd = -1  // poll skips negative descriptors
        }
    }

    package func endInput() {}
    package var isDrained: Bool { true }

    package func finish(graceMs: Int) -> String? {
        lock.withLock {
            connections.removeAll()
            polled.removeAll()
        }
        return nil
    }
}

/// A host run as `/bin/sh -c COMMAND` behind the stdio adapter; controller
/// ids count up from 0 for the link's life.
package final class StdioControllerLink: ControllerLink, @unchecked Sendable {  // the connection is read only by the receiving thread; the rest is behind `lock`
    package let command: String
    /// Records name exec controllers by stand-in addresses: 127.0.0.2:1, :2, …
    package let hostEndpoint = Endpoint(host: "127.0.0.1", port: 0)
    private let host: StdioHostConnection
    private let lock = NIOLock()
    private var opened = 0
    private var inputEnded = false
    private var outputEnded = false

    package init(command: String) throws(SocketError) {
        self.command = command
        host = try StdioHostConnection(command: command)
    }

    package var target: LinkTarget { .exec(command) }

    package func openController() throws(SocketError) -> Int {
        let index: Int? = lock.withLock {
            guard opened <= Int(UInt16.max) else { return nil }
            opened += 1
            return opened - 1
        }
        guard let index else { throw SocketError("the stdio adapter has 65,536 controller ids, and this link has used them all") }
        return index
    }

    package var controllerCount: Int { lock.withLock { opened } }

    package func endpoint(of controller: Int) -> Endpoint {
        Endpoint(host: "127.0.0.2", port: UInt16(truncatingIfNeeded: controller + 1))
    }

    package func send(_ bytes: [UInt8], from controller: Int, deadlineMonotonicNs: Int64) -> Int32? {
        host.send(controller: controller, bytes, deadlineMonotonicNs: deadlineMonotonicNs)
    }

    package func endStream(of controller: Int) -> Bool {
        host.send(controller: controller, [], deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000) == nil
    }

    package func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void) {
        host.receive(timeoutMs: timeoutMs, controllers: controllerCount) { event in
            switch event {
            case .datagram(let controller, let payload):
                handle(.datagram(controller: controller, payload: payload, receivedMonoNs: SystemClock.monotonicNs()))
            case .observation(let controller, let observation):
                handle(.observation(controller: controller, observation, receivedMonoNs: SystemClock.monotonicNs()))
            case .protocolError(let why):
                handle(.protocolError(why))
            case .closed(let pending):
                let normal = lock.withLock {
                    outputEnded = true
                    return inputEnded
                }
                if normal && pending == 0 {
                    handle(.hostFinished)
                    return
                }
                let status = host.exitStatus(waitingMs: normal ? 1_000 : 500)
                handle(.hostEnded("the host process closed its output" + (status.map { " and \($0)" } ?? "")
                                  + (pending > 0 ? ", \(pending) byte(s) into a record" : "")))
            }
        }
    }

    package func endInput() {
        lock.withLock { inputEnded = true }
        host.child.closeInput()
    }

    package var isDrained: Bool { lock.withLock { outputEnded } }

    /// Unknown over the stdio adapter: every controller's records share one socketpair, and on a
    /// Unix socket SIOCOUTQ counts the kernel's buffer memory, not payload bytes (11,520 "unread"
    /// for twenty 20-byte records), so it says nothing about one controller's unread records.
    /// Whether the host keeps reading shows in the decisions it reports instead.
    package func unsentBytes(of controller: Int) -> Int? { nil }

    package func finish(graceMs: Int) -> String? {
        endInput()
        return ChildProcess.describe(status: host.child.terminate(graceMs: graceMs))
    }
}
