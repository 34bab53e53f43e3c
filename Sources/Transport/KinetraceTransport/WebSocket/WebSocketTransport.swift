import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceWebSocket
import KinetraceWire
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// WebSocket (RFC 6455) over TCP, or over TLS as `wss://`: one connection per controller, opened by an HTTP upgrade at
/// the URL's path. Each message is one WebSocket message, text for a protocol whose messages
/// are JSON or text, binary otherwise; a byte-stream protocol's stream is the messages'
/// payloads in order. TCP below repairs loss and order. The host side is SwiftNIO's
/// (NIOHTTP1's upgrade, NIOWebSocket's frame codec); a controller's side is plain sockets
/// (`WebSocketConnection`), for send timing.
package struct WebSocketTransport: Transport {
    /// Over TLS: `wss://`.
    package let secure: Bool
    /// Whether messages go as text frames (set by `fitted(to:)`).
    package var textMessages = false
    package var limits = WebSocketLimits.defaults

    package init(secure: Bool) { self.secure = secure }

    package var scheme: String { secure ? "wss" : "ws" }
    package var isSecure: Bool { secure }
    package var keepsMessageBoundaries: Bool { true }
    package var repairsDelivery: Bool { true }
    package var hasConnections: Bool { true }
    package var takesPath: Bool { true }

    /// Any protocol: a datagram is a message, a stream is the messages' payloads in order.
    package func problem(carrying wireProtocol: any WireProtocol) -> String? { nil }

    package func fitted(to wireProtocol: any WireProtocol) -> any Transport {
        var copy = self
        copy.textMessages = Self.messagesAreText(wireProtocol)
        return copy
    }

    /// True when every kind of `wireProtocol`'s messages is JSON or text (its declaration says).
    package static func messagesAreText(_ wireProtocol: any WireProtocol) -> Bool {
        let declared = wireProtocol.declaration?.kinds ?? (wireProtocol as? any CompiledWireProtocol).flatMap { type(of: $0).builtInDeclaration?.declaration?.kinds }
        guard let kinds = declared, !kinds.isEmpty else { return false }
        return kinds.allSatisfy { kind in
            switch kind.encoding {
            case .json, .text: return true
            case .binary, .osc: return false
            }
        }
    }

    package func connect(to target: TransportTarget, options: ConnectionOptions) throws(SocketError) -> any ControllerConnection {
        try WebSocketConnection(target: target, options: options, limits: limits, textMessages: textMessages, secure: secure)
    }

    package func listen(_ configuration: ListenerConfiguration, service: any HostService, logger: Logger) throws -> any HostListener {
        let path = configuration.path
        guard path.hasPrefix("/"), path.utf8.count <= TransportTarget.maximumPathBytes else {
            throw ListenerError("a WebSocket path starts with / and has at most \(TransportTarget.maximumPathBytes) bytes: \(path.prefix(80))")
        }
        let limits = limits, opcode: NIOWebSocket.WebSocketOpcode = textMessages ? .text : .binary
        var decoderLimits = NIOHTTPDecoderLimitConfiguration()
        decoderLimits.maxHeaderFieldSize = limits.maximumHeadBytes
        decoderLimits.maxHeaderListSize = limits.maximumHeadBytes
        decoderLimits.maxHeaderFieldCount = HTTPHead.maximumFields
        let headLimits = decoderLimits
        var makeTLSHandler: (@Sendable () -> any ChannelHandler)?
        if secure {
            guard let identity = configuration.tlsIdentity else { throw ListenerError("wss:// needs a certificate and its private key") }
            guard let provider = TLSSupport.provider else { throw ListenerError(TLSSupport.missing) }
            makeTLSHandler = try provider.serverHandlerMaker(for: identity)
        }
        let site = configuration.site
        let channelNumbers = SiteChannelNumbers()
        return try ConnectionListener(configuration, service: service, logger: logger) { [makeTLSHandler] child, handler in
            // TLS first: everything after it, the upgrade included, is the same as on ws://.
            if let makeTLSHandler { try child.pipeline.syncOperations.addHandler(makeTLSHandler()) }
            let refusal = UpgradeRefusal(path: path, site: site)
            let upgrader = NIOWebSocketServerUpgrader(
                maxFrameSize: limits.maximumFrameBytes, automaticErrorHandling: false,
                shouldUpgrade: { channel, head in
                    // Only the stream's path and a site's channels upgrade; anything else reaches `UpgradeRefusal`.
                    let requested = UpgradeRefusal.path(of: head.uri)
                    let accepted = requested == path || (site?.opensChannel(at: requested) ?? false)
                    return channel.eventLoop.makeSucceededFuture(accepted ? HTTPHeaders() : nil)
                },
                upgradePipelineHandler: { channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        sync.removeHandler(refusal, promise: nil)
                        if let site, UpgradeRefusal.path(of: head.uri) != path {
                            let side = SiteChannel(number: channelNumbers.next(), channel: channel)
                            try sync.addHandler(SiteChannelBridge(site: site, channel: side, connection: handler))
                            try sync.addHandler(handler)
                            return
                        }
                        try sync.addHandler(WebSocketMessageBridge(limits: limits, opcode: opcode, connection: handler))
                        try sync.addHandler(handler)
                        site?.streamOpened(target: head.uri, peer: handler.peer) { handler.record($0) }
                    }
                })
            try child.pipeline.syncOperations.configureHTTPServerPipeline(
                withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }),
                withErrorHandling: true, withOutboundHeaderValidation: true,
                withEncoderConfiguration: HTTPResponseEncoder.Configuration(), withDecoderLimitConfiguration: headLimits)
            try child.pipeline.syncOperations.addHandler(refusal)
        }
    }
}

/// A WebSocket host's and controller's limits are the capture reader's
/// (`WebSocketReadLimits.defaults`): a frame over 64 KiB ends the connection with close code
/// 1009 from its header alone; so does a message over 64 KiB or in more than 64 fragments; an
/// upgrade request whose head exceeds 8 KiB gets 400 Bad Request and the connection closes.
package typealias WebSocketLimits = WebSocketReadLimits

/// Answers an HTTP request that is not an upgrade at the served path, and closes: 404 for
/// another path, 426 for a plain request. Removed once the connection upgrades.
final class UpgradeRefusal: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let path: String
    private let site: (any HostSite)?
    private var answered = false

    init(path: String, site: (any HostSite)? = nil) {
        self.path = path
        self.site = site
    }

    /// A request target's path: its query dropped.
    static func path(of uri: String) -> String {
        String(uri.prefix { $0 != "?" })
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data), !answered else { return }
        answered = true
        if let site, Self.path(of: head.uri) != path {
            return serve(site, head, context: context)
        }
        let status: HTTPResponseStatus = Self.path(of: head.uri) == path ? .upgradeRequired : .notFound
        let body = status == .notFound ? "no WebSocket at \(head.uri.prefix(200)); this host serves \(path)\n" : "this host speaks WebSocket only: send an upgrade request to \(path)\n"
        var headers = HTTPHeaders([("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "\(body.utf8.count)"), ("Connection", "close")])
        if status == .upgradeRequired { headers.add(name: "Upgrade", value: "websocket") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// A site's page for a GET or HEAD (405 for another method, 404 for what it does not serve),
    /// then the connection closes: a page is one request.
    private func serve(_ site: any HostSite, _ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let page: SitePage
        if head.method == .GET || head.method == .HEAD {
            page = site.page(for: head.uri) ?? SitePage(status: 404, contentType: "text/plain; charset=utf-8", body: Array("not found: \(head.uri.prefix(200))\n".utf8))
        } else {
            page = SitePage(status: 405, contentType: "text/plain; charset=utf-8", body: Array("this site serves GET and HEAD only\n".utf8))
        }
        let headers = HTTPHeaders([("Content-Type", page.contentType), ("Content-Length", "\(page.body.count)"), ("Connection", "close"),
                                   ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")])
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: page.status), headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: page.body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}

/// Numbers a listener's side channels; read on its one loop only.
final class SiteChannelNumbers: @unchecked Sendable {  // confined to one event loop
    private var last = 0
    func next() -> Int {
        last += 1
        return last
    }
}

/// Between NIOWebSocket's frames and a connection's handler, which sees each whole message's
/// payload as bytes and writes replies as bytes. Frames are checked as a capture reader checks
/// them (`WebSocketFrameReader`: masked, no reserved bits or opcodes) and joined by the same
/// `WebSocketMessageAssembler`, so a host and a reader of its capture agree on every message.
/// Pings get pongs while the controller reads them; a close is echoed, then the connection ends.
/// Every close, whoever began it, is noted to the service as a `websocket_close` event.
final class WebSocketMessageBridge: ChannelDuplexHandler, @unchecked Sendable {  // confined to one event loop
    typealias InboundIn = NIOWebSocket.WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = NIOWebSocket.WebSocketFrame

    private let opcode: NIOWebSocket.WebSocketOpcode
    private let connection: ConnectionHandler
    private var assembler: WebSocketMessageAssembler
    /// Offset of the next frame in the controller's stream after the upgrade, for errors.
    private var offset = 0
    private var closing = false

    init(limits: WebSocketLimits, opcode: NIOWebSocket.WebSocketOpcode, connection: ConnectionHandler) {
        self.opcode = opcode
        self.connection = connection
        assembler = WebSocketMessageAssembler(maximumMessageBytes: limits.maximumMessageBytes, maximumFragments: limits.maximumFragments)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !closing else { return }
        let frameOffset = offset
        let length = frame.length
        offset += 2 + (length < 126 ? 0 : length <= 0xFFFF ? 2 : 8) + (frame.maskKey == nil ? 0 : 4) + length
        let raw = UInt8(webSocketOpcode: frame.opcode)
        do throws(KinetraceWebSocket.WebSocketError) {
            guard let opcode = KinetraceWebSocket.WebSocketOpcode(rawValue: raw), opcode.isDefined else {
                throw WebSocketError(.reservedOpcode, offset: frameOffset, "reserved opcode 0x\(String(raw, radix: 16))")
            }
            guard frame.reservedBits.isEmpty else {
                throw WebSocketError(.reservedBits, offset: frameOffset, "reserved bits set with no extension negotiated")
            }
            guard frame.maskKey != nil else {
                throw WebSocketError(.unmasked, offset: frameOffset, "a client's \(opcode) frame is not masked")
            }
            let payload = Array(frame.unmaskedData.readableBytesView)
            guard let event = try assembler.take(KinetraceWebSocket.WebSocketFrame(fin: frame.fin, opcode: opcode, payload: payload), offset: frameOffset) else { return }
            switch event {
            case .message(_, let payload):
                context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: payload)))
            case .ping(let payload):
                // A controller that stops reading gets no more pongs: they would pile up here.
                guard context.channel.isWritable else { return }
                context.writeAndFlush(wrapOutboundOut(NIOWebSocket.WebSocketFrame(fin: true, opcode: .pong, data: context.channel.allocator.buffer(bytes: payload))), promise: nil)
            case .pong:
                return
            case .close(let code, let reason):
                close(context, code: code, reason: String(decoding: reason, as: UTF8.self), by: "controller")
            }
        } catch {
            close(context, code: error.code.closeCode, reason: "\(error.code.name): \(error.detail)", by: "host")
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let payload = unwrapOutboundIn(data)
        context.write(wrapOutboundOut(NIOWebSocket.WebSocketFrame(fin: true, opcode: opcode, data: payload)), promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // NIOWebSocket's decoder refused a frame (too long, a fragmented or long control frame).
        guard let refused = error as? NIOWebSocketError else {
            context.fireErrorCaught(error)
            return
        }
        switch refused {
        case .invalidFrameLength: close(context, code: 1009, reason: "frame_too_large: a frame longer than the host takes", by: "host")
        case .fragmentedControlFrame: close(context, code: 1002, reason: "fragmented_control_frame", by: "host")
        case .multiByteControlFrameLength: close(context, code: 1002, reason: "control_frame_too_long", by: "host")
        }
    }

    /// A close reason within the 123 bytes a close frame has room for, cut between characters.
    static func closeReason(_ text: String) -> String {
        var kept = ""
        for character in text {
            guard kept.utf8.count + String(character).utf8.count <= 123 else { break }
            kept.append(character)
        }
        return kept
    }

    /// Sends a close frame with `code` (echoing the controller's, or the host's own verdict),
    /// notes it, and closes the connection once it is written.
    private func close(_ context: ChannelHandlerContext, code: UInt16?, reason: String, by: String) {
        guard !closing else { return }
        closing = true
        var data: [String: JSONValue] = ["by": .string(by), "reason": .string(by == "host" ? Self.closeReason(reason) : reason)]
        if let code { data["code"] = .integer(Int64(code)) }
        connection.note(event: "websocket_close", data: data, timeNs: SystemClock.realtimeNs())
        // The reason goes on the wire too (at most 123 bytes, whole characters), so a capture of
        // the session reads the same close as the host's trace.
        var payload = context.channel.allocator.buffer(capacity: 125)
        if let code {
            payload.writeInteger(code)
            if by == "host" { payload.writeString(Self.closeReason(reason)) }
        }
        context.writeAndFlush(wrapOutboundOut(NIOWebSocket.WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)))
            .assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
