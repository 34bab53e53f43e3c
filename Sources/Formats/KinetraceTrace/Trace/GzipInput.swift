#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CZlib

/// A gzip-compressed trace read through zlib as a stream: memory stays one buffer
/// whatever the compression ratio, so a decompression bomb costs time, not memory.
final class GzipInput {
    private let file: gzFile
    private let path: String
    /// Uncompressed bytes handed out so far, for error offsets.
    private(set) var offset = 0
    /// Set when the compressed stream ended before its end (a cut file).
    private(set) var truncated = false

    /// The gzip magic bytes, 1F 8B, that every gzip file starts with.
    static func isGzip(_ firstBytes: [UInt8]) -> Bool { firstBytes.count >= 2 && firstBytes[0] == 0x1F && firstBytes[1] == 0x8B }

    init(path: String) throws(TraceError) {
        guard let file = gzopen(path, "rb") else {
            throw TraceError(.badHeader, source: path, byteOffset: 0, message: "cannot open as gzip: \(String(cString: strerror(errno)))")
        }
        gzbuffer(file, 1 << 17)
        self.file = file
        self.path = path
    }

    deinit { gzclose_r(file) }

    /// Compressed bytes consumed from the file so far.
    var compressedOffset: Int { Int(gzoffset(file)) }

    /// Fills `buffer` with uncompressed bytes; 0 at the end (check `truncated`).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(TraceError) -> Int {
        let count = gzread(file, buffer.baseAddress, UInt32(clamping: buffer.count))
        var code: Int32 = 0
        var message = gzerror(file, &code).map { String(cString: $0) } ?? ""
        if message.hasPrefix(path + ": ") { message.removeFirst(path.count + 2) }  // zlib names the file itself
        if count < 0 || (code != Z_OK && code != Z_BUF_ERROR) {
            // zlib inflates ahead of what it hands out, so the place is only "after so many bytes".
            throw TraceError(.badRecord, source: path,
                             message: "the gzip stream is corrupt (zlib: \(message.isEmpty ? "error \(code)" : message)) after \(offset) uncompressed bytes were read")
        }
        // zlib reports a stream cut short as Z_BUF_ERROR once its input runs out.
        if count == 0 && code == Z_BUF_ERROR { truncated = true }
        offset += Int(count)
        return Int(count)
    }
}
