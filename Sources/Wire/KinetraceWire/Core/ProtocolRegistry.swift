/// The protocols a run knows, by name: the compiled ones, and any declared
/// ones registered at run time (as Wireshark registers dissectors).
public struct ProtocolRegistry: Sendable {
    public private(set) var protocols: [any WireProtocol]

    public init(_ protocols: [any WireProtocol]) { self.protocols = protocols }

    /// The compiled protocols of this build (BuiltInProtocols.swift lists them).
    public static let standard = ProtocolRegistry(BuiltInProtocols.all)

    /// The protocol of traffic that names none (`--protocol`'s default).
    public static var defaultID: ProtocolID { BuiltInProtocols.default.id }
    /// The default protocol's value.
    public static var defaultProtocol: any WireProtocol { BuiltInProtocols.default }

    public func named(_ name: String) -> (any WireProtocol)? { protocols.first { $0.id.name == name } }

    public subscript(id: ProtocolID) -> (any WireProtocol)? { named(id.name) }

    /// Adds a protocol; one of the same name is replaced (a declared file given by the user wins).
    public mutating func register(_ wireProtocol: any WireProtocol) {
        protocols.removeAll { $0.id == wireProtocol.id }
        protocols.append(wireProtocol)
    }

    /// Names, sorted, for help and errors.
    public var names: [String] { protocols.map { $0.id.name }.sorted() }
}
