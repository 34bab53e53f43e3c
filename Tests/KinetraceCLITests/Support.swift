import Foundation
import Testing

/// Paths and a process runner for tests that drive the real `kinetrace` binary.
enum Fixture {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var bundledTrace: String { packageRoot.appendingPathComponent("captures/synthetic-session.jsonl").path }

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

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kinetrace-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
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
func run(_ executable: URL, _ arguments: [String], timeout: TimeInterval = 60) throws -> RunResult {
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

func kinetrace(_ arguments: String...) throws -> RunResult { try run(try Fixture.binary, arguments) }
func kinetrace(_ arguments: [String]) throws -> RunResult { try run(try Fixture.binary, arguments) }
