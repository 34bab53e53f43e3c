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
}
