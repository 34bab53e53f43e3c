import Foundation
import KinetraceCapture
import KinetracePcap
import KinetraceTestSupport
import KinetraceWire
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Live capture of a byte stream under a flood of one-byte segments behind
/// holes: a raw socket injects them on loopback (with a wrong TCP checksum, so
/// the kernel drops them unanswered and only the capture sees them), and the
/// reassembly bound must count what they cost, not just their bytes.
@Suite(.serialized, .enabled(if: Requirement.root.runs && Requirement.python3.runs,
                             "live capture and raw sockets need root, and the injector python3"))
struct ReassemblyBoundLiveTests {
    init() throws {
        try Requirement.root.check()
        try Requirement.python3.check()
    }

    /// Sends, from 127.0.0.1 to PORT, CONNECTIONS handshakes (a SYN each) and then SEGMENTS one-byte
    /// segments per connection at stream offsets 1, 2, …: offset 0 never comes, so every one waits.
    static let injector = #"""
        import socket, struct, sys
        port, connections, segments = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        local = socket.inet_aton("127.0.0.1")
        def checksum(data):
            data += b"\0" * (len(data) % 2)
            total = sum(struct.unpack(f"!{len(data) // 2}H", data))
            while total >> 16: total = (total & 0xFFFF) + (total >> 16)
            return ~total & 0xFFFF
        def send(sport, seq, flags, payload):
            tcp = struct.pack("!HHIIBBHHH", sport, port, seq & 0xFFFFFFFF, 0, 5 << 4, flags, 65535, 0, 0) + payload
            # Wrong on purpose (never the right one's other zero): the kernel drops the segment without a RST.
            wrong = checksum(local + local + struct.pack("!BBH", 0, 6, len(tcp)) + tcp) ^ 0x5555
            tcp = tcp[:16] + struct.pack("!H", wrong) + tcp[18:]
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, local, local) + tcp
            raw.sendto(ip, ("127.0.0.1", 0))
        sources = [40000 + k for k in range(connections)]
        for sport in sources: send(sport, 1000, 0x02, b"")
        for offset in range(1, segments + 1):
            for sport in sources: send(sport, 1001 + offset, 0x18, bytes([offset & 0xFF]))
        """#

    @Test func oneByteSegmentsAreChargedTheirOverhead() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        // Reserves a port no one else uses; nothing connects to it.
        let reserved = try LoopbackTCPPair()
        let connections = 20, segments = 500
        var configuration = LiveCapture.Configuration(wireProtocol: AttitudeStream(), interface: "lo", pcapPath: nil,
                                                      tracePath: dir.appendingPathComponent("flood.jsonl").path)
        configuration.port = reserved.port
        // 10,000 bytes wait, well under the bound; with each segment's overhead, 81 bytes apiece, far over it.
        configuration.reassemblyLimits.bufferedBytesTotal = 100_000
        let capture = try LiveCapture(configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        // The handle is active once made: what is injected now waits in the kernel's ring for `run`.
        let injected = try run(URL(fileURLWithPath: "/usr/bin/env"),
                               ["python3", "-c", Self.injector, "\(reserved.port)", "\(connections)", "\(segments)"])
        #expect(injected.status == 0, "\(injected.stderr)")
        capture.stop()
        let report = try capture.run()

        #expect(report.kernelDropped == 0)
        #expect(report.packets == connections * (segments + 1))
        let counts = try #require(report.reassembly)
        #expect(counts.gapsForcedByBuffer > 0, "the bound gave up holes: \(counts)")
        // A direction whose hole was given up takes its later segments in order: they no longer wait.
        #expect(counts.outOfOrderSegments < connections * segments)
        #expect(counts.peakBufferedBytes <= 100_000 && counts.peakBufferedBytes > 0, "\(counts.peakBufferedBytes)")
        // Each connection's one missing byte is a gap, however early it was declared; every byte is delivered once.
        #expect(counts.gaps == connections && counts.missingBytes == connections)
        #expect(report.messages["c2h"] == connections * segments)
    }
}
