// Shared by every fuzz target (compiled into each one).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A broken invariant is a finding: say which, then abort so libFuzzer saves the input.
@inline(never)
func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
               file: StaticString = #fileID, line: UInt = #line) {
    guard !condition() else { return }
    var text = "fuzz invariant broken at \(file):\(line): \(message())\n"
    _ = text.withUTF8 { write(2, $0.baseAddress, $0.count) }
    abort()
}

/// The fuzzer's input as a buffer (an empty input has no base address).
@inline(__always)
func withInput<R>(_ data: UnsafePointer<UInt8>?, _ size: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    body(UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size))
}

/// Same value, comparing floating point by bit pattern (so -0 and NaN payloads count).
func sameBits(_ a: Double, _ b: Double) -> Bool { a.bitPattern == b.bitPattern || (a.isNaN && b.isNaN) }

/// Writes a fuzz input to `path` whole, for targets that read files (replacing what was there).
func writeFuzzFile(_ path: String, _ bytes: UnsafeRawBufferPointer) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    invariant(fd >= 0, "cannot create \(path)")
    var written = 0
    while written < bytes.count {
        let n = write(fd, bytes.baseAddress! + written, bytes.count - written)
        invariant(n > 0, "cannot write \(path)")
        written += n
    }
    close(fd)
}
