import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire
import Logging

/// What the reference host makes of each arrival, whatever the transport: the protocol's
/// host model per controller, a framer per controller for a byte-stream protocol, the
/// trace, the log. Its listener calls it on one event loop only.
final class ReferenceHostService: HostService, @unchecked Sendable {  // confined to the listener's event loop
    private let configuration: ReferenceHost.Configuration
    private let logger: Logger
    private let recorder: TraceRecorder?
    private var core: HostCore<PeerKey>
    /// Byte-stream protocols: each controller's framer, made on its first bytes.
    private var framers: [PeerKey: any MessageFramer] = [:]
    private let framesStream: Bool
    private var closedMidRecord = 0
    private var framingErrors = 0
    private var recordingFailure: TraceError?
    /// The counters as the listener finished: read once its loop has stopped.
    private(set) var finalStatistics = HostStatistics()

    init(configuration: ReferenceHost.Configuration, logger: Logger, recorder: TraceRecorder?) {
        self.configuration = configuration
        self.logger = logger
        self.recorder = recorder
        core = HostCore(wireProtocol: configuration.wireProtocol, rule: configuration.rule,
                        maximumControllers: configuration.maximumControllers, idleTimeoutNs: configuration.idleTimeoutNs)
        framesStream = configuration.wireProtocol.transport == .byteStream
    }

    var statistics: HostStatistics {
        var statistics = core.statistics
        statistics.closedMidRecord = closedMidRecord
        statistics.framingErrors = framingErrors
        return statistics
    }

    func received(_ bytes: UnsafeRawBufferPointer, from peer: Peer, receivedNs: Int64, reply: (_ payload: [UInt8]) -> Void) -> Uptake {
        recorder?.write(.message(MessageRecord(timeNs: receivedNs, direction: .controllerToHost, source: peer.endpoint,
                                               destination: peer.local, payload: Array(bytes))))
        guard framesStream else {
            decide(bytes, from: peer, receivedNs: receivedNs, reply: reply)
            return .whole
        }
        var framer = framers.removeValue(forKey: peer.key) ?? configuration.wireProtocol.makeFramer()
        defer { framers[peer.key] = framer }
        framer.append(Array(bytes))
        var whole = false
        do throws(WireError) {
            while let message = try framer.next() {
                whole = true
                message.bytes.withUnsafeBytes { decide($0, from: peer, receivedNs: receivedNs, reply: reply) }
            }
        } catch {
            framingErrors += 1
            logger.warning("closing a connection whose stream cannot be framed: byte \(error.offset): expected \(error.expected)",
                           metadata: ["controller": "\(peer.endpoint)"])
            framer = configuration.wireProtocol.makeFramer()
            return .broken
        }
        return whole ? .whole : .partial
    }

    /// One whole message: the host model's decision, its reply, and what the trace keeps of it.
    private func decide(_ message: UnsafeRawBufferPointer, from peer: Peer, receivedNs: Int64, reply: (_ payload: [UInt8]) -> Void) {
        configuration.observer?.received(from: peer)
        guard let decision = core.handle(message, from: peer.key, receivedNs: receivedNs) else { return }
        let endpoint = peer.endpoint
        decision.log(to: logger, controller: endpoint)
        configuration.observer?.decided(decision, controller: peer)
        let payload = core.wireProtocol.reply(to: decision)
        // A decision with no reply shows nowhere on the wire, and a stream's reply is no message a
        // reader of the trace can find without framing it: the trace keeps the decision itself.
        if payload == nil || framesStream {
            recorder?.write(.event(decision.eventRecord(timeNs: receivedNs, controller: endpoint)))
        }
        guard let payload else { return }
        // Stamped before the send, as the controllers stamp theirs: a record stamped after the
        // write can show the reply arriving before it left (`latency --join` found 0.1–0.2 ms).
        let sentNs = SystemClock.realtimeNs()
        reply(payload)
        recorder?.write(.message(MessageRecord(timeNs: sentNs, direction: .hostToController, source: peer.local,
                                               destination: endpoint, payload: payload)))
    }

    func ended(_ peer: Peer) {
        configuration.observer?.ended(peer)
        guard let framer = framers.removeValue(forKey: peer.key) else { return }
        var last = framer
        let pending = last.finish()?.bytes.count ?? 0
        guard pending > 0 else { return }
        closedMidRecord += 1
        logger.warning("connection closed \(pending) byte(s) into a record", metadata: ["controller": "\(peer.endpoint)"])
    }

    /// The trace writer flushes on size and age when written to; this covers idle spells.
    func tick() { recorder?.flush() }

    /// What the transport saw (a WebSocket close and its code), or a site's record, goes into the trace as it came.
    func noted(_ record: TraceRecord) { recorder?.write(record) }

    func finish() {
        finalStatistics = statistics
        do throws(TraceError) { try recorder?.close() } catch { recordingFailure = error }
    }

    /// Throws the first error the trace met, once the listener has finished.
    func closeRecording() throws(TraceError) {
        if let recordingFailure { throw recordingFailure }
    }
}
