// The WebSocket session reader (Sources/Formats/KinetracePcap/WebSocketSessionReader.swift), fed
// stream chunks as a TCPReassembler gives them, coded in the input:
//   byte 0: bits 0-1 Limits.heldBytesTotal (64 MiB, 1,024, 200, 16);
//           bits 2-3 the WebSocket limits (frame / message bytes, fragments, head bytes):
//           0 the defaults (65,536 / 65,536 / 64 / 8,192), 1 125 / 256 / 4 / 256,
//           2 300 / 125 / 2 / 64, 3 125 / 1 / 1 / 200;
//   then per step: [who] [flags] [length] [length bytes]
//   who:   bits 0-1 one of four controllers (the host is one endpoint), bit 2 the direction
//          (set: from the host), bits 3-7 the time step in ms (so times never go backwards);
//   flags: bit 0 a new connection on the four-tuple: an open direction first ends (`reused`)
//          and starts again (a direction not open always starts, on its first chunk);
//          bit 1 the start is mid-stream (startedWithHandshake false; else true);
//          bit 2 a starting direction's bytes begin with a canned head, bit 3 which: 0 the
//          upgrade request kinetrace sends / the 101 answer a host gives, 1 minimal ones
//          (`GET /ws HTTP/1.0`, bare LF, `UPGRADE:websocket` / `HTTP/1.1 101`), so the fuzzer
//          gets past the handshake; bit 4 7 bytes missing before the chunk (a gap);
//          bits 5-7: 6 the chunk ends the direction (fin), 7 it ends it with a RST, which ends
//          the reverse direction too (an empty chunk); else no end.
// The chunks keep the reassembler's contract (a direction's first chunk announces its start at
// offset 0, chunks tile the stream, nothing after an end, times never go backwards), and at the
// end every open direction ends (`capture_end`), in the order begun.
//
// Checks: never a trap. Memory: after every chunk `heldBytes` is within Limits.heldBytesTotal and
// no more than the open directions were fed, `peakHeldBytes` no more than what was held before a
// chunk plus its bytes (so within heldBytesTotal plus one direction's bound: a head, or a frame, its
// header and a fragmented message), and nothing is held, no connection open, once all ended.
// Records: each is stamped with the time of the chunk that completed it (so times never go
// backwards); a message has the chunk's direction and endpoints and at most maximumMessageBytes;
// a websocket_error names a controller, a direction begun and not ended, an offset within the
// bytes fed for that direction, a code and a detail, at most one per direction of a connection,
// and `firstError` is the first one; at most one websocket_close per connection (a direction
// started while the other is not open begins a new connection, as the reader counts them), by the
// side whose chunk is read, with the code and reason (UTF-8, ≤ 123 characters) of that side's first
// close frame; no controller message after the connection's close event, no host message after the
// host's. Against a model (each direction's bytes up to its first gap read at once by HTTPHead.read,
// WebSocketFrameReader and WebSocketMessageAssembler with the same limits, as the doc comment says
// the reader reads them): a direction's recorded messages are its messages before its own first
// close, in order (a controller's may stop earlier once the host closed first), and its one error is
// the model's (its code and offset: the codec's error, else mid_stream_start at the first chunk,
// stream_gap at the first gap, stream_ended where an unfinished head, frame or message began), unless
// the held-bytes limit gave it up (a held_bytes_limit error no later than the model's, messages a
// prefix); a direction the limit did not give up that read a close frame has its connection's close
// event, and none without. Counts: messages and errors are the records written, close frames at least
// the close events, frames at least every event read; with no held_bytes_limit anywhere frames,
// messages (recorded and after close), pings, pongs, close frames, upgrades, errors and bytesNotRead
// (fed bytes from where each direction was given up) are the model's totals, else at most them.
import KinetraceJSON
import KinetracePcap
import KinetraceTrace
import KinetraceWebSocket
import KinetraceWire

let host = Endpoint(host: "10.0.0.100", port: 47130)
let controllers = (0..<4).map { Endpoint(host: "10.0.0.\($0 + 1)", port: UInt16(40_000 + $0)) }
let controllerNames = controllers.map { $0.description }

/// Variant 0 is what `WebSocketHandshake.request(host: "10.0.0.100:47130", path: "/", key:)` writes
/// (FuzzCorpusTests in KinetracePcapTests has the same bytes).
let cannedRequests: [[UInt8]] = [
    Array(("GET / HTTP/1.1\r\nHost: 10.0.0.100:47130\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nUser-Agent: kinetrace\r\n\r\n").utf8),
    Array("GET /ws HTTP/1.0\nUPGRADE:websocket\r\n\r\n".utf8),
]
let cannedAnswers: [[UInt8]] = [
    Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n").utf8),
    Array("HTTP/1.1 101\r\n\r\n".utf8),
]

func sessionLimits(_ byte: UInt8) -> WebSocketSessionReader.Limits {
    var limits = WebSocketSessionReader.Limits()
    limits.heldBytesTotal = [64 << 20, 1024, 200, 16][Int(byte & 3)]
    switch byte >> 2 & 3 {
    case 1: limits.webSocket = WebSocketReadLimits(maximumFrameBytes: 125, maximumMessageBytes: 256, maximumFragments: 4, maximumHeadBytes: 256)
    case 2: limits.webSocket = WebSocketReadLimits(maximumFrameBytes: 300, maximumMessageBytes: 125, maximumFragments: 2, maximumHeadBytes: 64)
    case 3: limits.webSocket = WebSocketReadLimits(maximumFrameBytes: 125, maximumMessageBytes: 1, maximumFragments: 1, maximumHeadBytes: 200)
    default: break
    }
    return limits
}

/// One direction of one connection, from the chunk that started it to the one that ended it.
final class Run {
    let controller: Int
    let toHost: Bool
    let connection: Int
    let handshake: Bool
    var firstOffset = 0
    /// The stream's bytes from offset 0 up to the first gap, and where that gap is.
    var contiguous: [UInt8] = []
    var gapAt: Int?
    /// Every piece of bytes fed (offset, count), and the offset after the last.
    var pieces: [(offset: Int, count: Int)] = []
    var end = 0
    var ended = false
    var started = false
    /// What the reader wrote for it.
    var messages: [[UInt8]] = []
    var errors: [(code: String, offset: Int)] = []

    init(controller: Int, toHost: Bool, connection: Int, handshake: Bool) {
        self.controller = controller
        self.toHost = toHost
        self.connection = connection
        self.handshake = handshake
    }

    var key: Int { controller * 2 + (toHost ? 0 : 1) }
    var fedBytes: Int { pieces.reduce(0) { $0 + $1.count } }
}

/// What the reader must make of one direction, read at once.
struct Model {
    var messages: [[UInt8]] = []
    /// Messages before the direction's first close frame: those the reader may record.
    var recordable = 0
    var firstClose: (code: UInt16?, reason: [UInt8])?
    var frames = 0, pings = 0, pongs = 0, closes = 0
    var upgrade = false
    var error: (code: String, offset: Int)?
    /// Where the stream stops being read when it fails: the fed bytes from there on are not read.
    var unreadFrom = 0
}

struct Close {
    var run: Run
    var byHost: Bool
}

struct Driver {
    let limits: WebSocketSessionReader.Limits
    var reader: WebSocketSessionReader
    var runs: [Run] = []
    var open: [Int: Run] = [:]
    var connectionOf = [Int](repeating: 0, count: 4)
    var nextConnection = 0
    var closes: [Int: Close] = [:]
    /// The close event's data, by the direction whose chunk wrote it.
    var closeData: [ObjectIdentifier: [String: JSONValue]] = [:]
    var messageRecords = 0
    var errorEvents: [EventRecord] = []
    var lastTimeNs = Int64.min
    var peakBound = 0

    init(limits: WebSocketSessionReader.Limits) {
        self.limits = limits
        reader = WebSocketSessionReader(limits: limits)
    }

    mutating func start(controller: Int, toHost: Bool, handshake: Bool) -> Run {
        let other = controller * 2 + (toHost ? 1 : 0)
        if open[other] == nil {
            nextConnection += 1
            connectionOf[controller] = nextConnection
        }
        let run = Run(controller: controller, toHost: toHost, connection: connectionOf[controller], handshake: handshake)
        runs.append(run)
        open[run.key] = run
        return run
    }

    /// Feeds one chunk of `run`'s stream: `missing` bytes never captured, then `bytes`, then the end if any.
    mutating func feed(_ run: Run, bytes: [UInt8], missing: Int, end: StreamEnd?, timeNs: Int64) {
        let offset = run.end + missing
        if !run.started { run.firstOffset = offset }
        if missing > 0, run.gapAt == nil { run.gapAt = run.end }
        if run.gapAt == nil { run.contiguous += bytes }
        if !bytes.isEmpty { run.pieces.append((offset, bytes.count)) }
        run.end = offset + bytes.count
        let endpoint = controllers[run.controller]
        let chunk = StreamChunk(timeNs: timeNs, direction: run.toHost ? .controllerToHost : .hostToController,
                                source: run.toHost ? endpoint : host, destination: run.toHost ? host : endpoint, bytes: bytes,
                                offset: offset, startedWithHandshake: run.started ? nil : run.handshake, missingBefore: missing, end: end)
        run.started = true
        let heldBefore = reader.heldBytes
        var out: [TraceRecord] = []
        reader.take(chunk, into: &out)
        peakBound = max(peakBound, heldBefore + bytes.count)
        for record in out { check(record, chunk: chunk, run: run) }
        if end != nil {
            run.ended = true
            open[run.key] = nil
        }
        let held = reader.heldBytes
        invariant(held >= 0 && held <= limits.heldBytesTotal, "\(held) bytes held after a chunk, limit \(limits.heldBytesTotal)")
        let fedOpen = open.values.reduce(0) { $0 + $1.fedBytes }
        invariant(held <= fedOpen, "\(held) bytes held, the open directions were fed \(fedOpen)")
        let peak = reader.counts.peakHeldBytes
        invariant(peak >= held && peak <= peakBound, "peakHeldBytes \(peak): held \(held), at most \(peakBound) (held before a chunk plus its bytes)")
        let web = limits.webSocket
        let direction = max(web.maximumHeadBytes, web.maximumFrameBytes + WebSocketReadLimits.maximumFrameHeaderBytes + web.maximumMessageBytes)
        invariant(peak <= limits.heldBytesTotal + direction, "peakHeldBytes \(peak) over the total \(limits.heldBytesTotal) plus one direction's \(direction)")
    }

    mutating func check(_ record: TraceRecord, chunk: StreamChunk, run: Run) {
        switch record {
        case .message(let message):
            messageRecords += 1
            invariant(message.timeNs == chunk.timeNs && message.direction == chunk.direction && message.source == chunk.source
                      && message.destination == chunk.destination, "a message record not of the chunk read: \(message)")
            invariant(message.payload.count <= limits.webSocket.maximumMessageBytes,
                      "a \(message.payload.count)-byte message, limit \(limits.webSocket.maximumMessageBytes)")
            invariant(run.errors.isEmpty, "a message after the direction's \(run.errors[0].code)")
            // The host ignores a controller once either side closed; a host sends nothing after its own close.
            if let close = closes[run.connection] {
                invariant(!run.toHost, "a controller message after the \(close.byHost ? "host" : "controller")'s close event")
                invariant(close.run !== run, "a host message after the host's close event")
            }
            run.messages.append(Array(message.payload))
        case .event(let event) where event.event == WebSocketSessionReader.errorEvent:
            invariant(event.timeNs == chunk.timeNs, "an error stamped \(event.timeNs), read in a chunk of \(chunk.timeNs)")
            let data = event.data
            guard let name = data["controller"]?.stringValue, let controller = controllerNames.firstIndex(of: name),
                  let direction = data["direction"]?.stringValue.flatMap(Direction.init(rawValue:)),
                  let offset = data["offset"]?.integerValue, let code = data["code"]?.stringValue, !code.isEmpty,
                  let detail = data["detail"]?.stringValue, !detail.isEmpty, data.count == 5 else {
                invariant(false, "a websocket_error without controller, direction, offset, code and detail: \(data)")
                return
            }
            let key = controller * 2 + (direction == .controllerToHost ? 0 : 1)
            guard let failed = key == run.key ? run : open[key] else {
                invariant(false, "a websocket_error for \(name) \(direction.rawValue), which is not open")
                return
            }
            invariant(failed.errors.isEmpty, "a second websocket_error (\(code)) for a direction, after \(failed.errors.first?.code ?? "")")
            invariant(offset >= 0 && offset <= Int64(failed.end), "\(code) at offset \(offset), \(failed.end) bytes fed")
            failed.errors.append((code, Int(offset)))
            if errorEvents.isEmpty {
                let expected = "\(code) at offset \(offset) of \(direction == .controllerToHost ? "a controller's" : "the host's") stream: \(detail)"
                invariant(reader.firstError == expected, "firstError \(String(describing: reader.firstError)), the first event says \(expected)")
            }
            errorEvents.append(event)
        case .event(let event) where event.event == WebSocketSessionReader.closeEvent:
            invariant(event.timeNs == chunk.timeNs, "a close stamped \(event.timeNs), read in a chunk of \(chunk.timeNs)")
            let data = event.data
            let by = data["by"]?.stringValue
            invariant(by == (run.toHost ? "controller" : "host"), "a close by \(String(describing: by)) read in a \(run.toHost ? "controller" : "host") chunk")
            invariant(data["controller"]?.stringValue == controllerNames[run.controller], "a close naming \(String(describing: data["controller"]))")
            invariant(data["reason"]?.stringValue != nil && data.count == (data["code"] == nil ? 3 : 4), "close event data \(data)")
            invariant(data["code"] == nil || data["code"]?.integerValue != nil, "close event code \(String(describing: data["code"]))")
            invariant(run.errors.isEmpty, "a close after the direction's \(run.errors.first?.code ?? "")")
            invariant(closes[run.connection] == nil, "a second websocket_close on a connection")
            closes[run.connection] = Close(run: run, byHost: !run.toHost)
            closeData[ObjectIdentifier(run)] = data
        default:
            invariant(false, "a record that is neither a message nor a websocket event: \(record)")
        }
        invariant(chunk.timeNs >= lastTimeNs, "records went back in time")
        lastTimeNs = chunk.timeNs
    }

    // MARK: The model

    func model(_ run: Run) -> Model {
        var m = Model()
        guard run.handshake else {
            m.error = (WebSocketSessionReader.ReaderCode.midStreamStart, run.firstOffset)
            return m
        }
        let web = limits.webSocket
        let s = run.contiguous
        var length = 0
        do throws(WebSocketError) {
            if let read = try HTTPHead.read(s.prefix(web.maximumHeadBytes), maximumBytes: web.maximumHeadBytes) {
                let head = read.head
                if run.toHost {
                    guard let request = head.request, request.method == "GET", head.lists("Upgrade", "websocket") else {
                        m.error = (WebSocketError.Code.badHandshake.name, 0)
                        return m
                    }
                } else if head.status != 101 {
                    m.error = (WebSocketSessionReader.ReaderCode.upgradeRefused, 0)
                    return m
                }
                m.upgrade = true
                length = read.length
            } else {
                // An unfinished head.
                if let gap = run.gapAt {
                    m.error = (WebSocketSessionReader.ReaderCode.streamGap, gap)
                } else if !s.isEmpty {
                    m.error = (WebSocketSessionReader.ReaderCode.streamEnded, s.count)
                }
                return m
            }
        } catch {
            m.error = (error.code.name, error.offset)
            return m
        }
        var reader = WebSocketFrameReader(sender: run.toHost ? .client : .server, maximumPayloadBytes: web.maximumFrameBytes)
        var assembler = WebSocketMessageAssembler(maximumMessageBytes: web.maximumMessageBytes, maximumFragments: web.maximumFragments)
        reader.append(s[length...])
        while true {
            let at = reader.offset
            do throws(WebSocketError) {
                guard let frame = try reader.next() else { break }
                m.frames += 1
                guard let event = try assembler.take(frame, offset: at) else { continue }
                switch event {
                case .message(_, let payload):
                    m.messages.append(payload)
                    if m.firstClose == nil { m.recordable += 1 }
                case .ping: m.pings += 1
                case .pong: m.pongs += 1
                case .close(let code, let reason):
                    m.closes += 1
                    if m.firstClose == nil { m.firstClose = (code, reason) }
                }
            } catch {
                m.error = (error.code.name, length + error.offset)
                m.unreadFrom = length + reader.offset
                return m
            }
        }
        let at = length + reader.offset
        if let gap = run.gapAt {
            m.error = (WebSocketSessionReader.ReaderCode.streamGap, gap)
            m.unreadFrom = at
        } else if reader.pendingBytes > 0 || assembler.inMessage {
            m.error = (WebSocketSessionReader.ReaderCode.streamEnded, at)
            m.unreadFrom = at
        }
        return m
    }

    /// After every direction ended: each against its model, then the counts.
    func finish() {
        invariant(reader.openConnections == 0, "\(reader.openConnections) connections open after every direction ended")
        invariant(reader.heldBytes == 0, "\(reader.heldBytes) bytes held after every direction ended")
        let counts = reader.counts
        invariant(counts.messages == messageRecords, "\(counts.messages) messages counted, \(messageRecords) written")
        invariant(counts.errors == errorEvents.count, "\(counts.errors) errors counted, \(errorEvents.count) written")
        invariant((counts.errors == 0) == (reader.firstError == nil), "firstError \(String(describing: reader.firstError)) with \(counts.errors) errors")
        invariant(counts.closeFrames >= closes.count, "\(counts.closeFrames) close frames counted, \(closes.count) close events")
        invariant(counts.frames >= counts.messages + counts.messagesAfterClose + counts.pings + counts.pongs + counts.closeFrames,
                  "\(counts.frames) frames counted, fewer than the events read: \(counts)")
        let fed = runs.reduce(0) { $0 + $1.fedBytes }
        invariant(counts.bytesNotRead >= 0 && counts.bytesNotRead <= fed, "\(counts.bytesNotRead) bytes not read, \(fed) fed")

        var total = Model()
        var requests = 0, accepted = 0, errors = 0, notRead = 0, messages = 0
        let limited = runs.contains { $0.errors.contains { $0.code == WebSocketSessionReader.ReaderCode.heldBytesLimit } }
        for run in runs {
            let m = model(run)
            let what = "\(controllerNames[run.controller]) \(run.toHost ? "c2h" : "h2c") of connection \(run.connection)"
            let givenUp = run.errors.first { $0.code == WebSocketSessionReader.ReaderCode.heldBytesLimit }
            let recordable = Array(m.messages.prefix(m.recordable))
            if let givenUp {
                if let error = m.error {
                    invariant(givenUp.offset <= error.offset, "\(what): held_bytes_limit at \(givenUp.offset), after the \(error.code) at \(error.offset)")
                }
                invariant(recordable.starts(with: run.messages), "\(what): given up, its \(run.messages.count) messages are not the first of the model's \(recordable.count)")
            } else {
                let got = run.errors.first.map { "\($0.code) at \($0.offset)" } ?? "none"
                let want = m.error.map { "\($0.code) at \($0.offset)" } ?? "none"
                invariant(got == want, "\(what): error \(got), the model's \(want)")
                let close = closes[run.connection]
                if run.toHost && close != nil && close!.run !== run {
                    invariant(recordable.starts(with: run.messages), "\(what): \(run.messages.count) messages recorded, not the first of the model's \(recordable.count)")
                } else {
                    invariant(run.messages == recordable, "\(what): \(run.messages.count) messages recorded, the model has \(recordable.count) (\(m.messages.count) read)")
                }
                if m.firstClose != nil { invariant(close != nil, "\(what) read a close frame, and its connection has no close event") }
            }
            if let data = closeData[ObjectIdentifier(run)] {
                guard let first = m.firstClose else {
                    invariant(false, "\(what): a close event, and the model reads no close frame")
                    return
                }
                invariant(data["code"]?.integerValue == first.code.map { Int64($0) }, "\(what): close code \(String(describing: data["code"])), the frame's \(String(describing: first.code))")
                let reason = String(String(decoding: first.reason, as: UTF8.self).prefix(123))
                invariant(data["reason"]?.stringValue == reason, "\(what): close reason \(String(describing: data["reason"])), the frame's \(reason)")
            }
            total.frames += m.frames
            total.pings += m.pings
            total.pongs += m.pongs
            total.closes += m.closes
            messages += m.messages.count
            if m.upgrade { if run.toHost { requests += 1 } else { accepted += 1 } }
            if m.error != nil {
                errors += 1
                notRead += run.pieces.reduce(0) { sum, piece in sum + max(0, piece.offset + piece.count - max(piece.offset, m.unreadFrom)) }
            }
        }
        if !limited {
            let model = "frames \(total.frames), messages \(messages), pings \(total.pings), pongs \(total.pongs), close frames \(total.closes), "
                + "upgrades \(requests)/\(accepted), errors \(errors), not read \(notRead)"
            invariant(counts.frames == total.frames && counts.messages + counts.messagesAfterClose == messages && counts.pings == total.pings
                      && counts.pongs == total.pongs && counts.closeFrames == total.closes && counts.upgradeRequests == requests
                      && counts.upgradesAccepted == accepted && counts.errors == errors && counts.bytesNotRead == notRead,
                      "counts \(counts), the model's \(model)")
        } else {
            invariant(counts.frames <= total.frames && counts.messages + counts.messagesAfterClose <= messages && counts.pings <= total.pings
                      && counts.pongs <= total.pongs && counts.closeFrames <= total.closes && counts.upgradeRequests <= requests
                      && counts.upgradesAccepted <= accepted, "counts \(counts) over the model's with directions given up")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocketSession(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    var driver = Driver(limits: sessionLimits(input[0]))
    var timeNs: Int64 = 1_000_000_000
    var at = 1
    while at + 3 <= size {
        let who = input[at], flags = input[at + 1]
        let length = min(Int(input[at + 2]), size - at - 3)
        var bytes = Array(input[(at + 3)..<(at + 3 + length)])
        at += 3 + length
        timeNs += Int64(who >> 3) * 1_000_000
        let controller = Int(who & 3), toHost = who & 4 == 0
        let key = controller * 2 + (toHost ? 0 : 1)
        if let old = driver.open[key], flags & 1 != 0 {
            driver.feed(old, bytes: [], missing: 0, end: .reused, timeNs: timeNs)
        }
        let run: Run
        if let known = driver.open[key] {
            run = known
        } else {
            run = driver.start(controller: controller, toHost: toHost, handshake: flags & 2 == 0)
            if flags & 4 != 0 { bytes = (toHost ? cannedRequests : cannedAnswers)[Int(flags >> 3 & 1)] + bytes }
        }
        let end: StreamEnd? = switch flags >> 5 { case 6: .fin; case 7: .rst; default: nil }
        driver.feed(run, bytes: bytes, missing: flags & 0x10 != 0 ? 7 : 0, end: end, timeNs: timeNs)
        if end == .rst, let reverse = driver.open[controller * 2 + (toHost ? 1 : 0)] {
            driver.feed(reverse, bytes: [], missing: 0, end: .rst, timeNs: timeNs)
        }
    }
    for run in driver.runs where !run.ended {
        driver.feed(run, bytes: [], missing: 0, end: .captureEnd, timeNs: timeNs)
    }
    driver.finish()
    return 0
}
