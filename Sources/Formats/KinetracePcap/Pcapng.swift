#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceTrace
import KinetraceWire

/// The pcapng blocks `PcapWriter` writes (draft-ietf-opsawg-pcapng): a Section Header,
/// one Interface Description for the synthesized Ethernet link with nanosecond
/// resolution (if_tsresol 9), and Enhanced Packet Blocks whose opt_comment options
/// carry the trace's labels and events, each as its trace record line.
enum PcapngBlock {
    static let sectionHeaderType: UInt32 = 0x0A0D_0D0A
    static let interfaceDescriptionType: UInt32 = 1
    static let simplePacketType: UInt32 = 3
    static let obsoletePacketType: UInt32 = 2
    static let enhancedPacketType: UInt32 = 6
    static let byteOrderMagic: UInt32 = 0x1A2B_3C4D
    /// Option codes.
    static let endOfOptions: UInt16 = 0, comment: UInt16 = 1
    /// An option's value is at most this long (its length field is 16 bits, and the block stays 4-aligned).
    static let longestOptionValue = 65_532

    static func sectionHeader(application: String, comments: [String] = []) -> [UInt8] {
        var body: [UInt8] = []
        body.appendLittleEndian(byteOrderMagic)
        body.appendLittleEndian(UInt16(1))  // version 1.0
        body.appendLittleEndian(UInt16(0))
        body.appendLittleEndian(UInt64.max)  // section length not given
        for text in comments { appendOption(comment, Array(text.utf8), to: &body) }
        appendOption(4, Array(application.utf8), to: &body)  // shb_userappl
        body.appendLittleEndian(endOfOptions)
        body.appendLittleEndian(UInt16(0))
        return block(sectionHeaderType, body)
    }

    static func interfaceDescription(name: String, description: String) -> [UInt8] {
        var body: [UInt8] = []
        body.appendLittleEndian(UInt16(LinkType.ethernet.rawValue))
        body.appendLittleEndian(UInt16(0))
        body.appendLittleEndian(PcapEncoder.snapLength)
        appendOption(2, Array(name.utf8), to: &body)  // if_name
        appendOption(3, Array(description.utf8), to: &body)  // if_description
        appendOption(9, [9], to: &body)  // if_tsresol: 10^-9 s
        body.appendLittleEndian(endOfOptions)
        body.appendLittleEndian(UInt16(0))
        return block(interfaceDescriptionType, body)
    }

    /// An Enhanced Packet Block for one of `PcapEncoder`'s pcap records (16-byte header, then the frame).
    static func enhancedPacket(pcapRecord: ArraySlice<UInt8>, comments: [String], to out: inout [UInt8]) {
        let base = pcapRecord.startIndex
        func word(_ at: Int) -> UInt32 {
            UInt32(pcapRecord[base + at]) | UInt32(pcapRecord[base + at + 1]) << 8 | UInt32(pcapRecord[base + at + 2]) << 16 | UInt32(pcapRecord[base + at + 3]) << 24
        }
        let timeNs = UInt64(word(0)) * 1_000_000_000 + UInt64(word(4))
        let captured = Int(word(8))
        var body: [UInt8] = []
        body.reserveCapacity(20 + captured + 4)
        body.appendLittleEndian(UInt32(0))  // interface 0
        body.appendLittleEndian(UInt32(truncatingIfNeeded: timeNs >> 32))
        body.appendLittleEndian(UInt32(truncatingIfNeeded: timeNs))
        body.appendLittleEndian(UInt32(captured))
        body.appendLittleEndian(word(12))
        body += pcapRecord[(base + 16)..<(base + 16 + captured)]
        body += [UInt8](repeating: 0, count: (4 - captured % 4) % 4)
        if !comments.isEmpty {
            for text in comments { appendOption(comment, Array(text.utf8), to: &body) }
            body.appendLittleEndian(endOfOptions)
            body.appendLittleEndian(UInt16(0))
        }
        out += block(enhancedPacketType, body)
    }

    static func appendOption(_ code: UInt16, _ value: [UInt8], to body: inout [UInt8]) {
        body.appendLittleEndian(code)
        body.appendLittleEndian(UInt16(value.count))
        body += value
        body += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
    }

    static func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
        let total = UInt32(12 + body.count)
        var out: [UInt8] = []
        out.reserveCapacity(Int(total))
        out.appendLittleEndian(type)
        out.appendLittleEndian(total)
        out += body
        out.appendLittleEndian(total)
        return out
    }
}

/// Places labels and events as comments on the packet nearest in time, holding one packet
/// back until the next shows which is nearer; with no packet at all they go on the section
/// header, where a comment belongs to the whole file.
struct PcapngCommentPlacer {
    private var held: (timeNs: Int64, record: ArraySlice<UInt8>, comments: [String])?
    private var heldBytes: [UInt8] = []
    /// Comments after the held packet, waiting for the next one.
    private var waiting: [(timeNs: Int64, text: String)] = []
    private(set) var packets = 0

    mutating func comment(_ text: String, timeNs: Int64) {
        waiting.append((timeNs, text))
    }

    /// Takes the encoder's new pcap records and writes every packet that can no longer gain a comment.
    mutating func packets(_ records: [UInt8], to out: inout [UInt8]) {
        var at = 0
        while at + 16 <= records.count {
            let captured = Int(records[at + 8]) | Int(records[at + 9]) << 8 | Int(records[at + 10]) << 16 | Int(records[at + 11]) << 24
            let seconds = Int64(records[at]) | Int64(records[at + 1]) << 8 | Int64(records[at + 2]) << 16 | Int64(records[at + 3]) << 24
            let nanos = Int64(records[at + 4]) | Int64(records[at + 5]) << 8 | Int64(records[at + 6]) << 16 | Int64(records[at + 7]) << 24
            let end = at + 16 + captured
            precondition(end <= records.count, "PcapEncoder wrote a partial record")
            accept(timeNs: seconds * 1_000_000_000 + nanos, record: Array(records[at..<end]), to: &out)
            packets += 1
            at = end
        }
    }

    private mutating func accept(timeNs: Int64, record: [UInt8], to out: inout [UInt8]) {
        var mine: [String] = []
        if var previous = held {
            for comment in waiting {
                if comment.timeNs - previous.timeNs <= timeNs - comment.timeNs { previous.comments.append(comment.text) } else { mine.append(comment.text) }
            }
            PcapngBlock.enhancedPacket(pcapRecord: heldBytes[...], comments: previous.comments, to: &out)
        } else {
            mine = waiting.map(\.text)  // before the first packet: that packet is the nearest
        }
        waiting.removeAll(keepingCapacity: true)
        heldBytes = record
        held = (timeNs, [], mine)
    }

    /// Writes the last packet with what follows it; returns the comments no packet took.
    mutating func finish(to out: inout [UInt8]) -> [String] {
        guard let last = held else {
            defer { waiting.removeAll() }
            return waiting.map(\.text)
        }
        PcapngBlock.enhancedPacket(pcapRecord: heldBytes[...], comments: last.comments + waiting.map(\.text), to: &out)
        held = nil
        waiting.removeAll()
        return []
    }
}

/// Walks a pcapng file's blocks beside libpcap, which does not hand out options:
/// each call gives the comments of the next packet block, in the order libpcap
/// returns packets. Bounded: a block's options are read only up to 1 MiB; a malformed
/// block ends the walk (libpcap reports the file's own errors).
final class PcapngCommentWalker {
    private let fd: Int32
    private var bigEndian = false
    private var ended = false
    static let largestOptionsRead = 1 << 20
    static let largestBlock = 16 << 20

    init?(path: String) {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
    }

    deinit { close(fd) }

    /// The opt_comment texts of the next packet block ([] when it has none, or the walk has ended).
    func nextPacketComments() -> [String] {
        while !ended {
            guard let header = readBytes(8) else { ended = true; return [] }
            let type = word(header, 0), total = Int(word(header, 4))
            if type == PcapngBlock.sectionHeaderType {
                guard let magic = readBytes(4) else { ended = true; return [] }
                if magic == [0x4D, 0x3C, 0x2B, 0x1A] { bigEndian = false } else if magic == [0x1A, 0x2B, 0x3C, 0x4D] { bigEndian = true } else { ended = true; return [] }
                let length = Int(bigEndian ? UInt32(header[4]) << 24 | UInt32(header[5]) << 16 | UInt32(header[6]) << 8 | UInt32(header[7])
                                           : UInt32(header[4]) | UInt32(header[5]) << 8 | UInt32(header[6]) << 16 | UInt32(header[7]) << 24)
                guard length >= 28, length % 4 == 0, length <= Self.largestBlock, skip(length - 12) else { ended = true; return [] }
                continue
            }
            guard total >= 12, total % 4 == 0, total <= Self.largestBlock else { ended = true; return [] }
            let bodyLength = total - 12
            switch type {
            case PcapngBlock.enhancedPacketType, PcapngBlock.obsoletePacketType:
                guard bodyLength >= 20, let fixed = readBytes(20) else { ended = true; return [] }
                let captured = Int(word(fixed, 12))
                let padded = captured + (4 - captured % 4) % 4
                guard padded <= bodyLength - 20, skip(padded) else { ended = true; return [] }
                let optionsLength = bodyLength - 20 - padded
                var comments: [String] = []
                if optionsLength <= Self.largestOptionsRead {
                    guard let options = readBytes(optionsLength) else { ended = true; return [] }
                    comments = self.comments(in: options)
                } else if !skip(optionsLength) {
                    ended = true
                    return []
                }
                guard skip(4) else { ended = true; return comments }
                return comments
            case PcapngBlock.simplePacketType:
                guard skip(bodyLength + 4) else { ended = true; return [] }
                return []
            default:
                guard skip(bodyLength + 4) else { ended = true; return [] }
            }
        }
        return []
    }

    private func comments(in options: [UInt8]) -> [String] {
        var texts: [String] = []
        var at = 0
        while at + 4 <= options.count {
            let code = half(options, at), length = Int(half(options, at + 2))
            if code == PcapngBlock.endOfOptions { break }
            guard at + 4 + length <= options.count else { break }
            if code == PcapngBlock.comment { texts.append(String(decoding: options[(at + 4)..<(at + 4 + length)], as: UTF8.self)) }
            at += 4 + length + (4 - length % 4) % 4
        }
        return texts
    }

    private func word(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bigEndian ? UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
                  : UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }

    private func half(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        bigEndian ? UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) : UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
    }

    private func readBytes(_ count: Int) -> [UInt8]? {
        guard count >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    private func skip(_ count: Int) -> Bool {
        guard count >= 0 else { return false }
        return count == 0 || lseek(fd, off_t(count), SEEK_CUR) >= 0
    }
}

extension PcapngCommentWalker {
    /// A comment as a trace record: a kinetrace label or event line comes back as itself;
    /// anyone else's comment (Wireshark's "Packet Comment…") becomes a `pcapng_comment` event.
    static func record(_ text: String, packetTimeNs: Int64, wireProtocol: any WireProtocol) -> TraceRecord? {
        if text.hasPrefix("{"), case .success(let record?) = TraceLine.record(Array(text.utf8), wireProtocol: wireProtocol) {
            switch record {
            case .label, .event: return record
            default: break
            }
        }
        return .event(EventRecord(timeNs: packetTimeNs, event: "pcapng_comment", data: ["text": .string(text)]))
    }
}
