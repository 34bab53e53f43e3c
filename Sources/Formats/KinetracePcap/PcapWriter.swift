#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace

/// Builds a nanosecond pcap (magic 0xA1B23C4D, little-endian, link type
/// EN10MB) from message records: each becomes one Ethernet + IPv4 or IPv6
/// + UDP packet with correct IPv4 header and UDP checksums, so Wireshark's
/// checksum validation passes. Pure: bytes out, no I/O (see `PcapWriter`).
///
/// Fixed, locally administered MAC addresses stand for the two sides, so a
/// converted trace is reproducible: the controller is 02:4b:54:00:00:01 and
/// the host 02:4b:54:00:00:02 ("KT" in the middle).
public struct PcapEncoder {
    public static let controllerMAC: [UInt8] = [0x02, 0x4B, 0x54, 0x00, 0x00, 0x01]
    public static let hostMAC: [UInt8] = [0x02, 0x4B, 0x54, 0x00, 0x00, 0x02]
    public static let snapLength: UInt32 = 262_144
    public static let hopLimit: UInt8 = 64

    /// Names the output in errors.
    public let source: String
    /// Packets encoded so far; the next one's number is this plus one.
    public private(set) var packetCount = 0
    private var addressCache: [String: [UInt8]] = [:]

    public init(source: String) { self.source = source }

    /// The 24-byte file header.
    public static var fileHeader: [UInt8] {
        var out: [UInt8] = []
        out.appendLittleEndian(UInt32(0xA1B2_3C4D))
        out.appendLittleEndian(UInt16(2))  // version 2.4
        out.appendLittleEndian(UInt16(4))
        out.appendLittleEndian(UInt32(0))  // thiszone
        out.appendLittleEndian(UInt32(0))  // sigfigs
        out.appendLittleEndian(snapLength)
        out.appendLittleEndian(UInt32(LinkType.ethernet.rawValue))
        return out
    }

    /// Appends one packet record (16-byte record header, then the frame) for `message`.
    public mutating func append(_ message: MessageRecord, to out: inout [UInt8]) throws(TraceError) {
        let number = packetCount + 1
        func failure(_ why: String) -> TraceError {
            TraceError(.badRecord, source: self.source, message: "packet \(number) (t_ns \(message.timeNs)): \(why)")
        }
        guard message.timeNs >= 0, message.timeNs / 1_000_000_000 <= Int64(UInt32.max) else {
            throw failure("the time cannot be written to pcap, which holds 1970-01-01 to 2106-02-07")
        }
        guard let sourceAddress = address(message.source.host), let destinationAddress = address(message.destination.host) else {
            throw failure("\(message.source.host) or \(message.destination.host) is not an IPv4 or IPv6 address")
        }
        guard sourceAddress.count == destinationAddress.count else {
            throw failure("the source \(message.source) and destination \(message.destination) are of different IP versions")
        }
        let isIPv6 = sourceAddress.count == 16
        let udpLength = 8 + message.payload.count
        let ipHeaderLength = isIPv6 ? 40 : 20
        guard udpLength + (isIPv6 ? 0 : ipHeaderLength) <= 65535 else {
            throw failure("a payload of \(message.payload.count) bytes does not fit in one UDP datagram")
        }
        let frameLength = 14 + ipHeaderLength + udpLength

        out.reserveCapacity(out.count + 16 + frameLength)
        out.appendLittleEndian(UInt32(message.timeNs / 1_000_000_000))
        out.appendLittleEndian(UInt32(message.timeNs % 1_000_000_000))
        out.appendLittleEndian(UInt32(frameLength))
        out.appendLittleEndian(UInt32(frameLength))

        let fromController = message.direction == .controllerToHost
        out += fromController ? Self.hostMAC : Self.controllerMAC  // destination MAC first
        out += fromController ? Self.controllerMAC : Self.hostMAC
        out.appendBigEndian(UInt16(isIPv6 ? 0x86DD : 0x0800))

        let ipStart = out.count
        if isIPv6 {
            out.appendBigEndian(UInt32(0x6000_0000))
            out.appendBigEndian(UInt16(udpLength))
            out.append(17)
            out.append(Self.hopLimit)
        } else {
            out.append(0x45)
            out.append(0)
            out.appendBigEndian(UInt16(ipHeaderLength + udpLength))
            out.appendBigEndian(UInt16(truncatingIfNeeded: number))  // identification
            out.appendBigEndian(UInt16(0x4000))  // don't fragment
            out.append(Self.hopLimit)
            out.append(17)
            out.appendBigEndian(UInt16(0))  // header checksum, filled in below
        }
        out += sourceAddress
        out += destinationAddress

        let udpStart = out.count
        out.appendBigEndian(message.source.port)
        out.appendBigEndian(message.destination.port)
        out.appendBigEndian(UInt16(udpLength))
        out.appendBigEndian(UInt16(0))  // checksum, filled in below
        out += message.payload

        out.withUnsafeMutableBytes { raw in
            if !isIPv6 {
                let sum = InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: raw[ipStart..<ipStart + 20]))
                raw.storeBytes(of: (~InternetChecksum.fold(sum)).bigEndian, toByteOffset: ipStart + 10, as: UInt16.self)
            }
            // Pseudo-header: both addresses, the protocol and the UDP length.
            var sum = InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: raw[udpStart - 2 * sourceAddress.count..<udpStart]))
            sum += 17 + UInt64(udpLength)
            sum += InternetChecksum.sum(UnsafeRawBufferPointer(rebasing: raw[udpStart..<udpStart + udpLength]))
            var checksum = ~InternetChecksum.fold(sum)
            if checksum == 0 { checksum = 0xFFFF }  // zero means "no checksum" in UDP
            raw.storeBytes(of: checksum.bigEndian, toByteOffset: udpStart + 6, as: UInt16.self)
        }
        packetCount += 1
    }

    /// The address bytes (4 or 16) for an endpoint's host text, or nil.
    private mutating func address(_ host: String) -> [UInt8]? {
        if let cached = addressCache[host] { return cached }
        var bytes = [UInt8](repeating: 0, count: 16)
        let family = host.contains(":") ? AF_INET6 : AF_INET
        let ok = bytes.withUnsafeMutableBytes { inet_pton(family, host, $0.baseAddress) } == 1
        guard ok else { return nil }
        let address = family == AF_INET6 ? bytes : Array(bytes.prefix(4))
        if addressCache.count < 4096 { addressCache[host] = address }
        return address
    }
}

/// The one's-complement sum of RFC 1071, accumulated wide and folded at the end.
enum InternetChecksum {
    /// Sum of the big-endian 16-bit words (an odd last byte is padded with zero).
    static func sum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var sum: UInt64 = 0
        var i = 0
        while i + 1 < bytes.count {
            sum += UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt16.self)))
            i += 2
        }
        if i < bytes.count { sum += UInt64(bytes[i]) << 8 }
        return sum
    }

    static func fold(_ sum: UInt64) -> UInt16 {
        var sum = sum
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return UInt16(sum)
    }
}

/// Writes message records to a nanosecond pcap file (see `PcapEncoder`).
/// Labels and events have no packet form: they are counted, not written.
public final class PcapWriter {
    public let path: String
    /// Packets written so far.
    public var packetCount: Int { encoder.packetCount }
    /// Records that have no packet form, by kind.
    public private(set) var labelsNotWritten = 0
    public private(set) var eventsNotWritten = 0
    public private(set) var motionSamplesNotWritten = 0

    private let file: BufferedFile
    private var encoder: PcapEncoder
    private static let flushBytes = 64 << 10

    public init(path: String) throws(TraceError) {
        self.path = path
        do throws(FileError) { file = try BufferedFile(path: path, reserving: Self.flushBytes + 2048) }
        catch { throw TraceError(error) }
        encoder = PcapEncoder(source: path)
        file.pending += PcapEncoder.fileHeader
    }

    /// Writes a message as a packet; returns false (and counts it) for a label, an event or a motion sample.
    @discardableResult
    public func write(_ record: TraceRecord) throws(TraceError) -> Bool {
        switch record {
        case .message(let message):
            try write(message)
            return true
        case .label:
            labelsNotWritten += 1
            return false
        case .event:
            eventsNotWritten += 1
            return false
        case .motion:
            // Device-motion samples never crossed the wire.
            motionSamplesNotWritten += 1
            return false
        }
    }

    public func write(_ message: MessageRecord) throws(TraceError) {
        precondition(!file.isClosed, "PcapWriter used after close()")
        try encoder.append(message, to: &file.pending)
        if file.pending.count >= Self.flushBytes { try flush() }
    }

    public func flush() throws(TraceError) {
        do throws(FileError) { try file.flush() } catch { throw TraceError(error) }
    }

    /// Flushes and closes; further writes are a programming error.
    public func close() throws(TraceError) {
        do throws(FileError) { try file.close() } catch { throw TraceError(error) }
    }
}

extension [UInt8] {
    @inline(__always)
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    @inline(__always)
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
