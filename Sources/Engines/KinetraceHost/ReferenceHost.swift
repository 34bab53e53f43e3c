import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import Logging
import NIOCore
import NIOPosix

/// The reference host of a datagram protocol:
/// one UDP socket, IPv4 or IPv6, any number of controllers. Every message
/// goes through the protocol's host model per controller (source address
/// and port); every reply it owes goes back to its sender; everything
/// invalid is dropped silently and the host keeps serving.
package final class ReferenceHost: Sendable {
    package struct Configuration: Sendable {
        package var wireProtocol: any WireProtocol
        package var bindHost = "127.0.0.1"
        /// nil: the protocol's default port; 0: any free port.
        package var port: Int?
        package var rule = GestureRule.default
        /// Controllers held at once; the least recently heard is forgotten beyond.
        package var maximumControllers = HostCore<Int>.defaultMaximumControllers
        /// A controller not heard from for longer is forgotten (nil: never).
        package var idleTimeoutNs: Int64? = HostCore<Int>.defaultIdleTimeoutNs
        /// Records what the host received and sent, when set.
        package var tracePath: String?
        /// A byte-stream host's limit on open connections: at the limit a new connection
        /// displaces the least recently active one.
        package var maximumConnections = 1024
        /// A byte-stream host closes a connection that delivers no whole record for this long (nil: never).
        package var connectionTimeoutNs: Int64? = ReferenceHost.Configuration.defaultConnectionTimeoutNs
        /// 10 s: 600 frames of a phone streaming at 60 Hz; a slow writer of a byte a second completes a record every 12 s.
        package static let defaultConnectionTimeoutNs: Int64 = 10_000_000_000
        /// Under load the datagram host reads in batches this far apart instead of being woken for
        /// every datagram (nil: woken for every one). See `ReadPacing`.
        package var readBatchIntervalNs: Int64? = ReadPacing.defaultIntervalNs
        package init(wireProtocol: any WireProtocol) { self.wireProtocol = wireProtocol }
        /// The port to bind.
        package var boundPort: Int { port ?? Int(wireProtocol.defaultPort) }
    }

    package let configuration: Configuration
    package let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let handler: HostHandler

    /// The address actually bound (useful with port 0).
    package var localAddress: SocketAddress { channel.localAddress! }

    /// Binds and starts serving. Throws if the address cannot be bound, or if
    /// the protocol is not a datagram protocol.
    package init(configuration: Configuration, logger: Logger) throws {
        guard configuration.wireProtocol.transport == .datagram else {
            throw HostError("the reference host serves datagram protocols over UDP; \(configuration.wireProtocol.id) is a \(configuration.wireProtocol.transport) protocol")
        }
        self.configuration = configuration
        self.logger = logger
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var recorder: TraceRecorder?
        do {
            if let path = configuration.tracePath {
                recorder = try TraceRecorder(path: path, header: TraceHeader(
                    created: RFC3339.string(fromNanoseconds: SystemClock.realtimeNs()), tool: "kinetrace host",
                    wireProtocol: configuration.wireProtocol, capturePoint: .host, clock: .realtime,
                    notes: "reference host on \(configuration.bindHost):\(configuration.boundPort), threshold \(configuration.rule.threshold), refractory \(configuration.rule.refractoryMs) ms"))
            }
            let handler = HostHandler(configuration: configuration, logger: logger, recorder: recorder)
            let channel = try DatagramBootstrap(group: group)
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
                .bind(host: configuration.bindHost, port: configuration.boundPort)
                .wait()
            self.group = group
            self.channel = channel
            self.handler = handler
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        if let recorder {
            // The trace writer flushes on size and age when written to; this timer covers idle spells.
            channel.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { _ in
                recorder.flush()
            }
        }
    }

    /// Counters so far (read on the host's event loop).
    package func statistics() throws -> HostStatistics {
        try channel.eventLoop.submit { self.handler.statistics }.wait()
    }

    /// Stops serving, flushes the trace and returns the final counters.
    package func shutdown() throws -> HostStatistics {
        let stats = try statistics()
        try? channel.close().wait()
        try channel.eventLoop.submit { try self.handler.recorder?.close() }.wait()
        try group.syncShutdownGracefully()
        return stats
    }

    /// Waits until the socket is closed.
    package func waitUntilClosed() throws { try channel.closeFuture.wait() }
}

/// Why the host cannot serve.
package struct HostError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// What the host did.
package struct HostStatistics: Sendable, Equatable {
    package var datagrams = 0
    package var validFrames = 0
    package var staleFrames = 0
    package var invalidByReason: [String: Int] = [:]
    package var triggers = 0
    package var repliesSent = 0
    /// Controllers the host holds state for now (at most its maximum).
    package var controllers = 0
    /// Controllers forgotten after the idle timeout and to stay within the maximum.
    package var forgottenIdle = 0
    package var forgottenOverCapacity = 0
    /// Byte-stream hosts: connections accepted; closed to admit a new one at the limit
    /// (least recently active first); closed after delivering no record for the timeout; closed
    /// unread because their peer could not be named; closed inside a record; and closed
    /// because their stream could not be framed.
    package var connections = 0
    package var connectionsDisplaced = 0
    package var connectionsTimedOut = 0
    package var connectionsUnnamed = 0
    package var closedMidRecord = 0
    package var framingErrors = 0
    /// Datagram hosts: reads put off under load (ReadPacing), rather than woken for.
    package var deferredReads = 0
    package init() {}
}

/// Wraps the trace writer; a failure to record must not stop the host.
final class TraceRecorder: @unchecked Sendable {  // used only on the host's event loop
    private let writer: TraceWriter
    private(set) var failure: TraceError?

    init(path: String, header: TraceHeader) throws(TraceError) {
        writer = try TraceWriter(path: path, header: header)
    }

    func write(_ record: TraceRecord) {
        guard failure == nil else { return }
        do throws(TraceError) { try writer.write(record) } catch { failure = error }
    }

    func flush() {
        guard failure == nil else { return }
        do throws(TraceError) { try writer.flush() } catch { failure = error }
    }

    func close() throws(TraceError) {
        try writer.close()
        if let failure { throw failure }
    }
}

/// How the datagram host paces its reads, as a NIC driver under NAPI does: a batch of fewer than
/// four datagrams means the host keeps up, and it is woken for the next one; a bigger batch means
/// datagrams queue while it works, and it reads again after the interval instead of being woken for
/// each one. A sender on the same machine pays for every wake-up in its `send` (at 100,000
/// datagrams/s, a sixth of a replay's time in `perf`); batching costs a datagram at most the
/// interval in added latency, and only under load.
struct ReadPacing {
    /// 100 µs: about ten datagrams a batch at 100,000 datagrams/s.
    static let defaultIntervalNs: Int64 = 100_000
    /// A batch this big or bigger means the host is under load.
    static let loadedBatch = 4
    static let messagesPerRead: UInt = 64
    static let vectorReadCount = 16
    /// Room for each datagram of a read: the largest UDP payload (65,507 bytes over IPv4, 65,527
    /// over IPv6) fits, so every datagram is judged and recorded whole. NIO does not report
    /// MSG_TRUNC: a smaller slot cut longer datagrams silently, and a 5,000-byte JSON
    /// message whose first 4,096 bytes parsed was taken as valid. 16 slots make a 1 MiB
    /// buffer, which malloc serves from its heap once its mmap threshold has risen past it.
    static let largestWholeDatagram = 65_536

    let intervalNs: Int64?
    var datagrams = 0
    private(set) var deferred = 0

    init(intervalNs: Int64?) { self.intervalNs = intervalNs }

    /// The delay before the next read (nil: read as soon as a datagram comes), ending the batch.
    mutating func endBatch() -> Int64? {
        defer { datagrams = 0 }
        guard let intervalNs, datagrams >= Self.loadedBatch else { return nil }
        deferred += 1
        return intervalNs
    }
}

final class HostHandler: ChannelInboundHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let configuration: ReferenceHost.Configuration
    let logger: Logger
    let recorder: TraceRecorder?
    private var core: HostCore<SocketAddress>
    var statistics: HostStatistics {
        var statistics = core.statistics
        statistics.deferredReads = pacing.deferred
        return statistics
    }
    private var localEndpoint = Endpoint(host: "0.0.0.0", port: 0)
    private var pacing: ReadPacing

    init(configuration: ReferenceHost.Configuration, logger: Logger, recorder: TraceRecorder?) {
        self.configuration = configuration
        self.logger = logger
        self.recorder = recorder
        core = HostCore(wireProtocol: configuration.wireProtocol, rule: configuration.rule,
                        maximumControllers: configuration.maximumControllers, idleTimeoutNs: configuration.idleTimeoutNs)
        pacing = ReadPacing(intervalNs: configuration.readBatchIntervalNs)
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
        let decision = envelope.data.withUnsafeReadableBytes { core.handle($0, from: remote, receivedNs: receivedNs) }
        if let recorder {
            recorder.write(.message(MessageRecord(
                timeNs: receivedNs, direction: .controllerToHost, source: Endpoint(remote),
                destination: localEndpoint, payload: Array(envelope.data.readableBytesView))))
        }
        guard let decision else { return }
        decision.log(to: logger, controller: Endpoint(remote))
        guard let payload = core.wireProtocol.reply(to: decision) else {
            // A decision with no reply shows nowhere on the wire: the trace keeps it.
            recorder?.write(.event(decision.eventRecord(timeNs: receivedNs, controller: Endpoint(remote))))
            return
        }
        let buffer = context.channel.allocator.buffer(bytes: payload)
        // Stamped before the send, as the controllers stamp theirs: a record stamped after the
        // write can show the reply arriving before it left (`latency --join` found 0.1–0.2 ms).
        let sentNs = SystemClock.realtimeNs()
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: remote, data: buffer)), promise: nil)
        if let recorder {
            recorder.write(.message(MessageRecord(
                timeNs: sentNs, direction: .hostToController, source: localEndpoint,
                destination: Endpoint(remote), payload: payload)))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP errors and the like surface here on UDP; the host keeps serving.
        logger.debug("socket error", metadata: ["error": "\(error)"])
    }
}

extension Endpoint {
    /// The trace form of a NIO socket address.
    package init(_ address: SocketAddress) {
        self.init(host: address.ipAddress ?? "unknown", port: UInt16(clamping: address.port ?? 0))
    }
}
