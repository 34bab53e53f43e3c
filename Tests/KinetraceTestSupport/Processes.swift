import Foundation

/// Shared by the test targets that drive real processes: paths, temporary
/// directories, a process runner, a background-process handle, and a plain
/// UDP socket. (Test targets cannot share source files; this target can.)
package enum Fixture {
    package static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The bundled synthetic trace.
    package static var bundledTrace: String { packageRoot.appendingPathComponent("captures/synthetic-session.jsonl").path }

    /// The `kinetrace` built next to the test bundle (`swift build --build-tests` builds both).
    package static var binary: URL {
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

    /// A fresh temporary directory; the caller removes it.
    package static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kinetrace-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    package static func remove(_ url: URL) { try? FileManager.default.removeItem(at: url) }

    /// A system tool by name, from the usual places.
    package static func tool(_ name: String) throws -> URL {
        for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"] {
            let url = URL(fileURLWithPath: dir).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw FixtureError("\(name) is not installed (scripts/bootstrap installs it)")
    }

    package static var isRoot: Bool { getuid() == 0 }

    /// Whether `python3` is on PATH (the stdio example hosts are Python).
    package static var hasPython: Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/python3")
        }
    }
}

package struct FixtureError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

package struct RunResult: Sendable {
    package var status: Int32
    /// True when the process ended by a signal (a crash), not an exit.
    package var signalled: Bool
    package var stdout: String
    package var stderr: String
}

/// A child process whose output is collected as it runs; killed on deinit
/// so a failing test never leaves it behind.
package final class Background: @unchecked Sendable {
    package let process = Process()
    private let lock = NSLock()
    private var out = Data(), err = Data()
    private let outPipe = Pipe(), errPipe = Pipe()

    package init(_ executable: URL, _ arguments: [String]) throws {
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

    package static func kinetrace(_ arguments: String...) throws -> Background { try Background(try Fixture.binary, arguments) }

    package var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    package var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    /// Waits until standard output has a line starting with `prefix`; returns that line.
    package func waitForLine(startingWith prefix: String, timeout: TimeInterval = 30) throws -> String {
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
    package func stop(_ signal: Int32 = SIGINT, timeout: TimeInterval = 30) throws -> RunResult {
        if process.isRunning { kill(process.processIdentifier, signal) }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw FixtureError("process did not exit within \(timeout) s of signal \(signal)")
        }
        process.waitUntilExit()
        try drainPipes()
        return RunResult(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
                         stdout: stdout, stderr: stderr)
    }

    package func wait(timeout: TimeInterval = 60) throws -> RunResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        return try stop(SIGKILL, timeout: 5)
    }

    /// Stops the asynchronous readers and reads whatever is left up to end of file,
    /// for at most `timeout` seconds: a grandchild that inherited the pipes and
    /// outlives the child would otherwise keep the test waiting for ever.
    private func drainPipes(timeout: TimeInterval = 30) throws {
        outPipe.fileHandleForReading.readabilityHandler = nil
        errPipe.fileHandleForReading.readabilityHandler = nil
        let deadline = Date().addingTimeInterval(timeout)
        let restOut = Self.readToEnd(outPipe.fileHandleForReading.fileDescriptor, until: deadline)
        let restErr = Self.readToEnd(errPipe.fileHandleForReading.fileDescriptor, until: deadline)
        lock.withLock {
            out.append(restOut.data)
            err.append(restErr.data)
        }
        guard restOut.ended && restErr.ended else {
            throw FixtureError("process \(process.processIdentifier) exited, but its output was still open \(timeout) s later "
                               + "(a child of it holds the pipe); stdout: \(stdout) stderr: \(stderr)")
        }
    }

    /// Reads `fd` until end of file or `deadline`; `ended` is false when the deadline came first.
    private static func readToEnd(_ fd: Int32, until deadline: Date) -> (data: Data, ended: Bool) {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return (data, false) }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining, 1) * 1000) + 1)
            if ready < 0 && errno != EINTR { return (data, true) }
            guard ready > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { data.append(contentsOf: buffer[0..<n]) } else if n == 0 || (errno != EINTR && errno != EAGAIN) { return (data, true) }
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

/// Runs a program to completion (killed after `timeout`, so a hang fails
/// the test instead of the suite).
@discardableResult
package func run(_ executable: URL, _ arguments: [String], timeout: TimeInterval = 60) throws -> RunResult {
    let child = try Background(executable, arguments)
    return try child.wait(timeout: timeout)
}

package func kinetrace(_ arguments: String...) throws -> RunResult { try run(try Fixture.binary, arguments) }
package func kinetrace(_ arguments: [String], timeout: TimeInterval = 60) throws -> RunResult {
    try run(try Fixture.binary, arguments, timeout: timeout)
}

/// A plain UDP socket on loopback, for sending hand-made datagrams to a host.
package final class TestSocket {
    package let fd: Int32
    package init(v6: Bool = false) {
        fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var timeout = timeval(tv_sec: 0, tv_usec: 500_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
    deinit { close(fd) }

    package func send(_ bytes: [UInt8], toPort port: UInt16) {
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

    /// Binds to 127.0.0.1 port 0; returns the port the kernel chose.
    package func bindLoopback() -> UInt16 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return UInt16(bigEndian: address.sin_port)
    }

    /// The next datagram, or nil after the receive timeout (0.5 s: enough to say
    /// nothing came when nothing is owed; wait for an owed reply with `receive(within:)`).
    package func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n >= 0 ? Array(buffer[0..<n]) : nil
    }

    /// The next datagram and the port it came from, waiting up to `seconds` for it.
    package func receiveWithSender(within seconds: TimeInterval) -> (bytes: [UInt8], port: UInt16)? {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while Date() < deadline {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            if n >= 0 { return (Array(buffer[0..<n]), UInt16(bigEndian: address.sin_port)) }
        }
        return nil
    }

    /// The next datagram, waiting up to `seconds` for it (a loaded machine can be slow to answer).
    package func receive(within seconds: TimeInterval) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let datagram = receive() { return datagram }
        }
        return nil
    }
}

/// The port in a "listening on ADDRESS:PORT" line.
package func port(in line: String) throws -> UInt16 {
    guard let text = line.split(separator: ":").last, let port = UInt16(text) else { throw FixtureError("no port in \(line)") }
    return port
}

/// Polls `condition` until it holds: the way to wait for an event a test cannot
/// be told of directly. The limit only turns a hang into a failure naming `what`;
/// no verdict rests on how long it took.
package func waitUntil(_ what: @autoclosure () -> String, timeout: TimeInterval = 30, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { throw FixtureError("gave up after \(timeout) s waiting for \(what())") }
        usleep(10_000)
    }
}

extension Background {
    /// Lines of standard error containing `text` so far (a host's `-v` logs one line per decision).
    package func stderrLines(containing text: String) -> Int {
        stderr.split(separator: "\n").filter { $0.contains(text) }.count
    }
}
