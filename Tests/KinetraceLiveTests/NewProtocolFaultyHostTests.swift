import Foundation
import KinetraceTestSupport
import Testing

/// `kinetrace conform` for keepcalm-json and attitude-stream against
/// deliberately faulty hosts behind the stdio adapter
/// (Tests/FaultyHosts/keepcalm_faulty_host.py, attitude_faulty_host.py):
/// each fault is failed by the case meant to catch it, and each case passes
/// the same script with no fault and the reference host.
@Suite(.enabled(if: Requirement.python3.runs, "needs python3 for the faulty hosts; with CI set this fails instead"))
struct NewProtocolFaultyHostTests {
    init() throws { try Requirement.python3.check() }

    static let keepCalmFaults: [(fault: String, caughtBy: String)] = [
        ("at-threshold", "AC-KC-THRESHOLD"), ("no-latch", "AC-KC-LATCH"), ("count-latch", "AC-KC-LATCH"),
        ("shared-latch", "AC-KC-CONTROLLERS"), ("strict-members", "AC-KC-UNKNOWN-MEMBERS"), ("crash-on-bad-json", "AC-KC-INVALID-JSON"),
        ("no-type-check", "AC-KC-SCHEMA"), ("no-range-check", "AC-KC-VALUES"), ("small-buffer", "AC-KC-SIZE"),
        ("nesting-crash", "AC-KC-INVALID-JSON"), ("latch-90", "AC-KC-LATCH"), ("latch-110", "AC-KC-LATCH"),
        ("duplicate-last-wins", "AC-KC-SCHEMA"), ("floats-only", "AC-KC-VALID-FORMS"), ("unique-ids", "AC-KC-VALID-FORMS"),
        ("late-observations", "AC-KC-OBS-TIMELY"),
    ]
    static let attitudeFaults: [(fault: String, caughtBy: String)] = [
        ("big-endian", "AC-AS-BIT-EXACT"), ("one-record-per-read", "AC-AS-SPLIT"), ("one-record-per-read", "AC-AS-COALESCED"),
        ("one-record-per-read", "AC-AS-BYTEWISE"), ("dies-on-nan", "AC-AS-INVALID-FINITE"), ("dies-on-nan", "AC-AS-NONFINITE-OPEN"), ("no-range-check", "AC-AS-INVALID-RANGE"),
        ("stops-reading", "AC-AS-KEEPS-READING"), ("late-observations", "AC-AS-OBS-TIMELY"), ("shared-buffer", "AC-AS-INTERLEAVED"),
    ]

    /// Faults that end the host process: behind the stdio adapter the run exits 69 (SA-ERROR-2), the report
    /// still naming the case that killed it.
    static let dying: Set<String> = ["crash-on-bad-json", "nesting-crash", "dies-on-nan"]
    // KeepCalm's no-range-check jumps on NaN and reports it as the value `NaN`, which is not JSON: an
    // observation that breaks SA-OBS-2 is a protocol error, so that run exits 76 (SA-ERROR-1).


    /// A host that writes anything but records on its output broke the framing: the report is written,
    /// and the run exits 76 (SA-ERROR-1). This one breaks it on its first jump: the suite's preflight spike.
    @Test func aHostThatBreaksTheFramingExits76WithItsReport() throws {
        let result = try kinetrace(["conform", "--protocol", "keepcalm-json", "--exec",
                                    "python3 '\(Self.script("keepcalm_faulty_host.py"))' --fault bad-framing",
                                    "--format", "json", "--cases", "AC-KC-THRESHOLD", "--cases", "AC-KC-LATCH"], timeout: 120)
        #expect(result.status == 76, "\(result.stderr)")
        #expect(result.stderr.contains("broke the stdio adapter's framing"), "\(result.stderr)")
        let verdicts = try Self.verdicts(result)
        #expect(verdicts["AC-KC-THRESHOLD"] == "ERROR" && verdicts["AC-KC-LATCH"] == "ERROR", "not run after the host broke: \(verdicts)")
    }

    /// A host that applies every record right but slower than 60 Hz is failed by the case about its pace,
    /// AC-AS-KEEPS-READING, and passed by the framing cases, which wait while it makes progress.
    @Test func aSlowHostIsFailedByKeepsReadingNotByTheFramingCases() throws {
        let result = try kinetrace(["conform", "--protocol", "attitude-stream", "--exec",
                                    "python3 '\(Self.script("attitude_faulty_host.py"))' --fault slow-apply", "--format", "json",
                                    "--cases", "AC-AS-KEEPS-READING", "--cases", "AC-AS-COALESCED", "--cases", "AC-AS-SPLIT"], timeout: 180)
        let verdicts = try Self.verdicts(result)
        #expect(result.status == 1)
        #expect(verdicts == ["AC-AS-KEEPS-READING": "FAIL", "AC-AS-COALESCED": "PASS", "AC-AS-SPLIT": "PASS"], "\(verdicts)")
    }

    /// Over the stdio adapter a host that stops reading is failed by what it stops reporting, and the
    /// evidence counts records, not the shared socketpair's kernel memory as "bytes unread".
    @Test func aStalledStdioHostIsJudgedByRecordsNotKernelMemory() throws {
        let result = try kinetrace(["conform", "--protocol", "attitude-stream", "--exec",
                                    "python3 '\(Self.script("attitude_faulty_host.py"))' --fault stops-reading",
                                    "--format", "json", "--cases", "AC-AS-KEEPS-READING"], timeout: 120)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let judged = try #require((report["cases"] as? [[String: Any]])?.first)
        #expect(judged["verdict"] as? String == "FAIL", "\(judged)")
        let evidence = (judged["evidence"] as? [String] ?? []).joined(separator: "\n")
        #expect(evidence.contains("records applied") && !evidence.contains("bytes unread"), "\(evidence)")
        #expect((judged["measurements"] as? [String: Any])?["send_queue_max"] == nil, "\(judged)")
    }

    static func script(_ name: String) -> String { Fixture.packageRoot.appendingPathComponent("Tests/FaultyHosts/\(name)").path }

    static func verdicts(_ result: RunResult) throws -> [String: String] {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let cases = try #require(report["cases"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: cases.map { ($0["id"] as! String, $0["verdict"] as! String) })
    }

    func conform(_ wireProtocol: String, exec: String, _ extra: [String]) throws -> (status: Int32, verdicts: [String: String]) {
        let result = try kinetrace(["conform", "--protocol", wireProtocol, "--exec", exec, "--format", "json"] + extra, timeout: 120)
        return (result.status, try Self.verdicts(result))
    }

    @Test(arguments: keepCalmFaults.map { "\($0.fault) \($0.caughtBy)" })
    func eachKeepCalmFaultIsFailedByItsCase(_ pair: String) throws {
        let parts = pair.split(separator: " ").map(String.init)
        let (status, verdicts) = try conform("keepcalm-json", exec: "python3 '\(Self.script("keepcalm_faulty_host.py"))' --fault \(parts[0])",
                                             ["--cases", parts[1]])
        #expect(status == (Self.dying.contains(parts[0]) ? 69 : parts[0] == "no-range-check" ? 76 : 1), "\(parts[0])")
        #expect(verdicts[parts[1]] == "FAIL", "\(parts[0]): \(verdicts)")
    }

    @Test(arguments: attitudeFaults.map { "\($0.fault) \($0.caughtBy)" })
    func eachAttitudeFaultIsFailedByItsCase(_ pair: String) throws {
        let parts = pair.split(separator: " ").map(String.init)
        let (status, verdicts) = try conform("attitude-stream", exec: "python3 '\(Self.script("attitude_faulty_host.py"))' --fault \(parts[0])",
                                             ["--cases", parts[1]])
        #expect(status == (Self.dying.contains(parts[0]) ? 69 : 1), "\(parts[0])")
        #expect(verdicts[parts[1]] == "FAIL", "\(parts[0]): \(verdicts)")
    }

    /// The control: the scripts without a fault pass every case their faults fail, in every form
    /// of observation the specs allow (KC-OBS-2: no values, [y] or [x, y, z]; AS-OBS-2: each float32
    /// as its exact value or as its shortest decimal).
    @Test(arguments: [("keepcalm-json", "keepcalm_faulty_host.py", "y"), ("keepcalm-json", "keepcalm_faulty_host.py", "none"),
                      ("keepcalm-json", "keepcalm_faulty_host.py", "xyz"), ("attitude-stream", "attitude_faulty_host.py", "exact"),
                      ("attitude-stream", "attitude_faulty_host.py", "shortest")])
    func theCorrectScriptsPassEveryCase(_ wireProtocol: String, _ script: String, _ values: String) throws {
        let (status, verdicts) = try conform(wireProtocol, exec: "python3 '\(Self.script(script))' --fault none --values \(values)", [])
        #expect(status == 0, "\(values): \(verdicts)")
        #expect(verdicts.count == (wireProtocol == "keepcalm-json" ? 15 : 14) && Self.passedAllButConnectionCases(verdicts), "\(values): \(verdicts)")
    }

    /// A host that reports nothing behind the stdio adapter is never shown conformant: every case is
    /// INCONCLUSIVE (NOTHING JUDGED, exit 1). Over TCP, where the attitude transport cases still judge,
    /// the run says DECISIONS NOT JUDGED (`overTCPTheConnectionAndTheSendQueueJudge`).
    @Test(arguments: [("keepcalm-json", "keepcalm_faulty_host.py", "NOTHING JUDGED"), ("attitude-stream", "attitude_faulty_host.py", "NOTHING JUDGED")])
    func aHostThatObservesNothingIsNotShownConformant(_ wireProtocol: String, _ script: String, _ status: String) throws {
        let result = try kinetrace(["conform", "--protocol", wireProtocol, "--exec", "python3 '\(Self.script(script))' --fault silent",
                                    "--format", "json"], timeout: 120)
        #expect(result.status == 1, "\(result.stdout)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        #expect(report["failed"] as? Bool == true && report["decisions_judged"] as? Bool == false)
        #expect((report["status"] as? String)?.hasPrefix(status) == true, "\(report["status"] ?? "")")
        let verdicts = try Self.verdicts(result)
        #expect(!verdicts.values.contains("FAIL"), "reporting nothing is not a fault a case can see: \(verdicts)")
    }

    /// A host that reports its decisions under another controller's id is told so: FAIL, naming the ids.
    @Test(arguments: [("keepcalm-json", "keepcalm_faulty_host.py", "AC-KC-THRESHOLD"), ("attitude-stream", "attitude_faulty_host.py", "AC-AS-BIT-EXACT")])
    func decisionsUnderAnotherControllerFailNamingTheID(_ wireProtocol: String, _ script: String, _ caseID: String) throws {
        let result = try kinetrace(["conform", "--protocol", wireProtocol, "--exec", "python3 '\(Self.script(script))' --fault wrong-controller",
                                    "--format", "json", "--cases", caseID], timeout: 120)
        #expect(result.status == 1)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let judged = try #require((report["cases"] as? [[String: Any]])?.first { $0["id"] as? String == caseID })
        #expect(judged["verdict"] as? String == "FAIL", "\(judged)")
        let said = ([judged["detail"] as? String ?? ""] + (judged["evidence"] as? [String] ?? [])).joined(separator: "\n")
        // Shifted to a neighbour's id: either none of this case's ids, or the wrong ones among them, named.
        #expect(said.contains("none of this case's") || said.contains("none under this case's controller ids")
                || said.contains("reported under controller id ("), "\(said)")
        #expect(said.contains("under controller id"), "\(said)")
        #expect(!said.contains("reported no observation"), "\(said)")
    }

    /// Every case PASS, except that over the stdio adapter, which has no connections, AC-AS-CONN-FLOOD is INCONCLUSIVE.
    static func passedAllButConnectionCases(_ verdicts: [String: String]) -> Bool {
        verdicts.allSatisfy { $0.value == ($0.key == "AC-AS-CONN-FLOOD" ? "INCONCLUSIVE" : "PASS") }
    }

    /// The reference host passes every case of both protocols with no target given: conform runs it behind the
    /// stdio adapter itself, exactly as --exec would (GeneratedFaultTests runs faulty ones through --exec).
    @Test(arguments: [("keepcalm-json", 15), ("attitude-stream", 14)])
    func theReferenceHostPassesEveryCase(_ wireProtocol: String, _ count: Int) throws {
        for target in [[String]()] {  // one target: the stdio reference host conform starts
            let result = try kinetrace(["conform", "--protocol", wireProtocol, "--format", "json"] + target, timeout: 120)
            let verdicts = try Self.verdicts(result)
            #expect(result.status == 0, "\(target): \(result.stderr) \(verdicts)")
            #expect(verdicts.count == count && Self.passedAllButConnectionCases(verdicts), "\(target): \(verdicts)")
        }
    }

    /// Over UDP a KeepCalm host shows nothing: the cases are INCONCLUSIVE with that reason, never PASS, and
    /// the run does not claim conformance; a host that dies on a hostile datagram is still caught (ICMP port unreachable).
    @Test func overUDPKeepCalmIsInconclusiveButDeathIsCaught() throws {
        let host = try Background.kinetrace("host", "--protocol", "keepcalm-json", "--port", "0")
        defer { _ = try? host.stop(SIGTERM) }
        let hostPort = try port(in: try host.waitForLine(startingWith: "listening on"))
        let result = try kinetrace(["conform", "--protocol", "keepcalm-json", "--host", "127.0.0.1:\(hostPort)", "--format", "json"], timeout: 120)
        let verdicts = try Self.verdicts(result)
        #expect(result.status == 1, "a run that judged nothing must not pass: \(verdicts)")
        #expect(verdicts.count == 15 && verdicts.values.allSatisfy { $0 == "INCONCLUSIVE" }, "\(verdicts)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let details = (report["cases"] as? [[String: Any]] ?? []).compactMap { $0["detail"] as? String }
        #expect(details.allSatisfy { $0.contains("no observation channel") }, "\(details)")
        #expect(details.contains { $0.contains("liveness cannot be proven") }, "\(details)")
        let text = try kinetrace(["conform", "--protocol", "keepcalm-json", "--host", "127.0.0.1:\(hostPort)", "--cases", "AC-KC-LATCH"], timeout: 60)
        #expect(text.status == 1 && text.stdout.contains("NOTHING JUDGED"), "\(text.stdout)")

        let crashing = try Background(URL(fileURLWithPath: "/usr/bin/env"),
                                      ["python3", Self.script("keepcalm_faulty_host.py"), "--fault", "crash-on-bad-json", "--udp"])
        defer { _ = try? crashing.stop(SIGKILL) }
        let crashPort = try port(in: try crashing.waitForLine(startingWith: "listening on"))
        let caught = try kinetrace(["conform", "--protocol", "keepcalm-json", "--host", "127.0.0.1:\(crashPort)", "--format", "json",
                                    "--cases", "AC-KC-INVALID-JSON"], timeout: 60)
        #expect(caught.status == 1)
        #expect(try Self.verdicts(caught)["AC-KC-INVALID-JSON"] == "FAIL", "\(caught.stdout)")
    }

    /// Over TCP the attitude host shows nothing but its connection and its reading: the cases that need the
    /// applied attitudes are INCONCLUSIVE with that reason, the connection and send-queue cases judge, and
    /// catch a host that closes on NaN and one that stops reading (SIOCOUTQ).
    @Test func overTCPTheConnectionAndTheSendQueueJudge() throws {
        let reference = try Background.kinetrace("host", "--protocol", "attitude-stream", "--port", "0")
        defer { _ = try? reference.stop(SIGTERM) }
        let referencePort = try port(in: try reference.waitForLine(startingWith: "listening on"))
        let result = try kinetrace(["conform", "--protocol", "attitude-stream", "--host", "127.0.0.1:\(referencePort)", "--format", "json"], timeout: 120)
        let verdicts = try Self.verdicts(result)
        // The connection cases judge, but none of the applied attitudes shows: not shown conformant.
        #expect(result.status == 1, "\(verdicts)")
        #expect(verdicts["AC-AS-NONFINITE-OPEN"] == "PASS" && verdicts["AC-AS-KEEPS-READING"] == "PASS", "\(verdicts)")
        #expect(verdicts.filter { $0.value == "INCONCLUSIVE" }.count == 11, "\(verdicts)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["decisions_judged"] as? Bool == false && report["failed"] as? Bool == true, "\(report["status"] ?? "")")
        #expect((report["status"] as? String)?.hasPrefix("DECISIONS NOT JUDGED") == true, "\(report["status"] ?? "")")
        // A dashboard reading the JUnit report sees the run fail too, not a suite of passes and skips.
        let junit = try kinetrace(["conform", "--protocol", "attitude-stream", "--host", "127.0.0.1:\(referencePort)", "--format", "junit",
                                   "--cases", "AC-AS-KEEPS-READING", "--cases", "AC-AS-BIT-EXACT"], timeout: 120)
        #expect(junit.status == 1)
        #expect(junit.stdout.contains("type=\"DECISIONS-NOT-JUDGED\""), "\(junit.stdout)")
        let undecided = (report["cases"] as? [[String: Any]] ?? []).filter { $0["verdict"] as? String == "INCONCLUSIVE" }
        let details = undecided.compactMap { $0["detail"] as? String }
        #expect(details.allSatisfy { $0.contains("no observation channel") }, "\(details)")
        // The cases that send records say what TCP did show: the connection stayed open.
        let applied = undecided.filter { $0["id"] as? String != "AC-AS-OBS-TIMELY" }.compactMap { $0["detail"] as? String }
        #expect(applied.count == 10 && applied.allSatisfy { $0.contains("no FIN or RST") }, "\(applied)")

        for (fault, caughtBy) in [("dies-on-nan", "AC-AS-NONFINITE-OPEN"), ("stops-reading", "AC-AS-KEEPS-READING"), ("none", "")] {
            let host = try Background(URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.script("attitude_faulty_host.py"), "--fault", fault, "--tcp"])
            defer { _ = try? host.stop(SIGKILL) }
            let hostPort = try port(in: try host.waitForLine(startingWith: "listening on"))
            let run = try kinetrace(["conform", "--protocol", "attitude-stream", "--host", "127.0.0.1:\(hostPort)", "--format", "json",
                                     "--cases", "AC-AS-NONFINITE-OPEN", "--cases", "AC-AS-KEEPS-READING"], timeout: 60)
            let got = try Self.verdicts(run)
            if caughtBy.isEmpty {
                #expect(run.status == 0 && got.values.allSatisfy { $0 == "PASS" }, "\(got)")
            } else {
                #expect(run.status == 1)
                #expect(got[caughtBy] == "FAIL", "\(fault): \(got)")
            }
        }
    }
}
