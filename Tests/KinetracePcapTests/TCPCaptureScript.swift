import Foundation
import KinetracePcap
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire

/// Writes TCP captures packet by packet for the reassembly tests: real
/// Ethernet/IPv4/IPv6/TCP headers with correct lengths (checksums zero, which
/// the decoder and tshark's defaults ignore), nanosecond pcap.
final class TCPCaptureScript {
    /// One TCP connection: the controller's side and the host's, and each side's SYN sequence number.
    struct Connection {
        var controller: Endpoint
        var host: Endpoint
        var v6: Bool
        var controllerISN: UInt32
        var hostISN: UInt32

        static func v4(controllerPort: UInt16, hostPort: UInt16 = AttitudeStream.defaultPort, isn: UInt32, hostISN: UInt32 = 0x5000_0000) -> Connection {
            Connection(controller: Endpoint(host: "10.0.0.11", port: controllerPort), host: Endpoint(host: "10.0.0.1", port: hostPort),
                       v6: false, controllerISN: isn, hostISN: hostISN)
        }

        static func v6(controllerPort: UInt16, hostPort: UInt16 = AttitudeStream.defaultPort, isn: UInt32, hostISN: UInt32 = 0x6000_0000) -> Connection {
            Connection(controller: Endpoint(host: "2001:db8::11", port: controllerPort), host: Endpoint(host: "2001:db8::1", port: hostPort),
                       v6: true, controllerISN: isn, hostISN: hostISN)
        }
    }

    static let fin: UInt8 = 0x01, syn: UInt8 = 0x02, rst: UInt8 = 0x04, psh: UInt8 = 0x08, ack: UInt8 = 0x10

    private(set) var packets: [(timeNs: Int64, bytes: [UInt8])] = []
    private(set) var timeNs: Int64 = 1_767_225_600_000_000_000

    /// One packet of `connection`, `toHost` or from it, 1 ms after the last.
    @discardableResult
    func segment(_ c: Connection, toHost: Bool = true, sequence: UInt32, flags: UInt8, payload: [UInt8] = []) -> Int64 {
        timeNs += 1_000_000
        let (source, destination) = toHost ? (c.controller, c.host) : (c.host, c.controller)
        let body = StreamCaptureTests.tcp(source: source.port, destination: destination.port, sequence: sequence, flags: flags,
                                          options: StreamCaptureTests.timestampOptions, payload: payload)
        let (controllerAddress, hostAddress) = c.v6 ? (PacketBytes.v6Controller, PacketBytes.v6Host) : (PacketBytes.v4Controller, PacketBytes.v4Host)
        let (from, to) = toHost ? (controllerAddress, hostAddress) : (hostAddress, controllerAddress)
        packets.append((timeNs, c.v6 ? StreamCaptureTests.ether6(from, to, body) : StreamCaptureTests.ether4(from, to, body)))
        return timeNs
    }

    /// SYN, SYN-ACK, ACK.
    func handshake(_ c: Connection) {
        segment(c, sequence: c.controllerISN, flags: Self.syn)
        segment(c, toHost: false, sequence: c.hostISN, flags: Self.syn | Self.ack)
        segment(c, sequence: c.controllerISN &+ 1, flags: Self.ack)
    }

    /// Stream bytes at `offset` (0 is the byte after the SYN) of the controller's direction; returns the packet's time.
    @discardableResult
    func data(_ c: Connection, at offset: Int, _ bytes: [UInt8], flags: UInt8 = psh | ack) -> Int64 {
        segment(c, sequence: c.controllerISN &+ 1 &+ UInt32(truncatingIfNeeded: offset), flags: flags, payload: bytes)
    }

    /// FIN from both sides, the controller's at `offset`, then the last ACK.
    func close(_ c: Connection, at offset: Int) {
        segment(c, sequence: c.controllerISN &+ 1 &+ UInt32(truncatingIfNeeded: offset), flags: Self.fin | Self.ack)
        segment(c, toHost: false, sequence: c.hostISN &+ 1, flags: Self.fin | Self.ack)
        segment(c, sequence: c.controllerISN &+ 2 &+ UInt32(truncatingIfNeeded: offset), flags: Self.ack)
    }

    func write(to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(StreamCaptureTests.pcapFile(packets)))
    }
}

/// Attitude records from a seeded generator, valid (finite, in range).
func attitudeRecords(_ count: Int, seed: UInt64) -> [[UInt8]] {
    var rng = SeededGenerator(seed: seed)
    return (0..<count).map { _ in
        AttitudeRecord(roll: Float32.random(in: -3...3, using: &rng), pitch: Float32.random(in: -1.5...1.5, using: &rng),
                       yaw: Float32.random(in: -3...3, using: &rng)).encoded()
    }
}

/// Cuts `bytes` into pieces of 1 to `maximum` bytes (seeded): (offset, bytes).
func randomSegments(_ bytes: [UInt8], maximum: Int, rng: inout SeededGenerator) -> [(offset: Int, bytes: [UInt8])] {
    var out: [(Int, [UInt8])] = []
    var offset = 0
    while offset < bytes.count {
        let length = min(Int.random(in: 1...maximum, using: &rng), bytes.count - offset)
        out.append((offset, Array(bytes[offset..<offset + length])))
        offset += length
    }
    return out
}

/// What reading a capture of attitude-stream gives.
struct ReadBack {
    /// Raw reader output: stream chunks as messages, and the stream events.
    var chunks: [MessageRecord] = []
    var events: [StreamEvent] = []
    /// Framed: the whole records, each with its framing error if any.
    var messages: [MessageRecord] = []
    var unfinished: [FramingRecordSource.Unfinished] = []
    var counts: TCPReassembler.Counts?

    /// The framed records of one direction.
    func messages(from source: Endpoint) -> [MessageRecord] { messages.filter { $0.source == source } }
    var valid: [[UInt8]] { messages.filter { $0.framingError == nil }.map { Array($0.payload) } }
    var flagged: [MessageRecord] { messages.filter { $0.framingError != nil } }

    /// With `limits`, both readers get a reassembler with them; without, the framed one is what `TraceInput` opens for the commands.
    init(path: String, port: UInt16 = AttitudeStream.defaultPort, limits: TCPReassembler.Limits? = nil) throws {
        let raw = try PcapTraceReader(path: path, wireProtocol: AttitudeStream(), port: port,
                                      reassembler: TCPReassembler(limits: limits ?? TCPReassembler.Limits()))
        while let record = try raw.next() {
            switch record {
            case .message(let m): chunks.append(m)
            case .event(let e):
                guard let event = StreamEvent(e) else { throw FixtureError("not a stream event: \(e)") }
                events.append(event)
            default: throw FixtureError("unexpected record \(record)")
            }
        }
        counts = raw.reassemblyCounts
        // The commands' path: TraceInput gives the framed reader.
        let framed: any TraceRecordSource = if let limits {
            FramingRecordSource(try PcapTraceReader(path: path, wireProtocol: AttitudeStream(), port: port,
                                                    reassembler: TCPReassembler(limits: limits)))
        } else {
            try TraceInput.open(path: path, wireProtocol: AttitudeStream(), port: port)
        }
        guard let framing = framed as? FramingRecordSource else { throw FixtureError("not framed: \(type(of: framed))") }
        while let record = try framing.next() {
            if case .message(let m) = record { messages.append(m) }
        }
        unfinished = framing.unfinished
    }
}
