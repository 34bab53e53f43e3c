import Foundation
import KinetraceTransport
import KinetraceHost
import KinetraceSupport
import KinetraceTestSupport
import KinetraceWire
import Testing

/// Issue 15, finding 5 (ML-STATE-*): the reference host's per-controller
/// state is bounded by a maximum and an idle timeout, a forgotten
/// controller starts fresh, and the host keeps answering real triggers.
@Suite struct HostStateBoundTests {
    static func frame(_ tMs: UInt64, ay: Float32 = 0) -> [UInt8] { MotionFrame(tMs: tMs, ay: ay).encoded() }

    @Test func aMillionSpoofedSourcesStayWithinTheMaximumAndARealTriggerIsStillAnswered() {
        var core = HostCore<Int>(wireProtocol: MotionLinkV1(), rule: .default, maximumControllers: 1_000, idleTimeoutNs: nil)
        let spoof = Self.frame(1)
        var largest = 0
        for source in 0..<1_000_000 {
            _ = core.handle(spoof, from: source, receivedNs: Int64(source))
            largest = max(largest, core.statistics.controllers)
        }
        #expect(largest == 1_000)
        #expect(core.statistics.forgottenOverCapacity == 999_000)
        let decision = core.handle(Self.frame(1_767_225_600_000, ay: 0.9), from: -1, receivedNs: 2_000_000)
        #expect(decision?.owesReply == true, "a real controller's trigger is answered after the flood")
        #expect(core.statistics.controllers == 1_000)
    }

    @Test func aControllerIdleForLongerThanTheTimeoutIsForgottenAndStartsFresh() {
        let second: Int64 = 1_000_000_000
        var core = HostCore<String>(wireProtocol: MotionLinkV1(), rule: .default, maximumControllers: 10, idleTimeoutNs: 120 * second)
        #expect(core.handle(Self.frame(5_000, ay: 0.9), from: "a", receivedNs: 0)?.owesReply == true)
        // Within the timeout (and within ML-STATE-4's 2 s resync), an older stamp is stale (ML-GESTURE-2) ...
        #expect(core.handle(Self.frame(4_000, ay: 0.9), from: "a", receivedNs: 1 * second) == nil)
        #expect(core.statistics.staleFrames == 1)
        // ... and once another controller is heard after 120 s of a's silence, a is forgotten:
        _ = core.handle(Self.frame(1), from: "b", receivedNs: 221 * second)
        #expect(core.statistics.forgottenIdle == 1)
        #expect(core.statistics.controllers == 1)
        // its next frame, even with an older stamp, is a new controller's (ML-STATE-3).
        #expect(core.handle(Self.frame(4_000, ay: 0.9), from: "a", receivedNs: 222 * second)?.owesReply == true)
        #expect(core.statistics.staleFrames == 1)
    }

    @Test func theLeastRecentlyHeardIsForgottenFirst() {
        var table = ControllerTable<String>(capacity: 3, idleNs: nil)
        var forgotten: [Int] = []
        let a = table.number(of: "a", nowNs: 1) { n, _ in forgotten.append(n) }
        let b = table.number(of: "b", nowNs: 2) { n, _ in forgotten.append(n) }
        _ = table.number(of: "c", nowNs: 3) { n, _ in forgotten.append(n) }
        #expect(table.number(of: "a", nowNs: 4) { n, _ in forgotten.append(n) } == a)  // a is now the most recent
        let d = table.number(of: "d", nowNs: 5) { n, _ in forgotten.append(n) }
        #expect(forgotten == [b], "b, heard least recently, makes room")
        #expect(d == b, "its number is recycled")
        #expect(table.count == 3)
        #expect(table.number(of: "b", nowNs: 6) { n, _ in forgotten.append(n) } != a)
    }

    /// Across a random workload the table never exceeds its capacity, agrees with a plain
    /// reference model of least-recently-heard and idle eviction, and numbers stay unique.
    @Test func agreesWithAPlainModelUnderRandomTraffic() {
        var rng = SeededGenerator(seed: 15)
        var table = ControllerTable<Int>(capacity: 16, idleNs: 50)
        var lastHeard: [Int: Int64] = [:]  // the reference: who is held, and when last heard
        var now: Int64 = 0
        var evictions = 0
        for _ in 0..<20_000 {
            now += Int64.random(in: 1...3, using: &rng)  // strictly later, so "least recently heard" is never a tie
            let controller = Int.random(in: 0..<40, using: &rng)
            for (c, t) in lastHeard where now - t > 50 { lastHeard[c] = nil }
            if lastHeard[controller] == nil, lastHeard.count == 16 {
                lastHeard[lastHeard.min { $0.value < $1.value }!.key] = nil
            }
            lastHeard[controller] = now
            _ = table.number(of: controller, nowNs: now) { _, _ in evictions += 1 }
            #expect(table.count == lastHeard.count)
            #expect(lastHeard.keys.allSatisfy { table.holds($0) }, "the same controllers as the reference")
            #expect(table.count <= 16)
        }
        #expect(evictions > 1_000, "the workload exercised eviction")
    }

    /// The CLI: over its maximum the host forgets, says so, and still answers every new controller's trigger.
    @Test func theReferenceHostReportsWhatItForgot() throws {
        let host = try Background.kinetrace("host", "--port", "0", "--max-controllers", "2", "--format", "json")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let sockets = (0..<5).map { _ in TestSocket() }
        for (i, socket) in sockets.enumerated() {
            socket.send(Self.frame(1_767_225_600_000 + UInt64(i), ay: 0.9), toPort: port)
            #expect(socket.receive()?.count == HapticAck.size, "controller \(i) gets its ack")
        }
        let result = try host.stop()
        let summary = try JSONSerialization.jsonObject(with: Data(result.stdout.split(separator: "\n").last.map { Data($0.utf8) } ?? Data())) as? [String: Any]
        #expect(summary?["forgotten_over_maximum"] as? Int == 3, "\(result.stdout)")
        #expect(summary?["controllers"] as? Int == 2)
        #expect(summary?["replies_sent"] as? Int == 5)
    }
}

/// Issue 24, finding 5 (AS-CONN-2, AS-CONN-3): the TCP host's ledger of connections.
@Suite struct ConnectionLedgerTests {
    @Test func atTheLimitANewConnectionDisplacesOneThatSentNothingBeforeAnyThatDid() {
        var ledger = ConnectionLedger(capacity: 3, idleNs: nil)
        #expect(ledger.admit(0, nowNs: 1) == nil)
        ledger.delivered(0, nowNs: 2)
        #expect(ledger.admit(1, nowNs: 3) == nil)
        #expect(ledger.admit(2, nowNs: 4) == nil)
        ledger.delivered(2, nowNs: 5)
        // 1 has sent nothing: it goes first, though 0 was heard from longer ago.
        #expect(ledger.admit(3, nowNs: 6) == 1)
        // Then 3 (nothing sent yet), then among the streaming, the least recently heard.
        #expect(ledger.admit(4, nowNs: 7) == 3)
        ledger.delivered(4, nowNs: 8)
        #expect(ledger.admit(5, nowNs: 9) == 0)
        #expect(ledger.count == 3)
        #expect(!ledger.holds(0) && ledger.holds(2) && ledger.holds(4) && ledger.holds(5))
    }

    @Test func onlyConnectionsIdleForLongerThanTheTimeoutExpire() {
        var ledger = ConnectionLedger(capacity: 10, idleNs: 100)
        _ = ledger.admit(0, nowNs: 0)    // never sends
        _ = ledger.admit(1, nowNs: 0)
        ledger.delivered(1, nowNs: 90)   // active at 90
        _ = ledger.admit(2, nowNs: 50)
        #expect(ledger.expire(nowNs: 100).isEmpty, "exactly the timeout is not longer than it")
        #expect(ledger.expire(nowNs: 101) == [0])
        #expect(ledger.expire(nowNs: 151) == [2])
        #expect(ledger.expire(nowNs: 191) == [1])
        #expect(ledger.count == 0)
    }

    /// Against a plain model under random traffic: the same connections held, at most the capacity.
    @Test func agreesWithAPlainModelUnderRandomTraffic() {
        var rng = SeededGenerator(seed: 24)
        var ledger = ConnectionLedger(capacity: 8, idleNs: 40)
        var model: [Int: (lastNs: Int64, delivered: Bool)] = [:]
        var now: Int64 = 0, next = 0, displaced = 0, expired = 0
        for _ in 0..<20_000 {
            now += Int64.random(in: 1...3, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<3:
                let victim = model.count < 8 ? nil
                    : (model.filter { !$0.value.delivered }.min { $0.value.lastNs < $1.value.lastNs }
                        ?? model.min { $0.value.lastNs < $1.value.lastNs })?.key
                let got = ledger.admit(next, nowNs: now)
                #expect(got == victim)
                if let victim { model[victim] = nil; displaced += 1 }
                model[next] = (now, false)
                next += 1
            case 3..<8:
                guard let c = model.keys.randomElement(using: &rng) else { continue }
                ledger.delivered(c, nowNs: now)
                model[c] = (now, true)
            case 8:
                guard let c = model.keys.randomElement(using: &rng) else { continue }
                ledger.remove(c)
                model[c] = nil
            default:
                let due = Set(model.filter { now - $0.value.lastNs > 40 }.keys)
                #expect(Set(ledger.expire(nowNs: now)) == due)
                for c in due { model[c] = nil }
                expired += due.count
            }
            #expect(ledger.count == model.count)
            #expect(model.keys.allSatisfy { ledger.holds($0) })
        }
        #expect(displaced > 100 && expired > 100, "the workload exercised both (\(displaced) displaced, \(expired) expired)")
    }
}
