import KinetraceTrace
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// What a WebSocket host serves beside its stream: pages for plain GET requests, and side
/// channels (WebSocket text messages at paths of its own). `kinetrace phone` is one: its page,
/// its operator's list, and each phone's channel for labels and decisions. A site is called on
/// the listener's one event loop only, as its service is.
package protocol HostSite: AnyObject, Sendable {
    /// The answer to a GET or HEAD for `target` (path and query) that is not an upgrade; nil: 404.
    func page(for target: String) -> SitePage?
    /// Whether an upgrade request for `path` opens a side channel.
    func opensChannel(at path: String) -> Bool
    /// One text message from a side channel, within `SiteChannel.maximumMessageBytes`.
    /// `record` writes into the host's trace.
    func channelMessage(_ channel: SiteChannel, text: [UInt8], record: (TraceRecord) -> Void)
    func channelClosed(_ channel: SiteChannel)
    /// The stream's upgrade for `target` made controller `peer`.
    func streamOpened(target: String, peer: Peer, record: (TraceRecord) -> Void)
}

/// A page a site serves.
package struct SitePage: Sendable {
    package var status: Int
    package var contentType: String
    package var body: [UInt8]

    package init(status: Int = 200, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}

/// One side channel: text messages out. Used on the listener's loop only.
package final class SiteChannel: @unchecked Sendable {  // confined to one event loop
    /// A side channel's messages are a phone's small JSON: one over this closes it (1009).
    package static let maximumMessageBytes = 4096

    /// Unique among the listener's side channels.
    package let number: Int
    private let channel: Channel

    init(number: Int, channel: Channel) {
        self.number = number
        self.channel = channel
    }

    /// Sends one text message, unless the peer has stopped reading: then it is dropped, not queued.
    package func send(_ text: String) {
        guard channel.isWritable, channel.isActive else { return }
        channel.writeAndFlush(NIOWebSocket.WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text)), promise: nil)
    }

    /// Runs `body` on the channel's loop after `milliseconds`, unless the channel has closed by then.
    package func after(milliseconds: Int, _ body: @escaping @Sendable () -> Void) {
        let channel = channel
        channel.eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
            guard channel.isActive else { return }
            body()
        }
    }

    /// Closes the channel with `code` (1008: policy, 1003: unacceptable data).
    package func close(code: UInt16, reason: String) {
        var payload = channel.allocator.buffer(capacity: 125)
        payload.writeInteger(code)
        payload.writeString(WebSocketMessageBridge.closeReason(reason))
        channel.writeAndFlush(NIOWebSocket.WebSocketFrame(fin: true, opcode: .connectionClose, data: payload))
            .whenComplete { [channel] _ in channel.close(promise: nil) }
    }
}

/// Between NIOWebSocket's frames and a site's side channel: whole text messages of at most
/// `SiteChannel.maximumMessageBytes`, each a delivery for the connection's idle timeout.
final class SiteChannelBridge: ChannelInboundHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = NIOWebSocket.WebSocketFrame
    typealias OutboundOut = NIOWebSocket.WebSocketFrame

    private let site: any HostSite
    private let channel: SiteChannel
    private let connection: ConnectionHandler
    private var partial: [UInt8] = []
    private var inMessage = false
    private var closing = false

    init(site: any HostSite, channel: SiteChannel, connection: ConnectionHandler) {
        self.site = site
        self.channel = channel
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !closing else { return }
        guard frame.maskKey != nil, frame.reservedBits.isEmpty else { return refuse(code: 1002, "an unmasked frame or reserved bits") }
        switch frame.opcode {
        case .text where !inMessage, .continuation where inMessage:
            inMessage = !frame.fin
            guard partial.count + frame.length <= SiteChannel.maximumMessageBytes else {
                return refuse(code: 1009, "a message over \(SiteChannel.maximumMessageBytes) bytes")
            }
            partial += Array(frame.unmaskedData.readableBytesView)
            guard frame.fin else { return }
            let text = partial
            partial = []
            connection.delivered()
            site.channelMessage(channel, text: text) { record in connection.record(record) }
        case .ping:
            guard context.channel.isWritable else { return }
            context.writeAndFlush(wrapOutboundOut(NIOWebSocket.WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            return
        case .text, .continuation:
            refuse(code: 1002, inMessage ? "a new message inside another" : "a continuation with no message")
        case .connectionClose:
            closing = true
            var echo = context.channel.allocator.buffer(capacity: 2)
            var data = frame.unmaskedData
            if let code: UInt16 = data.readInteger() { echo.writeInteger(code) }
            context.writeAndFlush(wrapOutboundOut(NIOWebSocket.WebSocketFrame(fin: true, opcode: .connectionClose, data: echo)))
                .assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        default:
            refuse(code: 1003, "a side channel takes text messages")
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard error is NIOWebSocketError else { return context.fireErrorCaught(error) }
        refuse(code: 1009, "a frame over the side channel's limit")
    }

    func channelInactive(context: ChannelHandlerContext) {
        site.channelClosed(channel)
        context.fireChannelInactive()
    }

    private func refuse(code: UInt16, _ reason: String) {
        guard !closing else { return }
        closing = true
        channel.close(code: code, reason: reason)
    }
}
