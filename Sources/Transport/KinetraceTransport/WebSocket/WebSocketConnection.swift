#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceHash
import KinetraceSupport
import KinetraceTrace
import KinetraceWebSocket
import NIOConcurrencyHelpers
import NIOCore

/// A controller's WebSocket (RFC 6455) over a plain non-blocking TCP socket, so that a sender
/// sleeping to absolute deadlines decides when each frame leaves, as it does on UDP and TCP;
/// over TLS (`wss://`) the socket is the plaintext end of a `TLSRelay`. The opening
/// handshake is done before `init` returns. Every send is one masked frame, FIN set:
/// the message is the unit, as a datagram is. Bytes the kernel does not take at once wait in
/// `outbox` and go before anything else, so the caller never sees a partial message; the
/// reader answers pings and the host's close through the same outbox.
final class WebSocketConnection: ControllerConnection, @unchecked Sendable {  // the outbox and writes are behind `lock`; reads belong to one thread
    let local: Endpoint
    private let socket: ConnectedTCPSocket
    /// Over TLS: the relay whose plaintext end `socket` is, kept for the connection's life.
    private let relay: (any TLSPlaintextLink)?
    private let opcode: WebSocketOpcode
    private let lock = NIOLock()
    /// Frame bytes not yet taken by the kernel: sent before anything else.
    private var outbox: [UInt8] = []
    private var masks: SeededGenerator
    private var closeSent = false
    private var reader: WebSocketFrameReader
    private var assembler: WebSocketMessageAssembler
    /// What the host said that `read` has not yet returned: frames are parsed as soon as they arrive.
    private var events: [WebSocketEvent] = []
    private var failure: WebSocketError?
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)
    private var ended = false
    /// Pongs are queued only while the outbox holds less than this.
    static let pongRoomBytes = 4_096

    init(target: TransportTarget, options: ConnectionOptions, limits: WebSocketLimits, textMessages: Bool, secure: Bool) throws(SocketError) {
        if secure {
            guard let provider = TLSSupport.provider else { throw SocketError("\(target): \(TLSSupport.missing)") }
            let relay = try provider.connect(to: target, trust: options.tlsTrust, timeoutMs: options.connectTimeoutMs)
            self.relay = relay
            socket = ConnectedTCPSocket(adopting: relay.plaintextDescriptor, local: relay.local)
        } else {
            relay = nil
            socket = try ConnectedTCPSocket(to: target.address, timeoutMs: options.connectTimeoutMs, sendBufferBytes: options.sendBufferBytes)
        }
        local = socket.local
        opcode = textMessages ? .text : .binary
        // Masks hide payloads from caching proxies, not from anyone reading the trace: derived
        // from the local port, so a run is reproducible and two connections differ.
        masks = SeededGenerator(seed: 0x6b69_6e65_7472_6163 ^ UInt64(socket.local.port))
        reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: limits.maximumFrameBytes)
        assembler = WebSocketMessageAssembler(maximumMessageBytes: limits.maximumMessageBytes, maximumFragments: limits.maximumFragments)
        let deadline = SystemClock.monotonicNs() + Int64(options.connectTimeoutMs) * 1_000_000
        try upgrade(target: target, deadline: deadline, timeoutMs: options.connectTimeoutMs)
    }

    // MARK: The opening handshakes

    /// Waits for the socket to be readable (or `writable`) until `deadline`.
    private func wait(until deadline: Int64, writable: Bool = false) -> Bool {
        let remainingNs = deadline - SystemClock.monotonicNs()
        guard remainingNs > 0 else { return false }
        var pfd = pollfd(fd: socket.fd, events: Int16(writable ? POLLOUT : POLLIN), revents: 0)
        _ = poll(&pfd, 1, Int32(min((remainingNs + 999_999) / 1_000_000, 1000)))
        return true
    }

    /// Sends the outbox whole before `deadline` (the handshakes only).
    private func sendOutbox(_ target: TransportTarget, until deadline: Int64, timeoutMs: Int32) throws(SocketError) {
        while true {
            let (left, failed): (Int, Int32?) = lock.withLock {
                if let code = flushLocked() { return (0, code) }
                return (outbox.count, nil)
            }
            if let failed { throw SocketError("\(target): \(String(cString: strerror(failed)))") }
            if left == 0 { return }
            guard wait(until: deadline, writable: true) else { throw SocketError("\(target): the host took no handshake bytes within \(timeoutMs) ms") }
        }
    }

    /// Sends the upgrade request and reads the host's 101 within the connect timeout.
    private func upgrade(target: TransportTarget, deadline: Int64, timeoutMs: Int32) throws(SocketError) {
        let nonce = (0..<16).map { _ in UInt8.random(in: 0...255, using: &masks) }
        let key = WebSocketHandshake.base64(nonce)
        let request = WebSocketHandshake.request(host: target.address.description, path: target.path ?? "/", key: key)
        if let code = lock.withLock({ request.withUnsafeBytes { writeLocked($0) } }) {
            throw SocketError("\(target): sending the WebSocket upgrade: \(String(cString: strerror(code)))")
        }
        try sendOutbox(target, until: deadline, timeoutMs: timeoutMs)
        try readAnswer(target: target, key: key, deadline: deadline, timeoutMs: timeoutMs)
    }

    /// The answer is peeked, and only its head taken: frames the host sends at once stay in
    /// the socket, where the reader's poll sees them.
    private func readAnswer(target: TransportTarget, key: String, deadline: Int64, timeoutMs: Int32) throws(SocketError) {
        var peeked = [UInt8](repeating: 0, count: HTTPHead.defaultMaximumBytes)
        while true {
            let n = peeked.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, Int32(MSG_PEEK)) }
            if n == 0 { throw SocketError("\(target): the host closed the connection during the WebSocket handshake") }
            if n < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR {
                throw SocketError("\(target): WebSocket handshake: \(String(cString: strerror(errno)))")
            }
            if n > 0, let length = try checkAnswer(peeked[0..<n], key: key, target: target) {
                var taken = [UInt8](repeating: 0, count: length)
                let got = taken.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, length, 0) }
                guard got == length else { throw SocketError("\(target): WebSocket handshake: the answer's head could not be read whole") }
                return
            }
            // POLLIN stays set while peeked bytes wait: sleep briefly rather than spin on it.
            if n > 0 { usleep(1_000) }
            guard n > 0 || wait(until: deadline), SystemClock.monotonicNs() < deadline else {
                throw SocketError("\(target): no WebSocket handshake answer within \(timeoutMs) ms")
            }
        }
    }

    /// The length of the answer's head once it is whole and right; nil while it is not whole.
    private func checkAnswer(_ bytes: ArraySlice<UInt8>, key: String, target: TransportTarget) throws(SocketError) -> Int? {
        do throws(WebSocketError) {
            guard let (head, length) = try HTTPHead.read(bytes) else { return nil }
            try Self.check(head, key: key)
            return length
        } catch {
            throw SocketError("\(target): the host's WebSocket handshake: \(error.detail)")
        }
    }

    /// RFC 6455 section 4.1: the client fails the connection unless all of these hold.
    private static func check(_ head: HTTPHead, key: String) throws(WebSocketError) {
        guard let status = head.status else { throw WebSocketError(.badHandshake, offset: 0, "the answer is not an HTTP response") }
        guard status == 101 else {
            throw WebSocketError(.badHandshake, offset: 0, "the host answered \(head.startLine.prefix(80)) instead of 101 Switching Protocols")
        }
        guard head.value("Upgrade")?.lowercased() == "websocket", head.lists("Connection", "upgrade") else {
            throw WebSocketError(.badHandshake, offset: 0, "the 101 answer lacks Upgrade: websocket and Connection: Upgrade")
        }
        guard head.value("Sec-WebSocket-Accept") == acceptValue(for: key) else {
            throw WebSocketError(.badHandshake, offset: 0, "Sec-WebSocket-Accept does not answer the key sent")
        }
        if let extensions = head.value("Sec-WebSocket-Extensions"), !extensions.isEmpty {
            throw WebSocketError(.badHandshake, offset: 0, "the host chose extensions (\(extensions.prefix(80))) that were not offered")
        }
    }

    static func acceptValue(for key: String) -> String {
        WebSocketHandshake.base64(SHA1.digest(Array((key + WebSocketHandshake.acceptGUID).utf8)))
    }

    // MARK: Sending

    var descriptor: Int32 { socket.fd }
    var stampsArrivals: Bool { false }

    /// Writes as much of the outbox as the kernel takes; errno when the connection failed.
    private func flushLocked() -> Int32? {
        guard !outbox.isEmpty else { return nil }
        switch outbox.withUnsafeBytes({ socket.tryWrite($0) }) {
        case .all: outbox.removeAll(keepingCapacity: true)
        case .partial(let n): outbox.removeFirst(n)
        case .error(let code): return code
        }
        return nil
    }

    /// Queues bytes for the socket and writes what the kernel takes.
    private func writeLocked(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        outbox.append(contentsOf: bytes)
        return flushLocked()
    }

    /// Queues one masked frame and writes what the kernel takes.
    private func enqueueLocked(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) -> Int32? {
        let key = withUnsafeBytes(of: masks.next()) { Array($0.prefix(4)) }
        var frame = WebSocketFrame.header(fin: true, opcode: opcode, payloadLength: payload.count, maskingKey: key)
        let payloadStart = frame.count
        frame.append(contentsOf: payload)
        for index in payloadStart..<frame.count { frame[index] ^= key[(index - payloadStart) & 3] }
        return frame.withUnsafeBytes { writeLocked($0) }
    }

    func trySend(_ bytes: UnsafeRawBufferPointer) -> SendOutcome {
        lock.withLock {
            guard !closeSent else { return .failed(EPIPE, ended: true) }
            if let code = flushLocked() { return .failed(code, ended: true) }
            // A frame still going out: this message waits whole (nothing of it taken).
            guard outbox.isEmpty else { return .partial(0) }
            if let code = enqueueLocked(opcode, bytes) { return .failed(code, ended: true) }
            return .all
        }
    }

    var hasRoom: Bool {
        lock.withLock {
            if flushLocked() != nil { return true }  // the failure shows at the next send
            guard outbox.isEmpty else { return false }
            var pfd = pollfd(fd: socket.fd, events: Int16(POLLOUT), revents: 0)
            return poll(&pfd, 1, 0) > 0 && pfd.revents & Int16(POLLOUT) != 0
        }
    }

    func send(_ bytes: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        var queued = false
        while true {
            let (failure, done): (Int32?, Bool) = lock.withLock {
                if let code = flushLocked() { return (code, false) }
                if !queued, outbox.isEmpty {
                    guard !closeSent else { return (EPIPE, false) }
                    queued = true
                    if let code = bytes.withUnsafeBytes({ enqueueLocked(opcode, $0) }) { return (code, false) }
                }
                return (nil, queued && outbox.isEmpty)
            }
            if let failure { return failure }
            if done { return nil }
            // Past the deadline a frame may be half sent: the connection is the host's to judge stopped.
            guard wait(until: deadlineMonotonicNs, writable: true) else { return ETIMEDOUT }
        }
    }

    // MARK: Reading

    /// Parses every whole frame held into events, so a poll that finds the socket empty misses nothing.
    private func parseFrames() {
        guard failure == nil else { return }
        do throws(WebSocketError) {
            while true {
                let offset = reader.offset
                guard let frame = try reader.next() else { return }
                if let event = try assembler.take(frame, offset: offset) { events.append(event) }
            }
        } catch {
            failure = error
        }
    }

    var hasBufferedInput: Bool { !events.isEmpty || failure != nil && !ended }

    func read(into buffer: inout [UInt8]) -> ReadOutcome {
        while true {
            if !events.isEmpty {
                switch events.removeFirst() {
                case .message(_, let payload):
                    let n = min(payload.count, buffer.count)
                    buffer.withUnsafeMutableBufferPointer { destination in
                        for index in 0..<n { destination[index] = payload[index] }
                    }
                    return .bytes(n, arrivalRealtimeNs: nil)
                case .ping(let payload):
                    // Answered while little is queued: a host that pings and never reads must not
                    // grow the outbox (RFC 6455 lets a pong answer only the latest ping).
                    lock.withLock {
                        guard !closeSent, outbox.count < Self.pongRoomBytes else { return }
                        _ = payload.withUnsafeBytes { enqueueLocked(.pong, $0) }
                    }
                    continue
                case .pong:
                    continue
                case .close(let code, _):
                    // Echo the code (section 5.5.1), then the host closes the TCP connection.
                    sendClose(code)
                    ended = true
                    return .closed
                }
            }
            if ended { return .closed }
            if let failure {
                // The host broke the protocol: fail the connection (section 7.1.7).
                sendClose(failure.code.closeCode)
                ended = true
                return .failed(EPROTO, ended: true)
            }
            switch socket.read(into: &readBuffer) as ConnectedTCPSocket.Read {
            case .bytes(let n):
                reader.append(readBuffer[0..<n])
                parseFrames()
            case .nothing: return .nothing
            case .closed: return .closed
            case .error(let code): return .failed(code, ended: true)
            }
        }
    }

    /// Sends a close frame once, with `code` if any.
    private func sendClose(_ code: UInt16?) {
        lock.withLock {
            guard !closeSent else { return }
            closeSent = true
            let payload: [UInt8] = code.map { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } ?? []
            _ = payload.withUnsafeBytes { enqueueLocked(.close, $0) }
        }
    }

    /// The closing handshake's first half: a close frame (1000), after whatever is still
    /// queued, so the host answers with its own close and ends the connection.
    func endOutput() -> Bool {
        sendClose(1000)
        let deadline = SystemClock.monotonicNs() + 1_000_000_000
        while lock.withLock({ !outbox.isEmpty }), wait(until: deadline, writable: true) {
            if lock.withLock({ flushLocked() }) != nil { break }
        }
        return true
    }

    /// Unknown over TLS: the relay's socket pair counts buffer memory, not the host's unread bytes.
    var unsentBytes: Int? {
        guard relay == nil else { return nil }
        let queued = lock.withLock { outbox.count }
        return socket.unsentBytes.map { $0 + queued }
    }
}
