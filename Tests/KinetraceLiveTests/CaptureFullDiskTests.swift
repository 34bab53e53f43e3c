import Foundation
import KinetraceCapture
import KinetraceTestSupport
import KinetraceTrace
import Testing

/// Issue 24, finding 1: capture onto a full disk (a small tmpfs) stops with exit 74 and
/// a summary that counts only what reached the disk. Every file it lists is read whole
/// by tcpdump or the trace reader, and holds exactly what the summary says.
@Suite(.serialized, .enabled(if: Requirement.root.runs, "live capture and mount need root; with CI set this fails instead"))
struct CaptureFullDiskTests {
    init() throws { try Requirement.root.check() }

    /// A tmpfs of `kib` KiB mounted on a new folder; the caller unmounts it.
    func smallDisk(kib: Int) throws -> URL {
        let dir = try Fixture.temporaryDirectory()
        let mount = try run(URL(fileURLWithPath: "/usr/bin/env"), ["mount", "-t", "tmpfs", "-o", "size=\(kib)k", "tmpfs", dir.path])
        try #require(mount.status == 0, "mount: \(mount.stderr)")
        return dir
    }

    func unmount(_ dir: URL) {
        _ = try? run(URL(fileURLWithPath: "/usr/bin/env"), ["umount", dir.path])
        Fixture.remove(dir)
    }

    func tcpdumpCount(_ pcap: String) throws -> Int { try CapturedFiles.tcpdumpCount(pcap) }
    func messageCount(_ trace: String) throws -> Int { try CapturedFiles.messageCount(trace) }

    func capture(_ arguments: [String]) throws -> (result: RunResult, summary: [String: Any]) {
        let host = try Background.kinetrace("host", "--port", "0")  // a listener, so no ICMP
        defer { _ = try? host.stop() }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let capture = try Background(try Fixture.binary, ["capture", "-i", "lo", "--port", "\(port)", "-s", "256", "--format", "json"] + arguments)
        _ = try capture.waitForLine(startingWith: "capturing on lo")
        try CapturedFiles.sendZeroDatagrams(to: port)
        // The capture stops by itself on the failed write; SIGINT only if it somehow kept going.
        let result = try capture.stop(SIGINT)
        let last = try #require(result.stdout.split(separator: "\n").last, "no summary: \(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        return (result, summary)
    }

    @Test func aPcapOntoAFullDiskExits74AndCountsWhatReachedIt() throws {
        let disk = try smallDisk(kib: 512)
        defer { unmount(disk) }
        let pcap = disk.appendingPathComponent("full.pcap").path
        let (result, summary) = try capture(["-w", pcap])
        #expect(result.status == 74, "\(result.stderr)")
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("kinetrace: error:") }
        #expect(errors.count == 1 && errors[0].contains("No space left on device"), "\(result.stderr)")
        #expect(summary["complete"] as? Bool == false)
        let onDisk = try #require(summary["pcap_packets_on_disk"] as? Int)
        let packets = try #require(summary["packets"] as? Int)
        #expect(onDisk > 1000 && onDisk <= packets, "\(summary)")
        #expect(try tcpdumpCount(pcap) == onDisk, "the summary claims exactly what the file holds")
    }

    @Test func rotatedFilesOntoAFullDiskAreEachWholeAndNoneIsEmpty() throws {
        let disk = try smallDisk(kib: 2560)
        defer { unmount(disk) }
        let pcap = disk.appendingPathComponent("r.pcap").path
        let (result, summary) = try capture(["-C", "1", "-w", pcap])
        #expect(result.status == 74, "\(result.stderr)")
        let files = try #require(summary["files"] as? [String])
        #expect(files.count >= 2 && files.first == pcap, "\(files) \(summary) \(result.stderr)")
        for file in files {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
            #expect(size >= 24, "\(file) listed but empty")
        }
        #expect(try files.map(tcpdumpCount).reduce(0, +) == summary["pcap_packets_on_disk"] as? Int)
    }

    @Test func aTraceOntoAFullDiskHoldsExactlyTheRecordsCounted() throws {
        let disk = try smallDisk(kib: 512)
        defer { unmount(disk) }
        let trace = disk.appendingPathComponent("full.jsonl").path
        let (result, summary) = try capture(["--trace", trace])
        #expect(result.status == 74, "\(result.stderr)")
        let onDisk = try #require(summary["trace_records_on_disk"] as? Int)
        #expect(onDisk > 100, "\(summary)")
        #expect(try messageCount(trace) == onDisk)
    }

    /// Only the pcap's disk fills: the pcap stops at its last whole packet, and the trace, on a disk
    /// with room, keeps a record of every packet the capture took (it was cut back to its last flush,
    /// up to 250 ms of records, though nothing failed on its disk).
    @Test func aFullPcapDiskCostsTheTraceNothing() throws {
        let disk = try smallDisk(kib: 512)
        defer { unmount(disk) }
        let roomy = try Fixture.temporaryDirectory()
        defer { Fixture.remove(roomy) }
        let pcap = disk.appendingPathComponent("full.pcap").path, trace = roomy.appendingPathComponent("whole.jsonl").path
        let (result, summary) = try capture(["-w", pcap, "--trace", trace])
        #expect(result.status == 74, "\(result.stderr)")
        let packets = try #require(summary["packets"] as? Int)
        #expect(summary["trace_records_on_disk"] as? Int == packets, "\(summary)")
        #expect(try messageCount(trace) == packets)
        let inPcap = try tcpdumpCount(pcap)
        #expect(inPcap == summary["pcap_packets_on_disk"] as? Int, "\(summary)")
    }

    /// Finding 14: a file that cannot be created is one line naming its path once, exit 73.
    @Test func aReadOnlyMountIsOneLineNamingThePathOnce() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { unmount(dir) }
        let mount = try run(URL(fileURLWithPath: "/usr/bin/env"), ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", dir.path])
        try #require(mount.status == 0, "mount: \(mount.stderr)")
        for option in ["-w", "--trace"] {
            let path = dir.appendingPathComponent("x.out").path
            let result = try kinetrace("capture", "-i", "lo", option, path, "-c", "1")
            #expect(result.status == 73, "\(option): \(result.stderr)")
            let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("kinetrace: error:") }
            #expect(errors.count == 1 && errors[0].components(separatedBy: path).count == 2 && errors[0].contains("Read-only file system"),
                    "\(option): \(result.stderr)")
        }
    }

    /// Finding 2: a -G template whose names come round within the capture is refused before anything is opened.
    @Test(arguments: [
        (["-G", "1"], "m-%H%M.pcap"),
        (["-G", "60", "--duration", "7200"], "m-%M%S.pcap"),
    ])
    func aRotationNameThatWouldRepeatIsRefused(_ options: [String], _ template: String) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let result = try kinetrace(["capture", "-i", "lo", "-w", dir.appendingPathComponent(template).path] + options)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("the later would overwrite the earlier"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    /// A name that comes round only after the day (the README's `-G 600` with %H%M%S) is accepted.
    @Test func aTemplateThatRepeatsOnlyAfterTheHorizonIsAccepted() {
        let start: Int64 = 1_767_225_600
        #expect(firstRepeatedRotationName(template: "e-%H%M%S", periodSeconds: 600, startSeconds: start, horizonSeconds: 86_400) == nil)
        #expect(firstRepeatedRotationName(template: "e-%H%M%S", periodSeconds: 600, startSeconds: start, horizonSeconds: 86_401) != nil)
        #expect(firstRepeatedRotationName(template: "e-%H%M", periodSeconds: 1, startSeconds: start, horizonSeconds: 10)?.again == start + 1)
    }
}
