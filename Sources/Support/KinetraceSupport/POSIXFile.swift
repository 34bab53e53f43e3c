#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file descriptor with the few calls the formats need, retrying EINTR
/// and short writes. Errors come back as `FileError` naming the file.
package final class POSIXFile {
    package let path: String
    private var fd: Int32

    package enum Mode { case read, createTruncate, append }

    package init(path: String, mode: Mode) throws(FileError) {
        self.path = path
        let flags: Int32
        switch mode {
        case .read: flags = O_RDONLY
        case .createTruncate: flags = O_WRONLY | O_CREAT | O_TRUNC
        case .append: flags = O_WRONLY | O_CREAT | O_APPEND
        }
        let fd = open(path, flags | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.error(errno, path: path, doing: mode == .read ? "open" : "create") }
        self.fd = fd
        if mode == .read {
            var info = stat()
            if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                _ = Glibc_close(fd)
                self.fd = -1
                throw FileError(.unreadable, path: path, message: "is a directory, not a file")
            }
        }
    }

    deinit { if fd >= 0 { _ = Glibc_close(fd) } }

    static func error(_ code: Int32, path: String, doing action: String) -> FileError {
        let reason = String(cString: strerror(code))
        let kind: FileError.Code
        switch (code, action) {
        case (_, "create"): kind = .cannotCreate
        case (ENOENT, _): kind = .notFound
        case (EACCES, "open"), (EISDIR, "open"), (ELOOP, "open"): kind = .unreadable
        default: kind = .io
        }
        return FileError(kind, path: path, message: "cannot \(action): \(reason)")
    }

    /// Reads up to `count` bytes into `buffer`; 0 means end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(FileError) -> Int {
        while true {
            let n = Glibc_read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw Self.error(errno, path: path, doing: "read")
        }
    }

    /// Reads up to `buffer.count` bytes from byte `offset` without moving the file position; 0 means end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(FileError) -> Int {
        while true {
            let n = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw Self.error(errno, path: path, doing: "read")
        }
    }

    /// Fills `buffer` from byte `offset`; false when the file ends first.
    package func readFully(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(FileError) -> Bool {
        var filled = 0
        while filled < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), at: offset + filled)
            if n == 0 { return false }
            filled += n
        }
        return true
    }

    /// The file's size now, in bytes.
    package func size() throws(FileError) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.error(errno, path: path, doing: "stat") }
        return Int(info.st_size)
    }

    /// Writes all of `bytes`.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(FileError) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc_write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            throw Self.error(n < 0 ? errno : EIO, path: path, doing: "write")
        }
    }

    /// Asks the kernel to put written data on disk.
    package func sync() throws(FileError) {
        if fsync(fd) != 0 && errno != EINVAL { throw Self.error(errno, path: path, doing: "sync") }
    }

    /// Cuts the file to `length` bytes (after a failed write, to drop a torn tail).
    package func truncate(to length: Int64) throws(FileError) {
        guard fd >= 0 else { return }
        while ftruncate(fd, off_t(length)) != 0 {
            if errno == EINTR { continue }
            throw Self.error(errno, path: path, doing: "truncate")
        }
    }

    package func close() throws(FileError) {
        guard fd >= 0 else { return }
        let result = Glibc_close(fd)
        fd = -1
        if result != 0 { throw Self.error(errno, path: path, doing: "close") }
    }
}

// The platform calls, renamed so they don't clash with the methods above.
@inline(__always) private func Glibc_read(_ fd: Int32, _ buf: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, buf, n) }
@inline(__always) private func Glibc_write(_ fd: Int32, _ buf: UnsafeRawPointer, _ n: Int) -> Int { write(fd, buf, n) }
@inline(__always) private func Glibc_close(_ fd: Int32) -> Int32 { close(fd) }


/// A file could not be opened, read or written: which file, what failed.
package struct FileError: Error, Hashable, Sendable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let name: String
        package init(_ name: String) { self.name = name }
        package var description: String { name }

        /// The file does not exist.
        package static let notFound = Code("not_found")
        /// The file exists but cannot be opened for reading (permissions, a directory).
        package static let unreadable = Code("unreadable")
        /// An output file cannot be created (no such directory, no permission).
        package static let cannotCreate = Code("cannot_create")
        /// The operating system refused a read or write.
        package static let io = Code("io")
    }

    package var code: Code
    package var path: String
    package var message: String

    package init(_ code: Code, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    package var description: String { "\(path): \(message)" }
}
