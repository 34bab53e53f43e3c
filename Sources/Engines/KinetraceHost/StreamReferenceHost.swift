import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// A reference host while it serves: the UDP host of a datagram protocol or
/// the TCP host of a byte-stream protocol.
package protocol RunningReferenceHost: Sendable {
    /// The address actually bound (useful with port 0).
    var localAddress: SocketAddress { get }
    /// Counters so far.
    func statistics() throws -> HostStatistics
    /// Stops serving, flushes the trace and returns the final counters.
    func shutdown() throws -> HostStatistics
}

extension ReferenceHost: RunningReferenceHost {}

/// Starts the reference host a protocol's transport calls for: UDP for
/// datagrams (`ReferenceHost`), TCP for a byte stream (`StreamReferenceHost`).
package func startReferenceHost(configuration: ReferenceHost.Configuration, logger: Logger) throws -> any RunningReferenceHost {
    switch configuration.wireProtocol.transport {
    case .datagram: return try ReferenceHost(configuration: configuration, logger: logger)
    case .byteStream: return try StreamReferenceHost(configuration: configuration, logger: logger)
    }
}

/// The reference host of a byte-stream protocol: a TCP
/// listener, IPv4 or IPv6, one connection per controller. Each connection
/// has its own framer (`WireProtocol.makeFramer()`), so records are cut by
/// the stream's offsets whatever its reads return, and its own controller in
/// the protocol's host model. Invalid records are not applied and the
/// connection stays open; a connection whose framing breaks is closed; a
/// connection that closes inside a record is counted and logged. At the
/// connection limit a new connection displaces the least recently active
/// one, and a connection that delivers no whole record for the connection
/// timeout is closed (`ConnectionLedger`).
///
/// With a trace, every read is recorded as it came (one `msg` record per
/// read, TR-MSG-3), and every decision as a `decision` event.
package final class StreamReferenceHost: RunningReferenceHost {
    package let configuration: ReferenceHost.Configuration
    package let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let state: StreamHostState

    package var localAddress: SocketAddress { channel.localAddress! }

    /// Binds and starts serving. Throws if the address cannot be bound, or if the
    /// protocol is not a byte-stream protocol.
    package init(configuration: ReferenceHost.Configuration, logger: Logger) throws {
        guard configuration.wireProtocol.transport == .byteStream else {
            throw HostError("the stream reference host serves byte-stream protocols over TCP; \(configuration.wireProtocol.id) is a \(configuration.wireProtocol.transport) protocol")
        }
        guard configuration.maximumConnections > 0 else { throw HostError("the host must accept at least one connection") }
        guard configuration.connectionTimeoutNs.map({ $0 > 0 }) ?? true else { throw HostError("a connection timeout must be positive") }
        self.configuration = configuration
        self.logger = logger
        // One thread: every connection's handler and the shared host model live on one event loop.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            var recorder: TraceRecorder?
            if let path = configuration.tracePath {
                recorder = try TraceRecorder(path: path, header: TraceHeader(
                    created: RFC3339.string(fromNanoseconds: SystemClock.realtimeNs()), tool: "kinetrace host",
                    wireProtocol: configuration.wireProtocol, capturePoint: .host, clock: .realtime,
                    notes: "reference host on TCP \(configuration.bindHost):\(configuration.boundPort), one read per msg record"))
            }
            let state = StreamHostState(configuration: configuration, logger: logger, recorder: recorder)
            let channel = try ServerBootstrap(group: group)
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
                        try child.pipeline.syncOperations.addHandler(StreamConnectionHandler(state: state, number: number, ends: ends))
                    }
                }
                .bind(host: configuration.bindHost, port: configuration.boundPort)
                .wait()
            self.group = group
            self.channel = channel
            self.state = state
            if let recorder {
                // The trace writer flushes on size and age when written to; this timer covers idle spells.
                channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { _ in
                    recorder.flush()
                }
            }
            if let timeoutNs = configuration.connectionTimeoutNs {
                // Checked four times a timeout (at most once a second): an idle connection goes within 1.25 timeouts.
                let sweep = TimeAmount.nanoseconds(Swift.max(1_000_000, Swift.min(timeoutNs / 4, 1_000_000_000)))
                channel.eventLoop.scheduleRepeatedTask(initialDelay: sweep, delay: sweep) { _ in state.closeIdle() }
            }
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
    }

    package func statistics() throws -> HostStatistics {
        try channel.eventLoop.submit { self.state.statistics }.wait()
    }

    package func shutdown() throws -> HostStatistics {
        try? channel.close().wait()
        // Close every connection, so each one's end (and a partial record) is counted.
        try channel.eventLoop.flatSubmit { self.state.closeAll(on: self.channel.eventLoop) }.wait()
        let stats = try channel.eventLoop.submit { self.state.statistics }.wait()
        try channel.eventLoop.submit { try self.state.recorder?.close() }.wait()
        try group.syncShutdownGracefully()
        return stats
    }
}

/// What every connection shares, confined to the host's one event loop.
final class StreamHostState: @unchecked Sendable {  // confined to one event loop
    let configuration: ReferenceHost.Configuration
    let logger: Logger
    let recorder: TraceRecorder?
    var core: HostCore<Int>
    private var counters = HostStatistics()
    private var nextConnection = 0
    private var open: [Int: Channel] = [:]
    /// Which connections to close at the limit and after the timeout.
    private var ledger: ConnectionLedger

    init(configuration: ReferenceHost.Configuration, logger: Logger, recorder: TraceRecorder?) {
        self.configuration = configuration
        self.logger = logger
        self.recorder = recorder
        core = HostCore(wireProtocol: configuration.wireProtocol, rule: configuration.rule,
                        maximumControllers: configuration.maximumControllers, idleTimeoutNs: configuration.idleTimeoutNs)
        ledger = ConnectionLedger(capacity: configuration.maximumConnections, idleNs: configuration.connectionTimeoutNs)
    }

    var statistics: HostStatistics {
        var stats = core.statistics
        stats.connections = counters.connections
        stats.connectionsDisplaced = counters.connectionsDisplaced
        stats.connectionsTimedOut = counters.connectionsTimedOut
        stats.connectionsUnnamed = counters.connectionsUnnamed
        stats.closedMidRecord = counters.closedMidRecord
        stats.framingErrors = counters.framingErrors
        return stats
    }

    /// A new connection: its number, the host model's controller. At the limit it displaces
    /// the connection the ledger picks, which is closed: never the new one.
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

    /// The connection delivered a whole record: it is active.
    func delivered(_ number: Int) { ledger.delivered(number, nowNs: SystemClock.monotonicNs()) }

    /// Closes every connection that has delivered no whole record for the timeout.
    func closeIdle() {
        for number in ledger.expire(nowNs: SystemClock.monotonicNs()) {
            counters.connectionsTimedOut += 1
            open[number]?.close(promise: nil)
        }
    }

    func closed(_ number: Int, pendingBytes: Int, peer: Endpoint) {
        open[number] = nil
        ledger.remove(number)
        if pendingBytes > 0 {
            counters.closedMidRecord += 1
            logger.warning("connection closed \(pendingBytes) byte(s) into a record", metadata: ["controller": "\(peer)"])
        }
    }

    func framingBroke(_ error: WireError, peer: Endpoint) {
        counters.framingErrors += 1
        logger.warning("closing a connection whose stream cannot be framed: byte \(error.offset): expected \(error.expected)",
                       metadata: ["controller": "\(peer)"])
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

/// One controller's connection: its framer, fed whatever each read returns.
final class StreamConnectionHandler: ChannelInboundHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let state: StreamHostState
    private var framer: any MessageFramer
    private let number: Int
    private let peer: Endpoint
    private let local: Endpoint
    private var broken = false

    init(state: StreamHostState, number: Int, ends: ConnectionEnds) {
        self.state = state
        self.number = number
        peer = ends.peer
        local = ends.local
        framer = state.configuration.wireProtocol.makeFramer()
    }

    func channelActive(context: ChannelHandlerContext) {
        state.logger.debug("connection opened", metadata: ["controller": "\(peer)"])
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        let buffer = unwrapInboundIn(data)
        let receivedNs = SystemClock.realtimeNs()
        let bytes = Array(buffer.readableBytesView)
        state.recorder?.write(.message(MessageRecord(timeNs: receivedNs, direction: .controllerToHost, source: peer,
                                                     destination: local, payload: bytes)))
        framer.append(bytes)
        do throws(WireError) {
            var whole = false
            defer { if whole { state.delivered(number) } }
            while let message = try framer.next() {
                whole = true
                guard let decision = state.core.handle(message.bytes, from: number, receivedNs: receivedNs) else { continue }
                decision.log(to: state.logger, controller: peer)
                state.recorder?.write(.event(decision.eventRecord(timeNs: receivedNs, controller: peer)))
                guard let reply = state.configuration.wireProtocol.reply(to: decision) else { continue }
                let sentNs = SystemClock.realtimeNs()
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: reply)), promise: nil)
                state.recorder?.write(.message(MessageRecord(timeNs: sentNs, direction: .hostToController, source: local,
                                                             destination: peer, payload: reply)))
            }
        } catch {
            broken = true
            state.framingBroke(error, peer: peer)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let pending = broken ? 0 : (framer.finish()?.bytes.count ?? 0)
        state.closed(number, pendingBytes: pending, peer: peer)
        state.logger.debug("connection closed", metadata: ["controller": "\(peer)"])
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A reset or the like: this connection ends, the host keeps serving.
        state.logger.debug("connection error", metadata: ["controller": "\(peer)", "error": "\(error)"])
        context.close(promise: nil)
    }
}
