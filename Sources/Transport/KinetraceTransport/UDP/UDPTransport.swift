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
import Logging
import NIOCore
import NIOPosix

/// Datagrams over UDP: one message a datagram, nothing repaired. A controller's connection
/// is a connected UDP socket; a host's listener one socket for every controller, each
/// keyed by its source address.
package struct UDPTransport: Transport {
    package var scheme: String { "udp" }
    package var keepsMessageBoundaries: Bool { true }
    package var repairsDelivery: Bool { false }
    package var hasConnections: Bool { false }

    package func problem(carrying wireProtocol: any WireProtocol) -> String? {
        wireProtocol.transport == .datagram ? nil
            : "udp:// carries datagram protocols; \(wireProtocol.id) is a byte-stream protocol (use tcp://)"
    }

    package func connect(to target: TransportTarget, options: ConnectionOptions) throws(SocketError) -> any ControllerConnection {
        try ConnectedUDPSocket(to: target.address)
    }

    package func listen(_ configuration: ListenerConfiguration, service: any HostService, logger: Logger) throws -> any HostListener {
        try DatagramListener(configuration, service: service, logger: logger)
    }
}

extension ConnectedUDPSocket: ControllerConnection {
    package var descriptor: Int32 { fd }
    package var hasRoom: Bool { true }
    package var unsentBytes: Int? { nil }

    package func trySend(_ bytes: UnsafeRawBufferPointer) -> SendOutcome {
        send(bytes).map { .failed($0, ended: false) } ?? .all
    }

    package func send(_ bytes: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        bytes.withUnsafeBytes { send($0) }
    }

    package func read(into buffer: inout [UInt8]) -> ReadOutcome {
        switch receive(into: &buffer) {
        case .datagram(let n, let stamp): return .bytes(n, arrivalRealtimeNs: stamp)
        case .nothing: return .nothing
        // ICMP answers (ECONNREFUSED) end nothing: the next datagram may be taken.
        case .error(let code): return .failed(code, ended: false)
        }
    }

    package func endOutput() -> Bool { false }
}

/// The host side of UDP: one NIO datagram channel on one event loop, its reads paced under
/// load (`ReadPacing`), every datagram read whole.
final class DatagramListener: HostListener {
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let handler: DatagramListenerHandler

    var localAddress: SocketAddress { channel.localAddress! }

    init(_ configuration: ListenerConfiguration, service: any HostService, logger: Logger) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let handler = DatagramListenerHandler(service: service, logger: logger, intervalNs: configuration.readBatchIntervalNs)
        do {
            channel = try DatagramBootstrap(group: group)
                // No SO_REUSEADDR: on UDP it would let a second host bind the same port and split the traffic.
                // Room for bursts: a flood should cost the kernel drops, not the host's liveness.
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                // The handler asks for each read itself (ReadPacing), and a batch is read in one recvmmsg.
                .channelOption(.autoRead, value: false)
                .channelOption(.maxMessagesPerRead, value: ReadPacing.messagesPerRead)
                .channelOption(.datagramVectorReadMessageCount, value: ReadPacing.vectorReadCount)
                // A vector read splits one buffer among its datagrams: room for each to be whole.
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(
                    capacity: ReadPacing.vectorReadCount * ReadPacing.largestWholeDatagram))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
                }
                .bind(host: configuration.bindHost, port: configuration.port)
                .wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        self.group = group
        self.handler = handler
        channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { _ in service.tick() }
    }

    func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try channel.eventLoop.submit(body).wait()
    }

    func statistics() throws -> ListenerStatistics {
        try onLoop { [handler] in handler.statistics }
    }

    func shutdown() throws -> ListenerStatistics {
        let stats = try statistics()
        try? channel.close().wait()
        try onLoop { [handler] in handler.service.finish() }
        try group.syncShutdownGracefully()
        return stats
    }

    func waitUntilClosed() throws { try channel.closeFuture.wait() }
}

/// How the datagram host paces its reads, as a NIC driver under NAPI does: a batch of fewer than
/// four datagrams means the host keeps up, and it is woken for the next one; a bigger batch means
/// datagrams queue while it works, and it reads again after the interval instead of being woken for
/// each one. A sender on the same machine pays for every wake-up in its `send` (at 100,000
/// datagrams/s, a sixth of a replay's time in `perf`); batching costs a datagram at most the
/// interval in added latency, and only under load.
package struct ReadPacing {
    /// 100 µs: about ten datagrams a batch at 100,000 datagrams/s.
    package static let defaultIntervalNs: Int64 = 100_000
    /// A batch this big or bigger means the host is under load.
    package static let loadedBatch = 4
    static let messagesPerRead: UInt = 64
    static let vectorReadCount = 16
    /// Room for each datagram of a read: the largest UDP payload (65,507 bytes over IPv4, 65,527
    /// over IPv6) fits, so every datagram is judged and recorded whole. NIO does not report
    /// MSG_TRUNC: a smaller slot cut longer datagrams silently, and a 5,000-byte JSON
    /// message whose first 4,096 bytes parsed was taken as valid. 16 slots make a 1 MiB
    /// buffer, which malloc serves from its heap once its mmap threshold has risen past it.
    static let largestWholeDatagram = 65_536

    package let intervalNs: Int64?
    package var datagrams = 0
    package private(set) var deferred = 0

    package init(intervalNs: Int64?) { self.intervalNs = intervalNs }

    /// The delay before the next read (nil: read as soon as a datagram comes), ending the batch.
    package mutating func endBatch() -> Int64? {
        defer { datagrams = 0 }
        guard let intervalNs, datagrams >= Self.loadedBatch else { return nil }
        deferred += 1
        return intervalNs
    }
}

final class DatagramListenerHandler: ChannelInboundHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let service: any HostService
    private let logger: Logger
    private var pacing: ReadPacing
    private var localEndpoint = Endpoint(host: "0.0.0.0", port: 0)

    init(service: any HostService, logger: Logger, intervalNs: Int64?) {
        self.service = service
        self.logger = logger
        pacing = ReadPacing(intervalNs: intervalNs)
    }

    var statistics: ListenerStatistics {
        var statistics = ListenerStatistics()
        statistics.deferredReads = pacing.deferred
        return statistics
    }

    func channelActive(context: ChannelHandlerContext) {
        if let address = context.channel.localAddress { localEndpoint = Endpoint(address) }
        context.fireChannelActive()
        context.read()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        guard let delayNs = pacing.endBatch() else { return context.read() }
        // Not reading until then also takes the socket out of the wait: senders stop waking this thread.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .nanoseconds(delayNs)) { loopBound.value.read() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pacing.datagrams += 1
        let envelope = unwrapInboundIn(data)
        let receivedNs = SystemClock.realtimeNs()
        let remote = envelope.remoteAddress
        let peer = Peer(address: remote, local: localEndpoint)
        _ = envelope.data.withUnsafeReadableBytes { bytes in
            service.received(bytes, from: peer, receivedNs: receivedNs) { payload in
                let buffer = context.channel.allocator.buffer(bytes: payload)
                context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: remote, data: buffer)), promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP errors and the like surface here on UDP; the host keeps serving.
        logger.debug("socket error", metadata: ["error": "\(error)"])
    }
}
