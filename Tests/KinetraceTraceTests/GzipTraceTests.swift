import Foundation
import KinetraceTestSupport
import KinetraceTrace
import Testing

/// Issue 16, item 6 (reading): a gzip-compressed trace reads as the trace itself, found
/// by its magic bytes whatever its name; a cut stream is a truncation and a corrupt one a
/// one-line error, never a trap. The compressed files come from the independent gzip tool.
@Suite(.enabled(if: Requirement.tools("gzip").runs, "needs gzip; with CI set this fails instead"))
struct GzipTraceTests {
    init() throws { try Requirement.tools("gzip").check() }

    static let session = Fixture.packageRoot.appendingPathComponent("captures/synthetic-session.jsonl").path

    func gzipped(_ path: String, into dir: URL, name: String) throws -> URL {
        let out = dir.appendingPathComponent(name)
        let result = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "gzip -9c \"$1\" > \"$2\"", "sh", path, out.path])
        #expect(result.status == 0, "\(result.stderr)")
        return out
    }

    func records(_ reader: TraceReader) throws -> [TraceRecord] {
        var all: [TraceRecord] = []
        while let record = try reader.next() { all.append(record) }
        return all
    }

    @Test func aGzippedTraceReadsAsTheTrace() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let plain = try TraceReader(path: Self.session)
        let expected = try records(plain)
        // Named .gz, and named as a plain trace: the content decides.
        for name in ["s.jsonl.gz", "s.jsonl"] {
            let reader = try TraceReader(path: try gzipped(Self.session, into: dir, name: name).path)
            #expect(reader.header == plain.header)
            #expect(try records(reader) == expected, "\(name)")
            #expect(reader.truncation == nil)
        }
    }

    /// Cut anywhere, a gzipped trace gives a prefix of the records and says it was cut.
    @Test func aCutStreamIsATruncation() async throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let whole = try [UInt8](Data(contentsOf: try gzipped(Self.session, into: dir, name: "whole.jsonl.gz")))
        let expected = try records(try TraceReader(path: Self.session))
        await seededPropertyCheck(count: 12, draw: { rng in Int.random(in: 600..<(whole.count - 8), using: &rng) }) { cut in
            let path = dir.appendingPathComponent("cut-\(cut).jsonl.gz")
            try Data(whole[0..<cut]).write(to: path)
            let reader = try TraceReader(path: path.path)
            let got = try records(reader)
            #expect(got.count < expected.count && Array(expected.prefix(got.count)) == got, "cut at \(cut)")
            #expect(reader.truncation != nil, "cut at \(cut) of \(whole.count) bytes must say so")
        }
    }

    /// Flipped bytes: a one-line error or a truncation, never a trap or wrong records passed off as whole.
    @Test func corruptStreamsFailCleanly() async throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let whole = try [UInt8](Data(contentsOf: try gzipped(Self.session, into: dir, name: "whole.jsonl.gz")))
        let expected = try records(try TraceReader(path: Self.session))
        await seededPropertyCheck(count: 40, draw: { rng in
            (Int.random(in: 10..<whole.count, using: &rng), UInt8.random(in: 1...255, using: &rng))
        }) { (at, flip) in
            var bytes = whole
            bytes[at] ^= flip
            let path = dir.appendingPathComponent("bad.jsonl.gz")
            try Data(bytes).write(to: path)
            do {
                let reader = try TraceReader(path: path.path)
                let got = try records(reader)
                // zlib checks a CRC-32 over the whole stream: anything read to the end unflagged is the trace.
                if reader.truncation == nil { #expect(got == expected, "flip \(flip) at \(at) read as whole but differs") }
            } catch {
                #expect(!"\(error)".contains("\n"), "one line: \(error)")
                #expect(error is TraceError, "a TraceError, not \(type(of: error))")
            }
        }
    }

    /// inspect reads it as the trace, and counts the bytes on disk and after decompression.
    @Test func inspectReadsItAndCountsTheBytes() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let gz = try gzipped(Self.session, into: dir, name: "s.jsonl.gz")
        let plain = try kinetrace(["inspect", Self.session])
        let compressed = try kinetrace(["inspect", gz.path])
        #expect(compressed.status == 0, "\(compressed.stderr)")
        func withoutBytes(_ text: String) -> [Substring] { text.split(separator: "\n").filter { !$0.hasPrefix("Bytes ") } }
        #expect(withoutBytes(compressed.stdout.replacingOccurrences(of: gz.path, with: Self.session)) == withoutBytes(plain.stdout))
        let fileSize = try #require(try FileManager.default.attributesOfItem(atPath: gz.path)[.size] as? Int)
        let plainSize = try #require(try FileManager.default.attributesOfItem(atPath: Self.session)[.size] as? Int)
        #expect(compressed.stdout.contains("Bytes      \(fileSize) read, \(plainSize) after gzip decompression"), "\(compressed.stdout)")
        #expect(plain.stdout.contains("Bytes      \(plainSize) read\n"))
        let json = try kinetrace(["inspect", gz.path, "--format", "json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["bytes"] as? [String: Int] == ["file": fileSize, "uncompressed": plainSize])
    }

    /// A trace written to a .gz name is gzip, which the gzip tool expands to exactly the plain trace.
    @Test func writingADotGzNameCompresses() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let gz = dir.appendingPathComponent("w.jsonl.gz").path, plain = dir.appendingPathComponent("w.jsonl").path
        #expect(try kinetrace(["convert", Self.session, gz]).status == 0)
        #expect(try kinetrace(["convert", Self.session, plain]).status == 0)
        let expanded = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "gzip -dc \"$1\" | cmp - \"$2\"", "sh", gz, plain])
        #expect(expanded.status == 0, "gzip -dc of the .gz differs from the plain trace: \(expanded.stdout) \(expanded.stderr)")
        let sizes = try [gz, plain].map { try #require(try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) }
        #expect(sizes[0] * 2 < sizes[1], "compressed: \(sizes)")
    }

    /// A writer that never closes (a killed capture) leaves a .gz that reads up to its last flush and says it was cut.
    @Test func anUnclosedGzipTraceReadsToItsLastFlush() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("killed.jsonl.gz").path
        let records = try records(try TraceReader(path: Self.session))
        do {
            let writer = try TraceWriter(path: path, header: try TraceReader(path: Self.session).header, policy: .everyRecord)
            for record in records.prefix(100) { try writer.write(record) }
            // No close: the trailer is never written, as when the process is killed.
            _ = Unmanaged.passRetained(writer)
        }
        let reader = try TraceReader(path: path)
        #expect(try self.records(reader) == Array(records.prefix(100)))
        #expect(reader.truncation != nil, "a stream without its trailer says so")
    }

    // Issue 24, finding 13: bytes after the last member that are not another member.

    /// Trailing garbage is an error naming the offset where the last member ended, exit 65
    /// in one line, as `gzip -t` calls it an error (exit 2); before, it was skipped silently.
    @Test func trailingGarbageIsAnErrorAtItsOffset() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let gz = try gzipped(Self.session, into: dir, name: "s.jsonl.gz")
        let end = try Data(contentsOf: gz).count
        let handle = try FileHandle(forWritingTo: gz)
        handle.seekToEndOfFile()
        handle.write(Data("garbage".utf8))
        try handle.close()
        #expect(try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "gzip -t \"$1\"", "sh", gz.path]).status == 2, "gzip -t rejects it too")
        let error = #expect(throws: TraceError.self) { _ = try records(try TraceReader(path: gz.path)) }
        #expect(error?.byteOffset == end, "\(String(describing: error))")
        #expect(error?.message.contains("trailing garbage") == true, "\(String(describing: error))")
        let inspect = try kinetrace(["inspect", gz.path])
        #expect(inspect.status == 65, "\(inspect.stderr)")
        #expect(inspect.stderr.split(separator: "\n").count == 1 && inspect.stderr.contains("byte \(end): trailing garbage"), "\(inspect.stderr)")
        // Zeros then garbage: still garbage, from where the member ended.
        let padded = dir.appendingPathComponent("padded.jsonl.gz")
        try Data(try Data(contentsOf: gz).prefix(end) + Data(count: 100) + Data([1])).write(to: padded)
        let late = #expect(throws: TraceError.self) { _ = try records(try TraceReader(path: padded.path)) }
        #expect(late?.byteOffset == end && late?.message.contains("zero padding up to byte \(end + 100)") == true, "\(String(describing: late))")
    }

    /// What gzip accepts reads whole: members one after another (`cat a.gz b.gz`), and zero
    /// padding after the last member, which `gzip -t` passes without a word.
    @Test func concatenatedMembersAndZeroPaddingRead() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let text = try Data(contentsOf: URL(fileURLWithPath: Self.session))
        let cut = text.firstIndex(of: 0x0A)! + 5000  // the second member starts inside a line
        let first = dir.appendingPathComponent("first"), second = dir.appendingPathComponent("second")
        try text.prefix(cut).write(to: first)
        try text.suffix(from: cut).write(to: second)
        let members = try Data(contentsOf: gzipped(first.path, into: dir, name: "1.gz")) + Data(contentsOf: gzipped(second.path, into: dir, name: "2.gz"))
        let expected = try records(try TraceReader(path: Self.session))
        for (name, bytes) in [("members.jsonl.gz", members), ("padded.jsonl.gz", members + Data(count: 4096))] {
            let path = dir.appendingPathComponent(name)
            try bytes.write(to: path)
            #expect(try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "gzip -t \"$1\"", "sh", path.path]).status == 0, "gzip -t passes \(name)")
            let reader = try TraceReader(path: path.path, bufferBytes: TraceReader.minimumBufferBytes)
            #expect(try records(reader) == expected, "\(name)")
            #expect(reader.truncation == nil, "\(name)")
        }
    }

    /// Issue 24, finding 14b: a stream cut at a flush point (a killed writer) ends between lines;
    /// the warning says the gzip stream ends without its trailer, at the file's end, not that
    /// "an incomplete record of 0 bytes" was dropped.
    @Test func aCutAtAFlushPointSaysTheStreamEndsWithoutItsTrailer() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("killed.jsonl.gz").path
        let records = try records(try TraceReader(path: Self.session))
        do {
            let writer = try TraceWriter(path: path, header: try TraceReader(path: Self.session).header, policy: .everyRecord)
            for record in records.prefix(10) { try writer.write(record) }
            _ = Unmanaged.passRetained(writer)  // never closed, so never given its trailer
        }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let reader = try TraceReader(path: path)
        #expect(try self.records(reader).count == 10)
        let cut = try #require(reader.truncation)
        #expect(cut.compressedEnd == size && cut.droppedBytes == 0)
        #expect("\(cut)".contains("the gzip stream ends without its trailer at byte offset \(size)"), "\(cut)")
        #expect(!"\(cut)".contains("incomplete record"), "\(cut)")
        let inspect = try kinetrace(["inspect", path])
        #expect(inspect.status == 0 && inspect.stderr.contains("truncated compressed input: the gzip stream ends without its trailer at byte offset \(size)"),
                "\(inspect.stderr)")
    }

    /// Issue 24, finding 14c: a gzip-compressed capture is told to decompress it (libpcap reads
    /// no gzip), by every command, convert included, rather than to run `kinetrace convert`.
    @Test(arguments: [["inspect", "IN"], ["convert", "IN", "OUT"], ["merge", "IN", "-w", "OUT"]])
    func aGzipCompressedCaptureIsToldToDecompressIt(_ template: [String]) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let capture = Fixture.packageRoot.appendingPathComponent("captures/loopback-session.pcap").path
        let gz = try gzipped(capture, into: dir, name: "session.pcap.gz")
        let out = dir.appendingPathComponent("out.jsonl").path
        let result = try kinetrace(template.map { $0 == "IN" ? gz.path : $0 == "OUT" ? out : $0 })
        #expect(result.status == 65, "\(template[0]): \(result.stderr)")
        #expect(result.stderr.contains("gzip-compressed pcap/pcapng capture") && result.stderr.contains("gunzip"), "\(template[0]): \(result.stderr)")
        #expect(!result.stderr.contains("kinetrace convert"), "\(template[0]): \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// A reader's buffer may be as small as a merge of thousands of inputs gives it: lines longer
    /// than it still read, plain and compressed, as with the default megabyte.
    @Test func aSmallReadBufferReadsTheSameRecords() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let gz = try gzipped(Self.session, into: dir, name: "s.jsonl.gz")
        let expected = try records(try TraceReader(path: Self.session))
        for path in [Self.session, gz.path] {
            let reader = try TraceReader(path: path, bufferBytes: 1)
            #expect(try records(reader) == expected, "\(path)")
        }
    }
}
