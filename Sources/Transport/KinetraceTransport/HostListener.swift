import KinetraceTrace
import KinetraceWire
import NIOCore

/// Who sent an arrival, as a host keys its controllers: a datagram's source address, or
/// a connection's number (one connection is one controller for its life, and a number is
/// never reused, so a new connection never inherits an old one's state).
package enum PeerKey: Hashable, Sendable {
    case address(SocketAddress)
    case connection(Int)
}

/// One controller as a listener names it.
package struct Peer: Sendable {
    package let key: PeerKey
    /// The host's own address on this path.
    package let local: Endpoint
    private let named: Endpoint?

    /// A connection's peer, named once as it was accepted.
    package init(key: PeerKey, endpoint: Endpoint, local: Endpoint) {
        self.key = key
        self.local = local
        named = endpoint
    }

    /// A datagram's source: named only when asked (a record or a decision), since formatting an
    /// address for every datagram would cost a busy host an allocation each.
    package init(address: SocketAddress, local: Endpoint) {
        key = .address(address)
        self.local = local
        named = nil
    }

    /// Its address, as records name it.
    package var endpoint: Endpoint {
        if let named { return named }
        if case .address(let address) = key { return Endpoint(address) }
        return Endpoint(host: "unknown", port: 0)
    }
}

/// What a host made of an arrival.
package enum Uptake: Sendable {
    /// At least one whole message was handled: the connection is active.
    case whole
    /// Bytes that complete no message yet.
    case partial
    /// The stream cannot be framed: the listener closes the connection.
    case broken
}

/// The host behind a listener: what to make of each arrival and what to send back. A
/// listener calls it on its one event loop only, so it needs no lock of its own.
package protocol HostService: AnyObject, Sendable {
    /// Bytes from a controller: one message where the transport keeps boundaries, else the
    /// next chunk of its stream. `reply` sends bytes back to that controller, in order.
    func received(_ bytes: UnsafeRawBufferPointer, from peer: Peer, receivedNs: Int64, reply: (_ payload: [UInt8]) -> Void) -> Uptake
    /// A connection ended (never called for datagrams): the controller is gone.
    func ended(_ peer: Peer)
    /// Called about four times a second, on the loop, whatever arrives (a trace's flush).
    func tick()
    /// The listener has stopped: every connection's end has been reported.
    func finish()
    /// Something the transport itself saw of a controller (a WebSocket close and its code), or
    /// a site's record (a phone's label), for the trace.
    func noted(_ record: TraceRecord)
}

extension HostService {
    package func noted(_ record: TraceRecord) {}
}

/// Where and how a listener serves.
package struct ListenerConfiguration: Sendable {
    package var bindHost = "127.0.0.1"
    package var port = 0
    /// Connections open at once; at the limit a new one displaces the least recently active.
    package var maximumConnections = 1024
    /// A connection that delivers no whole message for this long is closed (nil: never).
    package var connectionTimeoutNs: Int64? = 10_000_000_000
    /// Under load a datagram listener reads in batches this far apart (nil: woken for every datagram).
    package var readBatchIntervalNs: Int64? = ReadPacing.defaultIntervalNs
    /// The URL path served, for a transport that takes one (WebSocket).
    package var path = "/"
    /// The certificate and key a secure transport serves with.
    package var tlsIdentity: TLSServerIdentity?
    /// Pages and side channels served beside the stream, by a transport that takes a path (WebSocket).
    package var site: (any HostSite)?
    package init() {}
}

/// What a listener counted, apart from what its service decided.
package struct ListenerStatistics: Sendable, Equatable {
    /// Connections accepted; closed to admit a new one at the limit (least recently active
    /// first); closed after delivering no message for the timeout; closed unread because
    /// their peer could not be named.
    package var connections = 0
    package var connectionsDisplaced = 0
    package var connectionsTimedOut = 0
    package var connectionsUnnamed = 0
    /// Datagram listeners: reads put off under load (`ReadPacing`), rather than woken for.
    package var deferredReads = 0
    package init() {}
}

/// A host's listener while it serves: the server side of a transport.
package protocol HostListener: Sendable {
    /// The address actually bound (useful with port 0).
    var localAddress: SocketAddress { get }
    /// Runs `body` on the listener's event loop, where its service lives.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T
    /// Counters so far.
    func statistics() throws -> ListenerStatistics
    /// Stops accepting and closes every connection (each end reaches the service), tells the
    /// service it is finished, and returns the final counters.
    func shutdown() throws -> ListenerStatistics
    /// Waits until the listener is closed.
    func waitUntilClosed() throws
}

/// Why a listener cannot serve.
package struct ListenerError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

extension Endpoint {
    /// The trace form of a NIO socket address.
    package init(_ address: SocketAddress) {
        self.init(host: address.ipAddress ?? "unknown", port: UInt16(clamping: address.port ?? 0))
    }
}
