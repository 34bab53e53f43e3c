import Foundation
import KinetraceJSON
import KinetraceTrace
import KinetraceTestSupport
import KinetraceWire
import PropertyBased
import Testing

// MARK: Toy byte-stream protocols

/// A boundary that can fail: each record starts with its own length (that byte
/// included), and a zero length cannot be framed.
struct LengthPrefixedRecords: RecordBoundary, Sendable {
    func recordLength(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(WireError) -> Int? {
        guard let length = bytes.first else { return nil }
        guard length > 0 else { throw WireError(.invalidLength, offset: offset, expected: "a record length from 1 to 255") }
        return bytes.count >= Int(length) ? Int(length) : nil
    }
}

/// ToyStream with `LengthPrefixedRecords` framing.
struct ToyPrefixed: CompiledWireProtocol {
    init() {}

    typealias Message = [UInt8]
    static let id = ProtocolID("toy-prefixed-v1")
    static let summary = "length-prefixed records on TCP (tests only)"
    static let specification = "Tests/KinetraceTraceTests/StreamProtocolTests.swift"
    static let transport = TransportKind.byteStream
    static let defaultPort: UInt16 = 47201
    static let nominalRateHz = 10.0
    static let samplesCarrySenderClock = true
    static func makeFramer() -> any MessageFramer { StreamFramer(LengthPrefixedRecords()) }
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> [UInt8] {
        guard let first = bytes.first, Int(first) == bytes.count else {
            throw WireError(.invalidLength, offset: 0, expected: "a record as long as its first byte says")
        }
        return Array(bytes)
    }
    static func encode(_ message: [UInt8]) -> [UInt8] { message }
    static func facts(of message: [UInt8]) -> MessageFacts { MessageFacts(direction: .controllerToHost) }
    static func makeHostModel(rule: GestureRule) -> any HostModel { ToyHostModel() }
    static let decodedShapes = [DecodedShape(kind: "record", fields: []), DecodedShape(kind: "unknown", fields: [])]
    static func describe<V: DecodedFieldVisitor>(_ bytes: UnsafeRawBufferPointer, into visitor: inout V) {
        visitor.kind((try? decode(bytes)) == nil ? "unknown" : "record")
    }
}

// MARK: Tests

/// A byte-stream protocol end to end through the trace format: a registry
/// that knows it, traces whose message records are stream chunks, and
/// `FramingRecordSource` cutting them back into messages.
///
/// Random scenarios come from `SplitMix64` seeded by a property-test input
/// (`seed`, printed on failure); example tests name their seed.
@Suite struct StreamProtocolTests {
    static let registry = ProtocolRegistry([MotionLinkV1(), ToyStream(), ToyPrefixed()])
    static let header = TraceHeader(created: "2026-11-23T08:00:00.000Z", tool: "kinetrace-tests 0.0.1", protocolID: ToyStream.id,
                                    capturePoint: .host, clock: .realtime, notes: "toy stream", extra: ["seed": .integer(3)])

    static let controller1 = Endpoint(host: "10.0.0.11", port: 50001)
    static let host = Endpoint(host: "10.0.0.1", port: 47200)
    static let controller2 = Endpoint(host: "2001:db8::12", port: 50002)
    static let host6 = Endpoint(host: "2001:db8::1", port: 47200)

    /// Two connections, both directions of each.
    static let flows: [(source: Endpoint, destination: Endpoint, direction: Direction)] = [
        (controller1, host, .controllerToHost), (host, controller1, .hostToController),
        (controller2, host6, .controllerToHost), (host6, controller2, .hostToController),
    ]

    static func chunk(_ t: Int64, _ flow: Int, _ bytes: [UInt8], rtt: Int64? = nil) -> TraceRecord {
        .message(MessageRecord(timeNs: t, direction: flows[flow].direction, source: flows[flow].source,
                               destination: flows[flow].destination, payload: bytes, rttNs: rtt))
    }

    static func message(_ t: Int64, _ flow: Int, _ bytes: [UInt8]) -> TraceRecord { chunk(t, flow, bytes) }

    static func toyRecord(_ tMs: UInt64, _ value: UInt32) -> [UInt8] { ToyStream.encode(.init(tMs: tMs, value: value)) }

    static func readEverything(_ source: any TraceRecordSource) throws(TraceError) -> [TraceRecord] {
        var out: [TraceRecord] = []
        while let record = try source.next() { out.append(record) }
        return out
    }

    /// A random trace of chunked flows with labels, events and motion between them, what
    /// framing must make of it, and which flows end mid-record.
    struct Scenario {
        var records: [TraceRecord] = []
        var framed: [TraceRecord] = []
        var unfinished: [Leftover] = []
    }

    /// `FramingRecordSource.Unfinished`'s fields, comparable (its memberwise init is not public).
    struct Leftover: Hashable, CustomStringConvertible {
        var source: Endpoint
        var destination: Endpoint
        var offset: Int
        var bytes: Int
        var description: String { "\(source)->\(destination) @\(offset)+\(bytes)" }
    }

    static func leftovers(_ framing: FramingRecordSource) -> [Leftover] {
        framing.unfinished.map { Leftover(source: $0.source, destination: $0.destination, offset: $0.offset, bytes: $0.bytes) }
    }

    static func scenario(seed: UInt64) -> Scenario {
        var rng = SplitMix64(seed: seed)
        var streams: [[UInt8]] = []
        var chunks: [[[UInt8]]] = []
        for flow in flows.indices {
            let count = rng.int(0...8)
            var stream = (0..<count).flatMap { i in toyRecord(1_767_225_600_000 + UInt64(1000 * flow + i), UInt32(truncatingIfNeeded: rng.next())) }
            stream += (0..<(rng.chance(50) ? 0 : rng.int(1...11))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            streams.append(stream)
            // Chunk sizes: one byte at a time, the whole stream at once, or random (empty chunks included).
            let style = rng.int(0...3)
            var pieces: [[UInt8]] = []
            var index = 0
            while index < stream.count {
                let n = switch style {
                case 0: 1
                case 1: stream.count
                case 2: rng.int(1...30)
                default: rng.int(0...40)
                }
                let end = min(stream.count, index + n)
                pieces.append(Array(stream[index..<end]))
                index = end
            }
            chunks.append(pieces)
        }
        var scenario = Scenario()
        var next = [Int](repeating: 0, count: flows.count)
        var fed = [Int](repeating: 0, count: flows.count)
        var emitted = [Int](repeating: 0, count: flows.count)
        var firstSeen: [Int] = []
        var t: Int64 = 1_767_225_600_000_000_000
        while true {
            let open = flows.indices.filter { next[$0] < chunks[$0].count }
            if open.isEmpty { break }
            t += Int64(rng.int(0...2_000_000))  // equal times happen too
            if rng.chance(15) {
                let other: TraceRecord = switch rng.int(0...2) {
                case 0: .label(LabelRecord(timeNs: t, controller: rng.pick([controller1, controller2]), gesture: "jump",
                                           senderTimeMs: UInt64(t / 1_000_000), durationMs: 450))
                case 1: .event(EventRecord(timeNs: t, event: "note", data: ["n": .integer(Int64(rng.int(0...99))), "s": .string("a\"b")]))
                default: .motion(MotionSampleRecord(timeNs: t, controller: controller2, senderTimeMs: UInt64(t / 1_000_000),
                                                    userAcceleration: Vector3(0.5, -0.25, 1), rotationRate: Vector3(0, 0, 0.125)))
                }
                scenario.records.append(other)
                scenario.framed.append(other)
                continue
            }
            let flow = rng.pick(open)
            let piece = chunks[flow][next[flow]]
            next[flow] += 1
            if !firstSeen.contains(flow) { firstSeen.append(flow) }
            scenario.records.append(chunk(t, flow, piece, rtt: rng.chance(10) ? 1234 : nil))
            fed[flow] += piece.count
            while 12 * (emitted[flow] + 1) <= fed[flow] {
                let start = 12 * emitted[flow]
                scenario.framed.append(message(t, flow, Array(streams[flow][start..<start + 12])))
                emitted[flow] += 1
            }
        }
        for flow in firstSeen where streams[flow].count % 12 != 0 {
            scenario.unfinished.append(Leftover(
                source: flows[flow].source, destination: flows[flow].destination,
                offset: 12 * (streams[flow].count / 12), bytes: streams[flow].count % 12))
        }
        return scenario
    }

    // MARK: The registry

    @Test func aTraceOfAnotherProtocolReadsWithARegistryThatKnowsIt() throws {
        let records: [TraceRecord] = [
            Self.chunk(1, 0, Self.toyRecord(1_767_225_600_123, 0xDEAD_BEEF)),
            Self.chunk(2, 0, [1, 2, 3, 4, 5]),
            .label(LabelRecord(timeNs: 3, controller: Self.controller1, gesture: "jump")),
        ]
        let document = try TraceEncoder.document(header: Self.header, records: records, registry: Self.registry)
        let text = String(decoding: document, as: UTF8.self)
        #expect(text.hasPrefix(#"{"format":"kinetrace-trace""#))
        #expect(text.contains(#""profile":"toy-stream-v1""#))
        // A byte stream's records are chunks (TR-MSG-4): no kind, fields or verdict, which would judge bytes cut anywhere.
        #expect(text.contains(#""len":5,"payload":"0102030405"}"#))
        #expect(!text.contains(#""msg":"#) && !text.contains(#""valid":"#) && !text.contains(#""decoded":"#))

        let reader = try TraceReader(bytes: document, name: "toy.jsonl", registry: Self.registry)
        #expect(reader.header == Self.header)
        #expect(reader.wireProtocol.id == ToyStream.id)
        #expect(reader.wireProtocol.transport == .byteStream)
        #expect(try readAll(reader) == records)
        #expect(reader.unknownRecordCount == 0)
        if case .message(let m) = records[0] {
            #expect(m.facts(reader.wireProtocol) == MessageFacts(direction: .controllerToHost, senderTimeMs: 1_767_225_600_123))
            #expect(m.decoded(as: ToyStream()) == .success(.init(tMs: 1_767_225_600_123, value: 0xDEAD_BEEF)))
        }

        // The standard registry does not know it: refused on line 1, naming it.
        do {
            _ = try TraceReader(bytes: document, name: "toy.jsonl")
            Issue.record("the standard registry read a toy-stream-v1 trace")
        } catch {
            #expect(error.code == .unknownProtocol)
            #expect(error.line == 1)
            #expect(error.source == "toy.jsonl")
            #expect(error.message.contains("toy-stream-v1"))
        }
        // Nor will it write one.
        #expect(throws: TraceError.self) { try TraceEncoder.document(header: Self.header, records: records) }
        do {
            _ = try TraceEncoder.document(header: Self.header, records: records)
        } catch {
            #expect(error.code == .unknownProtocol)
        }
    }

    @Test func theHostModelAcceptsEverythingAndDecidesNothing() {
        var model = ToyStream.makeHostModel(rule: .default)
        var numbering = ControllerNumbering<Endpoint>()
        let facts = ToyStream.facts(Self.toyRecord(5, 6))
        #expect(facts.isValid && facts.senderTimeMs == 5)
        #expect(model.accept(facts, from: numbering.number(of: Self.controller1), receivedNs: 1) == .accepted)
        #expect(model.accept(ToyStream.facts([1, 2, 3]), from: numbering.number(of: Self.controller2), receivedNs: 2) == .accepted)
        #expect(numbering.number(of: Self.controller1) == 0 && numbering.count == 2)
        #expect(model.controllerCount == 2)
        #expect(ToyStream.facts([1, 2, 3]).error?.code == .invalidLength)
    }

    // MARK: Framing chunks into messages

    @Test func chunkedFlowsComeBackAsWholeRecordsPerFlow() async {
        await seededPropertyCheck(count: 300, input: Gen.uint64()) { seed in
            let scenario = Self.scenario(seed: seed)
            do {
                let document = try TraceEncoder.document(header: Self.header, records: scenario.records, registry: Self.registry)
                // The chunks themselves read back as written.
                #expect(try readAll(TraceReader(bytes: document, registry: Self.registry)) == scenario.records)
                let framing = FramingRecordSource(try TraceReader(bytes: document, name: "chunks.jsonl", registry: Self.registry))
                #expect(framing.source == "chunks.jsonl")
                #expect(framing.header == Self.header)
                #expect(framing.wireProtocol.id == ToyStream.id)
                let got = try Self.readEverything(framing)
                #expect(got == scenario.framed)
                #expect(Self.leftovers(framing) == scenario.unfinished)
                #expect(framing.truncation == nil)
                #expect(try framing.next() == nil, "the end stays the end")
                #expect(Self.leftovers(framing) == scenario.unfinished, "leftovers are reported once")
                // Every framed message is a valid toy record.
                for case .message(let m) in got { #expect(m.facts(ToyStream()).isValid) }
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
    }

    /// The same through a file: TraceWriter, then TraceReader(path:registry:).
    @Test func aWrittenFileFramesTheSame() throws {
        let dir = TempDirectory()
        let path = dir.file("toy.jsonl")
        for seed: UInt64 in [1, 2, 3, 0xC0FFEE] {
            let scenario = Self.scenario(seed: seed)
            let writer = try TraceWriter(path: path, header: Self.header, registry: Self.registry)
            #expect(writer.wireProtocol.id == ToyStream.id)
            for record in scenario.records { try writer.write(record) }
            try writer.close()
            let framing = FramingRecordSource(try TraceReader(path: path, registry: Self.registry))
            #expect(try Self.readEverything(framing) == scenario.framed, "seed \(seed)")
            #expect(Self.leftovers(framing) == scenario.unfinished, "seed \(seed)")
        }
        #expect(throws: TraceError.self, "the standard registry refuses to write toy-stream-v1") {
            try TraceWriter(path: dir.file("refused.jsonl"), header: Self.header)
        }
    }

    @Test func aHandWrittenExample() throws {
        let a = Self.toyRecord(100, 1), b = Self.toyRecord(101, 2), c = Self.toyRecord(200, 3)
        let records: [TraceRecord] = [
            Self.chunk(10, 0, Array(a[0..<5])),
            Self.chunk(11, 2, Array(c[0..<12]) + [9, 9, 9]),  // a whole record and 3 bytes of another
            Self.chunk(12, 0, Array(a[5...]) + Array(b[0..<1])),
            .event(EventRecord(timeNs: 13, event: "mark")),
            Self.chunk(14, 0, []),
            Self.chunk(15, 1, [7]),  // the host's direction: a flow of its own
            Self.chunk(16, 0, Array(b[1...])),
        ]
        let document = try TraceEncoder.document(header: Self.header, records: records, registry: Self.registry)
        let framing = FramingRecordSource(try TraceReader(bytes: document, registry: Self.registry))
        #expect(try Self.readEverything(framing) == [
            Self.message(11, 2, c),
            Self.message(12, 0, a),
            .event(EventRecord(timeNs: 13, event: "mark")),
            Self.message(16, 0, b),
        ])
        #expect(Self.leftovers(framing) == [
            Leftover(source: Self.controller2, destination: Self.host6, offset: 12, bytes: 3),
            Leftover(source: Self.host, destination: Self.controller1, offset: 0, bytes: 1),
        ])
    }

    /// A trace cut mid-line (a killed writer): framing stops where the reader does,
    /// passes the truncation on, and still reports the flows left mid-record.
    @Test func aTruncatedTraceStillReportsUnfinishedFlows() throws {
        let a = Self.toyRecord(100, 1)
        let records: [TraceRecord] = [Self.chunk(10, 0, a + [1, 2]), Self.chunk(11, 0, Array(a[2...]))]
        let document = try TraceEncoder.document(header: Self.header, records: records, registry: Self.registry)
        let framing = FramingRecordSource(try TraceReader(bytes: Array(document.dropLast(9)), registry: Self.registry))
        #expect(try Self.readEverything(framing) == [Self.message(10, 0, a)])
        #expect(framing.truncation?.line == 3)
        #expect(Self.leftovers(framing) == [Leftover(source: Self.controller1, destination: Self.host, offset: 12, bytes: 2)])
    }

    // MARK: Streams that cannot be framed

    static let prefixedHeader = TraceHeader(created: "2026-11-23T08:00:00.000Z", tool: "kinetrace-tests 0.0.1", protocolID: ToyPrefixed.id,
                                            capturePoint: .host, clock: .realtime)

    static func prefixedSource(_ records: [TraceRecord]) throws -> FramingRecordSource {
        let document = try TraceEncoder.document(header: prefixedHeader, records: records, registry: registry)
        return FramingRecordSource(try TraceReader(bytes: document, name: "prefixed.jsonl", registry: registry))
    }

    @Test func anUnframeableStreamThrowsNamingTheFlowAndTheOffset() throws {
        let framing = try Self.prefixedSource([
            Self.chunk(1, 0, [3, 0xA, 0xB]),
            Self.chunk(2, 2, [2, 0xE]),
            Self.chunk(3, 0, [2]),
            Self.chunk(4, 0, [0xC]),
            .label(LabelRecord(timeNs: 5, controller: nil, gesture: "jump")),
            Self.chunk(6, 0, [0, 4, 4, 4]),  // a zero length at stream offset 5
            Self.chunk(7, 2, [1]),
        ])
        #expect(try framing.next() == Self.message(1, 0, [3, 0xA, 0xB]))
        #expect(try framing.next() == Self.message(2, 2, [2, 0xE]))
        #expect(try framing.next() == Self.message(4, 0, [2, 0xC]))
        #expect(try framing.next() == .label(LabelRecord(timeNs: 5, controller: nil, gesture: "jump")))
        do {
            let record = try framing.next()
            Issue.record("an unframeable stream gave \(String(describing: record))")
        } catch {
            #expect(error.code == .badRecord)
            #expect(error.source == "prefixed.jsonl")
            #expect(error.message.contains(Self.controller1.description), "\(error)")
            #expect(error.message.contains(Self.host.description), "\(error)")
            #expect(error.message.contains("byte 5"), "\(error)")
            #expect(error.message.contains("a record length from 1 to 255"), "\(error)")
        }
    }

    /// Messages the stream completed before the unframeable bytes, in the same chunk,
    /// come out before the error: a caller that stops at the error must not lose them.
    @Test func messagesBeforeUnframeableBytesInTheSameChunkComeFirst() throws {
        let framing = try Self.prefixedSource([
            Self.chunk(1, 0, [2]),
            Self.chunk(2, 0, [0xA, 3, 0xB, 0xC, 0, 9]),  // completes two records, then a zero length at offset 5
        ])
        var got: [TraceRecord] = []
        var failure: TraceError?
        do {
            while let record = try framing.next() { got.append(record) }
        } catch {
            failure = error
        }
        #expect(got == [Self.message(2, 0, [2, 0xA]), Self.message(2, 0, [3, 0xB, 0xC])])
        #expect(failure?.message.contains("byte 5") == true, "\(String(describing: failure))")
    }
}
