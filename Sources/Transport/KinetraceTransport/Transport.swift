import KinetraceTrace
import KinetraceWire
import Logging

/// A carrier of a wire protocol's messages between controllers and a host: UDP, TCP, or
/// any other added through this seam. It makes both ends: a controller's connection (plain
/// sockets, so that a sender sleeping to absolute deadlines decides when bytes leave) and a
/// host's listener (SwiftNIO). Engines reach hosts and controllers only through it; what a
/// new transport must implement is in CONTRIBUTING.md.
package protocol Transport: Sendable, CustomStringConvertible {
    /// The URL scheme that names it: `udp`, `tcp`.
    var scheme: String { get }
    /// True when each send arrives as one message (UDP); false when a controller's sends
    /// join one byte stream that the receiver reads in chunks of its own (TCP).
    var keepsMessageBoundaries: Bool { get }
    /// True when the carrier repairs loss, duplication, reordering and corruption (TCP), so
    /// that a replay through it can only delay messages or limit their rate.
    var repairsDelivery: Bool { get }
    /// True when each controller is a connection the host accepts and can close (TCP); false
    /// when controllers are only source addresses (UDP).
    var hasConnections: Bool { get }
    /// True when a URL names a path on the host as well as its address (WebSocket).
    var takesPath: Bool { get }
    /// True when it runs over TLS: its listener needs `ListenerConfiguration.tlsIdentity`, and a
    /// controller checks the host's certificate as `ConnectionOptions.tlsTrust` says.
    var isSecure: Bool { get }
    /// Why it cannot carry `wireProtocol`; nil when it can.
    func problem(carrying wireProtocol: any WireProtocol) -> String?
    /// This transport set up for `wireProtocol`'s messages (WebSocket sends a textual
    /// protocol's as text messages); itself where nothing depends on the protocol.
    func fitted(to wireProtocol: any WireProtocol) -> any Transport
    /// Opens one controller's connection to the host `target` names.
    func connect(to target: TransportTarget, options: ConnectionOptions) throws(SocketError) -> any ControllerConnection
    /// Starts a host's listener, which hands every arrival to `service`.
    func listen(_ configuration: ListenerConfiguration, service: any HostService, logger: Logger) throws -> any HostListener
}

extension Transport {
    package var description: String { scheme }
    package var takesPath: Bool { false }
    package var isSecure: Bool { false }
    package func fitted(to wireProtocol: any WireProtocol) -> any Transport { self }
}

/// How a controller's connection is opened.
package struct ConnectionOptions: Sendable {
    /// The kernel send buffer (SO_SNDBUF); nil lets the kernel size it. A small one makes a
    /// host that stops reading show sooner, as unsent bytes and blocked writes.
    package var sendBufferBytes: Int?
    /// How long a connecting carrier waits for the host's answer.
    package var connectTimeoutMs: Int32 = 5_000
    /// Which certificates a secure transport's host may present.
    package var tlsTrust = TLSTrust.system
    package init(sendBufferBytes: Int? = nil, tlsTrust: TLSTrust = .system) {
        self.sendBufferBytes = sendBufferBytes
        self.tlsTrust = tlsTrust
    }
}

/// What one non-blocking send did.
package enum SendOutcome: Equatable, Sendable {
    /// Every byte left, as one message or one write of the stream.
    case all
    /// A stream took only the first n bytes (0: it had no room); the rest is the caller's to send later.
    case partial(Int)
    /// The send failed with errno; `ended` when the connection is over (a stream the host
    /// closed or reset), false when the next send may still go (a datagram refused by ICMP).
    case failed(Int32, ended: Bool)
}

/// What one non-blocking read found.
package enum ReadOutcome: Equatable, Sendable {
    /// n bytes: one message where the carrier keeps boundaries, else a chunk of the stream;
    /// with the kernel's arrival stamp on the realtime clock where the carrier has one.
    case bytes(Int, arrivalRealtimeNs: Int64?)
    /// Nothing to read now.
    case nothing
    /// The host ended the connection in order (a stream's FIN); nothing more comes.
    case closed
    /// errno; `ended` as for `SendOutcome.failed`.
    case failed(Int32, ended: Bool)
}

/// One controller's connection to a host: the client side of a transport. One thread sends
/// while another reads; each side is the caller's to serialise.
package protocol ControllerConnection: AnyObject, Sendable {
    /// The controller's own address, as records name it.
    var local: Endpoint { get }
    /// A descriptor that polls readable whenever `read` has something (or an end) to report.
    var descriptor: Int32 { get }
    /// Whether reads carry the kernel's arrival stamp.
    var stampsArrivals: Bool { get }
    /// One non-blocking send of `bytes`: one message, or one write of the stream.
    func trySend(_ bytes: UnsafeRawBufferPointer) -> SendOutcome
    /// Whether a send now would find room (a stream's POLLOUT; always true for datagrams,
    /// whose send reports a full buffer itself).
    var hasRoom: Bool { get }
    /// Sends all of `bytes`, waiting for room until `deadlineMonotonicNs`; errno on failure
    /// (ETIMEDOUT: the host stopped reading, and a stream then holds part of the bytes).
    func send(_ bytes: [UInt8], deadlineMonotonicNs: Int64) -> Int32?
    /// Reads what has arrived into `buffer`.
    func read(into buffer: inout [UInt8]) -> ReadOutcome
    /// Ends the controller's output, as a stream's write-side shutdown does; false where
    /// the carrier has no such end (datagrams), so nobody waits for the host to answer it.
    func endOutput() -> Bool
    /// Bytes written that the host has not yet taken (Linux SIOCOUTQ); nil where unknown.
    var unsentBytes: Int? { get }
    /// True when `read` has something to report that already left the socket (a second
    /// WebSocket message decoded with the first, or TLS plaintext): a poll of `descriptor`
    /// would not show it, so readers check this too.
    var hasBufferedInput: Bool { get }
}

extension ControllerConnection {
    package var hasBufferedInput: Bool { false }
}

/// The transports Kinetrace knows, by scheme; a protocol's own transport is the one its
/// kind asks for (datagrams over UDP, byte streams over TCP).
package enum Transports {
    package static let udp: any Transport = UDPTransport()
    package static let tcp: any Transport = TCPTransport()
    package static let webSocket: any Transport = WebSocketTransport(secure: false)
    package static let secureWebSocket: any Transport = WebSocketTransport(secure: true)

    /// Every transport, in the order help lists them.
    package static var all: [any Transport] { [udp, tcp, webSocket, secureWebSocket] }

    /// The transport a URL scheme names, or nil.
    package static func named(_ scheme: String) -> (any Transport)? {
        all.first { $0.scheme == scheme.lowercased() }
    }

    /// The transport a protocol travels on unless told otherwise.
    package static func native(for wireProtocol: any WireProtocol) -> any Transport {
        wireProtocol.transport == .byteStream ? tcp : udp
    }
}

/// A host's address on a transport: `udp://127.0.0.1:5005`, `ws://127.0.0.1:8080/motion`.
package struct TransportTarget: Sendable, CustomStringConvertible {
    package var transport: any Transport
    package var address: SocketAddressBox
    /// The path on the host, for a transport that takes one (`/` when the URL names none).
    package var path: String?
    /// The host as the URL named it (a name or an address literal), for TLS to check the
    /// certificate against; the address's own text when made from an address.
    package var hostName: String

    package init(_ transport: any Transport, _ address: SocketAddressBox, path: String? = nil, hostName: String? = nil) {
        self.transport = transport
        self.address = address
        self.path = transport.takesPath ? (path ?? "/") : nil
        self.hostName = hostName ?? address.endpoint.host
    }

    package var description: String { "\(transport.scheme)://\(address)\(path ?? "")" }

    /// The same host, its transport set up for `wireProtocol` (`Transport.fitted(to:)`).
    package func fitted(to wireProtocol: any WireProtocol) -> TransportTarget {
        var copy = self
        copy.transport = transport.fitted(to: wireProtocol)
        return copy
    }

    /// The longest path a URL may name.
    package static let maximumPathBytes = 1024

    /// Reads `SCHEME://HOST:PORT[/PATH]`, or a bare `HOST:PORT` on `fallback`.
    package static func parse(_ text: String, fallback: any Transport) throws(SocketError) -> TransportTarget {
        guard let separator = text.firstRange(of: "://") else {
            return TransportTarget(fallback, try SocketAddressBox.resolve(text))
        }
        let scheme = String(text[..<separator.lowerBound])
        guard let transport = Transports.named(scheme) else {
            throw SocketError("\(text): unknown transport \(scheme)://; expected one of \(Transports.all.map { "\($0.scheme)://" }.joined(separator: ", "))")
        }
        var address = String(text[separator.upperBound...])
        var path: String?
        if let slash = address.firstIndex(of: "/") {
            guard transport.takesPath else {
                throw SocketError("\(text): \(transport.scheme):// takes no path, only HOST:PORT")
            }
            let named = String(address[slash...])
            guard named.utf8.count <= maximumPathBytes else {
                throw SocketError("\(text.prefix(80))…: the path is longer than \(maximumPathBytes) bytes")
            }
            guard named.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
                throw SocketError("\(text): the path must be printable ASCII with no spaces (percent-encode the rest)")
            }
            path = named
            address = String(address[..<slash])
        }
        do {
            let resolved = try SocketAddressBox.resolve(address)
            // HOST of HOST:PORT, or V6 of [V6]:PORT.
            let named = address.hasPrefix("[") ? String(address.dropFirst().prefix { $0 != "]" }) : String(address.prefix { $0 != ":" })
            return TransportTarget(transport, resolved, path: path, hostName: named)
        } catch {
            // Said of the whole URL, not of the address part alone ("udp://" has an empty one).
            throw SocketError(text + ": " + String(error.description.dropFirst(address.count + 2)))
        }
    }
}
