/// A wire protocol for the library's public entry points: one of this build's compiled
/// protocols by name, or one declared in a JSON file's text (specs/protocol-declaration-v1.md).
///
/// The protocol abstraction itself (`WireProtocol`) is the package's own and may change; this
/// handle is the stable way in.
public struct WireProtocolHandle: Sendable, CustomStringConvertible {
    package let wireProtocol: any WireProtocol

    package init(_ wireProtocol: any WireProtocol) { self.wireProtocol = wireProtocol }

    /// Why a protocol could not be had.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The protocol of traffic that names none (`--protocol`'s default).
    public static var defaultProtocol: WireProtocolHandle { WireProtocolHandle(ProtocolRegistry.defaultProtocol) }

    /// The names of this build's compiled protocols, sorted.
    public static var compiledNames: [String] { ProtocolRegistry.standard.names }

    /// A compiled protocol by name, as `kinetrace protocol list` shows it.
    public static func named(_ name: String) throws(Failure) -> WireProtocolHandle {
        guard let found = ProtocolRegistry.standard.named(name) else {
            throw Failure(description: "no compiled protocol named \"\(name)\" (compiled: \(compiledNames.joined(separator: ", ")))")
        }
        return WireProtocolHandle(found)
    }

    /// A protocol declared in JSON; `source` names it in errors (a path, or any label).
    public static func declared(_ json: String, source: String = "declaration") throws(Failure) -> WireProtocolHandle {
        do throws(DeclarationError) {
            return WireProtocolHandle(try DeclaredProtocol.read(Array(json.utf8), path: source))
        } catch {
            throw Failure(description: error.description)
        }
    }

    /// The protocol's name, as `--protocol` takes it.
    public var name: String { wireProtocol.id.name }
    /// Whether its messages arrive as datagrams (UDP) rather than a byte stream (TCP).
    public var isDatagram: Bool { wireProtocol.transport == .datagram }
    /// Whether its host answers on the wire.
    public var hostReplies: Bool { wireProtocol.hostReplies }
    public var description: String { name }
}
