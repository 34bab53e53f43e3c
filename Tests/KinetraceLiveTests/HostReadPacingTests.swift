import Foundation
@testable import KinetraceHost
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging
import Testing

/// The reference host reads in batches under load (ReadPacing) and is woken
/// per datagram otherwise; either way it must handle every datagram and
/// answer every trigger, and return to answering at once when load ends.
@Suite(.serialized) struct HostReadPacingTests {
    @Test func aBatchOfFourOrMoreDelaysTheNextReadAndASmallerOneDoesNot() {
        var pacing = ReadPacing(intervalNs: 100_000)
        for n in 0..<ReadPacing.loadedBatch {
            pacing.datagrams = n
            #expect(pacing.endBatch() == nil, "a batch of \(n) means the host keeps up")
            #expect(pacing.datagrams == 0, "each batch starts from zero")
        }
        pacing.datagrams = ReadPacing.loadedBatch
        #expect(pacing.endBatch() == 100_000)
        pacing.datagrams = 5_000
        #expect(pacing.endBatch() == 100_000)
        #expect(pacing.endBatch() == nil, "an empty batch after a loaded one reads at once")
        #expect(pacing.deferred == 2)

        var immediate = ReadPacing(intervalNs: nil)
        immediate.datagrams = 5_000
        #expect(immediate.endBatch() == nil, "--immediate-mode never delays a read")
    }

    /// 40 controllers send 100 frames each in bursts of 200 (the host batches), then,
    /// after a pause, one trigger each: every frame
    /// is handled and every trigger answered, in batched and in immediate mode.
    @Test(arguments: [Int64(100_000), nil])
    func everyDatagramIsHandledAndEveryTriggerAnswered(intervalNs: Int64?) throws {
        var configuration = ReferenceHost.Configuration(wireProtocol: MotionLinkV1())
        configuration.port = 0
        configuration.readBatchIntervalNs = intervalNs
        let host = try ReferenceHost(configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        defer { _ = try? host.shutdown() }
        let target = try SocketAddressBox.resolve("127.0.0.1:\(host.localAddress.port!)")
        let controllers = try (0..<40).map { _ throws(SocketError) in try ConnectedUDPSocket(to: target) }
        let burst = 100
        // Bursts of 200 frames, 2 ms apart: each fits a receive buffer capped by net.core.rmem_max
        // (about 1 KB of kernel memory a frame), and each is a batch of many.
        for n in 0..<burst {
            for socket in controllers {
                #expect(socket.send(MotionFrame(tMs: UInt64(1_000 + n), ay: 0).encoded()) == nil)
            }
            if n % 5 == 4 { usleep(2_000) }
        }
        let afterBurst = try waitFor { try host.statistics().datagrams == controllers.count * burst }
        let handled = try host.statistics().datagrams
        #expect(afterBurst, "the host handled \(handled) of \(controllers.count * burst) frames")

        // Load has ended: each trigger is answered, and each controller gets exactly one ack.
        for socket in controllers {
            #expect(socket.send(MotionFrame(tMs: 10_000, ay: 0.9).encoded()) == nil)
        }
        var buffer = [UInt8](repeating: 0, count: 64)
        for (index, socket) in controllers.enumerated() {
            var ack: HapticAck?
            let deadline = SystemClock.monotonicNs() + 5_000_000_000
            while ack == nil && SystemClock.monotonicNs() < deadline {
                if case .datagram(let n, _) = socket.receive(into: &buffer) {
                    ack = buffer.withUnsafeBytes { bytes in try? HapticAck.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<n])) }
                } else {
                    usleep(500)
                }
            }
            #expect(ack?.echoTMs == 10_000, "controller \(index) got \(String(describing: ack))")
        }
        let stats = try host.statistics()
        #expect(stats.datagrams == controllers.count * (burst + 1))
        #expect(stats.validFrames == stats.datagrams)
        #expect(stats.triggers == controllers.count)
        #expect(stats.repliesSent == controllers.count)
        if intervalNs == nil {
            #expect(stats.deferredReads == 0)
        } else {
            #expect(stats.deferredReads > 0, "bursts of 200 frames put off at least one read")
        }
    }

    /// `--immediate-mode` turns pacing off for a UDP host, and is refused where there is none.
    @Test func immediateModeServesAndIsRefusedWithoutAUDPSocket() throws {
        let host = try Background.kinetrace("host", "--port", "0", "--immediate-mode", "--format", "json")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let sim = try kinetrace("simulate", "--to", "127.0.0.1:\(port)", "--controllers", "2", "--duration", "2",
                                "--script", "random", "--seed", "3", "--format", "json")
        #expect(sim.status == 0, "\(sim.stderr)")
        let result = try host.stop(SIGTERM)
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.map(String.init))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any])
        #expect((report["datagrams"] as? Int ?? 0) >= 2 * 15, "\(summary)")
        #expect(report["deferred_reads"] as? Int == 0, "--immediate-mode puts no read off: \(summary)")

        for extra in [["--stdio"], ["--protocol", "attitude-stream"]] {
            let refused = try kinetrace(["host", "--port", "0", "--immediate-mode"] + extra, timeout: 10)
            #expect(refused.status == 64, "\(extra): \(refused.stderr)")
            #expect(refused.stderr.contains("--immediate-mode applies to a UDP host"), "\(refused.stderr)")
        }
    }

    /// The summary says how many reads the host put off: some, after 4,000 frames in bursts of 200.
    @Test func theHostReportsTheReadsItPutOff() throws {
        let host = try Background.kinetrace("host", "--port", "0", "--format", "json")
        let port = try port(in: try host.waitForLine(startingWith: "listening on"))
        let target = try SocketAddressBox.resolve("127.0.0.1:\(port)")
        let sockets = try (0..<40).map { _ throws(SocketError) in try ConnectedUDPSocket(to: target) }
        for n in 0..<100 {  // in bursts of 200 frames, as above
            for socket in sockets { _ = socket.send(MotionFrame(tMs: UInt64(1_000 + n), ay: 0).encoded()) }
            if n % 5 == 4 { usleep(2_000) }
        }
        usleep(500_000)
        let result = try host.stop(SIGTERM)
        let summary = try #require(result.stdout.split(separator: "\n").last.map(String.init))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any])
        #expect(report["datagrams"] as? Int == 4_000, "\(summary)")
        #expect((report["deferred_reads"] as? Int ?? 0) > 0, "\(summary)")
    }

    /// A read of many datagrams at once keeps each whole, up to the largest UDP payload (a KeepCalm
    /// message was cut to 128 bytes when NIO split its default 2 KB buffer among 16 datagrams, and
    /// anything past 4,096 bytes was cut silently until issue 24).
    @Test func datagramsReadTogetherArriveWhole() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let tracePath = dir.appendingPathComponent("host.jsonl").path
        var configuration = ReferenceHost.Configuration(wireProtocol: MotionLinkV1())
        configuration.port = 0
        configuration.tracePath = tracePath
        let host = try ReferenceHost(configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let target = try SocketAddressBox.resolve("127.0.0.1:\(host.localAddress.port!)")
        let socket = try ConnectedUDPSocket(to: target)
        let sizes = [36, 129, 1_000, 2_049, 4_096, 4_097, 5_000, 65_507] + Array(repeating: 36, count: 40)
        for (n, size) in sizes.enumerated() {  // sent at once, so read in batches
            #expect(socket.send([UInt8](repeating: UInt8(truncatingIfNeeded: n), count: size)) == nil)
        }
        #expect(try waitFor { try host.statistics().datagrams == sizes.count })
        _ = try host.shutdown()
        let reader = try TraceReader(path: tracePath)
        var lengths: [Int] = []
        while let record = try reader.next() {
            if case .message(let message) = record { lengths.append(message.payload.count) }
        }
        #expect(lengths == sizes)
    }

    /// Issue 24, finding 3: a 5,000-byte KeepCalm datagram whose first 4,096 bytes are a valid message
    /// is `invalid_length` (KC-SIZE-1), recorded at its true length, and makes no controller jump;
    /// a 4,097-byte one is `invalid_length` too, not `malformed`.
    @Test func anOverlongKeepCalmMessageIsJudgedWhole() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let tracePath = dir.appendingPathComponent("host.jsonl").path
        var configuration = ReferenceHost.Configuration(wireProtocol: KeepCalmJSON())
        configuration.port = 0
        configuration.tracePath = tracePath
        let host = try ReferenceHost(configuration: configuration, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let target = try SocketAddressBox.resolve("127.0.0.1:\(host.localAddress.port!)")
        let socket = try ConnectedUDPSocket(to: target)
        let jump = #"{"type":"MotionData","payload":{"id":"6C1E8A52-3F0B-4B7E-9D6A-1A2B3C4D5E6F","type":"accelerometer","x":0,"y":0.9,"z":0}}"#
        func padded(_ count: Int) -> [UInt8] { Array(jump.utf8) + [UInt8](repeating: 0x20, count: count - jump.utf8.count) }
        #expect(socket.send(padded(5_000)) == nil)
        #expect(socket.send(padded(4_097)) == nil)
        #expect(try waitFor { try host.statistics().datagrams == 2 })
        _ = try host.shutdown()
        let lines = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").dropFirst()
        #expect(lines.count == 2, "two messages and no jump event: \(lines)")
        for (line, length) in zip(lines, [5_000, 4_097]) {
            let recordedLength = line.contains("\"len\":\(length),")
            let invalidLength = line.contains("\"valid\":false") && line.contains("invalid_length")
            #expect(recordedLength && invalidLength, "\(line.prefix(120))…\(line.suffix(60))")
        }
    }

    private func waitFor(_ condition: () throws -> Bool) throws -> Bool {
        let deadline = SystemClock.monotonicNs() + 10_000_000_000
        while SystemClock.monotonicNs() < deadline {
            if try condition() { return true }
            usleep(1_000)
        }
        return try condition()
    }
}
