import Foundation

/// Turns an SVG into PNG or PDF by running librsvg's `rsvg-convert`: the
/// project draws its own SVG and leaves rasterising and PDF to a renderer
/// that does text and fonts properly.
struct PlotConverter {
    let executable: URL
    let format: PlotFormat

    /// The first executable `name` in a PATH directory.
    static func findOnPath(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":", omittingEmptySubsequences: true) {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// The converted bytes; exit 69 with rsvg-convert's complaint when it fails.
    func convert(_ svg: String) throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kinetrace-plot-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("plot.svg"), output = directory.appendingPathComponent("plot.\(format.rawValue)")
        let process = Process()
        let errors = Pipe()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(svg.utf8).write(to: input)
            process.executableURL = executable
            // PNG at twice the pixel size, so a raster copy is sharp in print; PDF stays vector.
            process.arguments = ["-f", format.rawValue] + (format == .png ? ["--zoom", "2"] : []) + ["-o", output.path, input.path]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            try process.run()
        } catch {
            printError("cannot run \(executable.path) to convert the plot to \(format.rawValue): \(error.localizedDescription)")
            throw ExitStatus.unavailable
        }
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0,
              let bytes = try? Data(contentsOf: output), !bytes.isEmpty
        else {
            let firstLine = complaint.split(separator: "\n").first.map { ": \($0)" } ?? ""
            printError("rsvg-convert could not convert the plot to \(format.rawValue) (status \(process.terminationStatus))\(firstLine)")
            throw ExitStatus.unavailable
        }
        return [UInt8](bytes)
    }
}
