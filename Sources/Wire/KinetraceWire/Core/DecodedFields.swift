/// Receives a message's kind and fields from `WireProtocol.describe`, so
/// formats can render them (the trace writer writes them as JSON) without
/// knowing the protocol.
public protocol DecodedFieldVisitor {
    /// The message kind, first; "unknown" when the bytes name none.
    mutating func kind(_ name: StaticString)
    mutating func field(_ name: StaticString, _ value: UInt64)
    mutating func field(_ name: StaticString, _ value: UInt32)
    mutating func field(_ name: StaticString, _ value: Float32)
    mutating func field(_ name: StaticString, _ value: Double)
    mutating func field(_ name: StaticString, _ value: String)
}

/// A kind `describe` writes and its fields in order, for readers that match
/// the rendered form fast and skip it.
public struct DecodedShape: Sendable {
    public enum FieldType: Sendable { case number, string }

    public var kind: StaticString
    public var fields: [(name: StaticString, type: FieldType)]

    public init(kind: StaticString, fields: [(name: StaticString, type: FieldType)]) {
        self.kind = kind
        self.fields = fields
    }

    /// A kind whose fields are all numbers.
    public init(kind: StaticString, numbers names: [StaticString]) {
        self.init(kind: kind, fields: names.map { ($0, .number) })
    }
}
