/// The parts of a declaration (specs/protocol-declaration-v1.md), checked and
/// laid out for the interpreter. All immutable; `ProtocolDeclaration` holds them.

/// A failure to read a declaration: one line, `FILE:LINE:COLUMN: message` (PD-FILE-4).
package struct DeclarationError: Error, Hashable, Sendable, CustomStringConvertible {
    package var source: String
    package var line: Int
    package var column: Int
    package var message: String

    package init(source: String, line: Int, column: Int, message: String) {
        self.source = source
        self.line = line
        self.column = column
        self.message = message
    }

    package var description: String { "\(source):\(line):\(column): \(message)" }
}

/// Where a declared message's records start and end on a byte stream.
package enum DeclaredFraming: Hashable, Sendable {
    /// One message per datagram.
    case datagram
    /// Records of one length, back to back.
    case fixedLength(Int)
    /// A length field at `offset` of `width` bytes gives the length of what follows it
    /// (or of the whole record from the prefix's start when it counts itself).
    case lengthPrefix(width: Int, bigEndian: Bool, offset: Int, countsItself: Bool, maximumLength: Int)
    /// Records end with `delimiter` (which belongs to the record).
    case delimiter([UInt8], maximumLength: Int)
}

/// The standard vectors a motion role names, plus the protocol's own.
package enum VectorSlot: Int, Hashable, Sendable, CaseIterable {
    case userAcceleration, rotationRate, gravity, attitude, own

    package static let standardNames = ["user_acceleration", "rotation_rate", "gravity", "attitude"]
}

/// What a field means to the engines (PD-ROLE-*).
package enum FieldRole: Hashable, Sendable, CustomStringConvertible {
    case senderTime
    case echoTime
    case controllerID
    case messageID
    /// One axis (0 = x, 1 = y, 2 = z) of a motion vector.
    case motion(VectorSlot, axis: Int)

    package var description: String {
        switch self {
        case .senderTime: return "sender_time"
        case .echoTime: return "echo_time"
        case .controllerID: return "controller_id"
        case .messageID: return "message_id"
        case .motion(let slot, let axis):
            let vector = slot == .own ? "own" : VectorSlot.standardNames[slot.rawValue]
            return "\(vector).\(["x", "y", "z"][axis])"
        }
    }
}

/// A field's type on the wire.
package enum ScalarType: String, Hashable, Sendable {
    case u8, u16, u32, u64, i8, i16, i32, i64, f32, f64
    case bytes, padding
    case number, integer, string, boolean

    /// Bytes the type takes in a binary layout (bytes and padding take their declared length).
    var fixedSize: Int? {
        switch self {
        case .u8, .i8: return 1
        case .u16, .i16: return 2
        case .u32, .i32, .f32: return 4
        case .u64, .i64, .f64: return 8
        default: return nil
        }
    }

    package var isFloat: Bool { self == .f32 || self == .f64 || self == .number }
    package var isInteger: Bool {
        switch self {
        case .u8, .u16, .u32, .u64, .i8, .i16, .i32, .i64, .integer: return true
        default: return false
        }
    }
    package var isSigned: Bool { self == .i8 || self == .i16 || self == .i32 || self == .i64 || self == .integer }
    package var isNumeric: Bool { isFloat || isInteger }
}

/// A value of a declared field.
package enum DeclaredValue: Hashable, Sendable {
    case unsigned(UInt64)
    case signed(Int64)
    case float32(Float32)
    case float64(Double)
    case string(String)
    case bytes([UInt8])
    case bool(Bool)

    /// The value as a number, when it is one.
    package var double: Double? {
        switch self {
        case .unsigned(let v): return Double(v)
        case .signed(let v): return Double(v)
        case .float32(let v): return Double(v)
        case .float64(let v): return v
        case .bool(let v): return v ? 1 : 0
        case .string, .bytes: return nil
        }
    }
}

/// One checksum algorithm over a byte range (PD-CHECK-*).
extension DeclaredValue: CustomStringConvertible {
    /// The value as errors and pages write it: numbers in shortest form, strings quoted, bytes in hex.
    package var description: String { BinaryInterpreter.render(self) }
}

package enum CheckAlgorithm: String, Hashable, Sendable {
    case crc32
    case crc16CCITT = "crc16_ccitt"
    case sum8
    case xor8

    /// The field type that holds it.
    var fieldType: ScalarType {
        switch self {
        case .crc32: return .u32
        case .crc16CCITT: return .u16
        case .sum8, .xor8: return .u8
        }
    }

    func compute(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        switch self {
        case .crc32: return UInt64(CRC32.checksum(bytes))
        case .crc16CCITT:
            var crc: UInt16 = 0xFFFF
            for byte in bytes {
                crc ^= UInt16(byte) << 8
                for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
            }
            return UInt64(crc)
        case .sum8: return UInt64(bytes.reduce(UInt8(0), &+))
        case .xor8: return UInt64(bytes.reduce(UInt8(0), ^))
        }
    }
}

/// A check: the field holds `algorithm` over body bytes `from..<to`.
package struct DeclaredCheck: Hashable, Sendable {
    package var algorithm: CheckAlgorithm
    package var from: Int
    package var to: Int
}

/// One field of a message kind, whatever its encoding.
package struct DeclaredField: Hashable, Sendable {
    /// The name in `decoded` and in errors.
    package var name: String
    package var type: ScalarType
    /// Binary: where the field starts in the body and how many bytes it takes.
    package var offset = 0
    package var size = 0
    package var bigEndian = false
    /// JSON: the member path from the top object.
    package var path: [String] = []
    package var required = true
    /// A value the field must hold (a magic, a discriminator, a fixed string).
    package var constant: DeclaredValue?
    package var finite = false
    /// Inclusive limits; for a float32 field already rounded to float32 (PD-RANGE-2).
    package var range: ClosedRange<Double>?
    package var role: FieldRole?
    package var check: DeclaredCheck?
    /// JSON/text strings: `uuid` or `uuid_upper`.
    package var format: String?
    package var requirement: String?

    /// Written to `decoded`: everything but padding and constants (which say nothing a reader needs).
    var isRendered: Bool { type != .padding && constant == nil }
}

/// How a JSON kind treats members it does not declare and members given twice.
package enum RepeatedMembers: String, Hashable, Sendable { case malformed, first, last }

/// A message kind's encoding and fields.
package enum DeclaredEncoding: Hashable, Sendable {
    case binary(length: Int)
    case json(maximumLength: Int, unknownAllowed: Bool, repeated: RepeatedMembers)
    case text(separator: [UInt8], maximumLength: Int)
    case osc(address: String, bundlesAllowed: Bool)

    package var name: String {
        switch self {
        case .binary: return "binary"
        case .json: return "json"
        case .text: return "text"
        case .osc: return "osc"
        }
    }
}

/// One kind of message.
package struct DeclaredKind: Hashable, Sendable {
    package var name: String
    package var direction: Direction
    package var encoding: DeclaredEncoding
    package var fields: [DeclaredField]
    package var requirement: String?

    /// The field with `role`, if any.
    package func field(withRole role: FieldRole) -> Int? { fields.firstIndex { $0.role == role } }
}

/// The sender clock's unit (PD-CLOCK-*).
package enum ClockUnit: String, Hashable, Sendable {
    case s, ms, us, ns
}

/// The protocol's own named vector (at most one), and how a persona's motion makes it.
package struct OwnVector: Hashable, Sendable {
    package var name: String
    package var summary: String
    package var sumOf: [VectorSlot]
}

/// The host behaviour a declaration picks (PD-HOST-*).
package struct DeclaredHost: Hashable, Sendable {
    package enum Behaviour: Hashable, Sendable {
        /// A decision when `quantity` exceeds `above`, then a window: on the sender's clock
        /// (a refractory period, with stale samples ignored) or on the host's arrival clock (a latch).
        case threshold(quantity: FieldRole, above: Double, windowMs: UInt64, senderClock: Bool, ignoreStale: Bool, resyncMs: UInt64)
        /// Every valid sample is applied and reported.
        case apply
    }

    package var behaviour: Behaviour
    package var decision: String
    package var decisionValues: [FieldRole]
    /// The reply kind's index, its constant fields, and its deadline.
    package var replyKind: Int?
    package var replyFields: [String: Double]
    package var replyDeadlineMs: Double?
    package var requirement: String?
    package var replyRequirement: String?
}

/// A requirement the declaration states, so reports can cite it.
package struct DeclaredRequirement: Hashable, Sendable {
    package var id: String
    package var level: String
    package var text: String
}
