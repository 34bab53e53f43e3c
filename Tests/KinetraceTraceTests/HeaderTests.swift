import Foundation
import Testing
@testable import KinetraceTrace
import KinetraceWire

/// TR-HEADER-*: what line 1 must be, and how files that are not traces fail.
@Suite struct HeaderTests {
    func headerError(_ data: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> TraceError? {
        #expect(throws: TraceError.self, sourceLocation: sourceLocation) { _ = try TraceReader(bytes: data, name: "hdr.jsonl") }
    }

    @Test func emptyFileIsABadHeaderOnLine1() {
        let error = headerError([])
        #expect(error?.code == .badHeader)
        #expect(error?.line == 1)
        #expect(error?.byteOffset == 0)
        #expect(error?.source == "hdr.jsonl")
        #expect(error?.message.contains("empty") == true)
    }

    static let badHeaders: [(String, TraceError.Code)] = [
        ("\n", .badHeader),
        ("\n{\"format\":\"kinetrace-trace\",\"version\":1}\n", .badHeader),
        ("hello world\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":1\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":1} trailing\n", .badHeader),
        ("[\"format\",\"kinetrace-trace\"]\n", .badHeader),
        ("\"kinetrace-trace\"\n", .badHeader),
        ("42\n", .badHeader),
        ("null\n", .badHeader),
        ("{}\n", .badHeader),
        ("{\"version\":1}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\"}\n", .badHeader),
        ("{\"format\":\"other-trace\",\"version\":1}\n", .badHeader),
        ("{\"format\":1,\"version\":1}\n", .badHeader),
        ("{\"format\":\"Kinetrace-Trace\",\"version\":1}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":\"1\"}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":1.5}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":null}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":1e400}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":[1]}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":2}\n", .unsupportedVersion),
        ("{\"format\":\"kinetrace-trace\",\"version\":0}\n", .unsupportedVersion),
        ("{\"format\":\"kinetrace-trace\",\"version\":-1}\n", .unsupportedVersion),
        ("{\"version\":2,\"minor\":0,\"format\":\"kinetrace-trace\"}\n", .unsupportedVersion),
        ("{\"format\":\"kinetrace-trace\",\"version\":2.0}\n", .unsupportedVersion),
        ("{\"format\":\"kinetrace-trace\",\"version\":1,\"created\":5}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":1,\"tool\":null}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":1,\"clock\":[]}\n", .badHeader),
        ("{\"format\":\"kinetrace-trace\",\"version\":1,\"notes\":{}}\n", .badHeader),
    ]

    @Test(arguments: badHeaders)
    func badHeadersFailOnLine1(_ text: String, _ code: TraceError.Code) {
        let error = headerError(bytes(text))
        #expect(error?.code == code, "\(text.prefix(80))")
        #expect(error?.line == 1)
        #expect(error.map { ($0.byteOffset ?? -1) >= 0 && ($0.byteOffset ?? -1) <= text.utf8.count } == true)
        #expect(error?.description.hasPrefix("hdr.jsonl: line 1") == true)
    }

    @Test func deeplyNestedHeaderIsABadHeaderNotACrash() {
        let text = "{\"format\":\"kinetrace-trace\",\"version\":1,\"x\":" + String(repeating: "[", count: 100_000) + "\n"
        let error = headerError(bytes(text))
        #expect(error?.code == .badHeader)
        #expect(error?.line == 1)
        #expect(error?.message.contains("nesting") == true)
    }

    @Test func unsupportedVersionNamesTheVersion() {
        let error = headerError(bytes("{\"format\":\"kinetrace-trace\",\"version\":2,\"minor\":3}\n{\"kind\":\"x\",\"t_ns\":1}\n"))
        #expect(error?.code == .unsupportedVersion)
        #expect(error?.line == 1)
        #expect(error?.message.contains("2") == true)
    }

    @Test func wrongFormatNamesWhatWasFound() {
        let error = headerError(bytes("{\"format\":\"pcap-ish\",\"version\":1}\n"))
        #expect(error?.message.contains("pcap-ish") == true)
    }

    @Test func truncatedHeaderSaysSo() {
        let error = headerError(bytes("{\"format\":\"kinetrace-trace\",\"vers"))
        #expect(error?.code == .badHeader)
        #expect(error?.line == 1)
        #expect(error?.message.contains("truncated") == true)
    }

    @Test func headerWithoutNewlineAndNoRecordsIsFine() throws {
        let reader = try TraceReader(bytes: bytes("{\"format\":\"kinetrace-trace\",\"version\":1}"))
        #expect(try reader.next() == nil)
        #expect(reader.truncation == nil)
    }

    @Test func missingOptionalMembersAreDefaulted() throws {
        let reader = try TraceReader(bytes: bytes(" {\"version\":1.0,\"format\":\"kinetrace-trace\"} \r\n"))
        let h = reader.header
        #expect(h.major == 1)
        #expect(h.minor == 0)
        #expect(h.created == "")
        #expect(h.tool == "")
        #expect(h.protocolID == MotionLinkV1.id)
        #expect(h.capturePoint.name == "unknown")
        #expect(h.clock.name == "unknown")
        #expect(h.notes == "")
        #expect(h.extra.isEmpty)
    }

    @Test func specExampleHeaderAndUnknownMembersAreKept() throws {
        let text = #"{"format":"kinetrace-trace","capture_point":"host","clock":"realtime","created":"2026-11-23T08:00:00.000Z","minor":7,"notes":"n\u00e9","profile":"motionlink-v1","tool":"kinetrace 0.1.0","version":1,"seed":7,"future":{"a":[1,"b",null]},"flag":false,"ratio":0.25}"# + "\n"
        let reader = try TraceReader(bytes: bytes(text))
        let h = reader.header
        #expect(h.major == 1)
        #expect(h.minor == 7)
        #expect(h.created == "2026-11-23T08:00:00.000Z")
        #expect(h.tool == "kinetrace 0.1.0")
        #expect(h.protocolID == MotionLinkV1.id)
        #expect(h.capturePoint == .host)
        #expect(h.clock == .realtime)
        #expect(h.notes == "né")
        #expect(h.extra == ["seed": .integer(7), "future": .object(["a": .array([.integer(1), .string("b"), .null])]),
                            "flag": .bool(false), "ratio": .number(0.25)])
        // Re-encoding keeps the extras (a rewrite loses nothing).
        let again = try TraceReader(bytes: TraceEncoder.line(for: h))
        #expect(again.header == h)
    }

    @Test func otherCapturePointsAndClocksAreAccepted() throws {
        let reader = try TraceReader(bytes: bytes(#"{"format":"kinetrace-trace","version":1,"capture_point":"satellite","clock":"ptp","profile":"motionlink-v1"}"# + "\n"))
        #expect(reader.header.capturePoint == CapturePoint("satellite"))
        #expect(reader.header.clock == ClockSource("ptp"))
        #expect(reader.header.protocolID == ProtocolID("motionlink-v1"))
    }

    /// A protocol this build does not speak is an error on line 1, never read as MotionLink v1.
    @Test func anUnknownProtocolIsRefusedOnLineOne() throws {
        for member in ["profile", "protocol"] {
            let text = #"{"format":"kinetrace-trace","version":1,"\#(member)":"motionlink-v9"}"# + "\n" + #"{"kind":"event","t_ns":1,"event":"x","data":{}}"# + "\n"
            #expect {
                try TraceReader(bytes: bytes(text))
            } throws: { error in
                guard let e = error as? TraceError else { return false }
                return e.code == .unknownProtocol && e.line == 1 && e.description.contains("motionlink-v9")
                    && e.description.contains("motionlink-v1")
            }
        }
    }

    /// "protocol" is read as well as the written "profile"; the two must not disagree.
    @Test func theProtocolMemberIsReadAndMustAgreeWithProfile() throws {
        let both = #"{"format":"kinetrace-trace","version":1,"profile":"motionlink-v1","protocol":"motionlink-v1"}"# + "\n"
        #expect(try TraceReader(bytes: bytes(both)).header.protocolID == MotionLinkV1.id)
        let clash = #"{"format":"kinetrace-trace","version":1,"profile":"motionlink-v1","protocol":"other"}"# + "\n"
        #expect(throws: TraceError.self) { try TraceReader(bytes: bytes(clash)) }
        // Written as "profile", so traces stay readable by every earlier reader.
        let line = String(decoding: TraceEncoder.line(for: TraceHeader(created: "", tool: "", capturePoint: .host, clock: .realtime)), as: UTF8.self)
        #expect(line.contains(#""profile":"motionlink-v1""#))
        #expect(!line.contains(#""protocol""#))
    }

    // MARK: Not a trace at all

    static let pcapMagics: [[UInt8]] = [
        [0xD4, 0xC3, 0xB2, 0xA1], // pcap, little-endian, microseconds
        [0xA1, 0xB2, 0xC3, 0xD4], // pcap, big-endian
        [0x4D, 0x3C, 0xB2, 0xA1], // pcap, little-endian, nanoseconds
        [0xA1, 0xB2, 0x3C, 0x4D], // pcap, big-endian, nanoseconds
    ]

    @Test(arguments: pcapMagics)
    func pcapCapturesAreRecognised(_ magic: [UInt8]) {
        // A global header: magic, version 2.4, zone, sigfigs, snaplen, linktype.
        let data = magic + [0x02, 0x00, 0x04, 0x00] + [UInt8](repeating: 0, count: 8) + [0xFF, 0xFF, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00]
        let error = headerError(data)
        #expect(error?.code == .badHeader)
        #expect(error?.line == 1)
        #expect(error?.message.contains("pcap") == true)
    }

    @Test func pcapngCapturesAreRecognised() {
        // A pcapng Section Header Block starts with block type 0x0A0D0D0A, whose
        // first byte is '\n'. The reader checks for that magic (TraceReader.swift),
        // but only on the bytes of line 1.
        let shb: [UInt8] = [0x0A, 0x0D, 0x0D, 0x0A, 0x1C, 0x00, 0x00, 0x00, 0x4D, 0x3C, 0x2B, 0x1A,
                            0x01, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1C, 0x00, 0x00, 0x00]
        let error = headerError(shb)
        #expect(error?.code == .badHeader)
        #expect(error?.line == 1)
        #expect(error?.message.contains("pcap") == true, "\(String(describing: error))")
    }

    @Test func pcapFileOnDiskIsRecognised() throws {
        let dir = TempDirectory()
        var data: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 0x02, 0x00, 0x04, 0x00] + [UInt8](repeating: 0, count: 16)
        var rng = SplitMix64(seed: 1)
        data += (0..<5000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let path = dir.write("capture.pcap", data)
        let error = #expect(throws: TraceError.self) { _ = try TraceReader(path: path) }
        #expect(error?.code == .badHeader)
        #expect(error?.source == path)
        #expect(error?.message.contains("pcap") == true)
    }

    @Test func missingFileIsNotFound() {
        let dir = TempDirectory()
        let path = dir.file("does-not-exist.jsonl")
        let error = #expect(throws: TraceError.self) { _ = try TraceReader(path: path) }
        #expect(error?.code == .notFound)
        #expect(error?.source == path)
        #expect(error?.line == nil)
        #expect(error?.description.hasPrefix(path + ": ") == true)
    }

    @Test func directoryIsRefused() {
        // A directory opens fine with O_RDONLY on Linux; the reader must still
        // refuse it. TraceError.Code documents `unreadable` as "The file exists
        // but cannot be opened for reading (permissions, a directory)".
        let dir = TempDirectory()
        let error = #expect(throws: TraceError.self) { _ = try TraceReader(path: dir.path) }
        #expect(error?.code == TraceError.Code("unreadable"))
        #expect(error?.message.contains("directory") == true)
        #expect(error?.source == dir.path)
        #expect(error?.line == nil)
    }

    @Test func writerIntoAMissingDirectoryFails() {
        let dir = TempDirectory()
        let path = dir.file("no/such/dir/t.jsonl")
        let error = #expect(throws: TraceError.self) { _ = try TraceWriter(path: path, header: Fixtures.header) }
        #expect(error?.code == .cannotCreate)
        #expect(error?.source == path)
    }

    @Test func emptyFileOnDisk() {
        let dir = TempDirectory()
        let path = dir.write("empty.jsonl", [])
        let error = #expect(throws: TraceError.self) { _ = try TraceReader(path: path) }
        #expect(error?.code == .badHeader)
        #expect(error?.line == 1)
    }
}
