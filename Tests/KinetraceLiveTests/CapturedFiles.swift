import Foundation
import KinetraceTestSupport
import KinetraceTrace
import Testing

/// Reading back what a capture wrote, with an independent reader for the pcap.
enum CapturedFiles {
    /// Packets tcpdump reads from `pcap`; a file that ends in a torn packet is an issue.
    static func tcpdumpCount(_ pcap: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["tcpdump", "-nn", "-r", pcap])
        #expect(result.status == 0, "\(pcap): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("truncated"), "\(pcap) ends in a torn packet: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout.split(separator: "\n").count
    }

    /// Message records in the trace at `path`.
    static func messageCount(_ trace: String) throws -> Int {
        let reader = try TraceReader(path: trace)
        var n = 0
        while let record = try reader.next() { if case .message = record { n += 1 } }
        return n
    }

    /// 30,000 zero 36-byte datagrams to `port` on 127.0.0.1, paced (10 ms every 500) so a capture
    /// ring keeps up: about 3.3 MB of pcap at -s 256 on lo's Ethernet framing.
    static func sendZeroDatagrams(to port: UInt16, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sender = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import socket, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(30000):
                s.sendto(bytes(36), ("127.0.0.1", \(port)))
                if i % 500 == 499: time.sleep(0.01)
            """])
        #expect(sender.status == 0, "\(sender.stderr)", sourceLocation: sourceLocation)
    }
}
