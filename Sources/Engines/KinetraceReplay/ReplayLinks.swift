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

/// Where a replay sends.
public enum ReplayTarget: Sendable, CustomStringConvertible {
    /// A host listening on UDP: one connected socket per controller.
    case udp(SocketAddressBox)
    /// A host run as `/bin/sh -c COMMAND` behind the stdio adapter (specs/stdio-adapter-v1.md).
    case exec(String)

    public var description: String {
        switch self {
        case .udp(let address): return "udp://\(address)"
        case .exec(let command): return "exec: \(command)"
        }
    }
}

/// What the receive side saw.
enum LinkEvent {
    case datagram(controller: Int, payload: [UInt8])
    /// A socket error (ECONNREFUSED: the host's port answered with ICMP port unreachable).
    case error(controller: Int, code: Int32)
    /// The host process closed its output or exited before the replay ended.
    case hostEnded(String)
    /// The host process closed its output after reading end of input, as it should (SA-END-2).
    case hostFinished
    /// The host process wrote something that is not a stdio record.
    case protocolError(String)
}

/// The controllers' side of the link to the host under test.
protocol ReplayLink: AnyObject, Sendable {
    /// Each controller's own address, as recorded in the trace.
    var controllerEndpoints: [Endpoint] { get }
    var hostEndpoint: Endpoint { get }
    /// Sends one message; errno on failure.
    func send(controller: Int, _ payload: [UInt8], deadlineMonotonicNs: Int64) -> Int32?
    /// Waits up to `timeoutMs` for traffic from the host and hands each event to `handle`.
    func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void)
    /// No more messages: an exec host reads end of file (SA-END-1).
    func endInput()
    /// True once the host can send nothing more (an exec host closed its output).
    var isDrained: Bool { get }
    /// The replay is over: let the host finish. Returns how it ended, for exec.
    func finish(graceMs: Int) -> String?
}

/// One connected UDP socket per controller.
final class UDPLink: ReplayLink, @unchecked Sendable {  // sockets are immutable; each is used by one thread per direction
    private let sockets: [ConnectedUDPSocket]
    private var fds: [pollfd]
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    let controllerEndpoints: [Endpoint]
    let hostEndpoint: Endpoint

    init(target: SocketAddressBox, controllers: Int) throws(SocketError) {
        var sockets: [ConnectedUDPSocket] = []
        sockets.reserveCapacity(controllers)
        for index in 0..<controllers {
            do throws(SocketError) {
                sockets.append(try ConnectedUDPSocket(to: target))
            } catch {
                throw SocketError("controller \(index + 1) of \(controllers): \(error.description)"
                                  + (errno == EMFILE ? " (raise the open-file limit: ulimit -n)" : ""))
            }
        }
        self.sockets = sockets
        fds = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        controllerEndpoints = sockets.map(\.local)
        hostEndpoint = target.endpoint
    }

    func send(controller: Int, _ payload: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        sockets[controller].send(payload)
    }

    func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void) {
        guard poll(&fds, nfds_t(fds.count), timeoutMs) > 0 else { return }
        for index in fds.indices where fds[index].revents != 0 {
            fds[index].revents = 0
            draining: while true {
                switch sockets[index].receive(into: &buffer) {
                case .datagram(let n): handle(.datagram(controller: index, payload: Array(buffer[0..<n])))
                case .error(let code): handle(.error(controller: index, code: code))
                case .nothing: break draining
                }
            }
        }
    }

    func endInput() {}
    var isDrained: Bool { true }
    func finish(graceMs: Int) -> String? { nil }
}

/// A child process speaking the stdio adapter framing.
final class StdioLink: ReplayLink, @unchecked Sendable {  // the decoder is used only by the receiving thread
    private let child: ChildProcess
    private let controllers: Int
    private var decoder = StdioRecordDecoder()
    private var ended = false
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    private let state = Lock()
    private var inputEnded = false
    private var outputEnded = false
    let controllerEndpoints: [Endpoint]
    let hostEndpoint = Endpoint(host: "127.0.0.1", port: 0)

    init(command: String, controllers: Int) throws(SocketError) {
        child = try ChildProcess(command: command)
        self.controllers = controllers
        // Stand-in addresses, so records still say which controller: 127.0.0.2:1, :2, …
        controllerEndpoints = (0..<controllers).map { Endpoint(host: "127.0.0.2", port: UInt16(truncatingIfNeeded: $0 + 1)) }
    }

    func send(controller: Int, _ payload: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        let record = StdioRecord(kind: .controllerToHost, controller: UInt16(controller), payload: payload)
        return child.write(record.encoded(), deadlineMonotonicNs: deadlineMonotonicNs)
    }

    func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void) {
        guard !ended else {
            usleep(UInt32(timeoutMs) * 1000)
            return
        }
        var pfd = pollfd(fd: child.fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeoutMs) > 0 else { return }
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(child.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                decoder.append(buffer[0..<n])
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            if n < 0 && errno == EINTR { continue }
            ended = true
            break
        }
        do throws(WireError) {
            var at = decoder.offset
            while let record = try decoder.next() {
                defer { at = decoder.offset }
                guard record.kind == .hostToController else {
                    throw WireError(.outOfRange, offset: at + 4, expected: "record kind 0x02 (host to controller), found \(record.kind)")
                }
                guard Int(record.controller) < controllers else {
                    throw WireError(.outOfRange, offset: at + 6,
                                    expected: "a controller id below \(controllers), found \(record.controller)")
                }
                handle(.datagram(controller: Int(record.controller), payload: record.payload))
            }
        } catch {
            ended = true
            handle(.protocolError("the host process's output is not stdio records: byte \(error.offset): expected \(error.expected)"))
            return
        }
        if ended {
            let pending = decoder.pendingBytes
            let normal = state.withLock {
                outputEnded = true
                return inputEnded
            }
            if normal && pending == 0 {
                handle(.hostFinished)
                return
            }
            let status = waitBriefly()
            handle(.hostEnded("the host process closed its output" + (status.map { " and \($0)" } ?? "")
                              + (pending > 0 ? ", \(pending) byte(s) into a record" : "")))
        }
    }

    private func waitBriefly() -> String? {
        for _ in 0..<100 {
            if let status = child.exitStatus() { return ChildProcess.describe(status: status) }
            usleep(10_000)
        }
        return nil
    }

    func endInput() {
        state.withLock { inputEnded = true }
        child.closeInput()
    }

    var isDrained: Bool { state.withLock { outputEnded } }

    func finish(graceMs: Int) -> String? {
        endInput()
        return ChildProcess.describe(status: child.terminate(graceMs: graceMs))
    }
}
