import Testing
import KinetraceSupport
import KinetraceWebSocket
import NIOCore
import NIOEmbedded
import NIOWebSocket

private typealias OurFrame = KinetraceWebSocket.WebSocketFrame
private typealias OurOpcode = KinetraceWebSocket.WebSocketOpcode
private typealias NIOFrame = NIOWebSocket.WebSocketFrame
private typealias NIOOpcode = NIOWebSocket.WebSocketOpcode

/// Our RFC 6455 codec against SwiftNIO's (NIOWebSocket, what the host's transport runs), over
/// seeded random frames: every defined opcode, control frames FIN and at most 125 bytes, masked
/// and not, lengths at each length encoding's bounds.
@Suite struct WebSocketNIOAgreementTests {
    static let seed: UInt64 = 0x6B69_6E65_5753_0001
    static let frameCount = 300
    static let maximumFrameBytes = 1 << 17

    fileprivate static func randomFrames(seed: UInt64, count: Int) -> [OurFrame] {
        var random = SeededGenerator(seed: seed)
        let opcodes: [OurOpcode] = [.continuation, .text, .binary, .close, .ping, .pong]
        let dataLengths = [0, 1, 2, 3, 4, 5, 124, 125, 126, 127, 128, 65_535, 65_536, 65_537]
        let controlLengths = [0, 1, 2, 3, 4, 5, 124, 125]
        return (0..<count).map { _ in
            let opcode = opcodes.randomElement(using: &random)!
            let length: Int
            if Bool.random(using: &random) {
                length = (opcode.isControl ? controlLengths : dataLengths).randomElement(using: &random)!
            } else {
                length = Int.random(in: 0...(opcode.isControl ? 125 : 400), using: &random)
            }
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let key: [UInt8]? = Bool.random(using: &random) ? (0..<4).map { _ in UInt8.random(in: 0...255, using: &random) } : nil
            let fin = opcode.isControl || Bool.random(using: &random)
            return OurFrame(fin: fin, opcode: opcode, maskingKey: key, payload: payload)
        }
    }

    @Test func theFramesCoverWhatTheyShould() {
        let frames = Self.randomFrames(seed: Self.seed, count: Self.frameCount)
        #expect(Set(frames.map(\.opcode.rawValue)) == [0x0, 0x1, 0x2, 0x8, 0x9, 0xA], "seed \(Self.seed)")
        #expect(frames.contains { $0.maskingKey != nil } && frames.contains { $0.maskingKey == nil }, "seed \(Self.seed)")
        #expect(frames.contains { !$0.fin }, "seed \(Self.seed)")
        for length in [0, 125, 126, 65_535, 65_536] {
            #expect(frames.contains { $0.payload.count == length }, "seed \(Self.seed): no frame of \(length) bytes")
        }
        #expect(frames.allSatisfy { !$0.opcode.isControl || ($0.fin && $0.payload.count <= 125) })
    }

    /// (a) Bytes `encoded()` writes decode in NIO to the same FIN, opcode, mask and payload.
    @Test func ourBytesDecodeInNIO() throws {
        let frames = Self.randomFrames(seed: Self.seed, count: Self.frameCount)
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: Self.maximumFrameBytes)))
        for (index, frame) in frames.enumerated() {
            let context = "seed \(Self.seed), frame \(index) (\(frame.opcode), fin \(frame.fin), \(frame.payload.count) bytes, masked \(frame.maskingKey != nil))"
            try channel.writeInbound(channel.allocator.buffer(bytes: frame.encoded()))
            let decoded = try #require(try channel.readInbound(as: NIOFrame.self), "\(context): NIO decoded nothing")
            #expect(try channel.readInbound(as: NIOFrame.self) == nil, "\(context): NIO decoded a second frame")
            #expect(decoded.fin == frame.fin, "\(context)")
            #expect(UInt8(webSocketOpcode: decoded.opcode) == frame.opcode.rawValue, "\(context): NIO read \(decoded.opcode)")
            #expect(decoded.reservedBits.isEmpty, "\(context)")
            #expect(decoded.maskKey.map { Array($0) } == frame.maskingKey, "\(context): mask")
            #expect(decoded.length == frame.payload.count, "\(context)")
            #expect(Array(buffer: decoded.unmaskedData) == frame.payload, "\(context): payload")
        }
        #expect(try channel.finish().isClean)
    }

    /// (b) Bytes NIO's encoder writes read back with our reader as the same frame, and are the
    /// very bytes `encoded()` writes (both use the shortest length encoding).
    @Test func nioBytesReadBackWithOurReader() throws {
        let frames = Self.randomFrames(seed: Self.seed, count: Self.frameCount)
        let channel = EmbeddedChannel(handler: WebSocketFrameEncoder())
        for (index, frame) in frames.enumerated() {
            let context = "seed \(Self.seed), frame \(index) (\(frame.opcode), fin \(frame.fin), \(frame.payload.count) bytes, masked \(frame.maskingKey != nil))"
            let opcode = try #require(NIOOpcode(encodedWebSocketOpcode: frame.opcode.rawValue), "\(context)")
            let nioFrame = NIOFrame(fin: frame.fin, opcode: opcode,
                                    maskKey: frame.maskingKey.flatMap { WebSocketMaskingKey($0) }, data: channel.allocator.buffer(bytes: frame.payload))
            try channel.writeOutbound(nioFrame)
            var bytes: [UInt8] = []
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += Array(buffer: buffer) }
            #expect(bytes == frame.encoded(), "\(context): NIO's bytes differ from encoded()")
            // A client masks, a server does not: the reader for the side that would send it.
            var reader = WebSocketFrameReader(sender: frame.maskingKey == nil ? .server : .client, maximumPayloadBytes: Self.maximumFrameBytes)
            reader.append(bytes)
            do throws(WebSocketError) {
                let read = try reader.next()
                #expect(read == frame, "\(context): read back as \(String(describing: read.map { ($0.opcode, $0.fin, $0.payload.count) }))")
                #expect(reader.pendingBytes == 0 && reader.offset == bytes.count, "\(context): \(reader.pendingBytes) bytes left")
            } catch {
                Issue.record("\(context): our reader refused NIO's bytes: \(error)")
            }
        }
        #expect(try channel.finish().isClean)
    }

    /// Where RFC 6455 says MUST NOT, both refuse; where Kinetrace negotiates no extension, only we do.
    @Test func bothRefuseWhatTheRFCForbids() throws {
        let cases: [(name: String, bytes: [UInt8], code: WebSocketError.Code)] = [
            ("ping without FIN", [0x09, 0x00], .fragmentedControl),
            ("close of 126 bytes", [0x88, 0x7E, 0x00, 0x7E] + [UInt8](repeating: 0, count: 126), .controlTooLong),
            ("binary over the limit", [0x82, 0x7F, 0, 0, 0, 0, 0, 2, 0, 1], .frameTooLarge),
        ]
        for c in cases {
            let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: Self.maximumFrameBytes)))
            #expect(throws: NIOWebSocketError.self, "\(c.name)") { try channel.writeInbound(channel.allocator.buffer(bytes: c.bytes)) }
            _ = try? channel.finish()
            var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: Self.maximumFrameBytes)
            reader.append(c.bytes)
            do throws(WebSocketError) {
                _ = try reader.next()
                Issue.record("\(c.name): our reader took it")
            } catch {
                #expect(error.code == c.code && error.offset == 0, "\(c.name): \(error)")
            }
        }
        // RSV1 (permessage-deflate's bit): NIO leaves extensions to the application; we negotiate none.
        let rsv1: [UInt8] = [0xC1, 0x01, 0x61]
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: Self.maximumFrameBytes)))
        try channel.writeInbound(channel.allocator.buffer(bytes: rsv1))
        #expect(try channel.readInbound(as: NIOFrame.self)?.rsv1 == true)
        _ = try channel.finish()
        var reader = WebSocketFrameReader(sender: .server, maximumPayloadBytes: 125)
        reader.append(rsv1)
        #expect(throws: WebSocketError.self) { try reader.next() }
    }
}
