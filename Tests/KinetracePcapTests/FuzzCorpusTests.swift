import Foundation
import KinetracePcap
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// The pcap and tcp fuzz targets' seeds and saved crashes (Fuzz/corpus,
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
}
