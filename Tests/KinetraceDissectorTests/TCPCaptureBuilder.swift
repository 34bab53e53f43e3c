import Foundation

/// One TCP connection from a controller to the host, built by hand as
/// Ethernet + IPv4 + TCP frames with real sequence numbers and checksums,
/// so the stream tests depend on nothing under test but the dissector.
struct TCPConnection: Sendable {
    var controllerPort: UInt16
    var hostPort: UInt16 = 47130
    /// Near 2^32 by default, so the stream's sequence numbers wrap.
    var controllerISN: UInt32 = 0xFFFF_FFF0
    var hostISN: UInt32 = 0x1000_0000

    static let controllerV4: [UInt8] = [192, 0, 2, 10]
    static let hostV4: [UInt8] = [192, 0, 2, 1]

    enum Flags {
        static let fin: UInt8 = 0x01, syn: UInt8 = 0x02, psh: UInt8 = 0x08, ack: UInt8 = 0x10
    }

    /// A segment of the controller's stream: its bytes and where they start in it.
    struct Segment: Sendable {
        var streamOffset: Int
        var payload: [UInt8]
    }

    /// Cuts `stream` into segments of the given lengths (the rest in a last one).
    static func segments(of stream: [UInt8], lengths: [Int]) -> [Segment] {
        var out: [Segment] = []
        var offset = 0
        for length in lengths where offset < stream.count {
            let end = min(offset + length, stream.count)
            out.append(Segment(streamOffset: offset, payload: Array(stream[offset..<end])))
            offset = end
        }
        if offset < stream.count { out.append(Segment(streamOffset: offset, payload: Array(stream[offset...]))) }
        return out
    }

    /// The handshake, the segments in the order given, and a FIN after the
    /// highest byte; `handshake: false` makes a capture that starts mid-stream.
    func frames(_ segments: [Segment], handshake: Bool = true, fin: Bool = true) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        let ack = hostISN &+ 1
        if handshake {
            frames.append(frame(fromController: true, sequence: controllerISN, ack: 0, flags: Flags.syn, payload: []))
            frames.append(frame(fromController: false, sequence: hostISN, ack: controllerISN &+ 1,
                                flags: Flags.syn | Flags.ack, payload: []))
            frames.append(frame(fromController: true, sequence: controllerISN &+ 1, ack: ack, flags: Flags.ack, payload: []))
        }
        for segment in segments {
            frames.append(frame(fromController: true, sequence: sequence(at: segment.streamOffset), ack: ack,
                                flags: Flags.psh | Flags.ack, payload: segment.payload))
        }
        if fin {
            let end = segments.map { $0.streamOffset + $0.payload.count }.max() ?? 0
            frames.append(frame(fromController: true, sequence: sequence(at: end), ack: ack,
                                flags: Flags.fin | Flags.ack, payload: []))
        }
        return frames
    }

    /// The sequence number of the stream's byte at `offset` (the SYN takes one).
    func sequence(at offset: Int) -> UInt32 { controllerISN &+ 1 &+ UInt32(truncatingIfNeeded: offset) }

    func frame(fromController: Bool, sequence: UInt32, ack: UInt32, flags: UInt8, payload: [UInt8]) -> [UInt8] {
        let (source, destination) = fromController ? (Self.controllerV4, Self.hostV4) : (Self.hostV4, Self.controllerV4)
        let (sourcePort, destinationPort) = fromController ? (controllerPort, hostPort) : (hostPort, controllerPort)
        var tcp = be16(sourcePort) + be16(destinationPort) + be32(sequence) + be32(ack)
            + [0x50, flags] + be16(65535) + [0, 0, 0, 0] + payload
        let pseudoHeader = source + destination + [0, 6] + be16(UInt16(tcp.count))
        tcp.replaceSubrange(16..<18, with: be16(internetChecksum(pseudoHeader + tcp)))
        var ip: [UInt8] = [0x45, 0] + be16(UInt16(20 + tcp.count)) + [0, 0, 0x40, 0, 64, 6, 0, 0] + source + destination
        ip.replaceSubrange(10..<12, with: be16(internetChecksum(ip)))
        let mac: [UInt8] = fromController ? [0x02, 0, 0, 0, 0, 0x01] + [0x02, 0, 0, 0, 0, 0x0a]
                                          : [0x02, 0, 0, 0, 0, 0x0a] + [0x02, 0, 0, 0, 0, 0x01]
        return mac + [0x08, 0x00] + ip + tcp
    }
}

/// text2pcap's input for whole Ethernet frames.
func text2pcapInput(frames: [[UInt8]]) -> String {
    var lines: [String] = []
    for bytes in frames {
        for start in stride(from: 0, to: bytes.count, by: 16) {
            let offset = String(start, radix: 16)
            lines.append(String(repeating: "0", count: 6 - offset.count) + offset + "  "
                         + bytes[start..<min(start + 16, bytes.count)].map { byteHex($0) }.joined(separator: " "))
        }
        lines.append("")
    }
    return lines.joined(separator: "\n") + "\n"
}

extension TShark {
    static func script(_ name: String) -> URL { repoRoot.appendingPathComponent("tools/wireshark/\(name)") }

    /// Writes Ethernet frames as a capture file and returns its path.
    func capture(frames: [[UInt8]]) throws -> String {
        let name = "frames-\(UUID().uuidString)"
        let text = directory.appendingPathComponent("\(name).txt")
        let pcap = directory.appendingPathComponent("\(name).pcapng")
        try text2pcapInput(frames: frames).write(to: text, atomically: true, encoding: .utf8)
        _ = try run("text2pcap", ["-q", text.path, pcap.path])
        return pcap.path
    }

    /// tshark -T fields over `file` with `script` loaded: one dictionary per
    /// packet, keyed by field name; a field that occurs several times in a
    /// packet holds its values joined by commas, in tree order.
    func decode(_ file: String, script: URL, fields: [String], extra: [String] = []) throws -> [[String: String]] {
        var arguments = ["-n", "-X", "lua_script:\(script.path)", "-r", file] + extra
        arguments += ["-T", "fields", "-E", "separator=/t", "-E", "quote=n", "-E", "header=n", "-E", "aggregator=,"]
        for field in fields { arguments += ["-e", field] }
        return try run("tshark", arguments).split(separator: "\n", omittingEmptySubsequences: true).map { line in
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            var row: [String: String] = [:]
            for (index, field) in fields.enumerated() { row[field] = index < columns.count ? columns[index] : "" }
            return row
        }
    }
}
