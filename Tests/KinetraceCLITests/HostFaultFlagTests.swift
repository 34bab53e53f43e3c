import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace host --fault`: only with --stdio, only the names it knows, each bounded; anything
/// else is a usage error (exit 64) that names the flag.
struct HostFaultFlagTests {
    @Test(arguments: [["--stdio", "--fault", "nonsense"], ["--stdio", "--fault", "late=0"], ["--stdio", "--fault", "late=10001"],
                      ["--stdio", "--fault", "late=x"], ["--stdio", "--fault", "accept-invalid="], ["--stdio", "--fault", "accept-invalid=a b"],
                      ["--stdio", "--fault", "accept-invalid=\(String(repeating: "x", count: 41))"], ["--fault", "shared-state"]])
    func aBadFaultIsAUsageError(_ arguments: [String]) throws {
        let result = try kinetrace(["host", "--protocol", "keepcalm-json"] + arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("--fault"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count <= 3, "\(result.stderr)")
    }

    /// A known fault is taken, and the host serves until its input ends.
    @Test(arguments: ["shared-state", "shared-buffer", "one-record-per-read", "pad-cut-record", "late", "late=5", "accept-invalid=malformed"])
    func aKnownFaultRuns(_ fault: String) throws {
        let result = try kinetrace(["host", "--stdio", "--protocol", "attitude-stream", "--fault", fault])
        #expect(result.status == 0, "\(fault): \(result.stderr)")
    }
}
