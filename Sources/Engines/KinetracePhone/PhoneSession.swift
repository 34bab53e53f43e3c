import KinetraceHost
import KinetraceSupport
import KinetraceTransport
import KinetraceWire
import Logging
import NIOCore

/// `kinetrace phone`'s server: the reference host over `wss://` at `/stream`, with the phone
/// site beside it on the same port (the page, the operator's list, each phone's side channel).
/// Its trace is the host's: capture point `host`, every phone's samples as they came, the
/// host's replies and decisions, each phone's labels, and a `phone` event naming each one.
package final class PhoneSession: Sendable {
    package struct Configuration: Sendable {
        package var site: PhoneSite.Settings
        package var rule: GestureRule
        package var bindHost = "0.0.0.0"
        package var port = 0
        package var tlsIdentity: TLSServerIdentity
        package var tracePath: String?
        package var maximumConnections = 1024
        package var connectionTimeoutNs: Int64? = ReferenceHost.Configuration.defaultConnectionTimeoutNs

        package init(site: PhoneSite.Settings, tlsIdentity: TLSServerIdentity) {
            self.site = site
            self.tlsIdentity = tlsIdentity
            rule = site.wireProtocol.defaultRule
        }
    }

    /// Where phones send their samples.
    package static let streamPath = "/stream"

    package let site: PhoneSite
    private let host: ReferenceHost

    package var localAddress: SocketAddress { host.localAddress }

    /// Binds and serves. Throws `SampleTemplate.Unsupported` for a protocol the page cannot
    /// write, and what `ReferenceHost` throws.
    package init(configuration: Configuration, logger: Logger) throws {
        let site = try PhoneSite(settings: configuration.site)
        var host = ReferenceHost.Configuration(wireProtocol: configuration.site.wireProtocol)
        host.transport = WebSocketTransport(secure: true)
        host.bindHost = configuration.bindHost
        host.port = configuration.port
        host.path = Self.streamPath
        host.tlsIdentity = configuration.tlsIdentity
        host.rule = configuration.rule
        host.tracePath = configuration.tracePath
        host.recordedBy = "kinetrace phone"
        host.site = site
        host.observer = site
        host.maximumConnections = configuration.maximumConnections
        host.connectionTimeoutNs = configuration.connectionTimeoutNs
        self.host = try ReferenceHost(configuration: host, logger: logger)
        self.site = site
    }

    /// Stops serving and flushes the trace; the site's counts are final after it.
    package func shutdown() throws -> HostStatistics { try host.shutdown() }

    /// Runs `body` on the host's loop, where the site lives (for a live count).
    package func onLoop<T: Sendable>(_ body: @escaping @Sendable (PhoneSite) -> T) throws -> T {
        let site = site
        return try host.onLoop { body(site) }
    }
}
