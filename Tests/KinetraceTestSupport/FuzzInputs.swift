import Foundation

/// The inputs a fuzz target keeps in the repository: its seed corpus
/// (`Fuzz/corpus/<target>/`) and the inputs of crashes it found
/// (`Fuzz/regressions/<target>/`). A file's name says what it must do:
/// `ok-…` decodes, `<error code>-…` (for example `crc_mismatch-…`) fails with
/// that code, and any other name (libFuzzer's hashes, from `--merge`) only has
/// to keep the target's invariants.
package struct FuzzInput: CustomStringConvertible, Sendable {
    package enum Expectation: Equatable, Sendable {
        case value
        case error(String)
        case invariantsOnly
    }

    package var path: String
    package var bytes: [UInt8]
    package var expectation: Expectation
    package var description: String { path }

    /// Every corpus and regression input of `target`, regressions first.
    package static func all(_ target: String) throws -> [FuzzInput] {
        var inputs: [FuzzInput] = []
        for folder in ["regressions", "corpus"] {
            let directory = Fixture.packageRoot.appendingPathComponent("Fuzz/\(folder)/\(target)")
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            for name in names.sorted() where !name.hasPrefix(".") && !name.hasSuffix(".md") {
                let url = directory.appendingPathComponent(name)
                inputs.append(FuzzInput(path: "Fuzz/\(folder)/\(target)/\(name)", bytes: Array(try Data(contentsOf: url)),
                                        expectation: expectation(of: name)))
            }
        }
        return inputs
    }

    static func expectation(of name: String) -> Expectation {
        guard let dash = name.firstIndex(of: "-") else { return .invariantsOnly }
        let prefix = String(name[..<dash])
        if prefix == "ok" { return .value }
        // Error codes are snake_case words; a 40-hex-digit hash has no dash anyway.
        return prefix.allSatisfy({ $0.isLowercase || $0 == "_" }) ? .error(prefix) : .invariantsOnly
    }
}
