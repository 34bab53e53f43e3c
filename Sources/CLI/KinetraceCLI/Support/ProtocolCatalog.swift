import ArgumentParser
import Foundation
import KinetraceSupport
import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds protocols by name or file (PD-SEARCH-*): a compiled protocol's name, a
/// declaration file's path, or a name found as NAME.json in the directories of
/// `--protocol-path` and then of KINETRACE_PROTOCOL_PATH (colon-separated).
enum ProtocolCatalog {
    static let environmentVariable = "KINETRACE_PROTOCOL_PATH"

    /// Why `--protocol` could not be resolved, and the exit status it gets.
    struct Failure: Error {
        var message: String
        var status: ExitCode
    }

    /// `--protocol-path` values, taken from the command line itself: `--protocol` is converted
    /// while the arguments are parsed, possibly before `--protocol-path` has been seen.
    static var flagDirectories: [String] {
        var found: [String] = []
        let arguments = CommandLine.arguments
        var i = 1
        while i < arguments.count {
            let argument = arguments[i]
            if argument == "--" { break }
            if argument == "--protocol-path", i + 1 < arguments.count {
                found.append(arguments[i + 1])
                i += 2
                continue
            }
            if argument.hasPrefix("--protocol-path=") { found.append(String(argument.dropFirst("--protocol-path=".count))) }
            i += 1
        }
        return found
    }

    static var searchDirectories: [String] {
        let environment = ProcessInfo.processInfo.environment[environmentVariable] ?? ""
        return flagDirectories + environment.split(separator: ":").map(String.init).filter { !$0.isEmpty }
    }

    /// Whether `argument` names a file rather than a protocol.
    static func isPath(_ argument: String) -> Bool { argument.contains("/") || argument.hasSuffix(".json") }

    /// The protocol `argument` names.
    static func resolve(_ argument: String) throws(Failure) -> any WireProtocol {
        if isPath(argument) { return try read(path: argument) }
        if let compiled = ProtocolRegistry.standard.named(argument) { return compiled }
        for directory in searchDirectories {
            let candidate = directory.hasSuffix("/") ? directory + argument + ".json" : directory + "/" + argument + ".json"
            if access(candidate, F_OK) == 0 {
                let found = try read(path: candidate)
                guard found.id.name == argument else {
                    throw Failure(message: "\(candidate) declares protocol \"\(found.id)\", not \"\(argument)\"", status: ExitStatus.dataError)
                }
                return found
            }
        }
        let searched = searchDirectories.isEmpty ? "" : "; searched \(searchDirectories.joined(separator: ", ")) for \(argument).json"
        throw Failure(message: "--protocol \(argument): no such protocol (compiled: \(ProtocolRegistry.standard.names.joined(separator: ", "))\(searched)); a declaration file's path also works",
                      status: ExitCode.validationFailure)
    }

    /// Reads a declaration file: a regular file of at most the declaration limit.
    static func read(path: String) throws(Failure) -> DeclaredProtocol {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Failure(message: "\(path): cannot read the protocol declaration: \(String(cString: strerror(errno)))", status: ExitStatus.noInput)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(message: "\(path): a protocol declaration must be a regular file", status: ExitStatus.noInput)
        }
        let limit = 256 * 1024
        guard info.st_size <= limit else {
            throw Failure(message: "\(path):1:1: a declaration of at most \(limit) bytes, this one has \(info.st_size)", status: ExitStatus.dataError)
        }
        var bytes: [UInt8] = []
        do throws(FileError) {
            let file = try POSIXFile(path: path, mode: .read)
            defer { try? file.close() }
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
            defer { chunk.deallocate() }
            while bytes.count <= limit {
                let n = try file.read(into: chunk)
                if n == 0 { break }
                bytes += UnsafeRawBufferPointer(rebasing: chunk[0..<n])
            }
        } catch {
            throw Failure(message: "\(path): cannot read the protocol declaration: \(error.message)", status: ExitStatus.noInput)
        }
        do throws(DeclarationError) {
            return try DeclaredProtocol.read(bytes, path: path)
        } catch {
            throw Failure(message: error.description, status: ExitStatus.dataError)
        }
    }

    /// Declaration files on the search path, read (or why not), by path.
    static func declaredOnSearchPath() -> [(path: String, result: Result<DeclaredProtocol, Failure>)] {
        var found: [(String, Result<DeclaredProtocol, Failure>)] = []
        for directory in searchDirectories {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for name in names.sorted() where name.hasSuffix(".json") {
                let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                found.append((path, Result { () throws(Failure) in try read(path: path) }))
            }
        }
        return found
    }
}
