import KinetraceTransport
import NIOCore
import NIOSSL

/// TLS by NIOSSL (BoringSSL), TLS 1.2 or later: a host's `NIOSSLServerHandler`, a
/// controller's `TLSRelay`.
package struct NIOSSLProvider: TLSProvider {
    package init() {}

    /// Makes `wss://` work in this process.
    package static func install() { TLSSupport.install(NIOSSLProvider()) }

    package func serverHandlerMaker(for identity: TLSServerIdentity) throws -> @Sendable () -> any ChannelHandler {
        let context = try identity.serverContext()
        return { NIOSSLServerHandler(context: context) }
    }

    package func connect(to target: TransportTarget, trust: TLSTrust, timeoutMs: Int32) throws(SocketError) -> any TLSPlaintextLink {
        try TLSRelay(target: target, trust: trust, timeoutMs: timeoutMs)
    }
}

extension TLSServerIdentity {
    /// The server context, or why the PEM cannot be one.
    func serverContext() throws -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMBytes(certificateChainPEM) } catch {
            throw ListenerError("the certificate is not PEM that TLS can use: \(error)")
        }
        guard !chain.isEmpty else { throw ListenerError("the certificate file holds no certificate") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(bytes: privateKeyPEM, format: .pem) } catch {
            throw ListenerError("the private key is not a PEM key that TLS can use: \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        do { return try NIOSSLContext(configuration: configuration) } catch {
            throw ListenerError("the certificate and key do not make a TLS server (do they belong together?): \(error)")
        }
    }
}

extension TLSTrust {
    /// The client context, or why it cannot be made.
    func clientContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        switch self {
        case .system: break
        case .certificates(let pem):
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pem))
        case .anyCertificate:
            configuration.certificateVerification = .none
        }
        return try NIOSSLContext(configuration: configuration)
    }
}
