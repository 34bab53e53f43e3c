import KinetraceTrace
import NIOConcurrencyHelpers
import NIOCore

/// A secure transport's certificate and key, as PEM bytes: the host's side of TLS. Where
/// they come from (a file the user gives, or one made and kept on first run) is the caller's.
package struct TLSServerIdentity: Sendable {
    package var certificateChainPEM: [UInt8]
    package var privateKeyPEM: [UInt8]

    package init(certificateChainPEM: [UInt8], privateKeyPEM: [UInt8]) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Which hosts a controller's TLS connection trusts.
package enum TLSTrust: Sendable, Equatable {
    /// The system's roots, and the host's name or address checked against the certificate.
    case system
    /// Only these PEM certificates (a self-signed host's own), the name or address checked.
    case certificates(pem: [UInt8])
    /// Any certificate, unchecked (`--insecure`, as curl's): the traffic is still encrypted.
    case anyCertificate
}

/// TLS for the secure transports, plugged in at run time (`TLSSupport.install`), as a
/// dissector is registered: the `kinetrace` command installs NIOSSL's (KinetraceTLS), and a
/// program built on the libraries alone compiles no TLS stack and has no `wss://`.
package protocol TLSProvider: Sendable {
    /// Makes the handler a host puts first in each connection's pipeline; throws a
    /// `ListenerError` when the identity cannot serve TLS.
    func serverHandlerMaker(for identity: TLSServerIdentity) throws -> @Sendable () -> any ChannelHandler
    /// A TLS connection to `target`, its host checked as `trust` says, whose plaintext a
    /// controller reads and writes on a local socket.
    func connect(to target: TransportTarget, trust: TLSTrust, timeoutMs: Int32) throws(SocketError) -> any TLSPlaintextLink
}

/// A TLS connection's plaintext end: a connected, non-blocking stream socket the controller
/// owns (closing it ends the connection), and the TLS connection's own local address.
package protocol TLSPlaintextLink: AnyObject, Sendable {
    var plaintextDescriptor: Int32 { get }
    var local: Endpoint { get }
}

/// The installed TLS provider, if any.
package enum TLSSupport {
    private static let installed = NIOLockedValueBox<(any TLSProvider)?>(nil)

    package static func install(_ provider: any TLSProvider) { installed.withLockedValue { $0 = provider } }
    package static var provider: (any TLSProvider)? { installed.withLockedValue { $0 } }

    static let missing = "this program has no TLS: the kinetrace command has it, and a program built on the libraries installs KinetraceTLS's provider (NIOSSLProvider.install())"
}
