/// Names a wire protocol: one way a phone talks to a game host, as stored
/// in trace headers and given to `--protocol`, e.g. `motionlink-v1`.
public struct ProtocolID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }
    public static func < (a: ProtocolID, b: ProtocolID) -> Bool { a.name < b.name }
}

/// How a protocol's messages travel.
public enum TransportKind: String, Hashable, Sendable, CustomStringConvertible {
    /// One message per datagram (UDP).
    case datagram
    /// Messages back to back on a byte stream (TCP), cut by the protocol's framer.
    case byteStream = "byte-stream"

    public var description: String { rawValue }
}

/// Which way a message travels: a controller's sample to the host, or the host's reply.
public enum Direction: String, Hashable, Sendable, CaseIterable {
    case controllerToHost = "c2h"
    case hostToController = "h2c"
}

/// A wire protocol, as every engine sees it. A protocol lives in its own
/// folder of this module and is listed once in `ProtocolRegistry.standard`;
/// the engines reach it only through these requirements, so adding one
/// touches no other protocol and no engine.
///
/// Two levels: `decode`/`encode` give the protocol's own typed `Message`
/// (for its codec, spec vectors and conformance suite); `facts` gives what
/// every engine needs of any message (validity, direction, timestamps,
/// motion) as plain values, without knowing the type.
public protocol WireProtocol: Sendable {
    associatedtype Message: Hashable & Sendable

    // MARK: Identity and transport
    static var id: ProtocolID { get }
    /// One line for `--help` and reports.
    static var summary: String { get }
    /// The normative document, relative to the repository root.
    static var specification: String { get }
    static var transport: TransportKind { get }
    /// The host's port when none is given.
    static var defaultPort: UInt16 { get }
    /// Samples per second a controller sends (the rate gaps and loss are judged against).
    static var nominalRateHz: Double { get }
    /// Whether a host ever answers on the wire (so reports match replies, or say there are none).
    static var hostReplies: Bool { get }
    /// Whether samples carry the sender's clock (so latency can be measured without a join).
    static var samplesCarrySenderClock: Bool { get }

    /// Cuts one direction of one connection into messages as its bytes arrive.
    static func makeFramer() -> any MessageFramer

    // MARK: Codec
    /// Decodes and validates one message.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message
    static func encode(_ message: Message) -> [UInt8]
    /// What the engines need of a valid message.
    static func facts(of message: Message) -> MessageFacts
    /// What the engines need of any bytes: decoded, or why they are invalid.
    static func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts

    // MARK: Making and changing messages
    /// The controller→host sample carrying `reading` stamped `timeMs`, when the protocol has one.
    static func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]?
    /// `bytes`, a valid sample, stamped `timeMs` instead (checksums redone); nil when the
    /// protocol has no sender stamp or the bytes are not a valid sample.
    static func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]?

    // MARK: The host
    /// What a conforming host keeps and owes.
    static func makeHostModel(rule: GestureRule) -> any HostModel
    /// The reply a decision owes on the wire, if it owes one.
    static func reply(to decision: HostDecision) -> [UInt8]?

    // MARK: Rendering
    /// Every shape `describe` writes, for readers that parse rendered fields fast.
    static var decodedShapes: [DecodedShape] { get }
    /// Writes the message's kind and fields, whenever the bytes name a kind (even an
    /// invalid one, so a reader sees what was corrupted), or "unknown".
    static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V)
}

extension WireProtocol {
    public static func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts {
        do throws(WireError) { return facts(of: try decode(bytes)) } catch { return MessageFacts(invalid: error) }
    }

    public static func makeFramer() -> any MessageFramer { DatagramFramer() }
    public static var hostReplies: Bool { false }
    public static var samplesCarrySenderClock: Bool { false }
    public static func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]? { nil }
    public static func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]? { nil }
    public static func reply(to decision: HostDecision) -> [UInt8]? { nil }

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

    /// `facts` of bytes held in an array.
    public static func facts(_ bytes: [UInt8]) -> MessageFacts { bytes.withUnsafeBytes { facts($0) } }

    public static func restamped(_ bytes: [UInt8], timeMs: UInt64) -> [UInt8]? {
        bytes.withUnsafeBytes { restamped($0, timeMs: timeMs) }
    }
}
