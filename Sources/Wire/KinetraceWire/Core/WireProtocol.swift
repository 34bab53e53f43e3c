/// Names a wire protocol: one way a phone talks to a game host, as stored
/// in trace headers and given to `--protocol`.
package struct ProtocolID: Hashable, Sendable, Comparable, CustomStringConvertible {
    package let name: String
    package init(_ name: String) { self.name = name }
    package var description: String { name }
    package static func < (a: ProtocolID, b: ProtocolID) -> Bool { a.name < b.name }
}

/// How a protocol's messages travel.
package enum TransportKind: String, Hashable, Sendable, CustomStringConvertible {
    /// One message per datagram (UDP).
    case datagram
    /// Messages back to back on a byte stream (TCP), cut by the protocol's framer.
    case byteStream = "byte-stream"

    package var description: String { rawValue }
}

/// Which way a message travels: a controller's sample to the host, or the host's reply.
package enum Direction: String, Hashable, Sendable, CaseIterable {
    case controllerToHost = "c2h"
    case hostToController = "h2c"
}

/// A wire protocol, as every engine sees it: a value. The built-in protocols
/// are compiled codecs (`CompiledWireProtocol`); a protocol declared in a file
/// (`DeclaredProtocol`) is interpreted. Engines hold `any WireProtocol` and
/// never ask which.
///
/// Two levels: `decode`/`encode` give the protocol's own typed `Message`
/// (for its codec, spec vectors and conformance suite); `facts` gives what
/// every engine needs of any message (validity, direction, timestamps,
/// motion) as plain values, without knowing the type.
package protocol WireProtocol: Sendable {
    associatedtype Message: Hashable & Sendable

    // MARK: Identity and transport
    var id: ProtocolID { get }
    /// One line for `--help` and reports.
    var summary: String { get }
    /// The normative document (relative to the repository root for built-ins, else the declaration's path).
    var specification: String { get }
    var transport: TransportKind { get }
    /// The host's port when none is given.
    var defaultPort: UInt16 { get }
    /// Samples per second a controller sends (the rate gaps and loss are judged against).
    var nominalRateHz: Double { get }
    /// Whether a host ever answers on the wire (so reports match replies, or say there are none).
    var hostReplies: Bool { get }
    /// Whether samples carry the sender's clock (so latency can be measured without a join).
    var samplesCarrySenderClock: Bool { get }
    /// The declaration this protocol was read from, when it was declared in a file; nil for a compiled one.
    var declaration: ProtocolDeclaration? { get }

    /// Cuts one direction of one connection into messages as its bytes arrive.
    func makeFramer() -> any MessageFramer

    // MARK: Codec
    /// Decodes and validates one message.
    func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message
    func encode(_ message: Message) -> [UInt8]
    /// What the engines need of a valid message.
    func facts(of message: Message) -> MessageFacts
    /// What the engines need of any bytes: decoded, or why they are invalid.
    func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts

    // MARK: Making and changing messages
    /// The controller→host sample carrying `reading` stamped `timeMs`, when the protocol has one.
    func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]?
    /// `bytes`, a valid sample, stamped `timeMs` instead (checks redone); nil when the
    /// protocol has no sender stamp or the bytes are not a valid sample.
    func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]?

    // MARK: The host
    /// The host's rule as the protocol declares it (threshold and window), for flags' defaults.
    var defaultRule: GestureRule { get }
    /// What a conforming host keeps and owes.
    func makeHostModel(rule: GestureRule) -> any HostModel
    /// What the host does under `rule`, as a phrase for reports ("jump when ay > 0.5 g, …").
    func hostRule(_ rule: GestureRule) -> String
    /// The reply a decision owes on the wire, if it owes one.
    func reply(to decision: HostDecision) -> [UInt8]?

    // MARK: Rendering
    /// Every shape `describe` writes, for readers that parse rendered fields fast.
    var decodedShapes: [DecodedShape] { get }
    /// Writes the message's kind and fields, whenever the bytes name a kind (even an
    /// invalid one, so a reader sees what was corrupted), or "unknown".
    func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V)
}

extension WireProtocol {
    package func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts {
        do throws(WireError) { return facts(of: try decode(bytes)) } catch { return MessageFacts(invalid: error) }
    }

    package var declaration: ProtocolDeclaration? { nil }

    /// Decodes a message held in an array.
    @inlinable
    package func decode(_ bytes: [UInt8]) throws(WireError) -> Message {
        // withUnsafeBytes cannot forward a typed error, so carry it out in a Result.
        try decodeResult(bytes).get()
    }

    /// `decode` as a `Result`, for call sites that branch on the outcome.
    @inlinable
    package func decodeResult(_ bytes: [UInt8]) -> Result<Message, WireError> {
        bytes.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try decode(raw)) } catch { return .failure(error) }
        }
    }

    /// `facts` of bytes held in an array.
    package func facts(_ bytes: [UInt8]) -> MessageFacts { bytes.withUnsafeBytes { facts($0) } }

    package func restamped(_ bytes: [UInt8], timeMs: UInt64) -> [UInt8]? {
        bytes.withUnsafeBytes { restamped($0, timeMs: timeMs) }
    }

    /// Whether two values are the same protocol: the same name, and the same declaration when declared.
    package func isSame(as other: any WireProtocol) -> Bool {
        id == other.id && declaration?.digest == other.declaration?.digest
    }
}

/// A protocol compiled into Kinetrace: its codec is Swift code reached through
/// static members (so its own folder, spec vectors and suite call it without a
/// value), and its value forwards every `WireProtocol` requirement to them.
package protocol CompiledWireProtocol: WireProtocol {
    init()

    static var id: ProtocolID { get }
    static var summary: String { get }
    static var specification: String { get }
    static var transport: TransportKind { get }
    static var defaultPort: UInt16 { get }
    static var nominalRateHz: Double { get }
    static var hostReplies: Bool { get }
    static var samplesCarrySenderClock: Bool { get }
    static func makeFramer() -> any MessageFramer
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message
    static func encode(_ message: Message) -> [UInt8]
    static func facts(of message: Message) -> MessageFacts
    static func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts
    static func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]?
    static func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]?
    static var defaultRule: GestureRule { get }
    static func makeHostModel(rule: GestureRule) -> any HostModel
    static func hostRule(_ rule: GestureRule) -> String
    static func reply(to decision: HostDecision) -> [UInt8]?
    static var decodedShapes: [DecodedShape] { get }
    static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V)
    /// The digest of this protocol's declaration in specs/protocols (a test keeps them equal): a
    /// declared protocol with this digest is this protocol, and gets its conformance suite.
    static var declarationDigest: String? { get }
    /// That declaration's text, built in (scripts/embed-declarations writes it): what the
    /// conformance suite derives its cases from.
    static var declarationText: String? { get }
}

extension CompiledWireProtocol {
    package static func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts {
        do throws(WireError) { return facts(of: try decode(bytes)) } catch { return MessageFacts(invalid: error) }
    }

    package static func makeFramer() -> any MessageFramer { DatagramFramer() }
    package static var hostReplies: Bool { false }
    package static var samplesCarrySenderClock: Bool { false }
    package static var defaultRule: GestureRule { .default }
    package static var declarationDigest: String? { nil }
    package static var declarationText: String? { nil }

    /// The built-in declaration, read; nil for a protocol that has none (or, never in a released
    /// build, one that does not read: DeclarationTextTests).
    package static var builtInDeclaration: DeclaredProtocol? {
        guard let text = declarationText else { return nil }
        return try? DeclaredProtocol.read(Array(text.utf8), path: "specs/protocols/\(id).json")
    }
    package static func hostRule(_ rule: GestureRule) -> String { "τ = \(rule.threshold), window \(rule.refractoryMs) ms" }
    package static func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]? { nil }
    package static func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]? { nil }
    package static func reply(to decision: HostDecision) -> [UInt8]? { nil }

    /// Decodes a message held in an array.
    @inlinable
    package static func decode(_ bytes: [UInt8]) throws(WireError) -> Message { try Self().decode(bytes) }

    /// `decode` as a `Result`, for call sites that branch on the outcome.
    @inlinable
    package static func decodeResult(_ bytes: [UInt8]) -> Result<Message, WireError> { Self().decodeResult(bytes) }

    /// `facts` of bytes held in an array.
    package static func facts(_ bytes: [UInt8]) -> MessageFacts { bytes.withUnsafeBytes { facts($0) } }

    package static func restamped(_ bytes: [UInt8], timeMs: UInt64) -> [UInt8]? {
        bytes.withUnsafeBytes { restamped($0, timeMs: timeMs) }
    }

    // The value's requirements, forwarded to the static codec.
    package var id: ProtocolID { Self.id }
    package var summary: String { Self.summary }
    package var specification: String { Self.specification }
    package var transport: TransportKind { Self.transport }
    package var defaultPort: UInt16 { Self.defaultPort }
    package var nominalRateHz: Double { Self.nominalRateHz }
    package var hostReplies: Bool { Self.hostReplies }
    package var samplesCarrySenderClock: Bool { Self.samplesCarrySenderClock }
    package var defaultRule: GestureRule { Self.defaultRule }
    package func makeFramer() -> any MessageFramer { Self.makeFramer() }
    @inlinable @inline(__always)
    package func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> Message { try Self.decode(bytes) }
    package func encode(_ message: Message) -> [UInt8] { Self.encode(message) }
    @inlinable @inline(__always)
    package func facts(of message: Message) -> MessageFacts { Self.facts(of: message) }
    @inlinable @inline(__always)
    package func facts(_ bytes: UnsafeRawBufferPointer) -> MessageFacts { Self.facts(bytes) }
    package func sample(_ reading: MotionReading, timeMs: UInt64) -> [UInt8]? { Self.sample(reading, timeMs: timeMs) }
    package func restamped(_ bytes: UnsafeRawBufferPointer, timeMs: UInt64) -> [UInt8]? { Self.restamped(bytes, timeMs: timeMs) }
    package func makeHostModel(rule: GestureRule) -> any HostModel { Self.makeHostModel(rule: rule) }
    package func hostRule(_ rule: GestureRule) -> String { Self.hostRule(rule) }
    package func reply(to decision: HostDecision) -> [UInt8]? { Self.reply(to: decision) }
    package var decodedShapes: [DecodedShape] { Self.decodedShapes }
    package func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) { Self.describe(bytes, into: &visitor) }
}
