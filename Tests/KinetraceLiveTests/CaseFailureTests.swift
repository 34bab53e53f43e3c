import Foundation
import KinetraceTestSupport
import Testing

/// The MotionLink cases no older test showed failing, each against a fault of
/// its own in Tests/FaultyHosts/faulty_host.py (CONTRIBUTING.md, "Every case
/// has a fault"). The timing faults are unambiguous whatever the machine's
/// speed: an ack held back 20 ms can never come within 10 ms, and a doubled
/// ack is an extra ack however fast it comes. Only verdicts are asserted.
@Suite(.enabled(if: Fixture.hasPython, "needs python3 for the faulty hosts"))
struct CaseFailureTests {
    struct Fault: Sendable, CustomTestStringConvertible {
        var name: String
        var caughtBy: String
        /// The case's failing verdict: FAIL for a MUST, NON-STRICT for a SHOULD (a failure under --strict).
        var verdict: String
        /// The other cases to run beside it, every one of which must pass (empty for timing faults:
        /// a timing case's PASS depends on the machine).
        var alsoRun: [String]
        /// How many cases the selection holds, so a glob that matches less is noticed.
        var selected: Int
        /// Given to the host and to conform alike (both take --max-controllers).
        var flags: [String] = []
        var testDescription: String { "\(name) → \(caughtBy)" }
    }

    /// The active cases whose verdict does not depend on timing, less the impaired paths.
    static let rules = ["AC-TRIGGER-*", "AC-INVALID-DROPPED", "AC-ACK-FORMAT", "AC-CONTROLLER-ISOLATION", "AC-ACK-UNSOLICITED"]

    static let faults = [
        // ay exactly at τ triggers: only the threshold case sends τ itself.
        Fault(name: "inclusive-threshold", caughtBy: "AC-TRIGGER-THRESHOLD", verdict: "FAIL", alsoRun: rules, selected: 8),
        // An ack every 25 quiet frames in a row: only the unsolicited case sends that many without a trigger.
        Fault(name: "keepalive", caughtBy: "AC-ACK-UNSOLICITED", verdict: "FAIL", alsoRun: rules, selected: 8),
        // Triggers ignored after a dropout of 500 ms or more: only the harsh network loses that much in a row.
        Fault(name: "dropout-rearm", caughtBy: "AC-IMPAIRED-HARSH", verdict: "FAIL",
              alsoRun: rules + ["AC-IMPAIRED-LAB-5GHZ", "AC-IMPAIRED-CROWDED-EVENT"], selected: 11),
        Fault(name: "slow-acks", caughtBy: "AC-ACK-PROMPT", verdict: "NON-STRICT", alsoRun: [], selected: 1),
        // Over 500 datagrams in the last second: only the load case sends that many.
        Fault(name: "double-under-load", caughtBy: "AC-LOAD", verdict: "FAIL", alsoRun: [], selected: 1),
        // A frame stamped far ahead silences its controller for good: only the resync case forges one.
        Fault(name: "no-resync", caughtBy: "AC-STALE-RESYNC", verdict: "NON-STRICT", alsoRun: rules, selected: 9),
        // Every controller kept whatever the cap: only the state case sends from more sources than the cap.
        Fault(name: "unbounded-state", caughtBy: "AC-STATE-BOUND", verdict: "NON-STRICT", alsoRun: rules, selected: 9,
              flags: ["--max-controllers", "64"]),
    ]

    static func conform(_ fault: String, _ extra: [String], host hostArguments: [String] = []) throws
        -> (status: Int32, verdicts: [String: String], stdout: String) {
        let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/faulty_host.py").path
        let host = try Background(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--fault", fault] + hostArguments)
        defer { _ = try? host.stop(SIGKILL) }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let result = try kinetrace(["conform", "--host", "127.0.0.1:\(port)", "--format", "json"] + extra, timeout: 120)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let cases = try #require(report["cases"] as? [[String: Any]])
        return (result.status, Dictionary(uniqueKeysWithValues: cases.map { ($0["id"] as! String, $0["verdict"] as! String) }), result.stdout)
    }

    /// The fault is failed by its case, under --strict so a SHOULD's NON-STRICT fails the run too, and by none
    /// of the other cases run beside it.
    @Test(arguments: faults)
    func eachFaultIsFailedByItsCaseAndNoOther(_ fault: Fault) throws {
        let selection = ([fault.caughtBy] + fault.alsoRun).flatMap { ["--cases", $0] }
        let (status, verdicts, stdout) = try Self.conform(fault.name, selection + ["--strict"] + fault.flags, host: fault.flags)
        #expect(status == 1, "\(fault.name): \(verdicts)")
        #expect(verdicts[fault.caughtBy] == fault.verdict, "\(fault.name): \(stdout)")
        #expect(verdicts.count == fault.selected, "\(fault.name): \(verdicts)")
        let others = verdicts.filter { $0.key != fault.caughtBy }
        #expect(others.values.allSatisfy { $0 == "PASS" }, "\(fault.name): \(others)")
    }

    /// A SHOULD missed fails only a --strict run.
    @Test func aPromptMissIsNotAFailureWithoutStrict() throws {
        let (status, verdicts, _) = try Self.conform("slow-acks", ["--cases", "AC-ACK-PROMPT"])
        #expect(status == 0 && verdicts["AC-ACK-PROMPT"] == "NON-STRICT", "\(verdicts)")
    }

    /// The control: the same script with no fault passes the non-timing cases these faults fail
    /// (the timing ones belong to Benchmarks/conform/stability.sh; see FaultyHostTests for the rest).
    @Test func theControlPassesTheCasesTheseFaultsFail() throws {
        let cap = ["--max-controllers", "64"]
        let (status, verdicts, _) = try Self.conform("none", ["--cases", "AC-TRIGGER-THRESHOLD", "--cases", "AC-ACK-UNSOLICITED",
                                                              "--cases", "AC-IMPAIRED-HARSH", "--cases", "AC-STALE-RESYNC",
                                                              "--cases", "AC-STATE-BOUND", "--strict"] + cap, host: cap)
        #expect(status == 0)
        #expect(verdicts.count == 5 && verdicts.values.allSatisfy { $0 == "PASS" }, "\(verdicts)")
    }

    /// A host that takes a frame's t_ms as the newest before checking its CRC changes its state on an
    /// invalid frame (ML-VALID-2). AC-INVALID-DROPPED stamps its invalid frames ahead of its positive one,
    /// so such a host finds the positive stale and fails; the other non-timing cases pass it.
    @Test func aStateChangeFromABadCRCIsCaught() throws {
        let (status, verdicts, _) = try Self.conform("state-before-crc", ["--cases", "AC-INVALID-DROPPED", "--cases", "AC-TRIGGER-THRESHOLD",
                                                                          "--cases", "AC-TRIGGER-STALE"])
        #expect(status == 1)
        #expect(verdicts["AC-INVALID-DROPPED"] == "FAIL", "\(verdicts)")
        #expect(verdicts["AC-TRIGGER-THRESHOLD"] == "PASS" && verdicts["AC-TRIGGER-STALE"] == "PASS", "\(verdicts)")
    }
}

/// The three attitude framing cases shared one fault (one-record-per-read fails all three); each now has
/// one of its own (Tests/FaultyHosts/attitude_faulty_host.py) that the other framing cases pass. Behind the
/// stdio adapter each write arrives as one read, whatever the timing.
@Suite(.enabled(if: Fixture.hasPython, "needs python3 for the faulty hosts"))
struct AttitudeCaseFailureTests {
    static let faults: [(fault: String, caughtBy: String)] = [
        // Writes of 13 bytes after a 1-byte one: the partial record is dropped, the stream misaligned.
        ("resync-on-long-read", "AC-AS-SPLIT"),
        // The 720-byte write: only COALESCED writes more than 256 bytes at once.
        ("read-cap", "AC-AS-COALESCED"),
        // One byte per write: only BYTEWISE needs more than 4 reads to complete a record.
        ("partial-gives-up", "AC-AS-BYTEWISE"),
    ]

    /// Every attitude case but AC-AS-KEEPS-READING (2 s of records; no framing fault touches it).
    static let cases = ["AC-AS-BIT-EXACT", "AC-AS-SPLIT", "AC-AS-COALESCED", "AC-AS-BYTEWISE", "AC-AS-INVALID-RANGE", "AC-AS-INVALID-FINITE",
                         "AC-AS-NONFINITE-OPEN"]

    @Test(arguments: faults.map(\.fault))
    func eachFramingFaultIsFailedByItsCaseAndNoOther(_ fault: String) throws {
        let caughtBy = Self.faults.first { $0.fault == fault }!.caughtBy
        let script = Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/attitude_faulty_host.py").path
        let result = try kinetrace(["conform", "--protocol", "attitude-stream", "--exec", "python3 '\(script)' --fault \(fault)", "--format", "json"]
                                   + Self.cases.flatMap { ["--cases", $0] }, timeout: 120)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let verdicts = Dictionary(uniqueKeysWithValues: try #require(report["cases"] as? [[String: Any]]).map { ($0["id"] as! String, $0["verdict"] as! String) })
        #expect(result.status == 1)
        #expect(verdicts.count == Self.cases.count, "\(verdicts)")
        #expect(verdicts[caughtBy] == "FAIL", "\(fault): \(verdicts)")
        #expect(verdicts.filter { $0.key != caughtBy }.values.allSatisfy { $0 == "PASS" }, "\(fault): \(verdicts)")
    }
}
