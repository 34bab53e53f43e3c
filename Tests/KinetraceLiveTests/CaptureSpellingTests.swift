import Foundation
import KinetraceTestSupport
import KinetraceTrace
import Testing

/// Issue 16, item 4: capture takes tcpdump's spellings (-w alone, -c, -s, -B, a trailing
/// BPF expression) and rotates files as tcpdump's -G and -C do, every rotated pcap and
/// trace complete on its own. tcpdump reads each file back.
@Suite(.serialized, .enabled(if: Requirement.root.runs, "live capture needs root or CAP_NET_RAW; with CI set this fails instead"))
struct CaptureSpellingTests {
    init() throws { try Requirement.root.check() }

    func tcpdumpCount(_ pcap: String) throws -> Int { try CapturedFiles.tcpdumpCount(pcap) }
    func messageCount(_ trace: String) throws -> Int { try CapturedFiles.messageCount(trace) }

    func summary(_ stdout: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(stdout.split(separator: "\n").last!.utf8)) as? [String: Any])
    }

    /// `-w` alone (no trace), `-c`, `-s`, `-B` and a trailing expression, as a tcpdump user types them.
    @Test func tcpdumpSpellingsWriteAPcapAlone() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = dir.appendingPathComponent("only.pcap").path
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        // Only frames from the simulator (to the host's port): the acks from the host are filtered out by the expression.
        let capture = try Background.kinetrace("capture", "-i", "lo", "--port", "\(port)", "-w", pcap, "-c", "25", "-s", "256", "-B", "4096",
                                               "--format", "json", "dst", "port", "\(port)")
        let started = try capture.waitForLine(startingWith: "capturing on lo")
        #expect(started.contains("(filter: (udp port \(port)) and (dst port \(port)))"), "\(started)")
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(port)", "--controllers", "2", "--duration", "3")
        #expect(sim.status == 0, "\(sim.stderr)")
        let result = try capture.wait(timeout: 20)
        _ = try host.stop()
        #expect(result.status == 0, "\(result.stderr)")
        let report = try summary(result.stdout)
        #expect(report["packets"] as? Int == 25)
        #expect(report["files"] as? [String] == [pcap])
        #expect(try tcpdumpCount(pcap) == 25)
        let lines = try run(URL(fileURLWithPath: "/usr/bin/env"), ["tcpdump", "-nn", "-r", pcap]).stdout
        #expect(lines.split(separator: "\n").allSatisfy { $0.contains("> 127.0.0.1.\(port):") }, "only frames to the host: \(lines)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["only.pcap"], "no trace written")
    }

    /// -G 1 with strftime names: several pairs of files, each read on its own by tcpdump and
    /// the trace reader, that together hold every packet the capture reports.
    @Test func rotatingByTimeWritesCompleteFiles() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let host = try Background.kinetrace("host", "--port", "0")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background.kinetrace("capture", "-i", "lo", "--port", "\(port)", "-G", "1",
                                               "-w", dir.appendingPathComponent("s-%Y%m%d-%H%M%S.pcap").path,
                                               "--trace", dir.appendingPathComponent("s-%Y%m%d-%H%M%S.jsonl").path, "--format", "json")
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(port)", "--controllers", "3", "--duration", "3.5")
        #expect(sim.status == 0, "\(sim.stderr)")
        let result = try capture.stop(SIGINT)
        _ = try host.stop()
        #expect(result.status == 0, "\(result.stderr)")
        let report = try summary(result.stdout)
        let files = try #require(report["files"] as? [String])
        let pcaps = files.filter { $0.hasSuffix(".pcap") }, traces = files.filter { $0.hasSuffix(".jsonl") }
        #expect(pcaps.count >= 3 && pcaps.count == traces.count, "\(files)")
        #expect(Set(files).count == files.count, "every name distinct: \(files)")
        for name in files { #expect(name.range(of: #"/s-\d{8}-\d{6}\.(pcap|jsonl)$"#, options: .regularExpression) != nil, "\(name)") }
        let packets = try #require(report["packets"] as? Int)
        #expect(packets > 0)
        #expect(try pcaps.map(tcpdumpCount).reduce(0, +) == packets)
        #expect(try traces.map(messageCount).reduce(0, +) == packets)
        #expect(try pcaps.map(tcpdumpCount).filter { $0 > 0 }.count >= 3, "traffic in at least three files")
    }

    /// -C 1: a new pair once the pcap would pass 1,000,000 bytes, named with 1, 2, … appended.
    @Test func rotatingBySizeNumbersTheFiles() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let pcap = dir.appendingPathComponent("big.pcap").path
        let host = try Background.kinetrace("host", "--port", "0")  // a listener, so no ICMP; it drops the zero frames (bad CRC)
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background.kinetrace("capture", "-i", "lo", "--port", "\(port)", "-C", "1", "-s", "256", "-w", pcap,
                                               "--trace", dir.appendingPathComponent("big.jsonl.gz").path, "--format", "json")
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        try CapturedFiles.sendZeroDatagrams(to: port)
        let result = try capture.stop(SIGINT)
        _ = try host.stop()
        #expect(result.status == 0, "\(result.stderr)")
        let report = try summary(result.stdout)
        let files = try #require(report["files"] as? [String])
        let pcaps = files.filter { $0.contains(".pcap") }
        #expect(pcaps.count >= 3, "\(files)")
        #expect(Array(pcaps.prefix(3)) == [pcap, pcap + "1", pcap + "2"])
        for file in pcaps {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
            #expect(size <= 1_000_000, "\(file): \(size) bytes")
        }
        let packets = try #require(report["packets"] as? Int)
        #expect(try pcaps.map(tcpdumpCount).reduce(0, +) == packets)
        let traces = files.filter { $0.contains(".jsonl") }
        #expect(try traces.map(messageCount).reduce(0, +) == packets)
        // Every rotated trace is gzip as its template says, "big.jsonl.gz1" too.
        for trace in traces {
            let head = try #require(FileHandle(forReadingAtPath: trace)).readData(ofLength: 2)
            #expect([UInt8](head) == [0x1F, 0x8B], "\(trace) is not gzip")
        }
    }

    /// Usage mistakes stop before anything is opened or written.
    @Test(arguments: [
        (["-i", "lo"], "Give a file to write"),
        (["-i", "lo", "-w", "W", "--filter", "udp", "udp"], "Give the BPF expression once"),
        (["-i", "lo", "-w", "W", "-G", "5"], "has no strftime conversion"),
        (["-i", "lo", "--trace", "T", "-C", "1"], "-C measures the pcap"),
        (["-i", "lo", "-w", "W", "-s", "70000000"], "-s must be 0 or between 64 and 262144"),
        (["-i", "lo", "-w", "W", "-B", "1"], "-B must be between 64 and 1048576"),
        (["-i", "lo", "-w", "W", "-B", "64", "--buffer-mib", "4"], "Give -B (KiB) or --buffer-mib"),
        (["-i", "lo", "-w", "W", "-c", "0"], "-c must be positive"),
    ])
    func usageMistakes(_ arguments: [String], _ message: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let resolved = arguments.map { $0 == "W" ? dir.appendingPathComponent("w.pcap").path : $0 == "T" ? dir.appendingPathComponent("t.jsonl").path : $0 }
        let result = try kinetrace(["capture"] + resolved)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }
}
