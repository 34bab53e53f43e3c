import Foundation
import KinetraceTestSupport
import PropertyBased
import Testing
import KinetraceWire

/// The stdio adapter framing (specs/stdio-adapter-v1.md).
@Suite struct StdioRecordTests {
    /// The spec's worked examples, read from the spec itself: `<!-- record: name=… kind=0x01 controller=2 -->` then a hex block.
    static func specRecords() throws -> [(name: String, kind: UInt8, controller: UInt16, bytes: [UInt8])] {
        let spec = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("specs/stdio-adapter-v1.md")
        let lines = try String(contentsOf: spec, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        var out: [(String, UInt8, UInt16, [UInt8])] = []
        for (i, line) in lines.enumerated() where line.hasPrefix("<!-- record:") {
            var fields: [String: String] = [:]
            for pair in line.split(separator: " ") where pair.contains("=") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                fields[String(kv[0])] = String(kv[1])
            }
            let hex = lines[(i + 2)...].prefix { !$0.hasPrefix("```") }.joined(separator: " ")
            out.append((fields["name"]!, UInt8(fields["kind"]!.dropFirst(2), radix: 16)!, UInt16(fields["controller"]!)!,
                        try Hex.decode(hex).get()))
        }
        return out
    }

    @Test func decodesAndReencodesTheSpecsWorkedExamples() throws {
        let records = try Self.specRecords()
        #expect(records.map(\.name) == ["record-frame-trigger", "record-ack-trigger", "record-empty", "record-observation"])
        for example in records {
            var decoder = StdioRecordDecoder()
            decoder.append(example.bytes)
            let record = try #require(try decoder.next())
            #expect(record.kind.rawValue == example.kind)
            #expect(record.controller == example.controller)
            #expect(record.encoded() == example.bytes)
            #expect(try decoder.next() == nil)
        }
        // The frame example carries a triggering frame; the reply is its ack.
        guard case .success(.frame(let frame)) = MotionLinkV1.decodeResult(Array(records[0].bytes.dropFirst(8))),
              case .success(.ack(let ack)) = MotionLinkV1.decodeResult(Array(records[1].bytes.dropFirst(8))) else {
            Issue.record("the worked examples do not carry a valid frame and ack")
            return
        }
        #expect(frame.ay > 0.5 && ack.echoTMs == frame.tMs)
        // The observation reports that jump (SA-OBS-2), byte for byte as the reference host writes it.
        let observation = try Observation.decode(Array(records[3].bytes.dropFirst(8)))
        #expect(observation == Observation(decision: "jump", sampleTimeMs: frame.tMs))
        #expect(observation.encoded() == Array(records[3].bytes.dropFirst(8)))
    }

    @Test func decodesRecordsAcrossAnyChunking() async {
        await seededPropertyCheck(input: Gen.int(in: 0...40).array(of: 1...20), Gen.int(in: 1...17)) { lengths, chunk in
            let records = lengths.enumerated().map {
                StdioRecord(kind: .hostToController, controller: UInt16($0.offset), payload: Array(repeating: UInt8($0.element), count: $0.element))
            }
            let stream = records.flatMap { $0.encoded() }
            var decoder = StdioRecordDecoder()
            var decoded: [StdioRecord] = []
            var index = 0
            while index < stream.count {
                decoder.append(stream[index..<min(index + chunk, stream.count)])
                index += chunk
                while let record = try? decoder.next() { decoded.append(record) }
            }
            #expect(decoded == records)
            #expect(decoder.pendingBytes == 0)
        }
    }

    @Test func badLengthsAndFlagsNameTheirOffset() throws {
        var decoder = StdioRecordDecoder()
        decoder.append(StdioRecord(kind: .hostToController, controller: 0, payload: [1, 2, 3]).encoded())
        decoder.append([0, 0, 0, 3, 2, 0, 0, 0])  // L = 3: below the minimum
        _ = try decoder.next()
        #expect(throws: WireError.self) { try decoder.next() }
        do { _ = try decoder.next() } catch { #expect(error.offset == 11 && error.code == .invalidLength) }

        var flagged = StdioRecordDecoder()
        flagged.append([0, 0, 0, 4, 2, 7, 0, 0])
        do { _ = try flagged.next(); Issue.record("flags 7 accepted") } catch { #expect(error.offset == 5) }

        var huge = StdioRecordDecoder()
        huge.append([0, 1, 0, 4, 2, 0, 0, 0])
        do { _ = try huge.next(); Issue.record("a 65540-byte record accepted") } catch { #expect(error.code == .invalidLength) }
    }

    @Test func anIncompleteRecordWaitsForMoreBytes() throws {
        let bytes = StdioRecord(kind: .controllerToHost, controller: 9, payload: Array(repeating: 0xAB, count: 36)).encoded()
        var decoder = StdioRecordDecoder()
        decoder.append(bytes.prefix(20))
        #expect(try decoder.next() == nil)
        #expect(decoder.pendingBytes == 20)
        decoder.append(bytes.dropFirst(20))
        #expect(try decoder.next()?.controller == 9)
    }
}
