#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A byte stream over TCP: one connection per controller, TCP_NODELAY, whatever the sender
/// writes read back in chunks of the receiver's own. TCP repairs loss and order itself.
package struct TCPTransport: Transport {
    package var scheme: String { "tcp" }
    package var keepsMessageBoundaries: Bool { false }
    package var repairsDelivery: Bool { true }
    package var hasConnections: Bool { true }

    package func problem(carrying wireProtocol: any WireProtocol) -> String? {
        wireProtocol.transport == .byteStream ? nil
            : "tcp:// carries byte-stream protocols; \(wireProtocol.id) is a datagram protocol, whose messages a stream would not delimit (use udp://)"
    }

    package func connect(to target: TransportTarget, options: ConnectionOptions) throws(SocketError) -> any ControllerConnection {
        try ConnectedTCPSocket(to: target.address, timeoutMs: options.connectTimeoutMs, sendBufferBytes: options.sendBufferBytes)
    }

    package func listen(_ configuration: ListenerConfiguration, service: any HostService, logger: Logger) throws -> any HostListener {
        try ConnectionListener(configuration, service: service, logger: logger) { child, handler in
            try child.pipeline.syncOperations.addHandler(handler)
        }
    }
}

extension ConnectedTCPSocket: ControllerConnection {
    package var descriptor: Int32 { fd }
    package var stampsArrivals: Bool { false }

    package func trySend(_ bytes: UnsafeRawBufferPointer) -> SendOutcome {
        switch tryWrite(bytes) {
        case .all: return .all
        case .partial(let n): return .partial(n)
        case .error(let code): return .failed(code, ended: true)
        }
    }

    package var hasRoom: Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&pfd, 1, 0) > 0 && pfd.revents & Int16(POLLOUT) != 0
    }

    package func send(_ bytes: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        write(bytes, deadlineMonotonicNs: deadlineMonotonicNs)
    }

    package func read(into buffer: inout [UInt8]) -> ReadOutcome {
        switch read(into: &buffer) as Read {
        case .bytes(let n): return .bytes(n, arrivalRealtimeNs: nil)
        case .nothing: return .nothing
        case .closed: return .closed
        case .error(let code): return .failed(code, ended: true)
        }
    }

    package func endOutput() -> Bool {
        shutdownOutput()
        return true
    }
}

/// The host side of a connection-oriented transport: a listening socket, IPv4 or IPv6, one
/// connection per controller, all on one event loop with the service. At the connection
/// limit a new connection displaces the least recently active one, and a connection that
/// delivers no whole message for the timeout is closed (`ConnectionLedger`). `configureChild`
/// puts a connection's handler into its pipeline, behind whatever the transport needs first
/// (nothing for TCP), as long as what reaches the handler is the connection's bytes.
package final class ConnectionListener: HostListener {
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let state: ConnectionTable

    package var localAddress: SocketAddress { channel.localAddress! }

    package init(_ configuration: ListenerConfiguration, service: any HostService, logger: Logger,
                 configureChild: @escaping @Sendable (Channel, ConnectionHandler) throws -> Void) throws {
        guard configuration.maximumConnections > 0 else { throw ListenerError("the host must accept at least one connection") }
        guard configuration.connectionTimeoutNs.map({ $0 > 0 }) ?? true else { throw ListenerError("a connection timeout must be positive") }
        // One thread: every connection's handler and the service live on one event loop.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = ConnectionTable(configuration: configuration, service: service, logger: logger)
        do {
            channel = try ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { child in
                    child.eventLoop.makeCompletedFuture {
                        // Named now, once: a connection reset before it was accepted has no peer to look up later.
                        guard let ends = ConnectionEnds(child) else {
                            state.unnamed(child)
                            return
                        }
                        let number = state.admit(child, ends: ends)
                        let peer = Peer(key: .connection(number), endpoint: ends.peer, local: ends.local)
                        try configureChild(child, ConnectionHandler(state: state, number: number, peer: peer))
                    }
                }
                .bind(host: configuration.bindHost, port: configuration.port)
                .wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        self.group = group
        self.state = state
        channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { _ in service.tick() }
        if let timeoutNs = configuration.connectionTimeoutNs {
            // Checked four times a timeout (at most once a second): an idle connection goes within 1.25 timeouts.
            let sweep = TimeAmount.nanoseconds(Swift.max(1_000_000, Swift.min(timeoutNs / 4, 1_000_000_000)))
            channel.eventLoop.scheduleRepeatedTask(initialDelay: sweep, delay: sweep) { _ in state.closeIdle() }
        }
    }

    package func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try channel.eventLoop.submit(body).wait()
    }

    package func statistics() throws -> ListenerStatistics {
        try onLoop { [state] in state.counters }
    }

    package func shutdown() throws -> ListenerStatistics {
        try? channel.close().wait()
        // Close every connection, so each one's end (and a partial message) reaches the service.
        try channel.eventLoop.flatSubmit { [state, channel] in state.closeAll(on: channel.eventLoop) }.wait()
        let stats = try statistics()
        try onLoop { [state] in state.service.finish() }
        try group.syncShutdownGracefully()
        return stats
    }

    package func waitUntilClosed() throws { try channel.closeFuture.wait() }
}

/// The open connections of a listener, confined to its one event loop.
final class ConnectionTable: @unchecked Sendable {  // confined to one event loop
    let configuration: ListenerConfiguration
    let service: any HostService
    let logger: Logger
    private(set) var counters = ListenerStatistics()
    private var nextConnection = 0
    private var open: [Int: Channel] = [:]
    /// Which connections to close at the limit and after the timeout.
    private var ledger: ConnectionLedger

    init(configuration: ListenerConfiguration, service: any HostService, logger: Logger) {
        self.configuration = configuration
        self.service = service
        self.logger = logger
        ledger = ConnectionLedger(capacity: configuration.maximumConnections, idleNs: configuration.connectionTimeoutNs)
    }

    /// A new connection: its number, the host's controller. At the limit it displaces the
    /// connection the ledger picks, which is closed: never the new one.
    func admit(_ channel: Channel, ends: ConnectionEnds) -> Int {
        let number = nextConnection
        nextConnection += 1
        counters.connections += 1
        if let displaced = ledger.admit(number, nowNs: SystemClock.monotonicNs()) {
            counters.connectionsDisplaced += 1
            // Debug, not warning: a flood would write a line per connection; the summary counts them.
            logger.debug("closing the least recently active connection to admit a new one (\(configuration.maximumConnections) open)",
                         metadata: ["controller": "\(ends.peer)"])
            open[displaced]?.close(promise: nil)
        }
        open[number] = channel
        return number
    }

    /// A connection whose peer could not be named even as it was accepted: closed unread, and
    /// counted, since its reads could be recorded as no connection's.
    func unnamed(_ channel: Channel) {
        counters.connectionsUnnamed += 1
        logger.warning("closed a connection whose peer address could not be read (reset before it was accepted)")
        channel.close(promise: nil)
    }

    /// The connection delivered a whole message: it is active.
    func delivered(_ number: Int) { ledger.delivered(number, nowNs: SystemClock.monotonicNs()) }

    /// Closes every connection that has delivered no whole message for the timeout.
    func closeIdle() {
        for number in ledger.expire(nowNs: SystemClock.monotonicNs()) {
            counters.connectionsTimedOut += 1
            open[number]?.close(promise: nil)
        }
    }

    func closed(_ number: Int) {
        open[number] = nil
        ledger.remove(number)
    }

    /// Closes every open connection; completes when all have closed.
    func closeAll(on loop: EventLoop) -> EventLoopFuture<Void> {
        EventLoopFuture.andAllComplete(open.values.map { $0.close() }, on: loop)
    }
}

/// A connection's two ends as its trace records name them, read once as it is accepted.
struct ConnectionEnds {
    let peer: Endpoint
    let local: Endpoint

    /// nil when the peer cannot be named: NIO looks it up with getpeername, which fails on a
    /// connection reset before it was accepted; on Linux SO_PEERNAME still reads it then.
    init?(_ channel: Channel) {
        guard let local = channel.localAddress.map(Endpoint.init) else { return nil }
        self.local = local
        if let remote = channel.remoteAddress {
            peer = Endpoint(remote)
        } else if let named = Self.peerName(of: channel, ipv6: local.isIPv6) {
            peer = named
        } else {
            return nil
        }
    }

    private static func peerName(of channel: Channel, ipv6: Bool) -> Endpoint? {
        #if os(Linux)
        guard let provider = channel as? SocketOptionProvider else { return nil }
        // The option's length must not exceed the address's: ask for exactly the family's sockaddr.
        let named = NIOLockedValueBox<Endpoint?>(nil)
        let level = NIOBSDSocket.OptionLevel(rawValue: SOL_SOCKET), option = NIOBSDSocket.Option(rawValue: SO_PEERNAME)
        // Both futures are complete on return: this runs on the channel's event loop.
        if ipv6 {
            let future: EventLoopFuture<RawAddress<sockaddr_in6>> = provider.unsafeGetSocketOption(level: level, name: option)
            future.whenSuccess { address in named.withLockedValue { $0 = Endpoint(SocketAddress(address.address)) } }
        } else {
            let future: EventLoopFuture<RawAddress<sockaddr_in>> = provider.unsafeGetSocketOption(level: level, name: option)
            future.whenSuccess { address in named.withLockedValue { $0 = Endpoint(SocketAddress(address.address)) } }
        }
        return named.withLockedValue { $0 }.flatMap { $0.port == 0 ? nil : $0 }
        #else
        return nil
        #endif
    }
}

/// A C socket address as a socket option's value: the same bytes, passed between NIO's calls on one loop.
private struct RawAddress<Address>: @unchecked Sendable {
    var address: Address
}

/// One controller's connection on a listener: hands whatever each read returns to the service.
package final class ConnectionHandler: ChannelInboundHandler, @unchecked Sendable {  // confined to one event loop
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private let state: ConnectionTable
    private let number: Int
    /// The controller this connection is.
    package let peer: Peer
    private var broken = false

    init(state: ConnectionTable, number: Int, peer: Peer) {
        self.state = state
        self.number = number
        self.peer = peer
    }

    package func channelActive(context: ChannelHandlerContext) {
        state.logger.debug("connection opened", metadata: ["controller": "\(peer.endpoint)"])
        context.fireChannelActive()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        let buffer = unwrapInboundIn(data)
        let receivedNs = SystemClock.realtimeNs()
        let uptake = buffer.withUnsafeReadableBytes { bytes in
            state.service.received(bytes, from: peer, receivedNs: receivedNs) { reply in
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: reply)), promise: nil)
            }
        }
        switch uptake {
        case .whole: state.delivered(number)
        case .partial: break
        case .broken:
            broken = true
            context.close(promise: nil)
        }
    }

    /// Hands the service an event the transport saw on this connection, naming the controller.
    package func note(event: String, data: [String: JSONValue], timeNs: Int64) {
        var data = data
        data["controller"] = .string(peer.endpoint.description)
        state.service.noted(.event(EventRecord(timeNs: timeNs, event: event, data: data)))
    }

    /// Hands the service a record of this connection's own (a site's label).
    package func record(_ record: TraceRecord) { state.service.noted(record) }

    /// The connection delivered a whole message of another kind than the service's (a site's side channel).
    package func delivered() { state.delivered(number) }

    package func channelInactive(context: ChannelHandlerContext) {
        state.closed(number)
        state.service.ended(peer)
        state.logger.debug("connection closed", metadata: ["controller": "\(peer.endpoint)"])
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A reset or the like: this connection ends, the host keeps serving.
        state.logger.debug("connection error", metadata: ["controller": "\(peer.endpoint)", "error": "\(error)"])
        context.close(promise: nil)
    }
}
