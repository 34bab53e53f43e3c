import Foundation
import KinetraceTestSupport
import Testing

/// Issue 24, finding 6: a byte-stream trace whose reads name no connection, and
/// a conversion that fails on an input record.
@Suite struct UnnamedStreamSourceTests {
    /// A trace `kinetrace synth` wrote, with the `src` of its messages numbered in `rewritten`
    /// (1-based, messages only) set to `source`; returns its path and the first rewritten line.
    func rewrite(_ dir: URL, protocol wire: String, messages rewritten: Set<Int>, source: String) throws -> (path: String, line: Int) {
        let original = dir.appendingPathComponent("synth.jsonl").path
        let synth = try kinetrace(["synth", "--protocol", wire, "--persona", "steady", "--duration", "1", "--seed", "1", "--out", original])
        #expect(synth.status == 0, "\(synth.stderr)")
        var lines = try String(contentsOfFile: original, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var message = 0, first: Int?
        for i in lines.indices where lines[i].contains("\"kind\":\"msg\"") {
            message += 1
            guard rewritten.contains(message), let src = lines[i].range(of: #""src":"[^"]*""#, options: .regularExpression) else { continue }
            lines[i].replaceSubrange(src, with: "\"src\":\"\(source)\"")
            first = first ?? i + 1
        }
        let path = dir.appendingPathComponent("\(wire)-rewritten.jsonl").path
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return (path, try #require(first))
    }

    /// The host once recorded reads of reset connections as "unknown:0": glued into one
    /// stream, they made records that never existed. Now such a line is a data error.
    @Test func inspectAndConvertRefuseAStreamReadThatNamesNoConnection() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let (trace, line) = try rewrite(dir, protocol: "attitude-stream", messages: [3, 4, 7], source: "unknown:0")
        let out = dir.appendingPathComponent("out.pcap").path
        for arguments in [["inspect", trace], ["convert", trace, out], ["convert", trace, dir.appendingPathComponent("out.jsonl").path]] {
            let result = try kinetrace(arguments)
            #expect(result.status == 65, "\(arguments[0]): \(result.stdout)\(result.stderr)")
            #expect(result.stderr.hasPrefix("kinetrace: error: \(trace): line \(line), byte "), "\(result.stderr)")
            #expect(result.stderr.contains("src \"unknown:0\" is not an IPv4 or IPv6 address"), "\(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: out), "no half-written output")
        // A datagram trace may name endpoints freely: a host name there is no stream to glue.
        let (datagrams, _) = try rewrite(dir, protocol: "motionlink-v1", messages: [3], source: "controller.local:1")
        #expect(try kinetrace("inspect", datagrams).status == 0)
    }

    /// `convert` named its output file, and the output's packet number, for a record of its input
    /// that cannot take the output's form; it names the input and the record's line.
    @Test func aConversionFailureCausedByAnInputRecordNamesTheInputLine() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let (trace, line) = try rewrite(dir, protocol: "motionlink-v1", messages: [3], source: "controller.local:1")
        let out = dir.appendingPathComponent("out.pcap").path
        let result = try kinetrace("convert", trace, out)
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("kinetrace: error: \(trace): line \(line): cannot be written to \(out): "), "\(result.stderr)")
        #expect(result.stderr.contains("controller.local"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
