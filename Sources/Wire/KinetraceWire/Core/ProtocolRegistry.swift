/// The protocols a run knows, by name: the compiled ones, and any declared
/// ones registered at run time (as Wireshark registers dissectors).
package struct ProtocolRegistry: Sendable {
    package private(set) var protocols: [any WireProtocol]

    package init(_ protocols: [any WireProtocol]) { self.protocols = protocols }

    /// The compiled protocols of this build (BuiltInProtocols.swift lists them).
    package static let standard = ProtocolRegistry(BuiltInProtocols.all)

    /// The protocol of traffic that names none (`--protocol`'s default).
    package static var defaultID: ProtocolID { BuiltInProtocols.default.id }
    /// The default protocol's value.
    package static var defaultProtocol: any WireProtocol { BuiltInProtocols.default }

    package func named(_ name: String) -> (any WireProtocol)? { protocols.first { $0.id.name == name } }

    package subscript(id: ProtocolID) -> (any WireProtocol)? { named(id.name) }

    /// Adds a protocol; one of the same name is replaced (a declared file given by the user wins).
    package mutating func register(_ wireProtocol: any WireProtocol) {
        protocols.removeAll { $0.id == wireProtocol.id }
        protocols.append(wireProtocol)
    }

    /// Names, sorted, for help and errors.
    package var names: [String] { protocols.map { $0.id.name }.sorted() }
}
