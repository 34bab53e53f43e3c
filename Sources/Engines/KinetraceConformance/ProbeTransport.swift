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
    private var buffer = [UInt8](repeating: 0, count: 2048)

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
    private let child: ChildProcess
    private var decoder = StdioRecordDecoder()
    private var opened = 0
    private var ended = false
    private var buffer = [UInt8](repeating: 0, count: 65_536)

    public init(command: String) throws(SocketError) { child = try ChildProcess(command: command) }

    public func openController() throws(SocketError) -> Int {
        guard opened <= Int(UInt16.max) else { throw SocketError("the stdio adapter has 65,536 controller ids; a run used them all") }
        opened += 1
        return opened - 1
    }

    public func send(_ bytes: [UInt8], from controller: Int) -> Int32? {
        let record = StdioRecord(kind: .controllerToHost, controller: UInt16(controller), payload: bytes)
        return child.write(record.encoded(), deadlineMonotonicNs: SystemClock.monotonicNs() + 1_000_000_000)
    }

    public func poll(timeoutMs: Int32, _ handle: (ProbeEvent) -> Void) {
        guard !ended else {
            usleep(UInt32(max(timeoutMs, 0)) * 1000)
            return
        }
        var pfd = [pollfd(fd: child.fd, events: Int16(POLLIN), revents: 0)]
        guard pollAll(&pfd, timeoutMs) > 0 else { return }
        let now = SystemClock.monotonicNs()
        var closed = false
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(child.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { decoder.append(buffer[0..<n]); continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            if n < 0 && errno == EINTR { continue }
            closed = true
            break
        }
        do throws(WireError) {
            var at = decoder.offset
            while let record = try decoder.next() {
                defer { at = decoder.offset }
                guard record.kind == .hostToController else {
                    throw WireError(.outOfRange, offset: at + 4, expected: "record kind 0x02 (host to controller), found \(record.kind)")
                }
                guard Int(record.controller) < opened else {
                    throw WireError(.outOfRange, offset: at + 6, expected: "a controller id below \(opened), found \(record.controller)")
                }
                handle(.reply(controller: Int(record.controller), payload: record.payload, monoNs: now))
            }
        } catch {
            ended = true
            handle(.protocolError("the host process's output is not stdio records: byte \(error.offset): expected \(error.expected)"))
            return
        }
        if closed {
            ended = true
            var status: String?
            for _ in 0..<50 where status == nil {
                status = child.exitStatus().map(ChildProcess.describe(status:))
                if status == nil { usleep(10_000) }
            }
            handle(.hostEnded("the host process closed its output" + (status.map { " and \($0)" } ?? "")))
        }
    }

    public func close() -> String? {
        child.closeInput()
        return ChildProcess.describe(status: child.terminate(graceMs: 1_000))
    }
}

private func pollAll(_ fds: inout [pollfd], _ timeoutMs: Int32) -> Int32 {
    fds.isEmpty ? 0 : poll(&fds, nfds_t(fds.count), timeoutMs)
}
