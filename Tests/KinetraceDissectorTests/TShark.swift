import Foundation
import KinetraceTestSupport

/// Runs text2pcap and tshark (with tools/wireshark/motionlink.lua) in a
/// fresh temporary directory that also serves as HOME, so a copy of the
/// dissector in the user's personal plugins folder or personal preferences
/// cannot interfere.
struct TShark: ~Copyable {
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let dissector = repoRoot.appendingPathComponent("tools/wireshark/motionlink.lua")

    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin", "/usr/local/bin"] {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Both tools (Debian package `tshark` brings text2pcap too). Outside CI their
    /// absence skips the suites; in CI (scripts/bootstrap installs them) it fails them.
    static let requirement = Requirement("tshark and text2pcap on PATH (Debian package tshark)",
                                         met: executable("tshark") != nil && executable("text2pcap") != nil)

    /// A tool that has not finished in this long is stuck: the run fails instead of hanging the suite.
    static let timeout: TimeInterval = 60

    /// The fields every decoding test asks for, in output column order.
    static let fields = [
        "frame.number", "motionlink.kind", "motionlink.t_ms", "motionlink.ax", "motionlink.ay",
        "motionlink.az", "motionlink.wx", "motionlink.wy", "motionlink.wz", "motionlink.echo_t_ms",
        "motionlink.intensity", "motionlink.sharpness", "motionlink.check", "motionlink.check.computed",
        "motionlink.check.status", "motionlink.valid", "motionlink.reason", "motionlink.trigger",
        "motionlink.t_utc", "_ws.col.Info", "_ws.expert.message", "_ws.expert.severity", "_ws.expert.group",
    ]

    let directory: URL
    private var captures = 0

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("kinetrace-dissector-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Self.requirement.check()
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Writes the datagrams as a capture file and returns its path.
    mutating func capture(_ datagrams: [Datagram]) throws -> String {
        captures += 1
        let text = directory.appendingPathComponent("capture\(captures).txt")
        let pcap = directory.appendingPathComponent("capture\(captures).pcapng")
        try text2pcapInput(datagrams).write(to: text, atomically: true, encoding: .utf8)
        _ = try run("text2pcap", ["-q", text.path, pcap.path])
        return pcap.path
    }

    /// tshark -T fields over `file`: one dictionary per packet, keyed by field name.
    func decode(_ file: String, extra: [String] = []) throws -> [[String: String]] {
        var arguments = ["-n", "-X", "lua_script:\(Self.dissector.path)", "-r", file] + extra
        arguments += ["-T", "fields", "-E", "separator=/t", "-E", "quote=n", "-E", "header=n"]
        for field in Self.fields { arguments += ["-e", field] }
        let output = try run("tshark", arguments)
        return output.split(separator: "\n", omittingEmptySubsequences: true).map { line in
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            var row: [String: String] = [:]
            for (index, field) in Self.fields.enumerated() {
                row[field] = index < columns.count ? columns[index] : ""
            }
            return row
        }
    }

    /// Runs a tool to completion; stderr (tshark's "Running as user root"
    /// warning, for one) is ignored unless the tool fails.
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        guard let path = Self.executable(tool) else { throw ToolError(message: "\(tool) not found on PATH") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = directory.path
        environment["XDG_CONFIG_HOME"] = directory.appendingPathComponent("config").path
        environment["WIRESHARK_CONFIG_DIR"] = directory.appendingPathComponent("config").path
        process.environment = environment
        // Both outputs go to files, so waiting with a deadline cannot deadlock on a full pipe.
        let name = UUID().uuidString
        let stdoutFile = directory.appendingPathComponent("stdout-\(name).txt")
        let stderrFile = directory.appendingPathComponent("stderr-\(name).txt")
        _ = FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        let stdout = try FileHandle(forWritingTo: stdoutFile)
        let stderr = try FileHandle(forWritingTo: stderrFile)
        defer { try? stdout.close(); try? stderr.close() }
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(Self.timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw ToolError(message: "\(tool) \(arguments.joined(separator: " ")) did not finish within \(Int(Self.timeout)) s")
        }
        process.waitUntilExit()
        let errors = (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw ToolError(message: "\(tool) \(arguments.joined(separator: " ")) exited with "
                            + "\(process.terminationStatus): \(errors)")
        }
        let data = try Data(contentsOf: stdoutFile)
        return String(decoding: data, as: UTF8.self)
    }

    struct ToolError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
