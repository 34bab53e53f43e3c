import Foundation
import KinetraceTestSupport
import Testing

/// Issue 15, finding 7: exec failures diagnosed as the stdio adapter's spec
/// says (SA-ERROR-1, -2, -3), each with its status and a one-line reason.
@Suite struct ExecDiagnosisTests {
    static let session = Fixture.bundledTrace

    /// SA-ERROR-2: a child that exits before the replay ends is the host dying, 69.
    @Test func aChildThatExitsIsUnavailable() throws {
        let result = try kinetrace(["replay", Self.session, "--end", "2", "--exec", "exit 3"])
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.contains("exited with status 3"), "\(result.stderr)")
    }

    /// SA-ERROR-1: an impossible length is a protocol error naming the length and its offset, at once,
    /// not a host that "never answered" after the whole replay.
    @Test func anImpossibleLengthIsAProtocolErrorNamingItsOffset() throws {
        let result = try kinetrace(["replay", Self.session, "--end", "2", "--exec", #"printf '\377\377\377\377'; exec sleep 30"#])
        #expect(result.status == 76, "\(result.stderr)")
        #expect(result.stderr.contains("byte 0") && result.stderr.contains("4294967295"), "\(result.stderr)")
        #expect(!result.stderr.contains("never answered"), "\(result.stderr)")
    }

    /// SA-ERROR-3: the host reports a record it is never sent (another kind) with its input offset and a nonzero status.
    @Test(arguments: [(#"\000\000\000\004\007\000\000\000"#, "byte 4", "found 0x7"),
                      (#"\000\000\000\004\001\000\000\000\000\000\000\004\002\000\000\000"#, "byte 12", "found 0x2"),
                      (#"\000\000\000\004\001\001\000\000"#, "byte 5", "flags 0")])
    func theStdioHostRefusesRecordsItIsNeverSent(_ input: (String, String, String)) throws {
        let command = "printf '\(input.0)' | '\(try Fixture.binary.path)' host --stdio"
        let result = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", command])
        #expect(result.status == 76, "\(result.stderr)")
        #expect(result.stderr.contains(input.1) && result.stderr.contains(input.2), "\(result.stderr)")
    }

    /// Finding 4: a host that writes valid acks without pause stops the replay as flooded (76), quickly.
    @Test func aHostThatFloodsAcksStopsTheReplay() throws {
        let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/ack_flood_host.py").path
        let result = try kinetrace(["replay", Self.session, "--exec", "exec python3 '\(script)'", "--format", "json"], timeout: 120)
        #expect(result.status == 76, "\(result.stderr)")
        #expect(result.stderr.contains("replies nobody asked for"), "\(result.stderr)")
        #expect(result.stdout.contains("\"outcome\":\"flooded\""), "\(result.stdout.prefix(300))")
    }
}
