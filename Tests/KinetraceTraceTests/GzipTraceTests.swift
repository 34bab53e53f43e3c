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
}
