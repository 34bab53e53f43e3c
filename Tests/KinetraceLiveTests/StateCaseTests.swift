import Foundation
import KinetraceTestSupport
import Testing

/// AC-STALE-RESYNC and AC-STATE-BOUND (ML-STATE-4, ML-STATE-2) against the reference host:
/// it passes both, and each fails (NON-STRICT: both are SHOULDs) when the host is told to
/// behave otherwise than the suite expects.
@Suite struct StateCaseTests {
    func verdicts(_ stdout: String) throws -> [String: String] {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], "\(stdout)")
        let cases = try #require(report["cases"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: cases.map { ($0["id"] as! String, $0["verdict"] as! String) })
    }

    func conform(_ hostArguments: [String], _ conformArguments: [String] = []) throws -> (status: Int32, verdicts: [String: String]) {
        let host = try Background(try Fixture.binary, ["host", "--port", "0"] + hostArguments)
        defer { _ = try? host.stop(SIGTERM) }
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let result = try kinetrace(["conform", "--host", "127.0.0.1:\(port)", "--format", "json", "--cases", "AC-STA*"] + conformArguments,
                                   timeout: 60)
        return (result.status, try verdicts(result.stdout))
    }

    @Test func theReferenceHostResynchronisesAndForgetsBeyondItsCap() throws {
        let outcome = try conform(["--max-controllers", "5000"], ["--max-controllers", "5000"])
        #expect(outcome.verdicts == ["AC-STALE-RESYNC": "PASS", "AC-STATE-BOUND": "PASS"])
        #expect(outcome.status == 0)
    }

    @Test func aHostThatNeverResynchronisesIsLockedOut() throws {
        let outcome = try conform(["--stale-resync-ms", "0", "--max-controllers", "5000"], ["--max-controllers", "5000", "--strict"])
        #expect(outcome.verdicts["AC-STALE-RESYNC"] == "NON-STRICT")
        #expect(outcome.verdicts["AC-STATE-BOUND"] == "PASS")
        #expect(outcome.status == 1, "--strict fails a missed SHOULD")
    }

    @Test func aHostThatHoldsMoreControllersThanItsCapIsCaught() throws {
        // The host keeps 20,000; the suite, told the cap is 5,000, floods with 5,689 and finds A remembered.
        let outcome = try conform(["--max-controllers", "20000"], ["--max-controllers", "5000"])
        #expect(outcome.verdicts["AC-STATE-BOUND"] == "NON-STRICT")
        #expect(outcome.verdicts["AC-STALE-RESYNC"] == "PASS")
        #expect(outcome.status == 0, "a missed SHOULD fails only under --strict")
    }

    @Test func theStateBoundCaseRunsOverExecToo() throws {
        let binary = try Fixture.binary.path
        let pass = try kinetrace(["conform", "--exec", "'\(binary)' host --stdio --max-controllers 3000", "--max-controllers", "3000",
                                  "--format", "json", "--cases", "AC-STATE-BOUND"], timeout: 60)
        #expect(try verdicts(pass.stdout) == ["AC-STATE-BOUND": "PASS"], "\(pass.stderr)")
        let fail = try kinetrace(["conform", "--exec", "'\(binary)' host --stdio --max-controllers 9000", "--max-controllers", "3000",
                                  "--format", "json", "--cases", "AC-STATE-BOUND"], timeout: 60)
        #expect(try verdicts(fail.stdout) == ["AC-STATE-BOUND": "NON-STRICT"], "\(fail.stderr)")
    }
}
