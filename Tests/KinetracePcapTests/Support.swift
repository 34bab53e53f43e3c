import Foundation
import Testing

/// Paths, temporary directories and a process runner for tests that drive
/// real tools (tcpdump, tshark, editcap, text2pcap) and the `kinetrace` binary.
enum Fixture {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `kinetrace` built next to the test bundle (`swift build --build-tests` builds both).
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

    /// A fresh temporary directory; remove it with `defer { Fixture.remove(dir) }`.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kinetrace-pcap-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func remove(_ url: URL) { try? FileManager.default.removeItem(at: url) }

    /// A system tool by name, from the usual places.
    static func tool(_ name: String) throws -> URL {
        for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"] {
            let url = URL(fileURLWithPath: dir).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw FixtureError("\(name) is not installed (scripts/bootstrap installs it)")
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

struct RunResult {
    var status: Int32
    /// True when the process ended by a signal (a crash), not an exit.
    var signalled: Bool
    var stdout: String
    var stderr: String
}

/// Runs a program to completion, killing it after `timeout` seconds so a
/// hang fails the test instead of the suite.
@discardableResult
func run(_ executable: URL, _ arguments: [String], timeout: TimeInterval = 30) throws -> RunResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Drain both pipes concurrently so a chatty child cannot block on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var outData = Data(), errData = Data()
    DispatchQueue.global().async(group: group) { outData = out.fileHandleForReading.readDataToEndOfFile() }
    DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(5_000) }
    if process.isRunning {
        process.terminate()
        process.waitUntilExit()
        throw FixtureError("\(executable.lastPathComponent) \(arguments) did not finish within \(timeout) s")
    }
    process.waitUntilExit()
    group.wait()
    return RunResult(status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
                     stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
}

/// Runs a tool that must succeed.
@discardableResult
func runTool(_ name: String, _ arguments: [String]) throws -> RunResult {
    let result = try run(try Fixture.tool(name), arguments)
    guard result.status == 0, !result.signalled else {
        throw FixtureError("\(name) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
    }
    return result
}

func kinetrace(_ arguments: String...) throws -> RunResult { try run(try Fixture.binary, arguments) }

/// Lower-case hex of bytes.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Bytes from hex text, ignoring spaces.
func bytes(_ hexText: String) -> [UInt8] {
    let digits = Array(hexText.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0..<$0 + 2]), radix: 16)! }
}

/// tshark's `frame.time_epoch` text ("1700000000.123456789") as integer nanoseconds.
func nanoseconds(epochText: String) -> Int64 {
    let parts = epochText.split(separator: ".")
    let fraction = parts.count > 1 ? String(parts[1]) : ""
    let padded = (fraction + "000000000").prefix(9)
    return Int64(parts[0])! * 1_000_000_000 + Int64(padded)!
}

/// Reads fields with tshark, one array per packet. Checksum validation on.
func tsharkFields(_ file: String, _ fields: [String]) throws -> [[String]] {
    var arguments = ["-r", file, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|"]
    for field in fields { arguments += ["-e", field] }
    let result = try runTool("tshark", arguments)
    return result.stdout.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
}
