import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import Logging
import NIOCore
import NIOPosix

/// A reference host while it serves: the UDP host of a datagram protocol or
/// the TCP host of a byte-stream protocol.
public protocol RunningReferenceHost: Sendable {
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
public func startReferenceHost(configuration: ReferenceHost.Configuration, logger: Logger) throws -> any RunningReferenceHost {
    switch configuration.wireProtocol.transport {
    case .datagram: return try ReferenceHost(configuration: configuration, logger: logger)
    case .byteStream: return try StreamReferenceHost(configuration: configuration, logger: logger)
    }
}

/// The reference host of a byte-stream protocol (attitude-stream): a TCP
/// listener, IPv4 or IPv6, one connection per controller. Each connection
/// has its own framer (`WireProtocol.makeFramer()`), so records are cut by
/// the stream's offsets whatever its reads return, and its own controller in
/// the protocol's host model. Invalid records are not applied and the
/// connection stays open; a connection whose framing breaks is closed; a
/// connection that closes inside a record is counted and logged.
///
/// With a trace, every read is recorded as it came (one `msg` record per
/// read, TR-MSG-3), and every decision as a `decision` event.
public final class StreamReferenceHost: RunningReferenceHost {
    public let configuration: ReferenceHost.Configuration
    public let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let state: StreamHostState

    public var localAddress: SocketAddress { channel.localAddress! }

    /// Binds and starts serving. Throws if the address cannot be bound, or if the
    /// protocol is not a byte-stream protocol.
    public init(configuration: ReferenceHost.Configuration, logger: Logger) throws {
        guard configuration.wireProtocol.transport == .byteStream else {
            throw HostError("the stream reference host serves byte-stream protocols over TCP; \(configuration.wireProtocol.id) is a \(configuration.wireProtocol.transport) protocol")
        }
        guard configuration.maximumConnections > 0 else { throw HostError("the host must accept at least one connection") }
        self.configuration = configuration
        self.logger = logger
        // One thread: every connection's handler and the shared host model live on one event loop.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            var recorder: TraceRecorder?
            if let path = configuration.tracePath {
                recorder = try TraceRecorder(path: path, header: TraceHeader(
                    created: RFC3339.string(fromNanoseconds: SystemClock.realtimeNs()), tool: "kinetrace host",
                    protocolID: configuration.wireProtocol.id, capturePoint: .host, clock: .realtime,
                    notes: "reference host on TCP \(configuration.bindHost):\(configuration.boundPort), one read per msg record"))
            }
            let state = StreamHostState(configuration: configuration, logger: logger, recorder: recorder)
            let channel = try ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { child in
                    child.eventLoop.makeCompletedFuture {
                        guard state.admit() else {
                            logger.warning("refused a connection: \(configuration.maximumConnections) already open",
                                           metadata: ["peer": "\(child.remoteAddress.map { Endpoint($0).description } ?? "?")"])
                            child.close(promise: nil)
                            return
                        }
                        try child.pipeline.syncOperations.addHandler(StreamConnectionHandler(state: state))
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
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
    }

    public func statistics() throws -> HostStatistics {
        try channel.eventLoop.submit { self.state.statistics }.wait()
    }

    public func shutdown() throws -> HostStatistics {
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

    init(configuration: ReferenceHost.Configuration, logger: Logger, recorder: TraceRecorder?) {
        self.configuration = configuration
        self.logger = logger
        self.recorder = recorder
        core = HostCore(wireProtocol: configuration.wireProtocol, rule: configuration.rule,
                        maximumControllers: configuration.maximumControllers, idleTimeoutNs: configuration.idleTimeoutNs)
    }

    var statistics: HostStatistics {
        var stats = core.statistics
        stats.connections = counters.connections
        stats.connectionsRefused = counters.connectionsRefused
        stats.closedMidRecord = counters.closedMidRecord
        stats.framingErrors = counters.framingErrors
        return stats
    }

    /// Whether a new connection fits under the limit (refusals are counted).
    func admit() -> Bool {
        guard admitted < configuration.maximumConnections else {
            counters.connectionsRefused += 1
            return false
        }
        admitted += 1
        return true
    }

    /// An admitted connection's handler left its pipeline (the connection is gone).
    func released() { admitted -= 1 }

    /// Connections admitted and not yet gone: counted from admission, since several
    /// can be accepted before the first becomes active.
    private var admitted = 0

    /// A connection became active: its number, the host model's controller.
    func opened(_ channel: Channel) -> Int {
        let number = nextConnection
        nextConnection += 1
        counters.connections += 1
        open[number] = channel
        return number
    }

    func closed(_ number: Int, pendingBytes: Int, peer: Endpoint) {
        open[number] = nil
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

/// One controller's connection: its framer, fed whatever each read returns.
final class StreamConnectionHandler: ChannelInboundHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let state: StreamHostState
    private var framer: any MessageFramer
    private var number = -1
    private var peer = Endpoint(host: "unknown", port: 0)
    private var local = Endpoint(host: "unknown", port: 0)
    private var broken = false

    init(state: StreamHostState) {
        self.state = state
        framer = state.configuration.wireProtocol.makeFramer()
    }

    func channelActive(context: ChannelHandlerContext) {
        number = state.opened(context.channel)
        if let remote = context.channel.remoteAddress { peer = Endpoint(remote) }
        if let address = context.channel.localAddress { local = Endpoint(address) }
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
            while let message = try framer.next() {
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

    func handlerRemoved(context: ChannelHandlerContext) { state.released() }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A reset or the like: this connection ends, the host keeps serving.
        state.logger.debug("connection error", metadata: ["controller": "\(peer)", "error": "\(error)"])
        context.close(promise: nil)
    }
}
