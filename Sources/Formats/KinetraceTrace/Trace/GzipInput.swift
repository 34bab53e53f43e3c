#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CZlib
import KinetraceSupport

/// A gzip-compressed trace inflated through zlib as a stream, member after member as
/// gzip does: memory stays one small read buffer plus zlib's 32 KiB window, whatever the
/// compression ratio, so a decompression bomb costs time, not memory.
///
/// zlib's gz* file API is not used: it keeps a 3x buffer of its own, opens the file a
/// second time, and skips bytes after the last member silently. Here bytes after a
/// member that do not start another member are an error naming their offset, except
/// zero bytes to the end of the file (block padding, which `gzip -t` also accepts).
final class GzipInput {
    /// Where compressed bytes come from after `initial`; nil when `initial` is the whole input.
    private let file: POSIXFile?
    private let path: String
    private var stream = z_stream()
    /// Compressed bytes read from the file and not yet given to zlib (`stream.next_in`).
    private let compressed: UnsafeMutableRawBufferPointer
    /// Compressed bytes taken from the file so far.
    private var fileOffset = 0
    private var atFileEnd = false
    private var finished = false
    /// An error found after some bytes of a read were inflated: thrown by the next read, so
    /// every byte before it is handed out whatever the read sizes.
    private var pendingError: TraceError?
    /// Uncompressed bytes handed out so far, for error offsets.
    private(set) var offset = 0
    /// Set when the file ended inside a member: a cut file (at a flush point or not).
    private(set) var truncated = false

    /// The gzip magic bytes, 1F 8B, that every gzip member starts with.
    static func isGzip(_ firstBytes: [UInt8]) -> Bool { firstBytes.count >= 2 && firstBytes[0] == 0x1F && firstBytes[1] == 0x8B }

    /// The compressed read buffer unless told: zlib takes its input in pieces of any size.
    static let defaultBufferBytes = 64 << 10
    /// The smallest buffer, for merges of thousands of inputs.
    static let minimumBufferBytes = 1 << 10

    /// Inflates `file`, whose first bytes, already read, are `initial` (with no file, `initial` is all of it).
    init(file: POSIXFile?, path: String, initial: [UInt8], bufferBytes: Int = defaultBufferBytes) throws(TraceError) {
        self.file = file
        self.path = path
        compressed = .allocate(byteCount: max(bufferBytes, Self.minimumBufferBytes, initial.count), alignment: 8)
        initial.withUnsafeBytes { compressed.copyMemory(from: $0) }
        fileOffset = initial.count
        // 15 window bits + 16: gzip framing only (a zlib or raw stream is not a .gz).
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            compressed.deallocate()
            throw TraceError(.io, source: path, message: "cannot start gzip decompression: zlib is out of memory")
        }
        stream.next_in = compressed.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.avail_in = UInt32(initial.count)
    }

    deinit {
        inflateEnd(&stream)
        compressed.deallocate()
    }

    /// Compressed bytes consumed by zlib so far: where it stands in the file.
    var compressedOffset: Int { fileOffset - Int(stream.avail_in) }

    /// Fills `buffer` with uncompressed bytes; 0 at the end (check `truncated`).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(TraceError) -> Int {
        if let pendingError { throw pendingError }
        guard !finished, let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let room = UInt32(clamping: buffer.count)
        stream.next_out = base.assumingMemoryBound(to: Bytef.self)
        stream.avail_out = room
        defer { stream.next_out = nil; stream.avail_out = 0 }
        do throws(TraceError) {
            try inflateSome(room: room)
        } catch {
            guard stream.avail_out < room else { throw error }
            pendingError = error
        }
        let produced = Int(room - stream.avail_out)
        offset += produced
        return produced
    }

    /// Inflates into `stream.next_out` until some bytes come out or the input ends.
    private func inflateSome(room: UInt32) throws(TraceError) {
        while stream.avail_out == room && !finished {
            // zlib first: it may hold output (the rest of a match) that needs no more input.
            let status = inflate(&stream, Z_NO_FLUSH)
            switch status {
            case Z_OK:
                continue
            case Z_BUF_ERROR where stream.avail_in == 0:
                // No progress without input: read more, or the file ended inside a member (no trailer).
                if try readCompressed() == 0 {
                    truncated = true
                    finished = true
                }
            case Z_STREAM_END:
                try startNextMember()
            default:
                let reason = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                throw TraceError(.badRecord, source: path, byteOffset: compressedOffset,
                                 message: "the gzip stream is corrupt here (zlib: \(reason)), after \(offset + Int(room - stream.avail_out)) uncompressed bytes")
            }
        }
    }

    /// After a member's trailer: another member (gzip concatenates them), the end of the
    /// file, zero padding to the end, or else trailing garbage, an error at its offset.
    private func startNextMember() throws(TraceError) {
        let memberEnd = compressedOffset
        while stream.avail_in < 2 {
            // Keep what is left at the front and read after it.
            let left = Int(stream.avail_in)
            if left > 0 { memmove(compressed.baseAddress!, stream.next_in, left) }
            stream.next_in = compressed.baseAddress!.assumingMemoryBound(to: Bytef.self)
            let n = try readFile(into: UnsafeMutableRawBufferPointer(rebasing: compressed[left...]))
            stream.avail_in = UInt32(left + n)
            if n == 0 { break }
        }
        if stream.avail_in == 0 {
            finished = true
            return
        }
        if stream.avail_in >= 2 && stream.next_in[0] == 0x1F && stream.next_in[1] == 0x8B {
            inflateReset(&stream)
            return
        }
        // Not a member: only zeros may follow, to the end of the file.
        while true {
            let pending = UnsafeRawBufferPointer(start: stream.next_in, count: Int(stream.avail_in))
            if let nonzero = pending.firstIndex(where: { $0 != 0 }) {
                let at = compressedOffset + nonzero
                let padding = at > memberEnd ? " (zero padding up to byte \(at))" : ""
                throw TraceError(.badRecord, source: path, byteOffset: memberEnd,
                                 message: "trailing garbage: the bytes after the last gzip member\(padding) are not another member; only zero padding may follow it")
            }
            stream.avail_in = 0
            if try readCompressed() == 0 { break }
        }
        finished = true
    }

    /// Reads more compressed bytes into the (empty) buffer; 0 at the end of the file.
    private func readCompressed() throws(TraceError) -> Int {
        stream.next_in = compressed.baseAddress!.assumingMemoryBound(to: Bytef.self)
        let n = try readFile(into: compressed)
        stream.avail_in = UInt32(n)
        return n
    }

    private func readFile(into space: UnsafeMutableRawBufferPointer) throws(TraceError) -> Int {
        guard !atFileEnd, space.count > 0, let file else { return 0 }
        let n: Int
        do throws(FileError) { n = try file.read(into: space) } catch { throw TraceError(error) }
        if n == 0 { atFileEnd = true }
        fileOffset += n
        return n
    }
}
