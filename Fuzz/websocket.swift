// The RFC 6455 codec (Sources/Wire/KinetraceWebSocket): WebSocketFrameReader for both
// senders, WebSocketMessageAssembler, HTTPHead.read and WebSocketHandshake.base64.
//   byte 0: where the frame bytes are cut into two appends (count × byte / 255);
//   byte 1: bit 0 the sender the seed's name is about (0 client, 1 server: both are read);
//           bit 1 the stream opens with an HTTP head (frames start after it);
//           bits 2-3 maximumPayloadBytes (125, 256, 1024, Int.max);
//           bits 4-5 maximumFragments (1, 2, 4, 64);
//           bits 6-7 maximumMessageBytes (16, 256, 4096, Int.max);
//   the rest: the stream.
// Checks, per sender: never a trap; reading in two appends gives the frames and error of
// one append; after draining, pendingBytes stays below a header (14) plus maximumPayloadBytes,
// and consumed plus pending is what was appended; frames obey the sender's masking, control
// frames are whole and short, payloads within the limit; a frame re-encoded with `encoded()`
// reads back equal, and is its own bytes unless those used a longer length encoding; an
// error's offset is where the failing frame began, inside the bytes given; after an error
// `next()` throws the same error (also after more bytes). The assembler fed those frames
// agrees with a model of RFC 6455 section 5.4 under the limits (events and error, at the
// frame's offset). HTTPHead.read (limit 1,024, then the default) on the whole stream: a head
// ends at the first CRLFCRLF within the limit, has at most 64 fields and a request or status
// line; reading a prefix gives nil or the same outcome; reading from a slice that does not
// start at 0 gives the same outcome; an error's offset is inside the bytes, at a line's start.
// base64 of the stream decodes back to it.
import KinetraceWebSocket

let headLimit = 1024

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocket(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let config = WebSocketFuzzConfig(input[1])
    let stream = Array(input[2...])
    checkHead(stream, cut: stream.count * Int(input[0]) / 255)
    checkBase64(Array(stream.prefix(64)))

    var frameBytes = stream[...]
    if config.opensWithHead {
        guard case .success(let read?) = readHead(stream[...], maximumBytes: headLimit) else { return 0 }
        frameBytes = stream[read.length...]
    }
    let frames = Array(frameBytes)
    let cut = frames.count * Int(input[0]) / 255
    for sender in [WebSocketFrameReader.Sender.client, .server] {
        let whole = readFrames(frames, cuts: [], sender: sender, config: config)
        let split = readFrames(frames, cuts: [cut], sender: sender, config: config)
        invariant(split.frames.map { $0.frame } == whole.frames.map { $0.frame } && split.frames.map { $0.offset } == whole.frames.map { $0.offset },
                  "\(sender): two appends (cut at \(cut)) read \(split.frames.count) frames, one append \(whole.frames.count)")
        invariant(split.error == whole.error, "\(sender): two appends fail with \(String(describing: split.error)), one with \(String(describing: whole.error))")
        invariant(whole.error != nil || split.pending == whole.pending, "\(sender): pending \(split.pending) after two appends, \(whole.pending) after one")
        checkFrames(whole, frames, sender: sender, config: config)
        checkAssembler(whole.frames, config: config)
    }
    return 0
}

struct WebSocketFuzzConfig {
    var namedSender: WebSocketFrameReader.Sender
    var opensWithHead: Bool
    var maximumPayloadBytes: Int
    var maximumFragments: Int
    var maximumMessageBytes: Int

    init(_ byte: UInt8) {
        namedSender = byte & 1 == 0 ? .client : .server
        opensWithHead = byte & 2 != 0
        maximumPayloadBytes = [125, 256, 1024, Int.max][Int(byte >> 2 & 3)]
        maximumFragments = [1, 2, 4, 64][Int(byte >> 4 & 3)]
        maximumMessageBytes = [16, 256, 4096, Int.max][Int(byte >> 6 & 3)]
    }
}

struct ReadFrames {
    var frames: [(frame: WebSocketFrame, offset: Int, length: Int)] = []
    var error: WebSocketError?
    var pending = 0
}

/// Reads `bytes` appended in pieces cut at `cuts`, draining `next()` after each append.
func readFrames(_ bytes: [UInt8], cuts: [Int], sender: WebSocketFrameReader.Sender, config: WebSocketFuzzConfig) -> ReadFrames {
    var reader = WebSocketFrameReader(sender: sender, maximumPayloadBytes: config.maximumPayloadBytes)
    var out = ReadFrames()
    var appended = 0
    for end in cuts + [bytes.count] where out.error == nil {
        reader.append(bytes[appended..<end])
        appended = end
        do throws(WebSocketError) {
            while true {
                let offset = reader.offset
                guard let frame = try reader.next() else { break }
                out.frames.append((frame, offset, reader.offset - offset))
            }
            // Drained without an error: what is held is less than one whole frame.
            invariant(reader.pendingBytes - 14 <= config.maximumPayloadBytes,
                      "\(sender): \(reader.pendingBytes) bytes pending, limit \(config.maximumPayloadBytes)")
            invariant(reader.offset + reader.pendingBytes == appended,
                      "\(sender): offset \(reader.offset) + pending \(reader.pendingBytes) != \(appended) appended")
        } catch {
            invariant(error.offset == reader.offset, "\(sender): error at \(error.offset), the failing frame began at \(reader.offset)")
            invariant(error.offset >= 0 && error.offset < appended, "\(sender): error offset \(error.offset) outside the \(appended) bytes given")
            out.error = error
            for extra in 0..<2 {
                if extra == 1 { reader.append([0x81, 0x00]) }
                do throws(WebSocketError) {
                    _ = try reader.next()
                    invariant(false, "\(sender): next() after \(error) did not throw")
                } catch let again {
                    invariant(again == error, "\(sender): next() after \(error) threw \(again)")
                }
            }
        }
    }
    out.pending = reader.pendingBytes
    return out
}

func checkFrames(_ read: ReadFrames, _ bytes: [UInt8], sender: WebSocketFrameReader.Sender, config: WebSocketFuzzConfig) {
    var next = 0
    for (frame, offset, length) in read.frames {
        invariant(offset == next, "\(sender): a frame at \(offset), the last ended at \(next)")
        next = offset + length
        invariant(frame.opcode.isDefined && frame.reservedBits == 0, "\(sender): \(frame.opcode), reserved bits \(frame.reservedBits) read")
        switch sender {
        case .client: invariant(frame.maskingKey?.count == 4, "a client frame read without a 4-byte masking key")
        case .server: invariant(frame.maskingKey == nil, "a server frame read with a masking key")
        }
        if frame.opcode.isControl { invariant(frame.fin && frame.payload.count <= 125, "\(frame.opcode): fin \(frame.fin), \(frame.payload.count) bytes") }
        invariant(frame.payload.count <= config.maximumPayloadBytes, "a \(frame.payload.count)-byte payload read, limit \(config.maximumPayloadBytes)")
        let original = Array(bytes[offset..<offset + length])
        let encoded = frame.encoded()
        invariant(encoded.count <= original.count, "\(sender): frame at \(offset) re-encodes to \(encoded.count) bytes, read from \(original.count)")
        if encoded.count == original.count { invariant(encoded == original, "\(sender): frame at \(offset) re-encodes to other bytes") }
        var again = WebSocketFrameReader(sender: sender, maximumPayloadBytes: config.maximumPayloadBytes)
        again.append(encoded)
        let reread = try? again.next()
        invariant(reread == frame, "\(sender): frame at \(offset) re-encoded reads back as \(String(describing: reread))")
        invariant(again.pendingBytes == 0 && again.offset == encoded.count, "\(sender): re-encoded frame at \(offset) leaves \(again.pendingBytes) bytes")
    }
    invariant(next + read.pending == bytes.count || read.error != nil, "\(sender): frames and pending cover \(next + read.pending) of \(bytes.count) bytes")
    if let error = read.error { invariant(error.offset == next, "\(sender): error at \(error.offset), after frames ending at \(next)") }
}

/// What the model says a frame gives.
enum Expected: Equatable {
    case event(WebSocketEvent?)
    case error(WebSocketError.Code)
}

/// The assembler against a model of RFC 6455 section 5.4 with the limits.
func checkAssembler(_ frames: [(frame: WebSocketFrame, offset: Int, length: Int)], config: WebSocketFuzzConfig) {
    var assembler = WebSocketMessageAssembler(maximumMessageBytes: config.maximumMessageBytes, maximumFragments: config.maximumFragments)
    var open: WebSocketOpcode?
    var parts: [UInt8] = []
    var fragments = 0
    for (frame, offset, _) in frames {
        var expected: Expected
        let payload = frame.payload
        switch frame.opcode {
        case .ping: expected = .event(.ping(payload))
        case .pong: expected = .event(.pong(payload))
        case .close:
            expected = payload.count == 1 ? .error(.badClosePayload)
                : .event(.close(code: payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil, reason: Array(payload.dropFirst(2))))
        case .continuation:
            if let opcode = open {
                if fragments + 1 > config.maximumFragments { expected = .error(.tooManyFragments) }
                else if parts.count + payload.count > config.maximumMessageBytes { expected = .error(.messageTooLarge) }
                else {
                    fragments += 1
                    parts += payload
                    expected = .event(frame.fin ? .message(opcode: opcode, payload: parts) : nil)
                    if frame.fin { open = nil; parts = []; fragments = 0 }
                }
            } else {
                expected = .error(.unexpectedContinuation)
            }
        default:
            if open != nil { expected = .error(.unfinishedMessage) }
            else if payload.count > config.maximumMessageBytes { expected = .error(.messageTooLarge) }
            else if frame.fin { expected = .event(.message(opcode: frame.opcode, payload: payload)) }
            else { open = frame.opcode; parts = payload; fragments = 1; expected = .event(nil) }
        }
        do throws(WebSocketError) {
            let event = try assembler.take(frame, offset: offset)
            invariant(expected == .event(event), "assembler: \(frame.opcode) frame at \(offset) gave \(String(describing: event)), the model \(expected)")
            invariant(assembler.inMessage == (open != nil), "assembler: inMessage \(assembler.inMessage) after the frame at \(offset)")
        } catch {
            invariant(expected == .error(error.code), "assembler: \(frame.opcode) frame at \(offset) threw \(error.code), the model \(expected)")
            invariant(error.offset == offset, "assembler: error at \(error.offset) for the frame at \(offset)")
            return
        }
    }
}

func readHead(_ bytes: ArraySlice<UInt8>, maximumBytes: Int) -> Result<(head: HTTPHead, length: Int)?, WebSocketError> {
    do throws(WebSocketError) {
        return .success(try HTTPHead.read(bytes, maximumBytes: maximumBytes))
    } catch {
        return .failure(error)
    }
}

func sameOutcome(_ a: Result<(head: HTTPHead, length: Int)?, WebSocketError>, _ b: Result<(head: HTTPHead, length: Int)?, WebSocketError>) -> Bool {
    switch (a, b) {
    case (.success(nil), .success(nil)): return true
    case (.success(let x?), .success(let y?)): return x.head == y.head && x.length == y.length
    case (.failure(let x), .failure(let y)): return x == y
    default: return false
    }
}

func checkHead(_ stream: [UInt8], cut: Int) {
    let crlf2: [UInt8] = [13, 10, 13, 10]
    let limited = readHead(stream[...], maximumBytes: headLimit)
    switch limited {
    case .success(let read?):
        let (head, length) = read
        invariant(length >= 4 && length <= stream.count && length <= headLimit, "a head of \(length) bytes from \(stream.count)")
        invariant(Array(stream[length - 4..<length]) == crlf2, "a head that does not end in CRLFCRLF")
        invariant(!(0..<length - 4).contains { Array(stream[$0..<$0 + 4]) == crlf2 }, "a head that does not end at the first CRLFCRLF")
        invariant(head.fields.count <= HTTPHead.maximumFields, "\(head.fields.count) fields read")
        invariant(head.request != nil || head.status != nil, "a head neither request nor response: \(head.startLine)")
        if let status = head.status { invariant((0...999).contains(status), "status \(status)") }
        for field in head.fields {
            _ = head.value(field.name)
            _ = head.lists(field.name, "upgrade")
        }
    case .success(nil):
        invariant(stream.count < headLimit, "no head and no error from \(stream.count) bytes, limit \(headLimit)")
    case .failure(let error):
        invariant(error.offset >= 0 && error.offset <= stream.count, "head error offset \(error.offset) outside \(stream.count) bytes")
        if error.offset > 0 { invariant(stream[error.offset - 1] == 10, "head error at \(error.offset), not at the start of a line") }
        invariant(error.code == .badHandshake || error.code == .handshakeTooLong, "head error \(error.code)")
    }
    // A prefix reads as nil or as the whole does.
    let prefix = readHead(stream[..<cut], maximumBytes: headLimit)
    if case .success(nil) = prefix {} else {
        invariant(sameOutcome(prefix, limited), "a \(cut)-byte prefix reads otherwise than the \(stream.count) bytes")
    }
    // The same bytes in a slice that does not start at index 0.
    let shifted = [0x0D, 0x0A] + stream
    invariant(sameOutcome(readHead(shifted[2...], maximumBytes: headLimit), limited), "the head read from a slice at index 2 differs")
    // The default limit agrees wherever the smaller one decided on the head itself.
    let unlimited = readHead(stream[...], maximumBytes: HTTPHead.defaultMaximumBytes)
    switch limited {
    case .failure(let error) where error.code == .handshakeTooLong: break
    case .success(nil): break
    default: invariant(sameOutcome(unlimited, limited), "the default limit reads otherwise than a limit of \(headLimit)")
    }
}

func checkBase64(_ bytes: [UInt8]) {
    let text = Array(WebSocketHandshake.base64(bytes).utf8)
    invariant(text.count == (bytes.count + 2) / 3 * 4, "base64 of \(bytes.count) bytes is \(text.count) characters")
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var decoded: [UInt8] = []
    var bits = 0, value = 0
    for (index, character) in text.enumerated() {
        if character == UInt8(ascii: "=") {
            invariant(index >= text.count - 2, "base64 padding inside the text")
            continue
        }
        guard let digit = alphabet.firstIndex(of: character) else { invariant(false, "base64 character \(character)"); return }
        value = value << 6 | digit
        bits += 6
        if bits >= 8 {
            bits -= 8
            decoded.append(UInt8(truncatingIfNeeded: value >> bits))
            value &= (1 << bits) - 1
        }
    }
    invariant(decoded == bytes, "base64 does not decode back to its \(bytes.count) bytes")
}
