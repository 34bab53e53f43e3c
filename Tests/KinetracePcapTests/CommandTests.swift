import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

/// The `kinetrace` binary on capture files: `convert` and `inspect`.
@Suite struct CommandTests {
    static func sampleCapture(in dir: URL) throws -> String {
        let packets = CaptureFileTests.ipPackets(v6: false).map { PacketBytes.ethernet(etherType: 0x0800, body: $0) }
        return try CaptureFileTests.text2pcap(packets, linkType: 1, format: "nsecpcap", in: dir, name: "sample.pcap")
    }

    @Test func inspectReadsAPcapDirectly() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = try Self.sampleCapture(in: dir)
        let result = try kinetrace("inspect", pcap)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "Trace      \(pcap)")
        #expect(lines[1] == "Format     kinetrace-trace 1.2, protocol motionlink-v1, captured at network (clock pcap)")
        #expect(lines.contains("Records    2 messages, 0 labels, 0 events, 2 skipped (unknown record kinds, or packets that are not motionlink-v1)"))
        #expect(lines.contains { $0.hasPrefix("  10.0.0.11:50001  1 ") })

        let json = try kinetrace("inspect", pcap, "--format", "json", "--port", "53")
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let messages = object?["messages"] as? [String: Any]
        #expect((messages?["c2h"] as? [String: Any])?["total"] as? Int == 1)
        #expect((messages?["h2c"] as? [String: Any])?["total"] as? Int == 0)
        #expect(object?["unknown_records"] as? Int == 3)
        #expect(object?["first_t_ns"] as? Int == 1_767_225_600_250_000_001)
    }

    @Test func convertPcapToTraceAndBack() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = try Self.sampleCapture(in: dir)
        let trace = dir.appendingPathComponent("out.jsonl").path
        let result = try kinetrace("convert", pcap, trace)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == """
            Converted  \(pcap) (pcap (nanosecond timestamps, little-endian), link type EN10MB) to \(trace) (trace)
            Written    2 records from 2 records read
            Packets    4 read, 2 skipped: not_udp 1, other_port 1

            """)
        let reader = try TraceReader(path: trace)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records == CaptureFileTests.expected(v6: false))
        #expect(reader.header.tool.hasPrefix("kinetrace "))
        #expect(reader.header.capturePoint == .network)

        let back = dir.appendingPathComponent("back.data").path
        let json = try kinetrace("convert", trace, back, "--to", "pcap", "--format", "json")
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout == #"{"comments_written":0,"input":"\#(trace)","input_format":"trace","link_type":null,"not_written":{"event":0,"label":0,"motion":0},"# +
                #""output":"\#(back)","output_format":"pcap","packets_read":null,"packets_skipped":null,"records_read":2,"# +
                #""records_written":2,"truncation":null,"unknown_records":0}"# + "\n")
        let again = try PcapTraceReader(path: back, wireProtocol: MotionLinkV1(), port: 47110)
        var reread: [TraceRecord] = []
        while let record = try again.next() { reread.append(record) }
        #expect(reread == records)
    }

    @Test func convertTraceWithLabelsToPcapCountsWhatHasNoPacketForm() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("in.ktrace").path
        let header = TraceHeader(created: "2026-01-01T00:00:00.000Z", tool: "test", capturePoint: .host, clock: .realtime)
        let writer = try TraceWriter(path: trace, header: header)
        try writer.write(.event(EventRecord(timeNs: 1_767_225_600_000_000_000, event: "seed")))
        for record in CaptureFileTests.expected(v6: true) { try writer.write(record) }
        try writer.write(.label(LabelRecord(timeNs: 1_767_225_600_400_000_000, controller: nil, gesture: "jump")))
        try writer.close()
        let pcap = dir.appendingPathComponent("out.pcap").path
        let result = try kinetrace("convert", trace, pcap, "--format", "json")
        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(object?["records_read"] as? Int == 4)
        #expect(object?["records_written"] as? Int == 2)
        #expect(object?["not_written"] as? [String: Int] == ["label": 1, "event": 1, "motion": 0])
        let text = try kinetrace("convert", trace, pcap)
        #expect(text.stdout.hasSuffix("Left out   1 labels, 1 events and 0 motion samples, which have no packet form\n"))
        let rows = try tsharkFields(pcap, ["ipv6.src", "udp.checksum.status", "udp.payload"])
        #expect(rows == [["2001:db8::11", "1", hex(CaptureFileTests.frame)], ["2001:db8::1", "1", hex(CaptureFileTests.ack)]])
    }

    @Test func convertExitCodes() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = try Self.sampleCapture(in: dir)
        let out = dir.appendingPathComponent("out.jsonl").path

        let missing = try kinetrace("convert", dir.appendingPathComponent("nope.pcap").path, out)
        #expect(missing.status == 66)
        #expect(missing.stderr == "kinetrace: error: \(dir.appendingPathComponent("nope.pcap").path): cannot open: No such file or directory\n")

        let garbage = dir.appendingPathComponent("garbage.pcap").path
        try Data([0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0, 0]).write(to: URL(fileURLWithPath: garbage))
        let bad = try kinetrace("convert", garbage, out)
        #expect(bad.status == 65)
        #expect(bad.stderr.hasPrefix("kinetrace: error: \(garbage): byte 0: not a readable pcap or pcapng file: "))
        #expect(bad.stderr.split(separator: "\n").count == 1)

        let pcapngOut = dir.appendingPathComponent("out.pcapng").path
        let pcapng = try kinetrace("convert", pcap, pcapngOut)
        #expect(pcapng.status == 0, "pcapng is written now: \(pcapng.stderr)")
        #expect(try CaptureFileFormat(fileAt: pcapngOut) == .pcapng)
        let unknown = try kinetrace("convert", pcap, dir.appendingPathComponent("out.txt").path)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("Cannot tell the output format from 'out.txt'"))
        #expect(try kinetrace("convert", pcap, out, "--port", "70000").status == 64)
        #expect(try kinetrace("convert", pcap, out, "--to", "nothing").status == 64)
        #expect(try kinetrace("convert", pcap, pcap, "--to", "pcap").status == 64)

        let noDirectory = try kinetrace("convert", pcap, dir.appendingPathComponent("no/such/dir/out.pcap").path)
        #expect(noDirectory.status == 73)
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
