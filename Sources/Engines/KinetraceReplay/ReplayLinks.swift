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
final class StdioLink: ReplayLink, @unchecked Sendable {  // the connection is read only by the receiving thread
    private let host: StdioHostConnection
    private let controllers: Int
    private let state = Lock()
    private var inputEnded = false
    private var outputEnded = false
    let controllerEndpoints: [Endpoint]
    let hostEndpoint = Endpoint(host: "127.0.0.1", port: 0)

    init(command: String, controllers: Int) throws(SocketError) {
        host = try StdioHostConnection(command: command)
        self.controllers = controllers
        // Stand-in addresses, so records still say which controller: 127.0.0.2:1, :2, …
        controllerEndpoints = (0..<controllers).map { Endpoint(host: "127.0.0.2", port: UInt16(truncatingIfNeeded: $0 + 1)) }
    }

    func send(controller: Int, _ payload: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        host.send(controller: controller, payload, deadlineMonotonicNs: deadlineMonotonicNs)
    }

    func receive(timeoutMs: Int32, _ handle: (LinkEvent) -> Void) {
        host.receive(timeoutMs: timeoutMs, controllers: controllers) { event in
            switch event {
            case .datagram(let controller, let payload):
                handle(.datagram(controller: controller, payload: payload))
            case .protocolError(let why):
                handle(.protocolError(why))
            case .closed(let pending):
                let normal = state.withLock {
                    outputEnded = true
                    return inputEnded
                }
                if normal && pending == 0 {
                    handle(.hostFinished)
                    return
                }
                let status = host.exitStatus(waitingMs: 1_000)
                handle(.hostEnded("the host process closed its output" + (status.map { " and \($0)" } ?? "")
                                  + (pending > 0 ? ", \(pending) byte(s) into a record" : "")))
            }
        }
    }

    func endInput() {
        state.withLock { inputEnded = true }
        host.child.closeInput()
    }

    var isDrained: Bool { state.withLock { outputEnded } }

    func finish(graceMs: Int) -> String? {
        endInput()
        return ChildProcess.describe(status: host.child.terminate(graceMs: graceMs))
    }
}
