/// Receives a message's kind and fields from `WireProtocol.describe`, so
/// formats can render them (the trace writer writes them as JSON) without
/// knowing the protocol.
package protocol DecodedFieldVisitor {
    /// The message kind, first; "unknown" when the bytes name none.
    mutating func kind(_ name: String)
    mutating func field(_ name: String, _ value: UInt64)
    mutating func field(_ name: String, _ value: UInt32)
    mutating func field(_ name: String, _ value: Float32)
    mutating func field(_ name: String, _ value: Double)
    mutating func field(_ name: String, _ value: String)
    /// A signed integer field (declared protocols' i8…i64).
    mutating func field(_ name: String, _ value: Int64)
}

extension DecodedFieldVisitor {
    /// Visitors that only read some fields need not take signed ones; others render them as doubles.
    package mutating func field(_ name: String, _ value: Int64) { field(name, Double(value)) }
}

/// A kind `describe` writes and its fields in order, for readers that match
/// the rendered form fast and skip it.
package struct DecodedShape: Sendable {
    package enum FieldType: Sendable { case number, string }

    package var kind: String
    package var fields: [(name: String, type: FieldType)]

    package init(kind: String, fields: [(name: String, type: FieldType)]) {
        self.kind = kind
        self.fields = fields
    }

    /// A kind whose fields are all numbers.
    package init(kind: String, numbers names: [String]) {
        self.init(kind: kind, fields: names.map { ($0, .number) })
    }
}
