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
/// the wire (with `observeAll`, for every decision), until end of input.
public struct StdioHost {
    public var wireProtocol: any WireProtocol.Type
    public var input: Int32 = STDIN_FILENO
    public var output: Int32 = STDOUT_FILENO
    public var rule = GestureRule.default
    /// Report decisions that have a reply on the observation channel too.
    public var observeAll = false

    public init(wireProtocol: any WireProtocol.Type) { self.wireProtocol = wireProtocol }

    /// Serves until end of input. Throws on broken framing or a failed write.
    public func run() throws(StdioHostError) -> HostStatistics {
        var core = HostCore<UInt16>(wireProtocol: wireProtocol, rule: rule)
        var decoder = StdioRecordDecoder()
        var streams = ControllerStreams()
        var buffer = [UInt8](repeating: 0, count: 65_536)
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
                return core.statistics
            }
            decoder.append(buffer[0..<n])
            while let record = try nextRecord(&decoder) {
                guard record.kind == .controllerToHost else { continue }  // nothing else is addressed to a host
                // A byte-stream protocol's records carry writes, not messages (SA-PAYLOAD-5): reassemble per controller.
                let messages = try streams.messages(in: record, of: wireProtocol)
                for message in messages {
                    guard let decision = core.handle(message, from: record.controller, receivedNs: SystemClock.realtimeNs()) else { continue }
                    try answer(decision, to: record.controller)
                }
            }
        }
    }

    /// Writes the reply a decision owes, and its observation when it owes none (or with `observeAll`).
    private func answer(_ decision: HostDecision, to controller: UInt16) throws(StdioHostError) {
        var out: [UInt8] = []
        let reply = wireProtocol.reply(to: decision)
        if let reply {
            out += StdioRecord(kind: .hostToController, controller: controller, payload: reply).encoded()
        }
        if reply == nil || observeAll {
            out += StdioRecord(kind: .observation, controller: controller, payload: Observation(decision).encoded()).encoded()
        }
        if let failure = write(out) {
            throw StdioHostError("cannot write the output: \(String(cString: strerror(failure)))")
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

/// Each controller's stream for a byte-stream protocol, cut by the protocol's framer.
struct ControllerStreams {
    private var framers: [UInt16: any MessageFramer] = [:]

    /// The whole messages a controller→host record completes: the record itself for a datagram protocol.
    mutating func messages(in record: StdioRecord, of wireProtocol: any WireProtocol.Type) throws(StdioHostError) -> [[UInt8]] {
        guard wireProtocol.transport == .byteStream else { return [record.payload] }
        var framer = framers.removeValue(forKey: record.controller) ?? wireProtocol.makeFramer()
        defer { framers[record.controller] = framer }
        framer.append(record.payload)
        var out: [[UInt8]] = []
        do throws(WireError) {
            while let message = try framer.next() { out.append(message.bytes) }
        } catch {
            throw StdioHostError("controller \(record.controller)'s stream cannot be framed: byte \(error.offset): expected \(error.expected)")
        }
        return out
    }
}

public struct StdioHostError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
