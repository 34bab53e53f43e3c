import CZlib

/// A gzip stream built in memory, for `TraceWriter` on a `.gz` path: each `compress`
/// hands back the bytes for what it was given, ending at a sync point, so a killed
/// writer leaves a file that reads up to its last flush (and says it was cut).
final class GzipDeflater {
    private var stream = z_stream()
    private var output = [UInt8](repeating: 0, count: 1 << 16)

    init?() {
        // 15 window bits + 16: a gzip header and trailer rather than zlib's.
        guard deflateInit2_(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
    }

    deinit { deflateEnd(&stream) }

    /// The compressed bytes for `input`, flushed to a sync point, or with `finish` the stream's end.
    func compress(_ input: [UInt8], finish: Bool = false) -> [UInt8] {
        var compressed: [UInt8] = []
        var input = input
        input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = UInt32(source.count)
            let mode = finish ? Z_FINISH : Z_SYNC_FLUSH
            while true {
                let (status, produced) = output.withUnsafeMutableBufferPointer { target -> (Int32, Int) in
                    stream.next_out = target.baseAddress
                    stream.avail_out = UInt32(target.count)
                    let status = deflate(&stream, mode)
                    return (status, target.count - Int(stream.avail_out))
                }
                compressed += output[0..<produced]
                // Done once deflate had room to spare (a sync flush), or reported the stream's end.
                if status == Z_STREAM_END || (status != Z_STREAM_ERROR && stream.avail_out > 0 && stream.avail_in == 0 && !finish) { break }
                if status == Z_STREAM_ERROR || (status == Z_BUF_ERROR && produced == 0) { break }  // no progress possible
            }
            stream.next_in = nil
        }
        return compressed
    }
}
