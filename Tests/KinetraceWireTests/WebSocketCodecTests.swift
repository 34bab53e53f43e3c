import Testing
import KinetraceWebSocket

/// The RFC 6455 codec (Sources/Wire/KinetraceWebSocket): the RFC's own examples byte for
/// byte, every error code at its offset, incremental reading, the limits, and the opening
/// handshake's head.
@Suite struct WebSocketCodecTests {
    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    static let hello = Array("Hello".utf8)
    static let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    struct Read {
        var frames: [WebSocketFrame] = []
        var offsets: [Int] = []
        var error: WebSocketError?
        var pending = 0
        var offset = 0
    }

    /// Reads `bytes` appended `step` bytes at a time (all at once when nil), draining after each append.
    static func read(_ bytes: [UInt8], sender: WebSocketFrameReader.Sender, maximum: Int = 65_536, step: Int? = nil) -> Read {
        var reader = WebSocketFrameReader(sender: sender, maximumPayloadBytes: maximum)
        var out = Read()
        let step = max(step ?? bytes.count, 1)
        var at = 0
        repeat {
            reader.append(bytes[at..<min(at + step, bytes.count)])
            at += step
            do throws(WebSocketError) {
                while true {
                    let offset = reader.offset
                    guard let frame = try reader.next() else { break }
                    out.frames.append(frame)
                    out.offsets.append(offset)
                }
            } catch {
                out.error = error
                break
            }
        } while at < bytes.count
        out.pending = reader.pendingBytes
        out.offset = reader.offset
        return out
    }

    /// Frames through the assembler, as a connection does: the events, or the first error.
    static func events(_ bytes: [UInt8], sender: WebSocketFrameReader.Sender, maximumMessageBytes: Int = 65_536,
                       maximumFragments: Int = 64) -> (events: [WebSocketEvent], error: WebSocketError?) {
        let read = read(bytes, sender: sender)
        var assembler = WebSocketMessageAssembler(maximumMessageBytes: maximumMessageBytes, maximumFragments: maximumFragments)
        var events: [WebSocketEvent] = []
        for (frame, offset) in zip(read.frames, read.offsets) {
            do throws(WebSocketError) {
                if let event = try assembler.take(frame, offset: offset) { events.append(event) }
            } catch {
                return (events, error)
            }
        }
        return (events, read.error)
    }

    // MARK: RFC 6455 section 5.7

    @Test func singleFrameUnmaskedText() throws {
        let bytes = Self.hex("81 05 48 65 6c 6c 6f")
        let read = Self.read(bytes, sender: .server)
        #expect(read.error == nil)
        #expect(read.frames == [WebSocketFrame(fin: true, opcode: .text, payload: Self.hello)])
        #expect(read.pending == 0 && read.offset == 7)
        #expect(WebSocketFrame(opcode: .text, payload: Self.hello).encoded() == bytes)
        #expect(Self.events(bytes, sender: .server).events == [.message(opcode: .text, payload: Self.hello)])
    }

    @Test func singleFrameMaskedText() throws {
        let bytes = Self.hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")
        let read = Self.read(bytes, sender: .client)
        #expect(read.error == nil)
        #expect(read.frames == [WebSocketFrame(fin: true, opcode: .text, maskingKey: Self.key, payload: Self.hello)])
        #expect(WebSocketFrame(opcode: .text, maskingKey: Self.key, payload: Self.hello).encoded() == bytes)
        #expect(WebSocketFrame.header(fin: true, opcode: .text, payloadLength: 5, maskingKey: Self.key) == Array(bytes.prefix(6)))
    }

    @Test func fragmentedUnmaskedText() throws {
        let first = Self.hex("01 03 48 65 6c"), second = Self.hex("80 02 6c 6f")
        let read = Self.read(first + second, sender: .server)
        #expect(read.error == nil)
        #expect(read.frames == [WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8)),
                                WebSocketFrame(fin: true, opcode: .continuation, payload: Array("lo".utf8))])
        #expect(read.offsets == [0, 5])
        #expect(read.frames.map { $0.encoded() } == [first, second])
        var assembler = WebSocketMessageAssembler(maximumMessageBytes: 16, maximumFragments: 2)
        #expect(try assembler.take(read.frames[0], offset: 0) == nil)
        #expect(assembler.inMessage)
        #expect(try assembler.take(read.frames[1], offset: 5) == .message(opcode: .text, payload: Self.hello))
        #expect(!assembler.inMessage)
    }

    @Test func unmaskedPingAndMaskedPong() throws {
        let ping = Self.hex("89 05 48 65 6c 6c 6f")
        #expect(Self.read(ping, sender: .server).frames == [WebSocketFrame(opcode: .ping, payload: Self.hello)])
        #expect(WebSocketFrame(opcode: .ping, payload: Self.hello).encoded() == ping)
        #expect(Self.events(ping, sender: .server).events == [.ping(Self.hello)])

        let pong = Self.hex("8a 85 37 fa 21 3d 7f 9f 4d 51 58")
        #expect(Self.read(pong, sender: .client).frames == [WebSocketFrame(opcode: .pong, maskingKey: Self.key, payload: Self.hello)])
        #expect(WebSocketFrame(opcode: .pong, maskingKey: Self.key, payload: Self.hello).encoded() == pong)
        #expect(Self.events(pong, sender: .client).events == [.pong(Self.hello)])
    }

    @Test func binaryOf256BytesHasA16BitLength() {
        let header = Self.hex("82 7E 01 00")
        #expect(WebSocketFrame.header(fin: true, opcode: .binary, payloadLength: 256, maskingKey: nil) == header)
        let payload = (0..<256).map { UInt8($0) }
        #expect(WebSocketFrame(opcode: .binary, payload: payload).encoded() == header + payload)
        let read = Self.read(header + payload, sender: .server)
        #expect(read.frames == [WebSocketFrame(opcode: .binary, payload: payload)] && read.offset == 260)
    }

    @Test func binaryOf65536BytesHasA64BitLength() {
        let header = Self.hex("82 7F 00 00 00 00 00 01 00 00")
        #expect(WebSocketFrame.header(fin: true, opcode: .binary, payloadLength: 65_536, maskingKey: nil) == header)
        let payload = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let read = Self.read(header + payload, sender: .server, maximum: 65_536)
        #expect(read.error == nil)
        #expect(read.frames == [WebSocketFrame(opcode: .binary, payload: payload)] && read.offset == 65_546)
        // The largest 16-bit length, and the smallest that needs 64 bits.
        #expect(WebSocketFrame.header(fin: true, opcode: .binary, payloadLength: 65_535, maskingKey: nil) == Self.hex("82 7E FF FF"))
        #expect(WebSocketFrame.header(fin: true, opcode: .binary, payloadLength: 125, maskingKey: nil) == Self.hex("82 7D"))
        #expect(WebSocketFrame.header(fin: true, opcode: .binary, payloadLength: 126, maskingKey: nil) == Self.hex("82 7E 00 7E"))
    }

    // MARK: The opening handshake (RFC 6455 section 1.3, RFC 4648 section 10)

    @Test func base64OfRFC4648Vectors() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (text, expected) in vectors {
            #expect(WebSocketHandshake.base64(Array(text.utf8)) == expected, "\"\(text)\"")
        }
        // Every 6-bit value: the last two characters of the alphabet included.
        #expect(WebSocketHandshake.base64([0xFB, 0xFF, 0xBF]) == "+/+/")
        #expect(WebSocketHandshake.base64([0x00, 0x10, 0x83]) == "ABCD")
    }

    @Test func acceptValueOfSection1_3() {
        // The section's SHA-1 of "dGhlIHNhbXBsZSBub25jZQ==" + the GUID, as printed there (and as
        // any SHA-1 gives it); the hash itself is the transport's (swift-crypto), the GUID and the
        // base64 are ours. The accept value is the section's "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
        #expect(WebSocketHandshake.acceptGUID == "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
        let sha1 = Self.hex("b3 7a 4f 2c c0 62 4f 16 90 f6 46 06 cf 38 59 45 b2 be c4 ea")
        #expect(WebSocketHandshake.base64(sha1) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        // A 16-byte nonce is 24 characters, as a Sec-WebSocket-Key is.
        #expect(WebSocketHandshake.base64(Array("the sample nonce".utf8)) == "dGhlIHNhbXBsZSBub25jZQ==")
    }

    @Test func upgradeRequestReadsBack() throws {
        let bytes = WebSocketHandshake.request(host: "server.example.com:80", path: "/chat", key: "dGhlIHNhbXBsZSBub25jZQ==")
        let read = try #require(try HTTPHead.read(bytes[...]))
        #expect(read.length == bytes.count)
        #expect(read.head.request?.method == "GET" && read.head.request?.target == "/chat")
        #expect(read.head.status == nil)
        #expect(read.head.value("host") == "server.example.com:80")
        #expect(read.head.value("Upgrade") == "websocket")
        #expect(read.head.lists("Connection", "upgrade"))
        #expect(read.head.value("Sec-WebSocket-Key") == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(read.head.value("Sec-WebSocket-Version") == "13")
    }

    // MARK: Errors

    struct ErrorCase: CustomStringConvertible {
        var name: String
        var bytes: [UInt8]
        var sender: WebSocketFrameReader.Sender = .server
        var maximumMessageBytes = 65_536
        var maximumFragments = 64
        var code: WebSocketError.Code
        var offset: Int
        var description: String { name }
    }

    /// A valid frame first, so every offset below is that of the failing frame, not 0.
    static let lead = hex("82 01 00")
    static let maskedLead = hex("82 81 01 02 03 04 05")

    static let errorCases: [ErrorCase] = [
        ErrorCase(name: "reserved opcode 0x3", bytes: lead + hex("83 00"), code: .reservedOpcode, offset: 3),
        ErrorCase(name: "reserved control opcode 0xF", bytes: lead + hex("8F 00"), code: .reservedOpcode, offset: 3),
        ErrorCase(name: "RSV1", bytes: lead + hex("C1 00"), code: .reservedBits, offset: 3),
        ErrorCase(name: "RSV3", bytes: lead + hex("92 00"), code: .reservedBits, offset: 3),
        ErrorCase(name: "ping without FIN", bytes: lead + hex("09 00"), code: .fragmentedControl, offset: 3),
        ErrorCase(name: "close of 126 bytes, header only", bytes: lead + hex("88 7E 00 7E"), code: .controlTooLong, offset: 3),
        ErrorCase(name: "64-bit length with its top bit", bytes: lead + hex("82 7F 80 00 00 00 00 00 00 00"), code: .frameTooLarge, offset: 3),
        ErrorCase(name: "65,537 bytes announced", bytes: lead + hex("82 7F 00 00 00 00 00 01 00 01"), code: .frameTooLarge, offset: 3),
        ErrorCase(name: "client frame unmasked", bytes: maskedLead + hex("81 05 48 65 6c 6c 6f"), sender: .client, code: .unmasked, offset: 7),
        ErrorCase(name: "server frame masked", bytes: lead + hex("81 85 37 fa 21 3d 7f 9f 4d 51 58"), code: .masked, offset: 3),
        ErrorCase(name: "continuation first", bytes: lead + hex("80 01 61"), code: .unexpectedContinuation, offset: 3),
        ErrorCase(name: "text inside a text message", bytes: lead + hex("01 01 61 81 01 62"), code: .unfinishedMessage, offset: 6),
        ErrorCase(name: "close with one byte", bytes: lead + hex("88 01 03"), code: .badClosePayload, offset: 3),
        ErrorCase(name: "three fragments of two", bytes: lead + hex("01 01 61 00 01 62 80 01 63"), maximumFragments: 2,
                  code: .tooManyFragments, offset: 9),
        ErrorCase(name: "one frame over the message limit", bytes: lead + hex("82 05 00 00 00 00 00"), maximumMessageBytes: 4,
                  code: .messageTooLarge, offset: 3),
        ErrorCase(name: "fragments over the message limit", bytes: lead + hex("02 03 61 61 61 80 03 62 62 62"), maximumMessageBytes: 4,
                  code: .messageTooLarge, offset: 8),
    ]

    @Test(arguments: WebSocketCodecTests.errorCases) func frameErrorAtItsOffset(_ c: ErrorCase) {
        let (events, error) = Self.events(c.bytes, sender: c.sender, maximumMessageBytes: c.maximumMessageBytes, maximumFragments: c.maximumFragments)
        #expect(error?.code == c.code, "\(c): \(String(describing: error))")
        #expect(error?.offset == c.offset, "\(c): \(String(describing: error))")
        // The leading frame was a whole message before the error.
        #expect(events.first == .message(opcode: .binary, payload: c.sender == .client ? [0x05 ^ 0x01] : [0x00]), "\(c)")
    }

    @Test func headErrorsAtTheirOffsets() throws {
        func error(_ text: String, maximumBytes: Int = HTTPHead.defaultMaximumBytes) -> WebSocketError? {
            do throws(WebSocketError) {
                _ = try HTTPHead.read(Array(text.utf8)[...], maximumBytes: maximumBytes)
                return nil
            } catch {
                return error
            }
        }
        let noColon = error("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection Upgrade\r\n\r\n")
        #expect(noColon?.code == .badHandshake && noColon?.offset == 54)
        // A line ended by a bare LF: the offset is still the bad line's first byte.
        let bareLF = error("HTTP/1.1 101 OK\nUpgrade: websocket\nbad line\r\n\r\n")
        #expect(bareLF?.code == .badHandshake && bareLF?.offset == 35)
        let colonFirst = error("GET / HTTP/1.1\r\n: value\r\n\r\n")
        #expect(colonFirst?.code == .badHandshake && colonFirst?.offset == 16)
        let notHTTP = error("HELLO THERE\r\n\r\n")
        #expect(notHTTP?.code == .badHandshake && notHTTP?.offset == 0)
        let noStartLine = error("\r\n\r\n")
        #expect(noStartLine?.code == .badHandshake && noStartLine?.offset == 0)
        // A status is three digits: Int would take "+01" and "-31".
        for status in ["+01", "-31", "1O1", "10"] {
            #expect(error("HTTP/1.1 \(status) X\r\n\r\n")?.code == .badHandshake, "status \(status)")
        }
        let tooLong = error(String(repeating: "a", count: 64), maximumBytes: 64)
        #expect(tooLong?.code == .handshakeTooLong && tooLong?.offset == 0)
    }

    @Test func everyCodeHasItsNameAndCloseCode() {
        let codes: [(WebSocketError.Code, String, UInt16)] = [
            (.frameTooLarge, "frame_too_large", 1009), (.messageTooLarge, "message_too_large", 1009),
            (.tooManyFragments, "too_many_fragments", 1009), (.reservedBits, "reserved_bits", 1002),
            (.reservedOpcode, "reserved_opcode", 1002), (.fragmentedControl, "fragmented_control_frame", 1002),
            (.controlTooLong, "control_frame_too_long", 1002), (.unexpectedContinuation, "unexpected_continuation", 1002),
            (.unfinishedMessage, "data_frame_inside_message", 1002), (.unmasked, "unmasked_client_frame", 1002),
            (.masked, "masked_server_frame", 1002), (.badClosePayload, "bad_close_payload", 1002),
            (.handshakeTooLong, "handshake_too_long", 1002), (.badHandshake, "bad_handshake", 1002),
        ]
        for (code, name, close) in codes {
            #expect(code.name == name && code.closeCode == close, "\(code)")
        }
        #expect(Set(codes.map { $0.0 }).count == 14)
        // The frame error cases above and the head test cover every code.
        let covered = Set(Self.errorCases.map(\.code)).union([.handshakeTooLong, .badHandshake])
        #expect(covered == Set(codes.map { $0.0 }))
    }

    @Test func afterAnErrorNextThrowsTheSameError() {
        var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: 125)
        reader.append(Self.lead + Self.hex("C1 00"))
        #expect((try? reader.next()) == WebSocketFrame(opcode: .binary, payload: [0]))
        var first: WebSocketError?
        do throws(WebSocketError) { _ = try reader.next() } catch { first = error }
        #expect(first?.code == .reservedBits && first?.offset == 3)
        reader.append(Self.hex("81 05 48 65 6c 6c 6f"))
        for _ in 0..<2 {
            do throws(WebSocketError) {
                _ = try reader.next()
                Issue.record("next() after an error returned")
            } catch {
                #expect(error == first)
            }
        }
    }

    // MARK: Incremental reading and the limits

    @Test func byteAtATimeEqualsWhole() {
        // Client frames (masked) of lengths either side of each length encoding's bound.
        var stream: [UInt8] = []
        for (index, length) in [0, 1, 125, 126, 127, 1000, 65_535, 65_536, 3].enumerated() {
            let opcode: WebSocketOpcode = index == 8 ? .ping : (index % 2 == 0 ? .binary : .text)
            let key: [UInt8] = [UInt8(index), 0xA5, 0x5A, 0xFF]
            stream += WebSocketFrame(opcode: opcode, maskingKey: key, payload: (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ index) }).encoded()
        }
        let whole = Self.read(stream, sender: .client, maximum: 65_536)
        #expect(whole.error == nil && whole.frames.count == 9 && whole.pending == 0 && whole.offset == stream.count)
        for step in [1, 2, 7, 13] {
            let pieces = Self.read(stream, sender: .client, maximum: 65_536, step: step)
            #expect(pieces.frames == whole.frames, "step \(step)")
            #expect(pieces.offsets == whole.offsets, "step \(step)")
            #expect(pieces.error == nil && pieces.pending == 0, "step \(step)")
        }
        // The same stream cut before its end, then failing: the same frames and error whichever way.
        let failing = Array(stream.prefix(whole.offsets[4])) + Self.hex("81 05 48 65 6c 6c 6f")
        let wholeFailing = Self.read(failing, sender: .client)
        #expect(wholeFailing.frames.count == 4 && wholeFailing.error?.code == .unmasked && wholeFailing.error?.offset == whole.offsets[4])
        let bytewiseFailing = Self.read(failing, sender: .client, step: 1)
        #expect(bytewiseFailing.frames == wholeFailing.frames && bytewiseFailing.error == wholeFailing.error)
    }

    @Test func pendingNeverExceedsAHeaderAndTheLimit() {
        var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: 200)
        let frame = WebSocketFrame(opcode: .binary, payload: Array(repeating: 7, count: 200)).encoded()
        var largest = 0, frames = 0
        for byte in frame + frame {
            reader.append(CollectionOfOne(byte))
            largest = max(largest, reader.pendingBytes)
            if (try? reader.next()) != nil { frames += 1 }
        }
        // Never more than one whole frame: its 4-byte header and the 200-byte limit.
        #expect(frames == 2 && largest == 204 && reader.pendingBytes == 0 && reader.offset == 408)
    }

    @Test func twoToThe63IsRefusedFromItsHeaderAlone() throws {
        let header = Self.hex("82 7F 80 00 00 00 00 00 00 00")
        var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: 65_536)
        reader.append(header.prefix(9))
        #expect(try reader.next() == nil, "nine bytes are not a whole header")
        reader.append(header.suffix(1))
        #expect(throws: WebSocketError(.frameTooLarge, offset: 0, "a 64-bit length with its most significant bit set")) { try reader.next() }
        #expect(reader.pendingBytes == 10)
    }

    @Test func seventyThousandBytesAreRefusedBeforeAnyArrive() {
        // 70,000 = 0x11170, over a limit of 65,536; masked (a client's) and not.
        for (sender, header) in [(WebSocketFrameReader.Sender.server, Self.hex("82 7F 00 00 00 00 00 01 11 70")),
                                 (.client, Self.hex("82 FF 00 00 00 00 00 01 11 70"))] {
            var reader = WebSocketFrameReader(sender: sender, maximumPayloadBytes: 65_536)
            reader.append(header)
            do throws(WebSocketError) {
                _ = try reader.next()
                Issue.record("\(sender): 70,000 bytes announced and not refused")
            } catch {
                #expect(error.code == .frameTooLarge && error.offset == 0, "\(sender)")
                #expect(error.detail.contains("70000"), "\(error.detail)")
            }
            // Refused with the header only held (the masking key had not even come).
            #expect(reader.pendingBytes == 10, "\(sender)")
        }
        // The 16-bit form: 1,025 over 1,024 refused after 4 bytes.
        var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: 1_024)
        reader.append(Self.hex("82 7E 04 01"))
        #expect(throws: WebSocketError.self) { try reader.next() }
        #expect(reader.pendingBytes == 4)
    }

    @Test func anUnboundedLimitWaitsInsteadOfOverflowing() throws {
        // maximumPayloadBytes Int.max and a length of Int.max: header + length overflowed Int (found by the websocket fuzz target).
        var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: Int.max)
        reader.append(Self.hex("82 7F 7F FF FF FF FF FF FF FF 00 01"))
        #expect(try reader.next() == nil)
        #expect(reader.pendingBytes == 12 && reader.offset == 0)
    }

    @Test func closeCarriesItsCodeAndReason() {
        let bytes = WebSocketFrame(opcode: .close, payload: [0x03, 0xE8] + Array("bye".utf8)).encoded() + WebSocketFrame(opcode: .close, payload: []).encoded()
        #expect(Self.events(bytes, sender: .server).events == [.close(code: 1000, reason: Array("bye".utf8)), .close(code: nil, reason: [])])
    }

    // MARK: HTTPHead

    static func head(fieldCount: Int) -> [UInt8] {
        Array(("GET / HTTP/1.1\r\n" + (0..<fieldCount).map { "X-\($0): \($0)\r\n" }.joined() + "\r\n").utf8)
    }

    @Test func headWithoutItsEndWithinTheLimitIsRefused() throws {
        let start = Array("GET / HTTP/1.1\r\nX: ".utf8)
        let full = start + Array(repeating: UInt8(ascii: "a"), count: 8_192 - start.count)
        #expect(full.count == 8_192)
        do throws(WebSocketError) {
            _ = try HTTPHead.read(full[...])
            Issue.record("8 KiB with no end read")
        } catch {
            #expect(error.code == .handshakeTooLong && error.offset == 0)
        }
        // One byte less may still end: nothing decided yet.
        #expect(try HTTPHead.read(full.dropLast()) == nil)
    }

    @Test func headThatExactlyFitsIsRead() throws {
        let start = Array("GET / HTTP/1.1\r\nX: ".utf8), end = Array("\r\n\r\n".utf8)
        let filler = 8_192 - start.count - end.count
        let exact = start + Array(repeating: UInt8(ascii: "a"), count: filler) + end
        #expect(exact.count == HTTPHead.defaultMaximumBytes)
        // Frame bytes after the head do not count against it.
        let read = try #require(try HTTPHead.read((exact + Self.hex("81 05 48 65 6c 6c 6f"))[...]))
        #expect(read.length == 8_192)
        #expect(read.head.value("x")?.utf8.count == filler)
        // One byte more and the end lies past the limit.
        let over = start + Array(repeating: UInt8(ascii: "a"), count: filler + 1) + end
        #expect(throws: WebSocketError.self) { try HTTPHead.read(over[...]) }
    }

    @Test func atMost64Fields() throws {
        let read = try #require(try HTTPHead.read(Self.head(fieldCount: 64)[...]))
        #expect(read.head.fields.count == 64)
        #expect(read.head.fields.last?.name == "X-63" && read.head.fields.last?.value == "63")
        do throws(WebSocketError) {
            _ = try HTTPHead.read(Self.head(fieldCount: 65)[...])
            Issue.record("65 fields read")
        } catch {
            #expect(error.code == .badHandshake && error.detail.contains("64"))
        }
    }

    @Test func responseParses() throws {
        let text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
            + "Sec-WebSocket-Accept:   s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\t\r\n\r\n"
        let bytes = Array(text.utf8)
        let read = try #require(try HTTPHead.read((bytes + Self.hex("81 05 48 65 6c 6c 6f"))[...]))
        #expect(read.length == bytes.count)
        #expect(read.head.startLine == "HTTP/1.1 101 Switching Protocols")
        #expect(read.head.status == 101)
        #expect(read.head.request == nil)
        #expect(read.head.fields.map(\.name) == ["Upgrade", "Connection", "Sec-WebSocket-Accept"])
        #expect(read.head.value("sec-websocket-accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(read.head.lists("Connection", "upgrade"))
        #expect(read.head.lists("CONNECTION", "Keep-Alive"))
        #expect(!read.head.lists("Connection", "close"))
        #expect(!read.head.lists("Upgrade", "upgrade"))
        #expect(read.head.value("Sec-WebSocket-Protocol") == nil)
        // Every shorter prefix waits; a slice that does not start at 0 reads the same.
        for cut in 0..<bytes.count { #expect(try HTTPHead.read(bytes[0..<cut]) == nil, "prefix \(cut)") }
        let shifted = Self.hex("0d 0a 0d") + bytes
        #expect(try HTTPHead.read(shifted[3...])?.length == bytes.count)
    }

    @Test func requestParses() throws {
        let text = "GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://example.com\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let read = try #require(try HTTPHead.read(Array(text.utf8)[...]))
        #expect(read.length == text.utf8.count)
        #expect(read.head.request?.method == "GET" && read.head.request?.target == "/chat")
        #expect(read.head.status == nil)
        #expect(read.head.fields.count == 6)
        #expect(read.head.value("Origin") == "http://example.com")
        #expect(read.head.lists("Connection", "upgrade"))
    }
}
