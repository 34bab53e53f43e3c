#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceTrace
import KinetraceTransport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// TLS for a controller's connection, as an in-process relay: NIOSSL's client on one event
/// loop holds the TCP connection to the host, and hands its plaintext to a local socket pair
/// whose other end the controller reads and writes as it would the TCP socket. The
/// controller's framing, polling and deadlines are the plain connection's; a secure send
/// costs one hand-over through the loop and the cipher. `init` returns once the TLS
/// handshake has finished, with the host's certificate checked as `trust` says.
final class TLSRelay: TLSPlaintextLink, @unchecked Sendable {  // immutable after init; the channels are NIO's, safe from any thread
    /// The controller's end of the pair: plaintext, bidirectional, non-blocking.
    let plaintextDescriptor: Int32
    /// The TCP connection's own local address, as records name the controller.
    let local: Endpoint
    private let network: Channel
    private let pair: Channel

    /// One loop thread for every relay of the process: TLS work is small beside a phone's rate.
    private static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    init(target: TransportTarget, trust: TLSTrust, timeoutMs: Int32) throws(SocketError) {
        var ends: [Int32] = [-1, -1]
        #if canImport(Darwin)
        let made = socketpair(AF_UNIX, SOCK_STREAM, 0, &ends)
        #else
        let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends)
        #endif
        guard made == 0 else { throw SocketError.fromErrno("socketpair for TLS") }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        let loop = Self.group.next()
        let handshake = loop.makePromise(of: Void.self)
        let serverName = target.hostName.first.map { $0.isLetter } ?? false ? target.hostName : nil
        var opened: [Channel] = []
        do {
            let context = try trust.clientContext()
            let pair = try ClientBootstrap(group: loop).withConnectedSocket(ends[1]).wait()
            opened.append(pair)
            let network = try ClientBootstrap(group: loop)
                .connectTimeout(.milliseconds(Int64(timeoutMs)))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: serverName))
                        try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(handshake))
                        try channel.pipeline.syncOperations.addHandler(Relay(partner: pair))
                    }
                }
                .connect(to: try SocketAddress(ipAddress: target.address.endpoint.host, port: Int(target.address.endpoint.port)))
                .wait()
            opened.append(network)
            try pair.pipeline.syncOperationsOnLoop { try $0.addHandler(Relay(partner: network)) }
            let timeout = loop.scheduleTask(in: .milliseconds(Int64(timeoutMs))) {
                handshake.fail(SocketError("no TLS handshake within \(timeoutMs) ms"))
            }
            defer { timeout.cancel() }
            try handshake.futureResult.wait()
            guard let address = network.localAddress else { throw SocketError("the TLS connection has no local address") }
            self.network = network
            self.pair = pair
            local = Endpoint(address)
            plaintextDescriptor = ends[0]
        } catch {
            // Every path out completes the promise (NIO ignores a second completion) and closes what opened.
            handshake.fail(error)
            for channel in opened { channel.close(promise: nil) }
            if opened.isEmpty { close(ends[1]) }
            close(ends[0])
            if let error = error as? SocketError { throw SocketError("\(target): \(error.description)") }
            throw SocketError("\(target): TLS: \(Self.describe(error, hostName: target.hostName))")
        }
    }

    deinit {
        network.close(promise: nil)
        pair.close(promise: nil)
    }

    /// NIOSSL's errors, in words: a failed certificate check says so.
    static func describe(_ error: Error, hostName: String) -> String {
        let text = "\(error)"
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the host's certificate does not name \(hostName) (reach it by a name or address the certificate lists)"
        }
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the host's certificate is not trusted (give --cacert with the host's certificate, or --insecure)"
        }
        if let handshake = error as? NIOSSLError, case .handshakeFailed = handshake { return "the TLS handshake failed: \(text.prefix(200))" }
        return String(text.prefix(200))
    }
}

extension ChannelPipeline {
    /// Runs `body` with the pipeline's synchronous operations on its own loop.
    fileprivate func syncOperationsOnLoop(_ body: @escaping @Sendable (SynchronousOperations) throws -> Void) throws {
        try eventLoop.submit { try body(self.syncOperations) }.wait()
    }
}

/// Completes `promise` when the TLS handshake ends, or fails it with the error that ended it.
private final class HandshakeWatcher: ChannelInboundHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let promise: EventLoopPromise<Void>

    init(_ promise: EventLoopPromise<Void>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { promise.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(SocketError("the host closed the connection during the TLS handshake"))
        context.fireChannelInactive()
    }
}

/// Copies what one channel reads to its partner, and ends the partner with it. While the
/// partner cannot take more, this side stops reading, so neither buffers without bound.
private final class Relay: ChannelDuplexHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let partner: Channel

    init(partner: Channel) { self.partner = partner }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner.write(unwrapInboundIn(data), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner.flush()
        // Backpressure: read on only while the partner can take it.
        if !partner.isWritable { context.channel.setOption(.autoRead, value: false).whenFailure { _ in } }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // This side drained: its partner may read again.
        if context.channel.isWritable { partner.setOption(.autoRead, value: true).whenFailure { _ in } }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
        partner.close(promise: nil)
    }
}
