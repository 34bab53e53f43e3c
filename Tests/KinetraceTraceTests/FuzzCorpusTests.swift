import Foundation
import Testing
import KinetraceSupport
import KinetraceTestSupport
@testable import KinetraceTrace
import KinetraceWire

/// The trace fuzz target's seeds and saved crashes (Fuzz/corpus/trace,
/// Fuzz/regressions/trace), read the way the target reads them: the whole
/// input through `TraceReader(bytes:)`, then every line after the header
/// through the fast path and the general parser, which must agree wherever
/// the fast path accepts. `ok-…` files must read to the end with records;
/// `<code>-…` files must fail with that `TraceError` code.
@Suite struct FuzzCorpusTests {
    /// One line through `TraceDecoder.record` (fast path first) or only the general parser.
    /// nil when the line does not parse; `.some(nil)` for a record kind the reader skips.
    static func decode(_ line: [UInt8], _ wireProtocol: any WireProtocol, general: Bool) -> TraceRecord?? {
        var decoder = TraceDecoder(wireProtocol)
        return line.withUnsafeBytes { raw in
            do throws(TraceDecoder.Failure) {
                return .some(general ? try decoder.generalRecord(raw) : try decoder.record(raw))
            } catch {
                return nil
            }
        }
    }

    @Test func traceInputs() throws {
        let inputs = try FuzzInput.all("trace")
        #expect(inputs.count >= 5)
        var fastPathAccepted = 0
        for input in inputs {
            var wireProtocol: any WireProtocol = MotionLinkV1()
            var outcome: Result<Int, TraceError>
            do throws(TraceError) {
                let reader = try TraceReader(bytes: input.bytes, name: input.path)
                wireProtocol = reader.wireProtocol
                var records = 0
                while let record = try reader.next() {
                    records += 1
                    var line = TraceEncoder.line(for: record, as: wireProtocol)
                    line.removeLast()
                    let again = Self.decode(line, wireProtocol, general: false)
                    #expect(again == .some(.some(record)), "\(input): record \(records) changed through encode→decode")
                }
                outcome = .success(records)
            } catch {
                outcome = .failure(error)
            }
            switch (input.expectation, outcome) {
            case (.value, .success(let records)): #expect(records > 0, "\(input): no records")
            case (.value, .failure(let error)): Issue.record("\(input): expected records, got \(error)")
            case (.error(let code), .success): Issue.record("\(input): expected \(code), read to the end")
            case (.error(let code), .failure(let error)): #expect(error.code.name == code, "\(input): \(error)")
            default: break
            }
            let lines = input.bytes.split(separator: 0x0A, omittingEmptySubsequences: false).dropFirst()
            for line in lines {
                var fast = TraceDecoder(wireProtocol)
                guard let message = Array(line).withUnsafeBytes({ fast.canonicalMessage($0) }) else { continue }
                fastPathAccepted += 1
                #expect(Self.decode(Array(line), wireProtocol, general: true) == .some(.some(.message(message))), "\(input): the two paths disagree")
            }
        }
        // The seeds are what the writer writes, so the fast path must engage on them.
        #expect(fastPathAccepted > 10)
    }

    /// The gzip target's inputs (byte 0 sets sizes, the rest is the file), inflated by
    /// `GzipInput` as `TraceReader` hands a file over: `ok-…` ends without an error (cut or
    /// not), `<code>-…` fails with that code; an error's offset lies inside the file. Read 7
    /// bytes at a time through the buffer byte 0 picks, or 64 KiB at a time with the whole file
    /// buffered, the bytes and the outcome are the same (regressions: a cut inside a match lost
    /// the match's tail; trailing garbage found in a read lost that read's bytes).
    @Test func gzipInputs() throws {
        let inputs = try FuzzInput.all("gzip")
        #expect(inputs.count >= 5)
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        func inflate(_ path: String, bufferBytes: Int, readSize: Int) -> (bytes: [UInt8], end: Result<Bool, TraceError>) {
            var bytes: [UInt8] = []
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 1)
            defer { chunk.deallocate() }
            do throws(TraceError) {
                // As TraceReader hands the file over: its first two bytes already read.
                let file: POSIXFile
                var first = 0
                do throws(FileError) {
                    file = try POSIXFile(path: path, mode: .read)
                    while first < 2 {
                        let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: chunk[first..<2]))
                        if n == 0 { break }
                        first += n
                    }
                } catch {
                    throw TraceError(error)
                }
                let gzip = try GzipInput(file: file, path: path, initial: Array(chunk[0..<first]), bufferBytes: bufferBytes)
                while true {
                    let n = try gzip.read(into: chunk)
                    if n == 0 { break }
                    bytes += chunk[0..<n]
                }
                return (bytes, .success(gzip.truncated))
            } catch {
                return (bytes, .failure(error))
            }
        }
        for input in inputs {
            let path = dir.appendingPathComponent("input.gz").path
            try Data(input.bytes.dropFirst()).write(to: URL(fileURLWithPath: path))
            let small = inflate(path, bufferBytes: 16 << Int(input.bytes[0] & 7), readSize: 7)
            let whole = inflate(path, bufferBytes: input.bytes.count, readSize: 65536)
            switch (small.end, whole.end) {
            case (.success(let a), .success(let b)): #expect(a == b && small.bytes == whole.bytes, "\(input): \(small.bytes.count) bytes against \(whole.bytes.count)")
            case (.failure(let a), .failure(let b)) where a.message.hasPrefix("trailing garbage"):
                #expect(a == b && small.bytes == whole.bytes, "\(input): \(small.bytes.count) bytes against \(whole.bytes.count)")
            case (.failure, .failure): break  // where zlib notices corruption depends on the input it has
            default: Issue.record("\(input): \(small.end) with small reads, \(whole.end) with large ones")
            }
            switch (input.expectation, whole.end) {
            case (.value, .failure(let error)): Issue.record("\(input): expected to inflate, got \(error)")
            case (.error(let code), .success): Issue.record("\(input): expected \(code), inflated to the end")
            case (.error(let code), .failure(let error)):
                #expect(error.code.name == code, "\(input): \(error)")
                #expect((0..<input.bytes.count).contains(error.byteOffset ?? -1), "\(input): \(error)")
            default: break
            }
        }
    }

    /// The merge target's inputs (byte 0 sets the inputs, window and bounds; 0xFF separates the
    /// traces), merged as the target merges them: `ok-…` merges records, `<code>-…` is refused with that code.
    @Test func mergeInputs() throws {
        let inputs = try FuzzInput.all("merge")
        #expect(inputs.count >= 4)
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let header = Array(#"{"format":"kinetrace-trace","version":1,"minor":1,"profile":"motionlink-v1","capture_point":"controller","clock":"realtime"}"#.utf8) + [0x0A]
        for input in inputs {
            let config = input.bytes[0]
            let count = 2 + Int(config & 1)
            var pieces = input.bytes.dropFirst().split(separator: 0xFF, maxSplits: count - 1, omittingEmptySubsequences: false).map(Array.init)
            while pieces.count < count { pieces.append([]) }
            let paths = try pieces.enumerated().map { index, piece in
                let path = dir.appendingPathComponent("\(index).jsonl").path
                try Data(config & 4 == 0 ? header + piece : piece).write(to: URL(fileURLWithPath: path))
                return path
            }
            let perInput = 2 + Int(config >> 4)
            let outcome: Result<Int, TraceError>
            do throws(TraceError) {
                let merger = try TraceMerger(paths: paths, windowNs: config & 2 == 0 ? 1_000_000 : 1_000_000_000,
                                             maximumWaiting: perInput, maximumWaitingTotal: perInput * 3 / 2)
                let out = dir.appendingPathComponent("out.jsonl").path
                outcome = .success(try merger.write(to: out, header: merger.mergedHeader(created: "2026-11-26T00:00:00.000Z")).recordsWritten)
            } catch {
                outcome = .failure(error)
            }
            switch (input.expectation, outcome) {
            case (.value, .success(let records)): #expect(records > 0, "\(input): no records")
            case (.value, .failure(let error)): Issue.record("\(input): expected a merge, got \(error)")
            case (.error(let code), .success): Issue.record("\(input): expected \(code), merged")
            case (.error(let code), .failure(let error)): #expect(error.code.name == code, "\(input): \(error)")
            default: break
            }
        }
    }
}
