/// The protocols a build speaks, by name. Adding a protocol adds one line
/// to `standard`; everything else about it lives in its own folder.
public struct ProtocolRegistry: Sendable {
    public let protocols: [any WireProtocol.Type]

    public init(_ protocols: [any WireProtocol.Type]) { self.protocols = protocols }

    /// Every protocol of this build.
    public static let standard = ProtocolRegistry([
        MotionLinkV1.self,
        KeepCalmJSON.self,
        AttitudeStream.self,
    ])

    /// The protocol of traffic that names none (`--protocol`'s default).
    public static let defaultID = MotionLinkV1.id

    public func named(_ name: String) -> (any WireProtocol.Type)? { protocols.first { $0.id.name == name } }

    public subscript(id: ProtocolID) -> (any WireProtocol.Type)? { named(id.name) }

    /// Names, sorted, for help and errors.
    public var names: [String] { protocols.map { $0.id.name }.sorted() }
}
