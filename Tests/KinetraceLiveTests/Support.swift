import Foundation
import Testing

/// Paths, a process runner and a background-process handle for tests that
/// start the real `kinetrace` processes together on loopback.
enum Fixture {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var binary: URL {
        get throws {
            var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = dir.appendingPathComponent("kinetrace")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                dir = dir.deletingLastPathComponent()
            }
            throw FixtureError("kinetrace binary not found next to \(CommandLine.arguments[0]); run `swift build --build-tests` first")
        }
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kinetrace-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static var isRoot: Bool { getuid() == 0 }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

struct RunResult {
    var status: Int32
    var signalled: Bool
    var stdout: String
    var stderr: String
}

/// A child process whose output is collected as it runs; killed on deinit
/// so a failing test never leaves it behind.
final class Background: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var out = Data(), err = Data()
    private let outPipe = Pipe(), errPipe = Pipe()

    init(_ executable: URL, _ arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        outPipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            self?.lock.withLock { self?.out.append(d) }
        }
        errPipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            self?.lock.withLock { self?.err.append(d) }
        }
        try process.run()
    }

    static func kinetrace(_ arguments: String...) throws -> Background { try Background(try Fixture.binary, arguments) }

    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    /// Waits until standard output has a line starting with `prefix`; returns that line.
    func waitForLine(startingWith prefix: String, timeout: TimeInterval = 30) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) { return String(line) }
            if !process.isRunning { break }
            usleep(10_000)
        }
        throw FixtureError("no line starting with \"\(prefix)\" within \(timeout) s; stdout: \(stdout) stderr: \(stderr)")
    }

    /// Sends `signal` and waits for the process to exit.
    @discardableResult
    func stop(_ signal: Int32 = SIGINT, timeout: TimeInterval = 30) throws -> RunResult {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw FixtureError("process did not exit within \(timeout) s of signal \(signal)")
        }
        process.waitUntilExit()
        drainPipes()
        return RunResult(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
                         stdout: stdout, stderr: stderr)
    }

    func wait(timeout: TimeInterval = 60) throws -> RunResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        return try stop(SIGKILL, timeout: 5)
    }

    /// Stops the asynchronous readers and reads whatever is left up to end of file.
    private func drainPipes() {
        outPipe.fileHandleForReading.readabilityHandler = nil
        errPipe.fileHandleForReading.readabilityHandler = nil
        let restOut = outPipe.fileHandleForReading.readDataToEndOfFile()
        let restErr = errPipe.fileHandleForReading.readDataToEndOfFile()
        lock.withLock {
            out.append(restOut)
            err.append(restErr)
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        outPipe.fileHandleForReading.readabilityHandler = nil
        errPipe.fileHandleForReading.readabilityHandler = nil
    }
}

/// Runs a program to completion (killed after `timeout`).
func run(_ executable: URL, _ arguments: [String], timeout: TimeInterval = 60) throws -> RunResult {
    let child = try Background(executable, arguments)
    return try child.wait(timeout: timeout)
}

func kinetrace(_ arguments: String...) throws -> RunResult { try run(try Fixture.binary, arguments) }

/// A plain UDP socket on loopback, for sending hand-made datagrams to a host.
final class TestSocket {
    let fd: Int32
    init(v6: Bool = false) {
        fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var timeout = timeval(tv_sec: 0, tv_usec: 500_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
    deinit { close(fd) }

    func send(_ bytes: [UInt8], toPort port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// The next datagram, or nil after the receive timeout.
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n >= 0 ? Array(buffer[0..<n]) : nil
    }
}

/// The port in a "listening on ADDRESS:PORT" line.
func port(in line: String) throws -> UInt16 {
    guard let text = line.split(separator: ":").last, let port = UInt16(text) else { throw FixtureError("no port in \(line)") }
    return port
}
