// gzip framing (Sources/Formats/KinetraceTrace/Trace/GzipInput.swift): everything after
// byte 0 is a file, written to $TMPDIR and inflated by `GzipInput` as `TraceReader` hands
// it over (the first two bytes already read, the rest from the file), member after member.
// Byte 0 picks the compressed buffer (16 << (bits 0-2) bytes: 16 to 2,048, so a member
// crosses refills) and the read size (bits 6-7: 7, 100, 4,096 or 65,536 bytes).
// Checks:
// - the outcome (a clean end, a cut, trailing garbage at an offset, or corruption) and the
//   bytes inflated are the same whatever the buffer and read sizes (the file is inflated
//   again with the whole of it in the buffer and 64 KiB reads);
// - a file that starts with the gzip magic and ends cleanly or in trailing garbage inflates
//   to exactly what zlib's own gz reader (gzread, which skips trailing garbage) gives;
// - offsets lie inside the file: the consumed count, and trailing garbage's offset (after at
//   least one whole member, before the file's end).
#if canImport(Glibc)
import Glibc
#endif
import CZlib
import KinetraceSupport
@testable import KinetraceTrace

let gzipPath: String = {
    let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    return "\(folder)/kinetrace-fuzz-gzip-\(getpid())"
}()

/// Inflated output beyond this is not compared (a bomb of 4 KB inflates to 4 MB at most anyway).
let gzipOutputLimit = 8 << 20

enum GzipEnd: Equatable {
    case clean, cut, garbage(offset: Int), corrupt, limit
}

struct GzipOutcome {
    var bytes: [UInt8] = []
    var end = GzipEnd.clean
}

func inflateFile(size: Int, bufferBytes: Int, readSize: Int) -> GzipOutcome {
    var outcome = GzipOutcome()
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 8)
    defer { chunk.deallocate() }
    do throws(TraceError) {
        let file: POSIXFile
        var first: [UInt8] = []
        do throws(FileError) {
            file = try POSIXFile(path: gzipPath, mode: .read)
            let magic = UnsafeMutableRawBufferPointer.allocate(byteCount: 2, alignment: 1)
            defer { magic.deallocate() }
            while first.count < 2 {
                let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: magic[first.count...]))
                if n == 0 { break }
                first += magic[first.count..<(first.count + n)]
            }
        } catch {
            invariant(false, "cannot read back \(gzipPath): \(error)")
            return outcome
        }
        let gzip = try GzipInput(file: file, path: gzipPath, initial: first, bufferBytes: bufferBytes)
        while true {
            let n = try gzip.read(into: chunk)
            invariant(n >= 0 && n <= readSize, "read \(n) into \(readSize) bytes")
            invariant(gzip.compressedOffset <= size, "consumed \(gzip.compressedOffset) of \(size) bytes")
            if n == 0 { break }
            outcome.bytes += UnsafeRawBufferPointer(rebasing: chunk[0..<n])
            if outcome.bytes.count > gzipOutputLimit {
                outcome.end = .limit
                return outcome
            }
        }
        invariant(gzip.offset == outcome.bytes.count, "offset \(gzip.offset) after \(outcome.bytes.count) bytes")
        outcome.end = gzip.truncated ? .cut : .clean
    } catch {
        invariant(!error.description.contains("\n"), "a two-line error: \(error)")
        if error.message.hasPrefix("trailing garbage") {
            let offset = error.byteOffset ?? -1
            invariant(offset >= 18 && offset < size, "trailing garbage at \(offset) of \(size) bytes")
            outcome.end = .garbage(offset: offset)
        } else {
            invariant(error.code == .badRecord, "unexpected error \(error)")
            invariant((0...size).contains(error.byteOffset ?? -1), "corruption at \(String(describing: error.byteOffset)) of \(size) bytes")
            outcome.end = .corrupt
        }
    }
    return outcome
}

/// What zlib's gz reader inflates from the file (it skips trailing garbage), or nil when it reports an error.
func gzread(size: Int) -> [UInt8]? {
    guard let file = gzopen(gzipPath, "rb") else { return nil }
    defer { gzclose_r(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { gzread(file, $0.baseAddress, UInt32($0.count)) }
        if n < 0 { return nil }
        if n == 0 { break }
        bytes += chunk[0..<Int(n)]
        if bytes.count > gzipOutputLimit { return nil }
    }
    var code: Int32 = 0
    _ = gzerror(file, &code)
    return code == Z_OK ? bytes : nil
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGzip(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1, let data else { return 0 }
    let config = data[0]
    let file = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    writeFuzzFile(gzipPath, file)
    let readSizes = [7, 100, 4096, 65536]
    let small = inflateFile(size: file.count, bufferBytes: 16 << Int(config & 7), readSize: readSizes[Int(config >> 6)])
    let whole = inflateFile(size: file.count, bufferBytes: max(file.count, 16), readSize: 65536)
    guard small.end != .limit && whole.end != .limit else { return 0 }
    if small.end == .corrupt || whole.end == .corrupt {
        // Where zlib notices corruption depends on how much input it had; that it does, does not.
        invariant(small.end == whole.end, "corrupt one way, \(small.end == .corrupt ? whole.end : small.end) the other")
        let common = min(small.bytes.count, whole.bytes.count)
        invariant(small.bytes.prefix(common) == whole.bytes.prefix(common), "the two readings inflate different bytes before the corruption")
        return 0
    }
    invariant(small.end == whole.end, "ends \(small.end) with a small buffer, \(whole.end) with the whole file")
    invariant(small.bytes == whole.bytes, "\(small.bytes.count) bytes with a small buffer, \(whole.bytes.count) with the whole file")
    let startsAsGzip = file.count >= 2 && file[0] == 0x1F && file[1] == 0x8B
    switch whole.end {
    case .clean, .garbage:
        guard startsAsGzip else { break }
        if let reference = gzread(size: file.count) {
            invariant(reference == whole.bytes, "gzread inflates \(reference.count) bytes, GzipInput \(whole.bytes.count) (\(whole.end))")
        } else {
            invariant(false, "gzread fails on a file GzipInput reads to \(whole.end)")
        }
    default: break
    }
    return 0
}
