import Foundation
import KinetraceJSON
import KinetracePcap
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

// MARK: Writing WebSocket sessions

/// RFC 6455 bytes written here from the RFC, independently of the module's codec.
enum WSBytes {
    static let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    /// A frame: FIN, RSV and opcode, the shortest length, the key, the payload masked with it.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, mask: [UInt8]? = key, rsv: UInt8 = 0) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        if payload.count < 126 {
            out.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out += [maskBit | 126] + PacketBytes.be16(payload.count)
        } else {
            out += [maskBit | 127] + PacketBytes.be32(0) + PacketBytes.be32(UInt32(payload.count))
        }
        guard let mask else { return out + payload }
        return out + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    static func close(_ code: UInt16?, _ reason: String = "", mask: [UInt8]? = key) -> [UInt8] {
        frame(0x8, (code.map { PacketBytes.be16(Int($0)) } ?? []) + Array(reason.utf8), mask: mask)
    }

    /// RFC 6455 section 1.2's example handshake, at path /m.
    static let request = Array(("GET /m HTTP/1.1\r\nHost: 10.0.0.1:8080\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
    static let accept = Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n").utf8)
}

/// One TCP connection of a capture carrying a WebSocket session: stream bytes each way at
/// their next offsets, in segments as given.
final class WSConnection {
    let script: TCPCaptureScript
    let c: TCPCaptureScript.Connection
    /// Stream offsets of the next byte each way.
    private(set) var up = 0
    private(set) var down = 0

    init(_ script: TCPCaptureScript, _ c: TCPCaptureScript.Connection) {
        self.script = script
        self.c = c
    }

    var controller: Endpoint { c.controller }
    var host: Endpoint { c.host }

    /// SYN, SYN-ACK, ACK, then the upgrade request and its answer, each in the pieces given.
    func open(requestCuts: [Int] = [], acceptCuts: [Int] = []) {
        script.handshake(c)
        for piece in pieces(WSBytes.request, cuts: requestCuts) { send(piece) }
        for piece in pieces(WSBytes.accept, cuts: acceptCuts) { reply(piece) }
    }

    /// Controller → host bytes at the next offset; returns the packet's time.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Int64 {
        defer { up += bytes.count }
        return script.data(c, at: up, bytes)
    }

    /// Controller → host bytes at `offset`, out of turn (the next offset is not moved).
    @discardableResult
    func send(_ bytes: [UInt8], at offset: Int) -> Int64 { script.data(c, at: offset, bytes) }

    /// Skips `count` bytes of the controller's stream, never sent.
    func skip(_ count: Int) { up += count }

    /// Host → controller bytes at the next offset.
    @discardableResult
    func reply(_ bytes: [UInt8]) -> Int64 {
        defer { down += bytes.count }
        return script.segment(c, toHost: false, sequence: c.hostISN &+ 1 &+ UInt32(down), flags: TCPCaptureScript.psh | TCPCaptureScript.ack,
                              payload: bytes)
    }

    /// FIN both ways after everything sent, then the last ACK.
    func finish() {
        script.segment(c, sequence: c.controllerISN &+ 1 &+ UInt32(up), flags: TCPCaptureScript.fin | TCPCaptureScript.ack)
        script.segment(c, toHost: false, sequence: c.hostISN &+ 1 &+ UInt32(down), flags: TCPCaptureScript.fin | TCPCaptureScript.ack)
        script.segment(c, sequence: c.controllerISN &+ 2 &+ UInt32(up), flags: TCPCaptureScript.ack)
    }

    /// Splits `bytes` at the offsets `cuts`.
    func pieces(_ bytes: [UInt8], cuts: [Int]) -> [[UInt8]] {
        var out: [[UInt8]] = [], start = 0
        for cut in cuts + [bytes.count] where cut > start {
            out.append(Array(bytes[start..<cut]))
            start = cut
        }
        return out
    }

    func message(_ timeNs: Int64, _ payload: [UInt8], toHost: Bool = true) -> TraceRecord {
        .message(MessageRecord(timeNs: timeNs, direction: toHost ? .controllerToHost : .hostToController,
                               source: toHost ? controller : host, destination: toHost ? host : controller, payload: payload))
    }

    func close(_ timeNs: Int64, by: String, code: UInt16?, reason: String) -> TraceRecord {
        var data: [String: JSONValue] = ["by": .string(by), "reason": .string(reason), "controller": .string(controller.description)]
        if let code { data["code"] = .integer(Int64(code)) }
        return .event(EventRecord(timeNs: timeNs, event: "websocket_close", data: data))
    }

    func error(_ timeNs: Int64, toHost: Bool = true, offset: Int, code: String, detail: String) -> TraceRecord {
        .event(EventRecord(timeNs: timeNs, event: "websocket_error", data: [
            "controller": .string(controller.description), "direction": .string(toHost ? "c2h" : "h2c"),
            "offset": .integer(Int64(offset)), "code": .string(code), "detail": .string(detail),
        ]))
    }
}

// MARK: Tests

/// Plain WebSocket sessions (ws://) read from pcaps written byte by byte here: the records must be
/// exactly those `kinetrace host --transport ws --trace` writes of the same session (a message per
/// WebSocket message, one `websocket_close` per connection), and what cannot be read must be a
/// `websocket_error` event, never silence, with bounded memory.
@Suite struct WebSocketPcapTests {
    static let port: UInt16 = 8080

    static func connection(_ script: TCPCaptureScript, controllerPort: UInt16 = 50001, v6: Bool = false) -> WSConnection {
        WSConnection(script, v6 ? .v6(controllerPort: controllerPort, hostPort: port, isn: 0x1000_0000 &+ UInt32(controllerPort))
                                : .v4(controllerPort: controllerPort, hostPort: port, isn: 0x1000_0000 &+ UInt32(controllerPort)))
    }

    struct Read {
        var records: [TraceRecord] = []
        var counts: WebSocketSessionReader.Counts
    }

    /// Every record the reader gives for the capture `script` wrote, and its counts.
    static func read(_ script: TCPCaptureScript, wireProtocol: any WireProtocol = MotionLinkV1(),
                     limits: WebSocketSessionReader.Limits = WebSocketSessionReader.Limits()) throws -> Read {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("ws.pcap").path
        script.write(to: path)
        let reader = try PcapTraceReader(path: path, wireProtocol: wireProtocol, port: port, carrier: .webSocket, webSocketLimits: limits)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        return Read(records: records, counts: try #require(reader.webSocketCounts))
    }

    static func motionFrame(_ n: Int) -> [UInt8] { MotionFrame(tMs: 1_000 + UInt64(n), ay: Float(n) / 10).encoded() }

    // MARK: Sessions

    @Test func aSessionReadsAsTheHostRecordsIt() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        // The upgrade request in three segments (cut inside "Upgrade" and inside the empty line), the answer in two.
        ws.open(requestCuts: [5, 40, WSBytes.request.count - 1], acceptCuts: [20])
        let a = Self.motionFrame(1), b = Self.motionFrame(2), c = Self.motionFrame(3)
        let tA = ws.send(WSBytes.frame(0x2, a))
        // A frame in two segments: its header and four payload bytes, then the rest.
        let frameB = WSBytes.frame(0x2, b)
        ws.send(Array(frameB[0..<10]))
        let tB = ws.send(Array(frameB[10...]))
        // A message in three fragments, a ping between the first two, a pong back.
        ws.send(WSBytes.frame(0x2, Array(c[0..<10]), fin: false))
        ws.send(WSBytes.frame(0x9, Array("are you there".utf8)))
        ws.reply(WSBytes.frame(0xA, Array("are you there".utf8), mask: nil))
        ws.send(WSBytes.frame(0x0, Array(c[10..<20]), fin: false))
        let tC = ws.send(WSBytes.frame(0x0, Array(c[20...])))
        let ack = HapticAck(echoTMs: 1_003).encoded()
        let tAck = ws.reply(WSBytes.frame(0x2, ack, mask: nil))
        // A 300-byte message (16-bit length), its header cut inside the length.
        let long = (0..<300).map { UInt8($0 & 0xFF) }
        let frameLong = WSBytes.frame(0x2, long)
        ws.send(Array(frameLong[0..<3]))
        let tLong = ws.send(Array(frameLong[3...]))
        // The controller closes with 1001 and a reason; the host's echo is not a second event.
        let tClose = ws.send(WSBytes.close(1001, "going away"))
        ws.reply(WSBytes.close(1001, mask: nil))
        ws.finish()

        let read = try Self.read(script)
        #expect(read.records == [
            ws.message(tA, a), ws.message(tB, b), ws.message(tC, c), ws.message(tAck, ack, toHost: false), ws.message(tLong, long),
            ws.close(tClose, by: "controller", code: 1001, reason: "going away"),
        ])
        #expect(read.counts.upgradeRequests == 1 && read.counts.upgradesAccepted == 1)
        #expect(read.counts.frames == 11)  // 4 whole messages' frames, 3 fragments, ping, pong, 2 closes
        #expect(read.counts.messages == 5 && read.counts.pings == 1 && read.counts.pongs == 1 && read.counts.closeFrames == 2)
        #expect(read.counts.errors == 0 && read.counts.bytesNotRead == 0 && read.counts.messagesAfterClose == 0)
    }

    @Test func aLongFrameInManySegmentsAndOffsetsAfterIt() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        // A 5,000-byte message in 100-byte segments, the next frame's first bytes in its last one.
        let long = (0..<5_000).map { UInt8(($0 * 7) & 0xFF) }
        let a = Self.motionFrame(1)
        let bytes = WSBytes.frame(0x2, long) + WSBytes.frame(0x2, a)
        var times: [Int64] = []
        for piece in ws.pieces(bytes, cuts: Array(stride(from: 100, through: 5_000, by: 100)) + [5_020]) { times.append(ws.send(piece)) }
        // Then an unmasked frame: its offset counts every byte before it, the head included.
        let at = ws.up
        let tBad = ws.send(WSBytes.frame(0x2, a, mask: nil))
        ws.finish()

        let read = try Self.read(script)
        // The long frame's header is 8 bytes (16-bit length and key): it ends in the segment holding byte 5,007.
        #expect(read.records == [
            ws.message(times[50], long), ws.message(times[51], a),
            ws.error(tBad, offset: at, code: "unmasked_client_frame", detail: "a client's binary frame is not masked"),
        ])
        #expect(at == WSBytes.request.count + 5_008 + 42)
        #expect(read.counts.peakHeldBytes < 5_008)
    }

    @Test func outOfOrderSegmentsGiveTheMessageAtTheSegmentThatFilledTheHole() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script, v6: true)
        ws.open()
        let a = Self.motionFrame(1), b = Self.motionFrame(2)
        let frameA = WSBytes.frame(0x2, a), frameB = WSBytes.frame(0x2, b)
        let start = ws.up
        // The second half of A and all of B arrive first, then A's first half fills the hole;
        // then a retransmission of A's first half, which must change nothing.
        ws.send(Array(frameA[20...]) + frameB, at: start + 20)
        let tFill = ws.send(Array(frameA[0..<20]), at: start)
        ws.send(Array(frameA[0..<20]), at: start)
        ws.skip(frameA.count + frameB.count)
        let tClose = ws.send(WSBytes.close(1000))
        ws.reply(WSBytes.close(1000, mask: nil))
        ws.finish()

        let read = try Self.read(script)
        #expect(ws.controller.description == "[2001:db8::11]:50001")
        #expect(read.records == [ws.message(tFill, a), ws.message(tFill, b), ws.close(tClose, by: "controller", code: 1000, reason: "")])
    }

    @Test func theHostsCloseIsTheEventAndWhatTheControllerSendsAfterItIsLeftOut() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        let a = Self.motionFrame(1)
        let tA = ws.send(WSBytes.frame(0x2, a))
        // The host closes first, with no status code; a message the controller sent before it saw the
        // close is ignored by the host, and so left out here; the controller's echo is not an event.
        let tClose = ws.reply(WSBytes.frame(0x8, [], mask: nil))
        ws.send(WSBytes.frame(0x2, Self.motionFrame(2)))
        ws.send(WSBytes.close(1000))
        ws.finish()
        // Another connection: a text message, and a close whose reason is UTF-8 text.
        let other = Self.connection(script, controllerPort: 50002)
        other.open()
        let tOther = other.send(WSBytes.frame(0x1, Array("{}".utf8)))
        // The longest reason a close frame holds (123 bytes after the code), not ASCII: 62 characters.
        let reason = String(repeating: "é", count: 61) + "a"
        let tOtherClose = other.send(WSBytes.close(4000, reason))
        other.finish()

        let read = try Self.read(script)
        #expect(read.records == [
            ws.message(tA, a), ws.close(tClose, by: "host", code: nil, reason: ""),
            other.message(tOther, Array("{}".utf8)), other.close(tOtherClose, by: "controller", code: 4000, reason: reason),
        ])
        #expect(read.counts.messagesAfterClose == 1)
        #expect(read.counts.closeFrames == 3)
    }

    @Test func aByteStreamProtocolIsFramedFromTheMessagesPayloadsInOrder() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        // Three attitude records (12 bytes each) in WebSocket messages of 18 bytes, 18 bytes: the stream is what counts.
        let records = attitudeRecords(3, seed: 6455)
        let stream = records.flatMap { $0 }
        let t1 = ws.send(WSBytes.frame(0x2, Array(stream[0..<18])))
        let t2 = ws.send(WSBytes.frame(0x2, Array(stream[18..<36])))
        ws.send(WSBytes.close(1000))
        ws.finish()
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("attitude.pcap").path
        script.write(to: path)

        // As stored (convert): one record per WebSocket message, as the host's trace holds them.
        let raw = try TraceInput.open(path: path, wireProtocol: AttitudeStream(), port: Self.port, framed: false, carrier: .webSocket)
        var stored: [MessageRecord] = []
        while let record = try raw.next() { if case .message(let m) = record { stored.append(m) } }
        #expect(stored.map { Array($0.payload) } == [Array(stream[0..<18]), Array(stream[18..<36])])
        #expect(stored.map(\.timeNs) == [t1, t2])
        // Framed (every other command): the attitude records, each at the message that completed it.
        let framed = try TraceInput.open(path: path, wireProtocol: AttitudeStream(), port: Self.port, carrier: .webSocket)
        var messages: [MessageRecord] = []
        while let record = try framed.next() { if case .message(let m) = record { messages.append(m) } }
        #expect(messages.map { Array($0.payload) } == records)
        #expect(messages.map(\.timeNs) == [t1, t2, t2])
        #expect(messages.allSatisfy { $0.framingError == nil && $0.source == ws.controller })
    }

    // MARK: Hostile sessions

    /// An attack on the controller's stream after one good message: the message is read, the
    /// attack is one `websocket_error` at the attacking frame's stream offset, and nothing after it
    /// on that direction is read (a valid message follows, and must not appear).
    /// `unread`: bytes of the attack not read, the refused frame's own when the frame reader
    /// refused it from its header (the default), none when the message assembler refused a
    /// frame already read.
    func attack(_ bytes: [UInt8], code: String, detail: String, offsetInAttack: Int = 0, unread: Int? = nil,
                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        let a = Self.motionFrame(1)
        let tA = ws.send(WSBytes.frame(0x2, a))
        let at = ws.up + offsetInAttack
        let tAttack = ws.send(bytes)
        ws.send(WSBytes.frame(0x2, Self.motionFrame(2)))
        ws.finish()
        let read = try Self.read(script)
        #expect(read.records == [ws.message(tA, a), ws.error(tAttack, offset: at, code: code, detail: detail)], sourceLocation: sourceLocation)
        #expect(read.counts.errors == 1 && read.counts.messages == 1, sourceLocation: sourceLocation)
        // Not read: the attack from the refused frame on (or after it), and the 42-byte frame after it.
        #expect(read.counts.bytesNotRead == (unread ?? bytes.count - offsetInAttack) + 42, sourceLocation: sourceLocation)
    }

    @Test func anUnmaskedClientFrameIsAnError() throws {
        try attack(WSBytes.frame(0x2, Self.motionFrame(9), mask: nil), code: "unmasked_client_frame", detail: "a client's binary frame is not masked")
    }

    @Test func aReservedOpcodeIsAnError() throws {
        try attack(WSBytes.frame(0x3, [1, 2, 3]), code: "reserved_opcode", detail: "reserved opcode 0x3")
    }

    @Test func reservedBitsAreAnError() throws {
        try attack(WSBytes.frame(0x2, [1, 2, 3], rsv: 0x40), code: "reserved_bits", detail: "reserved bits 0x40 set with no extension negotiated")
    }

    @Test func aOneByteClosePayloadIsAnErrorAndNoClose() throws {
        try attack(WSBytes.frame(0x8, [0x03]), code: "bad_close_payload", detail: "a close frame with a 1-byte payload (a status code takes 2)",
                   unread: 0)
    }

    @Test func sixtyFiveFragmentsAreAnErrorAtTheSixtyFifth() throws {
        var bytes: [UInt8] = []
        for n in 0..<65 { bytes += WSBytes.frame(n == 0 ? 0x2 : 0x0, [UInt8(n)], fin: false) }
        // Each one-byte fragment is 2 + 4 + 1 bytes: the 65th begins 64 × 7 bytes in.
        try attack(bytes, code: "too_many_fragments", detail: "a message in more than 64 fragments", offsetInAttack: 64 * 7, unread: 0)
    }

    @Test func aFrameAnnouncingMoreThan64KiBIsRefusedFromItsHeaderAlone() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        let a = Self.motionFrame(1)
        let tA = ws.send(WSBytes.frame(0x2, a))
        // The header alone (64-bit length 70,000, masked) in its own segment, then the payload in
        // 1,400-byte segments: the error must come at the header's packet, holding none of it.
        let header: [UInt8] = [0x82, 0xFF] + PacketBytes.be32(0) + PacketBytes.be32(70_000) + WSBytes.key
        let at = ws.up
        let tHeader = ws.send(header)
        for start in stride(from: 0, to: 70_000, by: 1_400) { ws.send([UInt8](repeating: 0x55, count: min(1_400, 70_000 - start))) }
        ws.finish()

        let read = try Self.read(script)
        #expect(read.records == [ws.message(tA, a), ws.error(tHeader, offset: at, code: "frame_too_large", detail: "a binary frame of 70000 bytes (at most 65536)")])
        #expect(read.counts.bytesNotRead == 14 + 70_000)
        // Never more held than the head or a frame header: nothing of the payload.
        #expect(read.counts.peakHeldBytes <= WSBytes.request.count)
    }

    @Test func aHeadWithNoEndIsRefusedAt8KiB() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        script.handshake(ws.c)
        // A request head that never ends, 1,000 bytes a segment, 20,000 bytes in all.
        var head = Array("GET /m HTTP/1.1\r\nUpgrade: websocket\r\n".utf8)
        while head.count < 20_000 { head += Array("X-Padding: \(String(repeating: "a", count: 60))\r\n".utf8) }
        var tOver: Int64 = 0
        for piece in ws.pieces(head, cuts: Array(stride(from: 1_000, to: head.count, by: 1_000))) {
            let t = ws.send(piece)
            if ws.up >= 8_192 && tOver == 0 { tOver = t }
        }
        ws.finish()
        // A second, good session on the same capture is read in full.
        let good = Self.connection(script, controllerPort: 50002)
        good.open()
        let a = Self.motionFrame(1)
        let tA = good.send(WSBytes.frame(0x2, a))
        good.finish()

        let read = try Self.read(script)
        #expect(read.records == [
            ws.error(tOver, offset: 0, code: "handshake_too_long", detail: "no end of the HTTP head within 8192 bytes"),
            good.message(tA, a),
        ])
        #expect(read.counts.peakHeldBytes <= 8_192)
        #expect(read.counts.bytesNotRead == head.count)
    }

    @Test func aRequestThatIsNotAnUpgradeIsAnError() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        script.handshake(ws.c)
        let t = ws.send(Array("GET /m HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let tAnswer = ws.reply(Array("HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\nContent-Length: 0\r\n\r\n".utf8))
        ws.finish()
        let good = Self.connection(script, controllerPort: 50002)
        good.open()
        let tA = good.send(WSBytes.frame(0x2, Self.motionFrame(1)))
        good.finish()

        let read = try Self.read(script)
        #expect(read.records == [
            ws.error(t, offset: 0, code: "bad_handshake", detail: "not a WebSocket upgrade request (GET with Upgrade: websocket): GET /m HTTP/1.1"),
            ws.error(tAnswer, toHost: false, offset: 0, code: "upgrade_refused",
                     detail: "the host answered HTTP/1.1 426 Upgrade Required, not 101 Switching Protocols"),
            good.message(tA, Self.motionFrame(1)),
        ])
        // The good connection's upgrade only.
        #expect(read.counts.upgradeRequests == 1 && read.counts.upgradesAccepted == 1)
    }

    @Test func aNon101AnswerIsAnErrorAndItsBodyIsNotRead() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        script.handshake(ws.c)
        ws.send(WSBytes.request)
        let body = "no WebSocket at /m; this host serves /motion\n"
        let answer = Array("HTTP/1.1 404 Not Found\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        let tAnswer = ws.reply(answer)
        ws.finish()

        // No message at all: the reader's "no messages" error, naming what went wrong.
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("refused.pcap").path
        script.write(to: path)
        let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1(), port: Self.port, carrier: .webSocket)
        var records: [TraceRecord] = []
        let error = #expect(throws: TraceError.self) { while let record = try reader.next() { records.append(record) } }
        #expect(records == [ws.error(tAnswer, toHost: false, offset: 0, code: "upgrade_refused",
                                     detail: "the host answered HTTP/1.1 404 Not Found, not 101 Switching Protocols")])
        #expect(error?.code == .noMessages)
        #expect(error?.message == "no WebSocket messages to or from TCP port 8080 in 8 packets; TCP ports seen: 8080 (8 packets), 50001 (8 packets)"
                + "; 1 upgrade request and 0 accepted at port 8080; 1 websocket_error event, the first: upgrade_refused at offset 0 of the host's stream:"
                + " the host answered HTTP/1.1 404 Not Found, not 101 Switching Protocols")
        #expect(reader.webSocketCounts?.bytesNotRead == answer.count)
    }

    @Test func aStreamGapIsAnErrorAndTheRestOfTheDirectionIsNotRead() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        let a = Self.motionFrame(1)
        let tA = ws.send(WSBytes.frame(0x2, a))
        let hole = ws.up
        ws.skip(WSBytes.frame(0x2, a).count)  // one frame never captured
        ws.send(WSBytes.frame(0x2, Self.motionFrame(3)))
        // The host's direction goes on: its ack is read.
        let ack = HapticAck(echoTMs: 1_001).encoded()
        let tAck = ws.reply(WSBytes.frame(0x2, ack, mask: nil))
        ws.finish()
        // The hole never fills: the capture's end gives it up, stamped with the last packet's time.
        let tEnd = script.timeNs

        let read = try Self.read(script)
        #expect(read.records == [
            ws.message(tA, a), ws.message(tAck, ack, toHost: false),
            ws.error(tEnd, offset: hole, code: "stream_gap", detail: "42 bytes of the stream were never captured"),
        ])
        #expect(read.counts.bytesNotRead == 42)
    }

    @Test func aCaptureBegunMidStreamIsAnError() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        // No SYN, no heads: frames from the middle of a session.
        let t = ws.send(WSBytes.frame(0x2, Self.motionFrame(1)))
        let good = Self.connection(script, controllerPort: 50002)
        good.open()
        let tA = good.send(WSBytes.frame(0x2, Self.motionFrame(2)))
        let read = try Self.read(script)
        #expect(read.records == [
            ws.error(t, offset: 0, code: "mid_stream_start", detail: "the capture began inside this direction's stream, so where its frames start is unknown"),
            good.message(tA, Self.motionFrame(2)),
        ])
    }

    @Test func aStreamEndingInsideAFrameIsAnError() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        let frame = WSBytes.frame(0x2, Self.motionFrame(1))
        let at = ws.up
        let tData = ws.send(Array(frame[0..<15]))
        ws.finish()
        let good = Self.connection(script, controllerPort: 50002)
        good.open()
        let tA = good.send(WSBytes.frame(0x2, Self.motionFrame(2)))
        good.finish()
        let read = try Self.read(script)
        // The controller's FIN, the next packet, ends the direction.
        #expect(read.records == [
            ws.error(tData + 1_000_000, offset: at, code: "stream_ended", detail: "the stream ended (fin) inside a frame, 15 bytes of it captured"),
            good.message(tA, Self.motionFrame(2)),
        ])
    }

    @Test func whatAllConnectionsHoldIsBounded() throws {
        let script = TCPCaptureScript()
        var connections: [WSConnection] = []
        // Ten connections each send most of a 5,000-byte frame and stop; the reader may hold 20,000 bytes in all.
        let frame = WSBytes.frame(0x2, [UInt8](repeating: 7, count: 5_000))
        var times: [Int64] = []
        for n in 0..<10 {
            let ws = Self.connection(script, controllerPort: 50100 + UInt16(n))
            ws.open()
            times.append(ws.send(Array(frame[0..<(3_000 + n * 100)])))
            connections.append(ws)
        }
        let good = Self.connection(script, controllerPort: 50002)
        good.open()
        let tA = good.send(WSBytes.frame(0x2, Self.motionFrame(1)))
        var limits = WebSocketSessionReader.Limits()
        limits.heldBytesTotal = 20_000
        let read = try Self.read(script, limits: limits)
        // The seventh pushes the total over 20,000 (3,000 + … + 3,600 = 23,100 bytes): the fullest, itself, gives up,
        // and so does each later one, when it arrives, at its frame's offset. The good message is read; at the
        // capture's end the six still holding part of a frame are reported.
        let offset = WSBytes.request.count
        var expected = (6..<10).map { n in
            connections[n].error(times[n], offset: offset, code: "held_bytes_limit",
                                 detail: "\(3_000 + n * 100) bytes held unfinished while all connections together held over 20000")
        }
        expected.append(good.message(tA, Self.motionFrame(1)))
        expected += (0..<6).map { n in
            connections[n].error(tA, offset: offset, code: "stream_ended",
                                 detail: "the stream ended (capture_end) inside a frame, \(3_000 + n * 100) bytes of it captured")
        }
        #expect(read.records == expected)
        #expect(read.counts.peakHeldBytes == 19_500 + 3_900)
    }

    // MARK: The command

    @Test func convertWithTransportWSWritesTheSessionsRecords() throws {
        let script = TCPCaptureScript()
        let ws = Self.connection(script)
        ws.open()
        let a = Self.motionFrame(1)
        let tA = ws.send(WSBytes.frame(0x2, a))
        let tClose = ws.send(WSBytes.close(1000, "bye"))
        ws.reply(WSBytes.close(1000, mask: nil))
        ws.finish()
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = dir.appendingPathComponent("ws.pcap").path, trace = dir.appendingPathComponent("ws.jsonl").path
        script.write(to: pcap)

        // The port is inferred from the upgrade the host accepted.
        let result = try kinetrace("convert", pcap, trace, "--transport", "ws")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "kinetrace: note: \(pcap): host port 8080, inferred from 1 WebSocket upgrade it accepted (the protocol's default is 47110; --port chooses)\n")
        #expect(result.stdout == """
            Converted  \(pcap) (pcap (nanosecond timestamps, little-endian), link type EN10MB) to \(trace) (trace)
            Written    2 records from 2 records read
            Packets    11 read, 0 skipped
            WebSocket  1 of 1 upgrades accepted, 1 messages, 2 close frames, 0 pings, 0 pongs, 0 websocket_error events

            """)
        let reader = try TraceReader(path: trace)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records == [ws.message(tA, a), ws.close(tClose, by: "controller", code: 1000, reason: "bye")])

        // Without --transport ws the same capture holds no motionlink-v1 datagrams.
        let native = try kinetrace("convert", pcap, dir.appendingPathComponent("n.jsonl").path)
        #expect(native.status == 65)
        // A trace is messages already; tcp cannot carry a datagram protocol.
        let fromTrace = try kinetrace("convert", trace, dir.appendingPathComponent("t.jsonl").path, "--transport", "ws")
        #expect(fromTrace.status == 65)
        #expect(fromTrace.stderr.contains("WebSocket sessions are read from a pcap or pcapng"), "\(fromTrace.stderr)")
        let tcp = try kinetrace("convert", pcap, dir.appendingPathComponent("t.jsonl").path, "--transport", "tcp")
        #expect(tcp.status == 64)
        #expect(tcp.stderr.contains("--transport tcp:// carries byte-stream protocols"), "\(tcp.stderr)")
        let unknown = try kinetrace("convert", pcap, dir.appendingPathComponent("t.jsonl").path, "--transport", "sctp")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("--transport must be one of udp, tcp, ws") && unknown.stderr.contains(", not sctp."), "\(unknown.stderr)")
    }
}
