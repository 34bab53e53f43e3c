import Foundation
import KinetracePcap
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// The pcap, tcp and wssession fuzz targets' seeds and saved crashes (Fuzz/corpus,
/// Fuzz/regressions), through the same calls the targets make.
@Suite struct FuzzCorpusTests {
    static let protocols: [any WireProtocol] = [MotionLinkV1(), KeepCalmJSON(), AttitudeStream()]

    /// pcap: each input as a capture file read by `PcapTraceReader` for every
    /// protocol, then as one packet of every link type. An `ok-…` seed must
    /// give messages for at least one protocol; a `<code>-…` file must fail
    /// with that `TraceError` code for every protocol.
    @Test func captures() throws {
        let inputs = try FuzzInput.all("pcap")
        #expect(inputs.count >= 6)
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        for input in inputs {
            let path = dir.appendingPathComponent("input").path
            try Data(input.bytes).write(to: URL(fileURLWithPath: path))
            var messages = 0
            var errors: [TraceError] = []
            for wireProtocol in Self.protocols {
                do throws(TraceError) {
                    let reader = try PcapTraceReader(path: path, wireProtocol: wireProtocol)
                    while let record = try reader.next() {
                        if case .message(let message) = record {
                            messages += 1
                            #expect(message.source.port == reader.port || message.destination.port == reader.port)
                        }
                    }
                } catch where error.code == .noMessages {
                    continue  // none of this protocol's traffic: the other protocols read it
                } catch {
                    #expect((0...input.bytes.count).contains(error.byteOffset ?? 0), "\(input): \(error)")
                    errors.append(error)
                }
            }
            switch input.expectation {
            case .value: #expect(messages > 0 && errors.isEmpty, "\(input): \(messages) messages, errors \(errors)")
            case .error(let code): #expect(errors.count == Self.protocols.count && errors.allSatisfy { $0.code.name == code }, "\(input): \(errors)")
            case .invariantsOnly: break
            }
            input.bytes.withUnsafeBytes { raw in
                for linkType in LinkType.supported {
                    for transport in [IPTransport.udp, .tcp] {
                        guard case .found(let at) = PacketDecoder.locate(in: raw, linkType: linkType, transport: transport) else { continue }
                        #expect(at.payloadOffset + at.payloadCount <= raw.count, "\(input)")
                    }
                }
            }
        }
    }

    /// tcp: the target's byte coding of segments (see Fuzz/tcp.swift), fed to a
    /// `TCPReassembler`: chunks must tile each direction's stream, and an
    /// `ok-…` seed must give stream bytes.
    @Test func reassembly() throws {
        let inputs = try FuzzInput.all("tcp")
        #expect(!inputs.isEmpty)
        let host = Endpoint(host: "10.0.0.100", port: 47130)
        let clients = (0..<4).map { Endpoint(host: "10.0.0.\($0 + 1)", port: UInt16(40_000 + $0)) }
        for input in inputs where !input.bytes.isEmpty {
            let b = input.bytes
            var limits = TCPReassembler.Limits()
            if b[0] & 1 == 1 {
                limits.bufferedBytesPerDirection = 64
                limits.bufferedSegmentsPerDirection = 4
                limits.bufferedBytesTotal = 160
                limits.directions = 4
            }
            var reassembler = TCPReassembler(limits: limits)
            var chunks: [StreamChunk] = []
            var timeNs: Int64 = 1_000_000_000
            var at = 1
            while at + 7 <= b.count {
                let who = b[at], flags = b[at + 1]
                let sequence = UInt32(b[at + 2]) | UInt32(b[at + 3]) << 8 | UInt32(b[at + 4]) << 16 | UInt32(b[at + 5]) << 24
                let length = min(Int(b[at + 6]), b.count - at - 7)
                let payload = Array(b[(at + 7)..<(at + 7 + length)])
                at += 7 + length
                timeNs += Int64(who >> 3) * 1_000_000
                let fromHost = who & 4 != 0
                let client = clients[Int(who & 3)]
                reassembler.add(TCPSegment(timeNs: timeNs, direction: fromHost ? .hostToController : .controllerToHost,
                                           source: fromHost ? host : client, destination: fromHost ? client : host,
                                           sequence: sequence, flags: flags, payload: payload), into: &chunks)
            }
            chunks += reassembler.finish()
            var next: [String: Int] = [:]
            for chunk in chunks {
                let key = "\(chunk.source)>\(chunk.destination)"
                if chunk.startedWithHandshake != nil { next[key] = 0 }
                #expect(chunk.offset - chunk.missingBefore == next[key], "\(input): \(key) chunk at \(chunk.offset)")
                next[key] = chunk.offset + chunk.bytes.count
                if chunk.end != nil { next[key] = nil }
            }
            #expect(next.isEmpty, "\(input): directions left open after finish: \(next.keys.sorted())")
            if input.expectation == .value { #expect(chunks.contains { !$0.bytes.isEmpty }, "\(input): no stream bytes") }
        }
    }

    /// wssession: the target's script of stream chunks (see Fuzz/wssession.swift), fed to a
    /// `WebSocketSessionReader`: an `ok-…` seed must give messages and no `websocket_error`, a
    /// `<code>-…` one a `websocket_error` with that code; always the counts agree with the records,
    /// times never go backwards, what is held stays within the limit and all of it goes at the end.
    @Test func webSocketSessions() throws {
        let inputs = try FuzzInput.all("wssession")
        #expect(inputs.count >= 20)
        let host = Endpoint(host: "10.0.0.100", port: 47130)
        let controllers = (0..<4).map { Endpoint(host: "10.0.0.\($0 + 1)", port: UInt16(40_000 + $0)) }
        // The target's canned heads, byte for byte (the first is what kinetrace sends).
        let requests = [Array(("GET / HTTP/1.1\r\nHost: 10.0.0.100:47130\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nUser-Agent: kinetrace\r\n\r\n").utf8),
                        Array("GET /ws HTTP/1.0\nUPGRADE:websocket\r\n\r\n".utf8)]
        let answers = [Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                               + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n").utf8),
                       Array("HTTP/1.1 101\r\n\r\n".utf8)]
        for input in inputs where !input.bytes.isEmpty {
            let b = input.bytes
            var limits = WebSocketSessionReader.Limits()
            limits.heldBytesTotal = [64 << 20, 1024, 200, 16][Int(b[0] & 3)]
            let codec = [(65_536, 65_536, 64, 8_192), (125, 256, 4, 256), (300, 125, 2, 64), (125, 1, 1, 200)][Int(b[0] >> 2 & 3)]
            limits.webSocket.maximumFrameBytes = codec.0
            limits.webSocket.maximumMessageBytes = codec.1
            limits.webSocket.maximumFragments = codec.2
            limits.webSocket.maximumHeadBytes = codec.3
            var reader = WebSocketSessionReader(limits: limits)
            var records: [TraceRecord] = []
            // Per direction (controller × 2 + 1 from the host): the offset after the last chunk, while open.
            var open: [Int: (next: Int, started: Bool)] = [:]
            var order: [Int] = []
            var timeNs: Int64 = 1_000_000_000
            func feed(_ key: Int, _ bytes: [UInt8], missing: Int, end: StreamEnd?, handshake: Bool) {
                let state = open[key]!
                let toHost = key & 1 == 0, controller = controllers[key / 2]
                let chunk = StreamChunk(timeNs: timeNs, direction: toHost ? .controllerToHost : .hostToController,
                                        source: toHost ? controller : host, destination: toHost ? host : controller, bytes: bytes,
                                        offset: state.next + missing, startedWithHandshake: state.started ? nil : handshake,
                                        missingBefore: missing, end: end)
                open[key] = end == nil ? (chunk.offset + bytes.count, true) : nil
                reader.take(chunk, into: &records)
                #expect(reader.heldBytes >= 0 && reader.heldBytes <= limits.heldBytesTotal, "\(input): \(reader.heldBytes) bytes held")
            }
            var at = 1
            while at + 3 <= b.count {
                let who = b[at], flags = b[at + 1]
                let length = min(Int(b[at + 2]), b.count - at - 3)
                var bytes = Array(b[(at + 3)..<(at + 3 + length)])
                at += 3 + length
                timeNs += Int64(who >> 3) * 1_000_000
                let toHost = who & 4 == 0
                let key = Int(who & 3) * 2 + (toHost ? 0 : 1)
                if open[key] != nil, flags & 1 != 0 { feed(key, [], missing: 0, end: .reused, handshake: true) }
                if open[key] == nil {
                    open[key] = (0, false)
                    order.append(key)
                    if flags & 4 != 0 { bytes = (toHost ? requests : answers)[Int(flags >> 3 & 1)] + bytes }
                }
                let end: StreamEnd? = switch flags >> 5 { case 6: .fin; case 7: .rst; default: nil }
                feed(key, bytes, missing: flags & 0x10 != 0 ? 7 : 0, end: end, handshake: flags & 2 == 0)
                if end == .rst, open[key ^ 1] != nil { feed(key ^ 1, [], missing: 0, end: .rst, handshake: true) }
            }
            for key in order where open[key] != nil { feed(key, [], missing: 0, end: .captureEnd, handshake: true) }

            #expect(reader.heldBytes == 0 && reader.openConnections == 0, "\(input): \(reader.heldBytes) bytes held at the end")
            var messages = 0, lastTimeNs = Int64.min
            var errors: [String] = []
            for record in records {
                switch record {
                case .message(let message):
                    messages += 1
                    #expect(message.payload.count <= limits.webSocket.maximumMessageBytes, "\(input)")
                    lastTimeNs = max(lastTimeNs, message.timeNs)
                    #expect(message.timeNs == lastTimeNs, "\(input): a record back in time")
                case .event(let event):
                    #expect(event.timeNs >= lastTimeNs, "\(input): a record back in time")
                    lastTimeNs = event.timeNs
                    if event.event == WebSocketSessionReader.errorEvent {
                        errors.append(event.data["code"]?.stringValue ?? "")
                        #expect((event.data["offset"]?.integerValue ?? -1) >= 0, "\(input): \(event)")
                    } else {
                        #expect(event.event == WebSocketSessionReader.closeEvent, "\(input): \(event)")
                    }
                default:
                    Issue.record("\(input): \(record)")
                }
            }
            #expect(reader.counts.messages == messages && reader.counts.errors == errors.count, "\(input): \(reader.counts)")
            switch input.expectation {
            case .value: #expect(messages > 0 && errors.isEmpty, "\(input): \(messages) messages, errors \(errors)")
            case .error(let code): #expect(errors.contains(code), "\(input): errors \(errors)")
            case .invariantsOnly: break
            }
        }
    }
}
