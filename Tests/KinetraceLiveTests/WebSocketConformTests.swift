import Foundation
import KinetraceTestSupport
import Testing

/// `conform --host ws://…` runs each built-in protocol's suite against the reference host
/// over WebSocket, and its verdicts equal those over the protocol's own transport, case by
/// case. The one case that cannot run over connections says so (and is named here).
@Suite(.serialized) struct WebSocketConformTests {
    /// Cases whose verdict over a connection-oriented carrier is INCONCLUSIVE by design: a
    /// state-exhaustion flood needs thousands of fresh source addresses, which only datagrams give.
    static let needsFreshSources: Set<String> = ["AC-STATE-BOUND"]

    /// Each case's verdict, and the SHOULD-level cases (whose timing verdicts may differ under load).
    static func verdicts(_ protocolName: String, scheme: String) throws -> [String: String] {
        try run(protocolName, scheme: scheme).verdicts
    }

    static func run(_ protocolName: String, scheme: String) throws -> (verdicts: [String: String], should: Set<String>) {
        let path = scheme == "ws" ? ["--path", "/suite"] : []
        let host = try Background(try Fixture.binary, ["host", "--protocol", protocolName, "--transport", scheme, "--port", "0"] + path)
        defer { _ = try? host.stop(SIGTERM) }
        let line = try host.waitForLine(startingWith: "listening on ")
        let port = try #require(line.split(separator: ":").last.map(String.init))
        let url = "\(scheme)://127.0.0.1:\(port)" + (scheme == "ws" ? "/suite" : "")
        let result = try kinetrace(["conform", "--protocol", protocolName, "--host", url, "--format", "json"], timeout: 240)
        #expect(result.status == 0 || result.status == 1, "\(protocolName) over \(scheme): \(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let cases = try #require(report["cases"] as? [[String: Any]])
        #expect(!cases.isEmpty)
        let verdicts = Dictionary(uniqueKeysWithValues: cases.compactMap { c in
            (c["id"] as? String).flatMap { id in (c["verdict"] as? String).map { (id, $0) } }
        })
        return (verdicts, Set(cases.compactMap { c in c["level"] as? String == "SHOULD" ? c["id"] as? String : nil }))
    }

    // keepcalm-json is left out: with no reply, every one of its cases is INCONCLUSIVE over any network.
    @Test(arguments: [("motionlink-v1", "udp"), ("attitude-stream", "tcp")])
    func theSuiteGivesTheSameVerdictsOverWebSocket(_ pair: (String, String)) throws {
        let native = try Self.verdicts(pair.0, scheme: pair.1)
        let (overWebSocket, should) = try Self.run(pair.0, scheme: "ws")
        #expect(Set(native.keys) == Set(overWebSocket.keys), "\(pair.0): the same cases run")
        for (id, verdict) in native.sorted(by: { $0.key < $1.key }) {
            if Self.needsFreshSources.contains(id), pair.1 == "udp" {
                #expect(overWebSocket[id] == "INCONCLUSIVE", "\(pair.0) \(id) over ws: \(overWebSocket[id] ?? "missing")")
            } else if should.contains(id), Set([verdict, overWebSocket[id]]) == Set(["PASS", "NON-STRICT"]) {
                // A SHOULD on timing (a reply within its soft deadline) can tip either way on a
                // loaded machine, whatever the carrier; a MUST never may.
                print("\(pair.0) \(id): \(verdict) over \(pair.1), \(overWebSocket[id]!) over ws (a SHOULD: timing)")
            } else {
                #expect(overWebSocket[id] == verdict, "\(pair.0) \(id): \(verdict) over \(pair.1), \(overWebSocket[id] ?? "missing") over ws")
            }
        }
        // The reference host passes its suite over WebSocket: nothing fails.
        #expect(!overWebSocket.values.contains("FAIL"), "\(overWebSocket.filter { $0.value == "FAIL" })")
        if pair.0 == "motionlink-v1" { #expect(overWebSocket.values.filter { $0 == "PASS" }.count >= 10, "\(overWebSocket)") }
    }
}
