import Foundation
import Testing

/// Something a test needs from the machine: root, a tool, python3 with a module.
///
/// Outside CI a missing requirement skips the test, and the test list says
/// why. With `CI` set (`.ci/run` sets it) nothing may skip: the test runs
/// and `check()` fails it at once, naming what is missing, so a CI machine
/// that lost tshark or root cannot pass by checking less.
package struct Requirement: Sendable {
    package let what: String
    package let met: Bool

    package init(_ what: String, met: Bool) {
        self.what = what
        self.met = met
    }

    /// CI as the usual services set it (`CI=true`); `CI=false` or `CI=0` is not CI.
    package static let inCI: Bool = {
        guard let value = ProcessInfo.processInfo.environment["CI"]?.lowercased() else { return false }
        return !["", "0", "false", "no"].contains(value)
    }()

    package static let root = Requirement("root (or CAP_NET_RAW) for live capture", met: getuid() == 0)

    package static func tools(_ names: String...) -> Requirement {
        let missing = names.filter { (try? Fixture.tool($0)) == nil && !Fixture.onPath($0) }
        return Requirement("\(names.joined(separator: ", ")) (missing: \(missing.joined(separator: ", ")))", met: missing.isEmpty)
    }

    package static let python3 = Requirement("python3 on PATH", met: Fixture.hasPython)

    /// python3 that can import every module named.
    package static func python(_ modules: String...) -> Requirement {
        let imports = "import " + modules.joined(separator: ", ")
        let met = Fixture.hasPython
            && ((try? run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", imports], timeout: 30))?.status == 0)
        return Requirement("python3 with \(modules.joined(separator: ", "))", met: met)
    }

    /// For `.enabled(if:)`: whether the test runs (always in CI, where `check()` then fails it).
    package var runs: Bool { met || Self.inCI }

    /// For one part of a test: true when the requirement is met. Otherwise, outside CI,
    /// the part is skipped and the skip recorded as a known issue (so the output shows
    /// it); in CI it throws.
    package func available(sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
        guard !met else { return true }
        try check()
        withKnownIssue("skipped: this machine lacks \(what)", sourceLocation: sourceLocation) {
            Issue.record("skipped: this machine lacks \(what)", sourceLocation: sourceLocation)
        }
        return false
    }

    /// Fails the test, naming the requirement, when it is not met (only reached in CI).
    package func check() throws {
        guard !met else { return }
        throw FixtureError("CI is set and this machine lacks \(what): run .ci/run (scripts/bootstrap installs the tools; capture needs root)")
    }
}

extension Fixture {
    /// Whether `name` is an executable file in a PATH directory.
    package static func onPath(_ name: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(name)")
        }
    }
}
