import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import Logging
import NIOCore
import KinetraceTransport

/// The reference host: one listener on any transport, IPv4 or IPv6, any number of
/// controllers. Every message goes through the protocol's host model per controller (a
/// datagram's source address, a connection); every reply it owes goes back to its sender;
/// everything invalid is dropped and the host keeps serving. A byte-stream protocol's
/// chunks go through a framer per controller (`WireProtocol.makeFramer()`), so records are
/// cut by the stream's offsets whatever its reads return; a connection whose framing breaks
/// is closed, and one that closes inside a record is counted and logged. Connection limits
/// and timeouts are the transport's listener's (`ListenerConfiguration`).
///
/// With a trace, every arrival is recorded as it came (one `msg` record per datagram or
/// read, TR-MSG-3), every reply as sent, and every decision a reply does not show on the
/// wire as a `decision` event.
package final class ReferenceHost: Sendable {
    package struct Configuration: Sendable {
        package var wireProtocol: any WireProtocol
        /// nil: the protocol's own transport (UDP for datagrams, TCP for a byte stream).
        package var transport: (any Transport)?
        package var bindHost = "127.0.0.1"
        /// nil: the protocol's default port; 0: any free port.
        package var port: Int?
        package var rule = GestureRule.default
        /// Controllers held at once; the least recently heard is forgotten beyond.
        package var maximumControllers = HostCore<Int>.defaultMaximumControllers
        /// A controller not heard from for longer is forgotten (nil: never).
        package var idleTimeoutNs: Int64? = HostCore<Int>.defaultIdleTimeoutNs
        /// Records what the host received and sent, when set.
        package var tracePath: String?
        /// A connection-oriented host's limit on open connections: at the limit a new connection
        /// displaces the least recently active one.
        package var maximumConnections = 1024
        /// A connection-oriented host closes a connection that delivers no whole record for this long (nil: never).
        package var connectionTimeoutNs: Int64? = ReferenceHost.Configuration.defaultConnectionTimeoutNs
        /// 10 s: 600 frames of a phone streaming at 60 Hz; a slow writer of a byte a second completes a record every 12 s.
        package static let defaultConnectionTimeoutNs: Int64 = 10_000_000_000
        /// Under load a datagram host reads in batches this far apart instead of being woken for
        /// every datagram (nil: woken for every one). See `ReadPacing`.
        package var readBatchIntervalNs: Int64? = ReadPacing.defaultIntervalNs
        /// The URL path served, on a transport that takes one (WebSocket).
        package var path = "/"
        /// The certificate and key a secure transport (wss) serves with.
        package var tlsIdentity: TLSServerIdentity?
        /// Pages and side channels served beside the stream (WebSocket only): `kinetrace phone`'s.
        package var site: (any HostSite)?
        /// The tool its trace's header names.
        package var recordedBy = "kinetrace host"
        /// Told of every message, decision and ended connection as it happens.
        package var observer: (any HostObserver)?
        package init(wireProtocol: any WireProtocol) { self.wireProtocol = wireProtocol }
        /// The port to bind.
        package var boundPort: Int { port ?? Int(wireProtocol.defaultPort) }
        /// The transport served.
        package var servedTransport: any Transport { transport ?? Transports.native(for: wireProtocol) }
    }

    package let configuration: Configuration
    package let logger: Logger
    private let listener: any HostListener
    private let service: ReferenceHostService

    /// The address actually bound (useful with port 0).
    package var localAddress: SocketAddress { listener.localAddress }

    /// Binds and starts serving. Throws if the address cannot be bound, or if the transport
    /// cannot carry the protocol.
    package init(configuration: Configuration, logger: Logger) throws {
        let transport = configuration.servedTransport.fitted(to: configuration.wireProtocol)
        if let problem = transport.problem(carrying: configuration.wireProtocol) { throw HostError(problem) }
        self.configuration = configuration
        self.logger = logger
        var recorder: TraceRecorder?
        if let path = configuration.tracePath {
            recorder = try TraceRecorder(path: path, header: TraceHeader(
                created: RFC3339.string(fromNanoseconds: SystemClock.realtimeNs()), tool: configuration.recordedBy,
                wireProtocol: configuration.wireProtocol, capturePoint: .host, clock: .realtime,
                notes: "reference host on \(transport.scheme)://\(configuration.bindHost):\(configuration.boundPort)\(transport.takesPath ? configuration.path : "")"
                    + (transport.keepsMessageBoundaries ? "" : ", one read per msg record")
                    + ", threshold \(configuration.rule.threshold), refractory \(configuration.rule.refractoryMs) ms"))
        }
        let service = ReferenceHostService(configuration: configuration, logger: logger, recorder: recorder)
        var listening = ListenerConfiguration()
        listening.bindHost = configuration.bindHost
        listening.port = configuration.boundPort
        listening.maximumConnections = configuration.maximumConnections
        listening.connectionTimeoutNs = configuration.connectionTimeoutNs
        listening.readBatchIntervalNs = configuration.readBatchIntervalNs
        listening.path = configuration.path
        listening.tlsIdentity = configuration.tlsIdentity
        listening.site = configuration.site
        do {
            listener = try transport.listen(listening, service: service, logger: logger)
        } catch let error as ListenerError {
            throw HostError(error.description)
        }
        self.service = service
    }

    /// Counters so far (read on the host's event loop).
    package func statistics() throws -> HostStatistics {
        let service = service
        let counted = try listener.onLoop { service.statistics }
        return counted.merging(try listener.statistics())
    }

    /// Stops serving, flushes the trace and returns the final counters.
    package func shutdown() throws -> HostStatistics {
        let listened = try listener.shutdown()
        // The loop is gone: the service kept its last counters when the listener finished it.
        try service.closeRecording()
        return service.finalStatistics.merging(listened)
    }

    /// Waits until the listener is closed.
    package func waitUntilClosed() throws { try listener.waitUntilClosed() }

    /// Runs `body` on the host's event loop, where its service, site and observer live.
    package func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T { try listener.onLoop(body) }
}

/// Told of what the reference host receives and decides, on its event loop (a decision before its reply is sent).
package protocol HostObserver: AnyObject, Sendable {
    /// A whole message from `controller`, before the host model sees it.
    func received(from controller: Peer)
    func decided(_ decision: HostDecision, controller: Peer)
    /// The controller's connection ended.
    func ended(_ controller: Peer)
}

/// Why the host cannot serve.
package struct HostError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// What the host did.
package struct HostStatistics: Sendable, Equatable {
    package var datagrams = 0
    package var validFrames = 0
    package var staleFrames = 0
    package var invalidByReason: [String: Int] = [:]
    package var triggers = 0
    package var repliesSent = 0
    /// Controllers the host holds state for now (at most its maximum).
    package var controllers = 0
    /// Controllers forgotten after the idle timeout and to stay within the maximum.
    package var forgottenIdle = 0
    package var forgottenOverCapacity = 0
    /// Byte-stream hosts: connections accepted; closed to admit a new one at the limit
    /// (least recently active first); closed after delivering no record for the timeout; closed
    /// unread because their peer could not be named; closed inside a record; and closed
    /// because their stream could not be framed.
    package var connections = 0
    package var connectionsDisplaced = 0
    package var connectionsTimedOut = 0
    package var connectionsUnnamed = 0
    package var closedMidRecord = 0
    package var framingErrors = 0
    /// Datagram hosts: reads put off under load (ReadPacing), rather than woken for.
    package var deferredReads = 0
    package init() {}

    /// These counters with a listener's.
    func merging(_ listener: ListenerStatistics) -> HostStatistics {
        var merged = self
        merged.connections = listener.connections
        merged.connectionsDisplaced = listener.connectionsDisplaced
        merged.connectionsTimedOut = listener.connectionsTimedOut
        merged.connectionsUnnamed = listener.connectionsUnnamed
        merged.deferredReads = listener.deferredReads
        return merged
    }
}

/// Wraps the trace writer; a failure to record must not stop the host.
final class TraceRecorder: @unchecked Sendable {  // used only on the host's event loop
    private let writer: any TraceSink
    private(set) var failure: TraceError?

    init(path: String, header: TraceHeader) throws(TraceError) {
        writer = try TraceOutput.create(path: path, header: header)
    }

    func write(_ record: TraceRecord) {
        guard failure == nil else { return }
        do throws(TraceError) { try writer.write(record) } catch { failure = error }
    }

    func flush() {
        guard failure == nil else { return }
        do throws(TraceError) { try writer.flush() } catch { failure = error }
    }

    func close() throws(TraceError) {
        try writer.close()
        if let failure { throw failure }
    }
}

