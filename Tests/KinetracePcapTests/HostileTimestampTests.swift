import Foundation
import KinetracePcap
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// Issue 15, finding 1: a pcapng whose packet timestamp is all ones names a
/// time no nanosecond clock holds. Every reader gives a one-line error
/// naming the packet, never an arithmetic trap.
@Suite struct HostileTimestampTests {
    /// A pcapng with one MotionLink frame on UDP to 47110, its 64-bit timestamp `high`:`low` (microseconds).
    static func pcapng(high: UInt32, low: UInt32) -> [UInt8] {
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let le32 = PacketBytes.le32
        let frame = MotionFrame(tMs: 1).encoded()
        let packet = PacketBytes.ethernet(etherType: 0x0800, body: PacketBytes.ipv4(body: PacketBytes.udp(source: 50000, destination: 47110, payload: frame)))
        let padded = packet + [UInt8](repeating: 0, count: (4 - packet.count % 4) % 4)
        let shb = le32(0x0A0D_0D0A) + le32(28) + le32(0x1A2B_3C4D) + le16(1) + le16(0) + le32(0xFFFF_FFFF) + le32(0xFFFF_FFFF) + le32(28)
        let idb = le32(1) + le32(20) + le16(1) + le16(0) + le32(0) + le32(20)
        let epbLength = UInt32(32 + padded.count)
        let epb = le32(6) + le32(epbLength) + le32(0) + le32(high) + le32(low) + le32(UInt32(packet.count)) + le32(UInt32(packet.count))
            + padded + le32(epbLength)
        return shb + idb + epb
    }

    @Test func theReaderRefusesATimestampBeyondNanosecondTimeNamingThePacket() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("ones.pcapng").path
        try Data(Self.pcapng(high: 0xFFFF_FFFF, low: 0xFFFF_FFFF)).write(to: URL(fileURLWithPath: path))
        let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1())
        #expect {
            _ = try reader.next()
        } throws: { error in
            guard let error = error as? TraceError else { return false }
            return error.code == .badRecord && error.description.contains("packet 1: timestamp")
        }
    }

    @Test func aSaneTimestampStillReads() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("sane.pcapng").path
        // 1,700,000,000 s in microseconds: 0x00060A24_181E4000.
        try Data(Self.pcapng(high: 0x0006_0A24, low: 0x181E_4000)).write(to: URL(fileURLWithPath: path))
        let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1())
        let record = try #require(try reader.nextMessage())
        #expect(record.timeNs == 1_700_000_000_000_000_000)
    }

    @Test(arguments: [["inspect"], ["convert", "OUT"], ["latency"], ["conform", "--capture"], ["replay", "--dry-run", "--to", "127.0.0.1:9"],
                      ["gestures", "eval", "--detector", "threshold"]])
    func everyCommandExits65WithOneLine(_ command: [String]) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("ones.pcapng").path
        try Data(Self.pcapng(high: 0xFFFF_FFFF, low: 0xFFFF_FFFF)).write(to: URL(fileURLWithPath: path))
        var arguments = command.map { $0 == "OUT" ? dir.appendingPathComponent("out.jsonl").path : $0 }
        if command.first == "convert" { arguments.insert(path, at: 1) } else { arguments.append(path) }
        let result = try kinetrace(arguments)
        #expect(result.status == 65, "\(arguments): \(result.stderr)")
        #expect(!result.signalled)
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("packet 1: timestamp"), "\(result.stderr)")
    }
}
