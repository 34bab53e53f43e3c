// The merge (Sources/Formats/KinetraceTrace/Trace/TraceMerger.swift) over two or three
// fuzzer-made traces: everything after byte 0 is split at 0xFF bytes (never in a trace's
// UTF-8) into the inputs, each written to $TMPDIR after a fixed motionlink-v1 header (or,
// with bit 2 of byte 0, as the whole file, header and all). Byte 0 also picks the number of
// inputs (bit 0: 2 or 3), the window (bit 1: 1 ms or 1 s) and the waiting-record bounds
// (bits 4-7: 2 to 17 per input, one and a half times that for all inputs together).
// Checks:
// - a refused merge is one line, a TraceError naming one of the inputs (or "<merge>"), with a
//   line number of at least 1;
// - an accepted merge counts, per input, the records and truncation that input gives read
//   on its own, and writes them all: the output reads back as exactly every input's records
//   ordered by (time, input, position in its file), the order the merge promises;
// - a failed write leaves no output behind.
#if canImport(Glibc)
import Glibc
#endif
@testable import KinetraceTrace

let mergeFolder: String = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
let mergeOutput = "\(mergeFolder)/kinetrace-fuzz-merge-\(getpid())-out.jsonl"
let mergeHeader = Array(#"{"format":"kinetrace-trace","version":1,"minor":1,"profile":"motionlink-v1","capture_point":"controller","clock":"realtime"}"#.utf8) + [0x0A]

func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    invariant(fd >= 0, "cannot create \(path)")
    var written = 0
    bytes.withUnsafeBytes { raw in
        while written < raw.count {
            let n = write(fd, raw.baseAddress! + written, raw.count - written)
            invariant(n > 0, "cannot write \(path)")
            written += n
        }
    }
    close(fd)
}

/// Every record of the trace at `path` read on its own, with its truncation; nil when it does not read.
func readAlone(_ path: String) -> (records: [TraceRecord], truncation: TraceTruncation?)? {
    do throws(TraceError) {
        let reader = try TraceReader(path: path)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        return (records, reader.truncation)
    } catch {
        return nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMerge(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1, let data else { return 0 }
    let config = data[0]
    let count = 2 + Int(config & 1)
    let windowNs: Int64 = config & 2 == 0 ? 1_000_000 : 1_000_000_000
    let withHeader = config & 4 == 0
    let perInput = 2 + Int(config >> 4)
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var pieces = rest.split(separator: 0xFF, maxSplits: count - 1, omittingEmptySubsequences: false).map(Array.init)
    while pieces.count < count { pieces.append([]) }
    let paths = (0..<count).map { "\(mergeFolder)/kinetrace-fuzz-merge-\(getpid())-\($0).jsonl" }
    for (path, piece) in zip(paths, pieces) { writeFile(path, withHeader ? mergeHeader + piece : piece) }
    unlink(mergeOutput)

    let merger: TraceMerger
    do throws(TraceError) {
        merger = try TraceMerger(paths: paths, windowNs: windowNs, maximumWaiting: perInput, maximumWaitingTotal: perInput * 3 / 2)
    } catch {
        invariant(!error.description.contains("\n"), "a two-line error: \(error)")
        invariant(paths.contains(error.source) || error.source == "<merge>", "the error names \(error.source)")
        invariant((error.line ?? 1) >= 1, "error on line \(String(describing: error.line))")
        return 0
    }
    var expected: [(record: TraceRecord, input: Int, position: Int)] = []
    for (index, path) in paths.enumerated() {
        guard let alone = readAlone(path) else {
            invariant(false, "\(path) merges but does not read on its own")
            return 0
        }
        let scanned = merger.scanned.inputs[index]
        invariant(scanned.records == alone.records.count, "input \(index): the merge counted \(scanned.records) records, alone it has \(alone.records.count)")
        invariant(scanned.truncation == alone.truncation, "input \(index): truncation \(String(describing: scanned.truncation)) against \(String(describing: alone.truncation))")
        expected += alone.records.enumerated().map { (record: $0.element, input: index, position: $0.offset) }
    }
    expected.sort { ($0.record.timeNs, $0.input, $0.position) < ($1.record.timeNs, $1.input, $1.position) }
    do throws(TraceError) {
        let summary = try merger.write(to: mergeOutput, header: merger.mergedHeader(created: "2026-11-26T00:00:00.000Z"))
        invariant(summary.recordsWritten == expected.count, "wrote \(summary.recordsWritten) of \(expected.count) records")
    } catch {
        invariant(access(mergeOutput, F_OK) != 0, "a failed merge left \(mergeOutput) behind: \(error)")
        return 0
    }
    guard let merged = readAlone(mergeOutput) else {
        invariant(false, "the merged trace does not read back")
        return 0
    }
    invariant(merged.truncation == nil, "the merged trace is cut: \(String(describing: merged.truncation))")
    invariant(merged.records.count == expected.count, "the merged trace holds \(merged.records.count) of \(expected.count) records")
    for (got, want) in zip(merged.records, expected) where got != want.record {
        invariant(false, "merged \(got) where input \(want.input)'s record \(want.position) (\(want.record)) belongs")
    }
    return 0
}
