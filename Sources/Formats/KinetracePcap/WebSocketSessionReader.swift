import KinetraceJSON
import KinetraceTrace
import KinetraceWebSocket
import KinetraceWire

/// What carries a protocol's messages in a capture.
package enum CaptureCarrier: String, Hashable, Sendable, CaseIterable {
    /// The protocol's own transport: UDP datagrams, or a byte stream on TCP.
    case native
    /// Plain WebSocket (ws://, RFC 6455) over TCP, as `kinetrace host --transport ws` serves it:
    /// each WebSocket message is one protocol message (a byte stream's stream is the messages'
    /// payloads in order). A wss:// session cannot be read from a capture: TLS hides its frames.
    case webSocket
}

/// Reads the plain WebSocket sessions of a capture from the stream chunks a `TCPReassembler`
/// gives, into the records `kinetrace host --transport ws --trace` writes of the same sessions:
///
/// - Per connection (a controller's endpoint and the host's), the controller's stream must begin
///   with an HTTP upgrade request (`GET`, `Upgrade: websocket`) and the host's with
///   `HTTP/1.1 101`. After the heads, the controller's frames must be masked and the host's must
///   not, and both are read with the host's own limits (`WebSocketReadLimits.defaults`).
/// - Each whole text or binary message becomes one `msg` record, stamped with the capture time of
///   the packet that completed it; source and destination are the sending side's endpoints.
/// - The first close frame of a connection, whichever side sent it, becomes one `websocket_close`
///   event as the host writes it: `by` (`controller` or `host`), `code` (absent when the frame
///   had no payload), `reason` (the reason's UTF-8 text, at most 123 characters) and `controller`.
///   Its echo is not recorded, as the host records one close per connection.
/// - As the host ignores what a controller sends once either side has closed, the controller's
///   messages after the connection's first close are not recorded; nor are the host's after its
///   own close frame. Both are counted (`Counts.messagesAfterClose`), as are pings and pongs.
/// - What cannot be read is never silent: a stream gap, a capture begun inside a stream, a head
///   that is not a WebSocket upgrade (or its answer not 101), a head over the limit, a frame the
///   codec refuses (`WebSocketError`), a stream that ends inside a head, frame or message, and a
///   direction given up to stay within `Limits.heldBytesTotal` each become one `websocket_error`
///   event (`controller`, `direction`, `offset`: the byte's offset in that direction's TCP stream,
///   the HTTP head included; `code`; `detail`), and the rest of that direction is not read.
///
/// Memory is bounded: a head is held up to `maximumHeadBytes`; the frame reader is fed at most
/// one whole frame's worth of bytes at a time, so it never holds more than the longest frame and
/// its header, and is replaced by a fresh one holding only its unread bytes when those came in the
/// chunk just read (so the room a long frame took goes with it); a fragmented message is held up
/// to `maximumMessageBytes`. All directions together
/// hold at most `Limits.heldBytesTotal`; past it the direction holding most gives up. The number of
/// directions is the reassembler's to bound: a direction's state goes when its stream ends.
package struct WebSocketSessionReader {
    package struct Limits: Hashable, Sendable {
        /// What one connection's peer may send: the host's own limits.
        package var webSocket = WebSocketReadLimits.defaults
        /// Bytes all directions together may hold (unfinished heads, frames and fragmented
        /// messages); past it the direction holding most gives up, with a `websocket_error`.
        package var heldBytesTotal = 64 << 20

        package init() {}
    }

    /// What the reader saw, for reports.
    package struct Counts: Hashable, Sendable {
        /// Upgrade requests read (controller's side), and 101 answers read (host's side).
        package var upgradeRequests = 0
        package var upgradesAccepted = 0
        /// Frames read, of every opcode.
        package var frames = 0
        /// Messages recorded, and messages read after a close and not recorded.
        package var messages = 0
        package var messagesAfterClose = 0
        package var pings = 0
        package var pongs = 0
        /// Close frames read (the first of a connection is recorded, its echo is not).
        package var closeFrames = 0
        /// `websocket_error` events written.
        package var errors = 0
        /// Stream bytes of directions given up, from where each was given up on: never read.
        package var bytesNotRead = 0
        /// The most bytes held at once over all directions, counted as a chunk arrives and before
        /// a direction is given up for it: at most `heldBytesTotal` plus one chunk.
        package var peakHeldBytes = 0

        package init() {}
    }

    package static let closeEvent = "websocket_close"
    package static let errorEvent = "websocket_error"

    /// The `code`s of `websocket_error` events that are not a `WebSocketError.Code`'s name.
    package enum ReaderCode {
        /// Bytes of the direction were never captured.
        package static let streamGap = "stream_gap"
        /// The capture began inside the direction's stream: where its frames start is unknown.
        package static let midStreamStart = "mid_stream_start"
        /// The host answered the upgrade with something other than 101 Switching Protocols.
        package static let upgradeRefused = "upgrade_refused"
        /// The stream ended inside an HTTP head, a frame or a fragmented message.
        package static let streamEnded = "stream_ended"
        /// Given up to keep what all directions hold within `Limits.heldBytesTotal`.
        package static let heldBytesLimit = "held_bytes_limit"
    }

    package let limits: Limits
    package private(set) var counts = Counts()
    /// The first `websocket_error` written: `code at offset N: detail`, for a capture that yields nothing.
    package private(set) var firstError: String?
    /// Bytes held now over all directions.
    package private(set) var heldBytes = 0

    private struct SessionKey: Hashable {
        var controller: Endpoint
        var host: Endpoint
    }

    private enum Phase { case head, frames, failed }

    /// One direction of one connection (a class, so its buffers are edited in place).
    private final class Side {
        var phase = Phase.head
        /// The HTTP head so far, and how much of it has been searched for its empty line.
        var head: [UInt8] = []
        var headSearched = 0
        /// Stream offset of the reader's offset 0: the head's length, then wherever a fresh reader took over.
        var frameBase = 0
        var reader: WebSocketFrameReader
        var assembler: WebSocketMessageAssembler
        /// Payload bytes of the fragmented message begun, which the assembler holds.
        var messageBytes = 0
        /// This side has sent a close frame.
        var closed = false
        var ended = false

        init(_ limits: WebSocketReadLimits, sender: WebSocketFrameReader.Sender) {
            reader = WebSocketFrameReader(sender: sender, maximumPayloadBytes: limits.maximumFrameBytes)
            assembler = WebSocketMessageAssembler(maximumMessageBytes: limits.maximumMessageBytes, maximumFragments: limits.maximumFragments)
        }

        var held: Int { head.count + reader.pendingBytes + messageBytes }
        /// Stream offset of the first byte held.
        var heldFrom: Int { phase == .head ? 0 : frameBase + reader.offset }
    }

    private final class Session {
        let key: SessionKey
        var c2h: Side?
        var h2c: Side?
        /// A close frame was seen on the connection, and the first one was recorded.
        var closeSeen = false

        init(_ key: SessionKey) { self.key = key }

        subscript(toHost: Bool) -> Side? {
            get { toHost ? c2h : h2c }
            set { if toHost { c2h = newValue } else { h2c = newValue } }
        }
    }

    private var sessions: [SessionKey: Session] = [:]

    package init(limits: Limits = Limits()) {
        precondition(limits.webSocket.maximumFrameBytes >= 125 && limits.webSocket.maximumMessageBytes > 0
                     && limits.webSocket.maximumFragments > 0 && limits.webSocket.maximumHeadBytes >= 4 && limits.heldBytesTotal > 0,
                     "WebSocket reading limits must be positive (a frame at least 125 bytes)")
        self.limits = limits
    }

    /// Connections with a direction still open.
    package var openConnections: Int { sessions.count }

    /// Reads one chunk of one direction's stream, appending the records it completes to `out`.
    package mutating func take(_ chunk: StreamChunk, into out: inout [TraceRecord]) {
        let toHost = chunk.direction == .controllerToHost
        let key = toHost ? SessionKey(controller: chunk.source, host: chunk.destination)
                         : SessionKey(controller: chunk.destination, host: chunk.source)
        let session: Session
        if let known = sessions[key] {
            session = known
        } else {
            session = Session(key)
            sessions[key] = session
        }
        if chunk.startedWithHandshake != nil || session[toHost] == nil {
            // A new direction: a connection whose other direction has ended or never was is a new one.
            if let old = session[toHost] { heldBytes -= old.held }
            if session[!toHost].map({ $0.ended }) ?? true { session.closeSeen = false }
            session[toHost] = Side(limits.webSocket, sender: toHost ? .client : .server)
            if chunk.startedWithHandshake != true {
                fail(session, toHost, code: ReaderCode.midStreamStart, offset: chunk.offset,
                     detail: "the capture began inside this direction's stream, so where its frames start is unknown", timeNs: chunk.timeNs, into: &out)
            }
        }
        let before = session[toHost]!.held
        if chunk.missingBefore > 0, session[toHost]!.phase != .failed {
            fail(session, toHost, code: ReaderCode.streamGap, offset: chunk.offset - chunk.missingBefore,
                 detail: "\(chunk.missingBefore) bytes of the stream were never captured", timeNs: chunk.timeNs, into: &out)
        }
        if !chunk.bytes.isEmpty {
            if session[toHost]!.phase == .failed {
                counts.bytesNotRead += chunk.bytes.count
            } else {
                read(chunk.bytes[...], session: session, toHost: toHost, chunk: chunk, into: &out)
            }
        }
        if let end = chunk.end { finish(session, toHost, how: end, timeNs: chunk.timeNs, into: &out) }
        heldBytes += session[toHost]!.held - before
        if session[toHost]!.ended {
            // Whatever it held was reported and let go by `finish`.
            if session[!toHost].map({ $0.ended }) ?? true { sessions[key] = nil }
        }
        counts.peakHeldBytes = max(counts.peakHeldBytes, heldBytes)
        if heldBytes > limits.heldBytesTotal { enforceTotal(timeNs: chunk.timeNs, into: &out) }
    }

    // MARK: Heads and frames

    private mutating func read(_ bytes: ArraySlice<UInt8>, session: Session, toHost: Bool, chunk: StreamChunk, into out: inout [TraceRecord]) {
        var rest = bytes
        if session[toHost]!.phase == .head {
            guard let after = readHead(&rest, session: session, toHost: toHost, timeNs: chunk.timeNs, into: &out) else { return }
            rest = after
        }
        guard session[toHost]!.phase == .frames else { return }
        // At most one whole frame's worth held: a frame announcing more than the limit is refused
        // from its header, before the bytes after it are handed over.
        let window = limits.webSocket.maximumFrameBytes + WebSocketReadLimits.maximumFrameHeaderBytes
        var index = rest.startIndex
        while index < rest.endIndex {
            let room = max(1, window - session[toHost]!.reader.pendingBytes)
            let end = rest.endIndex - index <= room ? rest.endIndex : index + room
            session[toHost]!.reader.append(rest[index..<end])
            index = end
            readFrames(session: session, toHost: toHost, chunk: chunk, into: &out)
            if session[toHost]!.phase == .failed {
                counts.bytesNotRead += rest.endIndex - index
                return
            }
        }
        // The reader keeps its buffer's room after the frames it gave: a direction that once took a
        // 64 KiB frame would hold 64 KiB for as long as it lasts. Its unread bytes are the last ones
        // handed to it, so when they came in this chunk a fresh reader takes them alone.
        let side = session[toHost]!
        let pending = side.reader.pendingBytes
        guard pending <= rest.count else { return }
        var fresh = WebSocketFrameReader(sender: side.reader.sender, maximumPayloadBytes: side.reader.maximumPayloadBytes)
        if pending > 0 { fresh.append(rest.suffix(pending)) }
        side.frameBase += side.reader.offset
        side.reader = fresh
    }

    /// Takes head bytes from the front of `rest`; returns the bytes after the head once it is
    /// whole and accepted, nil while it is not (or when it failed).
    private mutating func readHead(_ rest: inout ArraySlice<UInt8>, session: Session, toHost: Bool, timeNs: Int64,
                                   into out: inout [TraceRecord]) -> ArraySlice<UInt8>? {
        let maximum = limits.webSocket.maximumHeadBytes
        let taken = rest.prefix(maximum - session[toHost]!.head.count)
        rest = rest.dropFirst(taken.count)
        session[toHost]!.head.append(contentsOf: taken)
        let head = session[toHost]!.head
        // Only the bytes not yet searched (and the three before them) are searched for the empty line.
        var index = max(0, session[toHost]!.headSearched - 3)
        var complete = false
        while index + 3 < head.count {
            if head[index] == 13, head[index + 1] == 10, head[index + 2] == 13, head[index + 3] == 10 { complete = true; break }
            index += 1
        }
        session[toHost]!.headSearched = head.count
        guard complete || head.count >= maximum else { return nil }
        do throws(WebSocketError) {
            guard let result = try HTTPHead.read(head[...], maximumBytes: maximum) else { return nil }
            let parsed = result.head, length = result.length
            let startLine = String(parsed.startLine.prefix(80))
            if toHost {
                guard let request = parsed.request, request.method == "GET", parsed.lists("Upgrade", "websocket") else {
                    throw WebSocketError(.badHandshake, offset: 0, "not a WebSocket upgrade request (GET with Upgrade: websocket): \(startLine)")
                }
                counts.upgradeRequests += 1
            } else {
                guard parsed.status == 101 else {
                    fail(session, toHost, code: ReaderCode.upgradeRefused, offset: 0,
                         detail: "the host answered \(startLine), not 101 Switching Protocols", timeNs: timeNs, into: &out)
                    counts.bytesNotRead += rest.count
                    return nil
                }
                counts.upgradesAccepted += 1
            }
            session[toHost]!.phase = .frames
            session[toHost]!.frameBase = length
            session[toHost]!.head = []
            return head[length...] + rest
        } catch {
            fail(session, toHost, code: error.code.name, offset: error.offset, detail: error.detail, timeNs: timeNs, into: &out)
            counts.bytesNotRead += rest.count
            return nil
        }
    }

    private mutating func readFrames(session: Session, toHost: Bool, chunk: StreamChunk, into out: inout [TraceRecord]) {
        while session[toHost]!.phase == .frames {
            let at = session[toHost]!.reader.offset
            let event: WebSocketEvent
            do throws(WebSocketError) {
                guard let frame = try session[toHost]!.reader.next() else { return }
                counts.frames += 1
                guard let complete = try session[toHost]!.assembler.take(frame, offset: at) else {
                    session[toHost]!.messageBytes += frame.payload.count
                    continue
                }
                if !frame.opcode.isControl { session[toHost]!.messageBytes = 0 }
                event = complete
            } catch {
                fail(session, toHost, code: error.code.name, offset: session[toHost]!.frameBase + error.offset, detail: error.detail,
                     timeNs: chunk.timeNs, into: &out)
                return
            }
            switch event {
            case .message(_, let payload):
                // The host ignores a controller once either side has closed, and sends nothing after its own close.
                if toHost ? session.closeSeen : session[toHost]!.closed {
                    counts.messagesAfterClose += 1
                    continue
                }
                counts.messages += 1
                out.append(.message(MessageRecord(timeNs: chunk.timeNs, direction: chunk.direction, source: chunk.source,
                                                  destination: chunk.destination, payload: payload)))
            case .ping:
                counts.pings += 1
            case .pong:
                counts.pongs += 1
            case .close(let code, let reason):
                counts.closeFrames += 1
                session[toHost]!.closed = true
                guard !session.closeSeen else { continue }  // the echo, or a second close
                session.closeSeen = true
                var data: [String: JSONValue] = [
                    "by": .string(toHost ? "controller" : "host"),
                    "reason": .string(String(String(decoding: reason, as: UTF8.self).prefix(123))),
                    "controller": .string(session.key.controller.description),
                ]
                if let code { data["code"] = .integer(Int64(code)) }
                out.append(.event(EventRecord(timeNs: chunk.timeNs, event: Self.closeEvent, data: data)))
            }
        }
    }

    // MARK: Ends and failures

    /// The direction's stream ended: an unfinished head, frame or message is reported.
    private mutating func finish(_ session: Session, _ toHost: Bool, how: StreamEnd, timeNs: Int64, into out: inout [TraceRecord]) {
        let side = session[toHost]!
        switch side.phase {
        case .head where !side.head.isEmpty:
            fail(session, toHost, code: ReaderCode.streamEnded, offset: side.head.count,
                 detail: "the stream ended (\(how.rawValue)) inside its HTTP head, after \(side.head.count) bytes", timeNs: timeNs, into: &out)
        case .frames where side.reader.pendingBytes > 0:
            fail(session, toHost, code: ReaderCode.streamEnded, offset: side.frameBase + side.reader.offset,
                 detail: "the stream ended (\(how.rawValue)) inside a frame, \(side.reader.pendingBytes) bytes of it captured", timeNs: timeNs, into: &out)
        case .frames where side.assembler.inMessage:
            fail(session, toHost, code: ReaderCode.streamEnded, offset: side.frameBase + side.reader.offset,
                 detail: "the stream ended (\(how.rawValue)) inside a fragmented message, \(side.messageBytes) bytes of it captured", timeNs: timeNs, into: &out)
        default:
            break
        }
        session[toHost]!.ended = true
    }

    /// Writes a `websocket_error` and gives up on the rest of the direction, letting go of what it held.
    private mutating func fail(_ session: Session, _ toHost: Bool, code: String, offset: Int, detail: String, timeNs: Int64,
                               into out: inout [TraceRecord]) {
        counts.bytesNotRead += (session[toHost]?.head.count ?? 0) + (session[toHost]?.reader.pendingBytes ?? 0)
        let side = Side(limits.webSocket, sender: toHost ? .client : .server)
        side.phase = .failed
        side.closed = session[toHost]?.closed ?? false
        side.ended = session[toHost]?.ended ?? false
        side.frameBase = session[toHost]?.frameBase ?? 0
        session[toHost] = side
        counts.errors += 1
        if firstError == nil { firstError = "\(code) at offset \(offset) of \(toHost ? "a controller's" : "the host's") stream: \(detail)" }
        out.append(.event(EventRecord(timeNs: timeNs, event: Self.errorEvent, data: [
            "controller": .string(session.key.controller.description),
            "direction": .string(toHost ? Direction.controllerToHost.rawValue : Direction.hostToController.rawValue),
            "offset": .integer(Int64(offset)),
            "code": .string(code),
            "detail": .string(detail),
        ])))
    }

    /// Gives up the directions holding most until all of them together hold no more than the limit.
    private mutating func enforceTotal(timeNs: Int64, into out: inout [TraceRecord]) {
        while heldBytes > limits.heldBytesTotal {
            var fullest: (session: Session, toHost: Bool, held: Int)?
            for session in sessions.values {
                for toHost in [true, false] {
                    guard let side = session[toHost], side.held > (fullest?.held ?? 0) else { continue }
                    fullest = (session, toHost, side.held)
                }
            }
            guard let fullest else { return }
            let side = fullest.session[fullest.toHost]!
            fail(fullest.session, fullest.toHost, code: ReaderCode.heldBytesLimit, offset: side.heldFrom,
                 detail: "\(side.held) bytes held unfinished while all connections together held over \(limits.heldBytesTotal)",
                 timeNs: timeNs, into: &out)
            heldBytes -= fullest.held
        }
    }
}
