import Foundation
import KinetraceTestSupport
import PropertyBased
import Testing
@testable import KinetraceTrace
import KinetraceWire
import KinetraceJSON

/// Records and headers written by TraceEncoder/TraceWriter read back identical.
@Suite struct RoundTripTests {
    @Test func randomDocumentsRoundTripInMemory() async {
        await seededPropertyCheck(count: 300, input: Gen.uint64(), Gen.int(in: 0...12)) { seed, count in
            var rng = SplitMix64(seed: seed)
            let header = RandomTrace.header(&rng)
            let records = (0..<count).map { _ in RandomTrace.record(&rng) }
            let data = try TraceEncoder.document(header: header, records: records)
            do {
                let reader = try TraceReader(bytes: data)
                #expect(reader.header == header)
                #expect(reader.header.extra == header.extra)
                let back = try readAll(reader)
                #expect(back == records)
                #expect(reader.recordCount == records.count)
                #expect(reader.unknownRecordCount == 0)
                #expect(reader.truncation == nil)
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
    }

    @Test func everyRecordLineIsOneLineEndingInNewline() async {
        // TR-WRITE-1: each line ends with "\n" and contains no other newline,
        // even for strings holding newlines and U+2028.
        await seededPropertyCheck(count: 300, input: Gen.uint64()) { seed in
            var rng = SplitMix64(seed: seed)
            let record = RandomTrace.record(&rng)
            let line = TraceEncoder.line(for: record, as: MotionLinkV1())
            #expect(line.last == 0x0A)
            #expect(line.dropLast().contains(0x0A) == false)
            #expect(line.dropLast().contains(0x0D) == false)
            #expect(line.first == UInt8(ascii: "{"))
        }
    }

    @Test func specialPayloadLengthsAndEndpointsRoundTrip() throws {
        var records: [TraceRecord] = []
        let endpoints = [Endpoint(host: "10.0.0.11", port: 50001), Endpoint(host: "::1", port: 47110),
                         Endpoint(host: "fe80::1%eth0", port: 5), Endpoint(host: "0.0.0.0", port: 0),
                         Endpoint(host: "255.255.255.255", port: 65535)]
        for (i, length) in [0, 1, 19, 20, 21, 35, 36, 37, 100].enumerated() {
            records.append(.message(MessageRecord(
                timeNs: [0, 1, 1_767_225_600_140_490_966, TraceRecord.timeRangeNs.upperBound - 1][i % 4], direction: i % 2 == 0 ? .controllerToHost : .hostToController,
                source: endpoints[i % endpoints.count], destination: endpoints[(i + 1) % endpoints.count],
                payload: (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 91 &+ i) },
                rttNs: i % 3 == 0 ? nil : Int64(i) * -1_000_003)))
        }
        let data = try TraceEncoder.document(header: Fixtures.header, records: records)
        let reader = try TraceReader(bytes: data)
        #expect(try readAll(reader) == records)
        #expect(reader.header == Fixtures.header)
    }

    @Test func frameAndAckPayloadsCarryInformativeDecodedMembers() throws {
        // A real frame (36 bytes) and ack (20 bytes): the writer adds msg/decoded/valid,
        // the reader ignores them and returns the payload unchanged.
        let frame = MotionFrame(tMs: 1_767_225_600_071, ax: 0.017758794, ay: -0.003110511, az: -0.008247942,
                                wx: 0.050074514, wy: 0.015541639, wz: 0.008255814).encoded()
        #expect(frame.count == 36)
        var corrupt = frame
        corrupt[35] ^= 0xFF
        let records: [TraceRecord] = [
            .message(MessageRecord(timeNs: 1, direction: .controllerToHost, source: Endpoint(host: "10.0.0.11", port: 50001),
                                   destination: Endpoint(host: "10.0.0.1", port: 47110), payload: frame)),
            .message(MessageRecord(timeNs: 2, direction: .controllerToHost, source: Endpoint(host: "10.0.0.11", port: 50001),
                                   destination: Endpoint(host: "10.0.0.1", port: 47110), payload: corrupt)),
        ]
        let lines = records.map { String(decoding: TraceEncoder.line(for: $0, as: MotionLinkV1()), as: UTF8.self) }
        #expect(lines[0].contains("\"msg\":\"frame\""))
        #expect(lines[0].contains("\"t_ms\":1767225600071"))
        #expect(lines[0].contains("\"valid\":true"))
        #expect(lines[0].contains("\"len\":36"))
        #expect(lines[1].contains("\"valid\":false,\"reason\":"))
        let reader = try TraceReader(bytes: try TraceEncoder.document(header: Fixtures.header, records: records))
        #expect(try readAll(reader) == records)
    }

    @Test func exactLineBytesOfAMessage() {
        let record = TraceRecord.message(MessageRecord(
            timeNs: -5, direction: .hostToController, source: Endpoint(host: "::1", port: 1),
            destination: Endpoint(host: "1.2.3.4", port: 65535), payload: [0x00, 0xAB, 0xFF], rttNs: 9))
        let text = String(decoding: TraceEncoder.line(for: record, as: MotionLinkV1()), as: UTF8.self)
        #expect(text == "{\"kind\":\"msg\",\"t_ns\":-5,\"dir\":\"h2c\",\"src\":\"[::1]:1\",\"dst\":\"1.2.3.4:65535\","
                + "\"len\":3,\"payload\":\"00abff\",\"rtt_ns\":9,\"msg\":\"unknown\",\"valid\":false,\"reason\":"
                + "\"\(MotionLinkV1.decodeResult([0x00, 0xAB, 0xFF]).failureCode)\"}\n")
    }

    @Test func headerLinePutsFormatFirstAndKeepsExtras() throws {
        // TR-HEADER-4 and TR-HEADER-5.
        var header = Fixtures.header
        header.extra = ["seed": .integer(7), "aaa": .array([.string("x\u{0}"), .number(0.5)]),
                        "zzz": .object(["deep": .object(["er": .null])])]
        let line = String(decoding: TraceEncoder.line(for: header), as: UTF8.self)
        #expect(line.hasPrefix("{\"format\":\"kinetrace-trace\","))
        #expect(line.hasSuffix("}\n"))
        #expect(line.contains("\"version\":1"))
        #expect(line.contains("\"minor\":2"))
        let reader = try TraceReader(bytes: Array(line.utf8))
        #expect(reader.header == header)
        #expect(reader.header.extra["zzz"] == .object(["deep": .object(["er": .null])]))
        #expect(reader.header.major == 1)
        #expect(reader.header.minor == 2)
        #expect(try reader.next() == nil)
    }

    @Test func eventDataWithEscapesAndUnicodeRoundTrips() throws {
        let data: [String: JSONValue] = [
            "quote\"key": .string("\"\\/\u{8}\u{C}\n\r\t\u{0}\u{1F}\u{7F}"),
            "emoji 😀": .string("👩‍👩‍👧 é e\u{301} 日本 \u{10FFFF} \u{FFFD} \u{2028}"),
            "nested": .array([.array([.array([.object(["": .string("")])])]), .integer(.min), .integer(.max)]),
            "numbers": .array([.number(0.1), .number(-0.0), .number(1e300), .number(.leastNonzeroMagnitude), .number(3.0), .number(1e-5)]),
            "": .null, "t": .bool(true), "f": .bool(false),
        ]
        let record = TraceRecord.event(EventRecord(timeNs: TraceRecord.timeRangeNs.upperBound - 1, event: "phase \"x\"\n", data: data))
        let reader = try TraceReader(bytes: try TraceEncoder.document(header: Fixtures.header, records: [record]))
        #expect(try reader.next() == record)
        #expect(try reader.next() == nil)
    }

    @Test func nonFiniteNumbersAreWrittenAsStrings() throws {
        let record = TraceRecord.event(EventRecord(timeNs: 0, event: "x", data: [
            "nan": .number(.nan), "inf": .number(.infinity), "ninf": .number(-.infinity)]))
        let line = String(decoding: TraceEncoder.line(for: record, as: MotionLinkV1()), as: UTF8.self)
        #expect(line == "{\"kind\":\"event\",\"t_ns\":0,\"event\":\"x\",\"data\":{\"inf\":\"Infinity\",\"nan\":\"NaN\",\"ninf\":\"-Infinity\"}}\n")
        let reader = try TraceReader(bytes: bytes(Fixtures.minimalHeaderLine) + Array(line.utf8))
        #expect(try reader.next() == .event(EventRecord(timeNs: 0, event: "x", data: [
            "nan": .string("NaN"), "inf": .string("Infinity"), "ninf": .string("-Infinity")])))
    }

    @Test func labelWithMaximalUnsignedFieldsRoundTrips() throws {
        // LabelRecord.tMs and durationMs are UInt64: the writer writes any value,
        // so the reader must read any value the writer writes.
        let record = TraceRecord.label(LabelRecord(timeNs: 1, controller: nil, gesture: "jump",
                                                   senderTimeMs: UInt64.max, durationMs: UInt64(Int64.max) + 1))
        let data = try TraceEncoder.document(header: Fixtures.header, records: [record])
        let reader = try TraceReader(bytes: data)
        let (records, error) = readUntilError(reader)
        #expect(error == nil, "the writer produced a line its own reader rejects: \(String(describing: error))")
        #expect(records == [record])
    }

    @Test func randomDocumentsRoundTripThroughAFile() async throws {
        let dir = TempDirectory()
        await seededPropertyCheck(count: 40, input: Gen.uint64(), Gen.int(in: 0...30)) { seed, count in
            var rng = SplitMix64(seed: seed)
            let header = RandomTrace.header(&rng)
            let records = (0..<count).map { _ in RandomTrace.record(&rng) }
            let path = dir.file("rt-\(seed).jsonl")
            do {
                let writer = try TraceWriter(path: path, header: header)
                for r in records { try writer.write(r) }
                #expect(writer.recordCount == records.count)
                try writer.close()
                // The file is exactly the in-memory document.
                #expect(try dir.contents("rt-\(seed).jsonl") == TraceEncoder.document(header: header, records: records))
                let reader = try TraceReader(path: path)
                #expect(reader.source == path)
                #expect(reader.header == header)
                #expect(try readAll(reader) == records)
                #expect(reader.truncation == nil)
                #expect(reader.recordCount == records.count)
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
    }

    @Test func manyRecordsAcrossBufferRefillsThroughAFile() throws {
        // More than the reader's 1 MiB buffer, so lines straddle refills.
        let dir = TempDirectory()
        var rng = SplitMix64(seed: 0xC0FFEE)
        var records: [TraceRecord] = []
        for i in 0..<9000 {
            records.append(i % 3 == 0 ? RandomTrace.record(&rng)
                : .message(MessageRecord(timeNs: Int64(i), direction: .controllerToHost,
                                         source: RandomTrace.endpoint(&rng), destination: RandomTrace.endpoint(&rng),
                                         payload: RandomTrace.payload(&rng))))
        }
        let path = dir.file("big.jsonl")
        let writer = try TraceWriter(path: path, header: Fixtures.header)
        for r in records { try writer.write(r) }
        try writer.close()
        let size = dir.contents("big.jsonl").count
        #expect(size > 2 << 20)
        let reader = try TraceReader(path: path)
        var n = 0
        while let r = try reader.next() {
            #expect(r == records[n], "record \(n)")
            n += 1
        }
        #expect(n == records.count)
        #expect(reader.truncation == nil)
    }
}

extension Result where Failure == WireError {
    var failureCode: String {
        if case .failure(let e) = self { return e.code.name }
        return "none"
    }
}
