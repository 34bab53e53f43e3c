import Foundation
import KinetraceTestSupport

/// Runs a tool that must succeed.
@discardableResult
func runTool(_ name: String, _ arguments: [String]) throws -> RunResult {
    let result = try run(try Fixture.tool(name), arguments)
    guard result.status == 0, !result.signalled else {
        throw FixtureError("\(name) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
    }
    return result
}

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
