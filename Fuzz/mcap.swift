// MCAP traces (Sources/Formats/KinetraceTrace/MCAP/): everything after byte 0 is a file,
// written to $TMPDIR and read by `MCAPTraceReader`, whole and then through a window
// byte 0 picks (start 0 to 63 s after the first record, 1 to 16 s long).
// Checks:
// - every failure is one line, and a byte offset it names lies inside the file;
// - when both readings succeed, the window's records are a subsequence of the whole
//   reading's, each inside the window (a seek never invents or reorders records);
// - whatever reads back through the writer reads back the same (a re-written file
//   round-trips its records exactly, header included).
#if canImport(Glibc)
import Glibc
#endif
import KinetraceSupport
@testable import KinetraceTrace

let mcapPath: String = {
    let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    return "\(folder)/kinetrace-fuzz-mcap-\(getpid())"
}()

/// Records past this many are not compared (a small file holds few; a chunk of zeros could claim many).
let mcapRecordLimit = 20_000

func readMCAP(_ path: String, size: Int, window: TraceWindow?) -> (header: TraceHeader, records: [TraceRecord])? {
    do throws(TraceError) {
        let reader = try MCAPTraceReader(path: path, window: window)
        var records: [TraceRecord] = []
        while let record = try reader.next() {
            records.append(record)
            if records.count > mcapRecordLimit { return nil }
        }
        return (reader.header, records)
    } catch {
        invariant(!error.description.contains("\n"), "a two-line error: \(error)")
        if let offset = error.byteOffset { invariant((0...size).contains(offset), "an error at byte \(offset) of \(size): \(error)") }
        return nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMCAP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1, let data else { return 0 }
    let config = data[0]
    let file = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    // The seeds are whole kinetrace MCAP files: start each from the magic so mutations land on records.
    writeFuzzFile(mcapPath, file)
    guard let whole = readMCAP(mcapPath, size: file.count, window: nil) else { return 0 }
    let window = TraceWindow(startNs: Int64(config & 0x3F) * 1_000_000_000, endNs: Int64(config & 0x3F) * 1_000_000_000 + Int64((config >> 6) * 5 + 1) * 1_000_000_000)
    if let part = readMCAP(mcapPath, size: file.count, window: window), let first = whole.records.first {
        var cursor = 0
        for record in part.records {
            invariant(window.contains(offsetNs: record.timeNs - first.timeNs), "a record outside the window")
            while cursor < whole.records.count && whole.records[cursor] != record { cursor += 1 }
            invariant(cursor < whole.records.count, "the window read a record the whole reading did not, or out of order")
            cursor += 1
        }
    }
    // Written again, it reads back the same.
    let again = mcapPath + ".again"
    defer { unlink(again) }
    do throws(TraceError) {
        let writer = try MCAPTraceWriter(path: again, header: whole.header, compression: config & 1 == 0 ? .none : .zstd)
        for record in whole.records { try writer.write(record) }
        try writer.close()
    } catch {
        // A header naming a protocol this build does not speak cannot be written: nothing to compare.
        invariant(error.code == .unknownProtocol, "cannot write back what was read: \(error)")
        return 0
    }
    guard let back = readMCAP(again, size: Int.max, window: nil) else {
        invariant(false, "cannot read back a file written from what was read")
        return 0
    }
    invariant(back.header == whole.header, "the header changed on a rewrite")
    invariant(back.records == whole.records, "\(back.records.count) records back of \(whole.records.count)")
    return 0
}
