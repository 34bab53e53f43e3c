#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// What the host sent back, or why it can send nothing more.
public enum ProbeEvent: Sendable {
    case reply(controller: Int, payload: [UInt8], monoNs: Int64)
    /// ICMP port unreachable: nothing listens on the host's port.
    case refused
    /// An exec host exited or closed its output.
    case hostEnded(String)
    /// An exec host wrote something that is not a stdio record.
    case protocolError(String)
}

/// How a suite run reaches the host under test. One transport serves a
/// whole run and never reuses a controller: a host keeps state per source
/// address and port for ever, so a reused port would carry an earlier case's
/// newest `t_ms` and refractory window into the next case.
public protocol ProbeTransport: AnyObject {
    /// Opens a new controller; returns its index.
    func openController() throws(SocketError) -> Int
    /// Sends one datagram from a controller; errno on failure.
    func send(_ bytes: [UInt8], from controller: Int) -> Int32?
    /// Waits up to `timeoutMs` and hands each event to `handle`.
    func poll(timeoutMs: Int32, _ handle: (ProbeEvent) -> Void)
    /// Ends the run; for exec, how the host process ended.
    func close() -> String?
}

/// A host on UDP: one connected socket per controller, all kept open until the run ends.
public final class UDPProbeTransport: ProbeTransport {
    public let target: SocketAddressBox
    private var sockets: [ConnectedUDPSocket] = []
    private var fds: [pollfd] = []
    private var buffer = [UInt8](repeating: 0, count: 65_536)  // any UDP reply whole, so a wrong one is judged as sent

    public init(target: SocketAddressBox) { self.target = target }

    public func openController() throws(SocketError) -> Int {
        let socket = try ConnectedUDPSocket(to: target)
        sockets.append(socket)
        fds.append(pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0))
        return sockets.count - 1
    }

    public func send(_ bytes: [UInt8], from controller: Int) -> Int32? { sockets[controller].send(bytes) }

    public func poll(timeoutMs: Int32, _ handle: (ProbeEvent) -> Void) {
        guard pollAll(&fds, timeoutMs) > 0 else { return }
        for i in fds.indices where fds[i].revents != 0 {
            fds[i].revents = 0
            draining: while true {
                switch sockets[i].receive(into: &buffer) {
                case .datagram(let n): handle(.reply(controller: i, payload: Array(buffer[0..<n]), monoNs: SystemClock.monotonicNs()))
                case .error(let code): if code == ECONNREFUSED { handle(.refused) }
                case .nothing: break draining
                }
            }
        }
    }

    public func close() -> String? {
        sockets.removeAll()
        fds.removeAll()
        return nil
    }
}

/// A host run as `/bin/sh -c COMMAND` behind the stdio adapter
/// (specs/stdio-adapter-v1.md); controller ids count up from 0 for the run.
public final class StdioProbeTransport: ProbeTransport {
    private let host: StdioHostConnection
    private var opened = 0

    public init(command: String) throws(SocketError) { host = try StdioHostConnection(command: command) }

    public func openController() throws(SocketError) -> Int {
        guard opened <= Int(UInt16.max) else { throw SocketError("the stdio adapter has 65,536 controller ids; a run used them all") }
        opened += 1
        return opened - 1
    }

    public func send(_ bytes: [UInt8], from controller: Int) -> Int32? {
        host.send(controller: controller, bytes, deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000)
    }

    public func poll(timeoutMs: Int32, _ handle: (ProbeEvent) -> Void) {
        host.receive(timeoutMs: timeoutMs, controllers: opened) { event in
            switch event {
            case .datagram(let controller, let payload):
                handle(.reply(controller: controller, payload: payload, monoNs: SystemClock.monotonicNs()))
            case .protocolError(let why):
                handle(.protocolError(why))
            case .closed:
                let status = host.exitStatus(waitingMs: 500)
                handle(.hostEnded("the host process closed its output" + (status.map { " and \($0)" } ?? "")))
            }
        }
    }

    public func close() -> String? {
        host.child.closeInput()
        return ChildProcess.describe(status: host.child.terminate(graceMs: 1_000))
    }
}

/// poll(2) over `fds`; with none, it still waits, so callers never spin.
private func pollAll(_ fds: inout [pollfd], _ timeoutMs: Int32) -> Int32 {
    guard !fds.isEmpty else {
        usleep(UInt32(max(timeoutMs, 0)) * 1000)
        return 0
    }
    return poll(&fds, nfds_t(fds.count), timeoutMs)
}
