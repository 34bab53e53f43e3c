#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceWire

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Musl)
private let systemWrite = Musl.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif

/// The reference host behind the stdio adapter (specs/stdio-adapter-v1.md):
/// reads controller→host records on one descriptor and writes, on another,
/// a host→controller record for every reply the protocol's host model owes
/// and an observation record (SA-OBS-*) for every decision with no reply on
/// the wire (with `observeAll`, for every decision), until end of input. A
/// byte-stream protocol's records carry writes, not messages (SA-PAYLOAD-5):
/// each controller's stream is framed on its own, whatever the record boundaries.
package struct StdioHost {
    package var wireProtocol: any WireProtocol
    package var input: Int32 = STDIN_FILENO
    package var output: Int32 = STDOUT_FILENO
    package var rule = GestureRule.default
    /// Report decisions that have a reply on the observation channel too.
    package var observeAll = false
    /// Controllers held at once ; the adapter's ids allow 65,536 anyway.
    package var maximumControllers = HostCore<UInt16>.defaultMaximumControllers
    /// Deliberate faults, to show that a suite catches them (`HostFault`); none by default.
    package var faults: Set<HostFault> = []

    package init(wireProtocol: any WireProtocol) { self.wireProtocol = wireProtocol }

    /// Serves until end of input. Throws on broken framing or a failed write.
    package func run() throws(StdioHostError) -> HostStatistics {
        // Ids come from the harness (at most 65,536 of them), not from a network anyone can spoof: no idle
        // timeout, but the cap still holds, so a suite can check it over exec too.
        var core = HostCore<UInt16>(wireProtocol: wireProtocol, rule: rule, maximumControllers: maximumControllers, idleTimeoutNs: nil)
        var decoder = StdioRecordDecoder()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var streams = ControllerStreams(wireProtocol: wireProtocol, faults: faults)
        let declaration = wireProtocol.declaration ?? (type(of: wireProtocol) as? any CompiledWireProtocol.Type)?.builtInDeclaration?.declared
        let decisionName = declaration?.host?.decision ?? "decision"
        // The faults, looked up once rather than per message.
        let sharedState = faults.contains(.sharedState), acceptedReason = faults.acceptedReason, lateMs = faults.lateMs
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StdioHostError("cannot read the input: \(String(cString: strerror(errno)))")
            }
            if n == 0 {
                if decoder.pendingBytes > 0 {
                    throw StdioHostError("the input ended \(decoder.pendingBytes) byte(s) into a record at byte \(decoder.offset)")
                }
                var statistics = core.statistics
                streams.finish(into: &statistics)
                return statistics
            }
            decoder.append(buffer[0..<n])
            var at = decoder.offset
            while let record = try nextRecord(&decoder) {
                defer { at = decoder.offset }
                // SA-ERROR-3: Kinetrace sends a host nothing but kind 0x01; anything else means the framing broke.
                guard record.kind == .controllerToHost else {
                    throw StdioHostError("the input is not stdio records: byte \(at + 4): expected record kind 0x01 (controller to host), found \(record.kind)")
                }
                for message in streams.messages(of: record) {
                    let controller = sharedState ? 0 : record.controller
                    var decided = core.handle(message, from: controller, receivedNs: SystemClock.realtimeNs())
                    if decided == nil, let reason = acceptedReason, wireProtocol.facts(message).error?.code.name == reason {
                        // Owed a reply too where the protocol has one (echoing nothing: the message had no valid stamp).
                        decided = HostDecision(name: decisionName, owesReply: declaration?.host?.replyKind != nil)
                    }
                    guard let decision = decided else { continue }
                    if let lateMs { usleep(UInt32(lateMs) * 1_000) }
                    var out: [UInt8] = []
                    let reply = wireProtocol.reply(to: decision)
                    if let reply {
                        out += StdioRecord(kind: .hostToController, controller: record.controller, payload: reply).encoded()
                    }
                    if reply == nil || observeAll {
                        out += StdioRecord(kind: .observation, controller: record.controller, payload: Observation(decision).encoded()).encoded()
                    }
                    if let failure = write(out) {
                        throw StdioHostError("cannot write the output: \(String(cString: strerror(failure)))")
                    }
                }
            }
        }
    }

    private func nextRecord(_ decoder: inout StdioRecordDecoder) throws(StdioHostError) -> StdioRecord? {
        do throws(WireError) { return try decoder.next() } catch {
            throw StdioHostError("the input is not stdio records: byte \(error.offset): expected \(error.expected)")
        }
    }

    /// Writes all of `bytes`; errno on failure.
    private func write(_ bytes: [UInt8]) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { systemWrite(output, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n < 0 ? errno : EPIPE }
            offset += n
        }
        return nil
    }
}

/// The messages stdio records carry: each record's payload for a datagram
/// protocol; for a byte-stream protocol, whatever each controller's stream
/// completes, framed per controller id as a TCP host frames per connection.
struct ControllerStreams {
    let wireProtocol: any WireProtocol
    let faults: Set<HostFault>
    private let sharedBuffer: Bool, oneRecordPerRead: Bool
    private var framers: [UInt16: any MessageFramer] = [:]
    private var broken: Set<UInt16> = []
    private var closedMidRecord = 0
    /// Streams ended by an empty record (SA-PAYLOAD-6): connections that closed.
    private var ended = 0

    init(wireProtocol: any WireProtocol, faults: Set<HostFault> = []) {
        self.wireProtocol = wireProtocol
        self.faults = faults
        sharedBuffer = faults.contains(.sharedBuffer)
        oneRecordPerRead = faults.contains(.oneRecordPerRead)
    }

    mutating func messages(of record: StdioRecord) -> [[UInt8]] {
        guard wireProtocol.transport == .byteStream else { return [record.payload] }
        let key = sharedBuffer ? 0 : record.controller
        guard !broken.contains(key) else { return [] }
        guard !record.payload.isEmpty else { return end(key) }
        var framer = framers.removeValue(forKey: key) ?? wireProtocol.makeFramer()
        defer { framers[key] = framer }
        framer.append(record.payload)
        var out: [[UInt8]] = []
        do throws(WireError) {
            while let message = try framer.next() { out.append(message.bytes) }
        } catch {
            // A stream that cannot be framed is ignored from here on, as a TCP host closes it.
            broken.insert(key)
        }
        return oneRecordPerRead ? Array(out.prefix(1)) : out
    }

    /// An empty record ends a controller's stream (SA-PAYLOAD-6): a record cut there is no message.
    private mutating func end(_ key: UInt16) -> [[UInt8]] {
        guard var framer = framers.removeValue(forKey: key) else { return [] }
        ended += 1
        var leftover = framer
        guard leftover.finish() != nil else { return [] }
        closedMidRecord += 1
        guard faults.contains(.padCutRecord) else { return [] }
        // The fault: the cut record ended by the end of the stream (a line reader's last line), or completed with zeros.
        if let delimiter = wireProtocol.declaration.flatMap({ d -> [UInt8]? in if case .delimiter(let b, _) = d.framing { return b } else { return nil } }) {
            framer.append(delimiter)
            return (try? framer.next()).map { [$0.bytes] } ?? []
        }
        for _ in 0..<65_536 {
            framer.append([0])
            if let message = try? framer.next() { return [message.bytes] }
        }
        return []
    }

    /// The input ended: streams left inside a message count as connections closed mid-record.
    mutating func finish(into statistics: inout HostStatistics) {
        guard wireProtocol.transport == .byteStream else { return }
        statistics.connections = framers.count + broken.subtracting(framers.keys).count + ended
        statistics.closedMidRecord += closedMidRecord
        for key in Array(framers.keys) where framers[key]!.finish() != nil { statistics.closedMidRecord += 1 }
        statistics.framingErrors = broken.count
    }
}

package struct StdioHostError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}
