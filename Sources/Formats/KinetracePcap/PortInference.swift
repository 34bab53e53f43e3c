#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CPcap
import KinetraceTrace
import KinetraceWire

/// Which port is the host's in a capture, found as Wireshark's heuristic dissectors
/// find a protocol: the port that valid controller→host messages of the protocol are
/// sent to (a MotionLink frame is 36 bytes with a matching CRC, so chance hardly makes one).
/// Byte-stream protocols are framed per connection from its first bytes. For WebSocket
/// sessions (`CaptureCarrier.webSocket`) the host's port is the one that accepts upgrades:
/// the source port of TCP segments that begin `HTTP/1.1 101`.
package struct PortInference: Sendable {
    /// Packets of the protocol's transport (UDP or TCP) to or from each port: what the capture holds.
    package private(set) var packetsByPort: [UInt16: Int] = [:]
    /// Valid controller→host messages sent to each port (for WebSocket sessions: upgrades each port accepted).
    package private(set) var validByPort: [UInt16: Int] = [:]
    package private(set) var packetsScanned = 0
    /// Whether the scan stopped early because one port had settled it.
    package private(set) var stoppedEarly = false

    /// The first packets scanned: enough to see any host that is there, without reading a big capture twice.
    package static let packetLimit = 100_000
    /// The scan ends early once one port has this many valid messages and no
    /// other port more than `rivalLimit`: the answer can no longer be in doubt
    /// enough to justify reading on (a second pass over 100,000 packets costs
    /// about a seventh of `inspect` on a MotionLink capture).
    static let settledCount = 1_000
    static let rivalLimit = 10
    /// Bytes framed from the start of each TCP connection.
    static let streamBytesFramed = 65_536

    /// The port most valid messages went to (the lowest, on a tie), if any did.
    package var inferredPort: UInt16? {
        validByPort.max { a, b in a.value != b.value ? a.value < b.value : a.key > b.key }?.key
    }

    /// The busiest ports, "41448 (1860 packets), 56761 (3)", for messages about a capture.
    package func portsSeen(limit: Int = 5) -> String {
        let ports = packetsByPort.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        guard !ports.isEmpty else { return "none" }
        var text = ports.prefix(limit).map { "\($0.key) (\($0.value) packet\($0.value == 1 ? "" : "s"))" }.joined(separator: ", ")
        if ports.count > limit { text += " and \(ports.count - limit) more" }
        return text
    }

    /// Whether one port leads beyond doubt (`settledCount`, `rivalLimit`).
    private var settled: Bool {
        guard let leader = inferredPort, validByPort[leader]! >= Self.settledCount else { return false }
        return validByPort.allSatisfy { $0.key == leader || $0.value <= Self.rivalLimit }
    }

    /// Scans the capture at `path` (already checked to open: errors here are not thrown again).
    /// `settling` allows the early stop; a scan whose counts are reported (an error naming
    /// the ports seen) reads its 100,000 packets.
    init(path: String, wireProtocol: any WireProtocol, link: PacketDecoder.LinkLayer, settling: Bool = true, carrier: CaptureCarrier = .native) {
        var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let handle = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer) else { return }
        defer { pcap_close(handle) }
        let transport = carrier == .webSocket ? IPTransport.tcp : IPTransport(wireProtocol.transport)
        var streams: [StreamKey: Stream] = [:]
        var headerPointer: UnsafeMutablePointer<pcap_pkthdr>?
        var dataPointer: UnsafePointer<UInt8>?
        while packetsScanned < Self.packetLimit, pcap_next_ex(handle, &headerPointer, &dataPointer) == 1,
              let header = headerPointer?.pointee, let data = dataPointer {
            packetsScanned += 1
            let packet = UnsafeRawBufferPointer(start: data, count: Int(header.caplen))
            guard case .found(let location) = PacketDecoder.locate(in: packet, link: link, transport: transport) else { continue }
            packetsByPort[location.destinationPort, default: 0] += 1
            if location.sourcePort != location.destinationPort { packetsByPort[location.sourcePort, default: 0] += 1 }
            let payload = UnsafeRawBufferPointer(rebasing: packet[location.payloadOffset..<location.payloadOffset + location.payloadCount])
            if carrier == .webSocket {
                if payload.starts(with: Self.switchingProtocols) {
                    validByPort[location.sourcePort, default: 0] += 1
                    if settling && validByPort[location.sourcePort]! % Self.settledCount == 0 && settled { stoppedEarly = true; return }
                }
                continue
            }
            if transport == .udp {
                let facts = wireProtocol.facts(payload)
                if facts.isValid && facts.direction == .controllerToHost {
                    validByPort[location.destinationPort, default: 0] += 1
                    if settling && validByPort[location.destinationPort]! % Self.settledCount == 0 && settled { stoppedEarly = true; return }
                }
                continue
            }
            // A connection is framed from its SYN on, in arrival order: enough for a heuristic.
            let key = StreamKey(source: Array(packet[location.sourceAddressOffset..<location.sourceAddressOffset + (location.family == .ipv4 ? 4 : 16)]),
                                sourcePort: location.sourcePort, destinationPort: location.destinationPort)
            if location.flags & 0x02 != 0 { streams[key] = Stream(framer: wireProtocol.makeFramer()) }
            guard payload.count > 0, streams[key] != nil, streams[key]!.bytes < Self.streamBytesFramed else { continue }
            streams[key]!.bytes += payload.count
            streams[key]!.framer.append(payload)
            do throws(WireError) {
                while let message = try streams[key]!.framer.next() {
                    let facts = wireProtocol.facts(message.bytes)
                    if facts.isValid && facts.direction == .controllerToHost { validByPort[location.destinationPort, default: 0] += 1 }
                }
                if settling && validByPort[location.destinationPort, default: 0] >= Self.settledCount && settled { stoppedEarly = true; return }
            } catch {
                streams[key] = nil  // not this protocol's framing
            }
        }
    }

    /// How a host's answer that accepts a WebSocket upgrade begins.
    private static let switchingProtocols = Array("HTTP/1.1 101".utf8)

    private struct StreamKey: Hashable {
        var source: [UInt8]
        var sourcePort: UInt16
        var destinationPort: UInt16
    }

    private struct Stream {
        var framer: any MessageFramer
        var bytes = 0
    }
}
