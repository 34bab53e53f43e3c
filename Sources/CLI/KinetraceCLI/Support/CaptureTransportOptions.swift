import ArgumentParser
import KinetracePcap
import KinetraceTransport
import KinetraceWire

/// `--transport` for the commands that capture or read captures (`capture`, `convert`): what
/// carried the protocol's messages, spelt as `kinetrace host --transport` spells what it serves.
struct CaptureTransportOptions: ParsableArguments {
    @Option(name: .customLong("transport"), help: ArgumentHelp(
        "What carries the protocol in the capture: udp, tcp or ws, as `kinetrace host --transport` names them (default: the protocol's own, UDP for datagrams and TCP for a byte stream). With ws, the TCP connections to the host's port are read as plain WebSocket sessions (ws://), one message per WebSocket message; a wss:// session cannot be read from a capture, record it with `kinetrace host --trace`.",
        valueName: "transport"))
    var transportName: String?

    /// What carries `wireProtocol`'s messages: its own transport unless --transport ws says WebSocket.
    func carrier(for wireProtocol: any WireProtocol) throws -> CaptureCarrier {
        guard let transportName else { return .native }
        guard let transport = Transports.named(transportName) else {
            throw ValidationError("--transport must be one of \(Transports.all.map(\.scheme).joined(separator: ", ")), not \(transportName).")
        }
        switch transport.scheme {
        case Transports.webSocket.scheme:
            return .webSocket
        case Transports.udp.scheme, Transports.tcp.scheme:
            if let problem = transport.problem(carrying: wireProtocol) { throw ValidationError("--transport \(problem)") }
            return .native
        default:
            throw ValidationError("--transport \(transport.scheme) cannot be read from a capture, only udp, tcp or ws: TLS (as in wss://) hides a session's frames from it; record such a session at the host (kinetrace host --trace).")
        }
    }
}
