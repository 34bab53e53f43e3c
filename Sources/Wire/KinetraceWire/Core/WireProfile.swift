/// Names a wire profile: one way a phone talks to a game host. Each profile
/// lives in its own folder and adds its identifier in an extension, so adding
/// a profile never touches an existing one.
public struct WireProfileID: Hashable, Sendable, CustomStringConvertible {
    /// Stable name as stored in trace headers, e.g. `motionlink-v1`.
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }
}

/// A wire profile's codec: turns one transport message into a typed message
/// or a `WireError`, and back.
public protocol WireProfile {
    associatedtype Message: Sendable
    static var id: WireProfileID { get }
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message
    static func encode(_ message: Message) -> [UInt8]
}

extension WireProfile {
    /// Decodes a message held in an array.
    @inlinable
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> Message {
        // withUnsafeBytes cannot forward a typed error, so carry it out in a Result.
        try decodeResult(bytes).get()
    }

    /// `decode` as a `Result`, for call sites that branch on the outcome.
    @inlinable
    public static func decodeResult(_ bytes: [UInt8]) -> Result<Message, WireError> {
        bytes.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try decode(raw)) } catch { return .failure(error) }
        }
    }
}
