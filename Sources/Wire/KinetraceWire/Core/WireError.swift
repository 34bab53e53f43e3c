/// A decode failure: what was wrong, where (byte offset into the message),
/// and what was expected there.
///
/// The code is a struct rather than an enum so that later protocols can add
/// codes without breaking anyone's exhaustive `switch`.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// Stable snake_case name; trace files store it as the invalidity reason.
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The length matches no message kind of the protocol.
        public static let invalidLength = Code("invalid_length")
        /// The checksum field does not match the bytes it covers.
        public static let checksumMismatch = Code("crc_mismatch")
        /// A float field holds NaN or an infinity.
        public static let nonFinite = Code("non_finite")
        /// A field holds a finite value outside its allowed range.
        public static let outOfRange = Code("out_of_range")
        /// Text that is not the structure the protocol requires (bad JSON, a missing member).
        public static let malformed = Code("malformed")
        /// Bytes of a captured byte stream are missing before or inside the record, so where
        /// records start is lost for the rest of the connection.
        public static let streamGap = Code("stream_gap")
    }

    public var code: Code
    /// Byte offset of the offending field in the message (for a message of the wrong length: the
    /// length), or, for a framing error on a stream, the stream offset of the offending record.
    public var offset: Int
    /// What a valid message has there, as a short phrase.
    public var expected: String

    public init(_ code: Code, offset: Int, expected: String) {
        self.code = code
        self.offset = offset
        self.expected = expected
    }

    public var description: String { "\(code) at byte \(offset): expected \(expected)" }
}
