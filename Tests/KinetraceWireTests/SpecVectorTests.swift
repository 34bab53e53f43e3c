import Foundation
import Testing
@testable import KinetraceWire

/// The test vectors in specs/motionlink-v1.md, read from the spec itself so
/// the document and the codec cannot drift apart.
struct SpecVector: CustomTestStringConvertible, Sendable {
    var name: String
    var expect: String
    var kind: String
    var bytes: [UInt8]
    var testDescription: String { name }

    static let specURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("specs/motionlink-v1.md")

    static func all() throws -> [SpecVector] {
        let text = try String(contentsOf: specURL, encoding: .utf8)
        var vectors: [SpecVector] = []
        let lines = text.components(separatedBy: "\n")
        for (i, line) in lines.enumerated() where line.hasPrefix("<!-- vector:") {
            var attributes: [String: String] = [:]
            for part in line.dropFirst(12).dropLast(4).split(separator: " ") {
                let kv = part.split(separator: "=", maxSplits: 1)
                if kv.count == 2 { attributes[String(kv[0])] = String(kv[1]) }
            }
            guard lines[i + 1] == "```hex", case .success(let bytes) = Hex.decode(lines[i + 2]) else {
                throw VectorError(line: i + 1)
            }
            vectors.append(SpecVector(name: attributes["name"] ?? "?", expect: attributes["expect"] ?? "?",
                                      kind: attributes["kind"] ?? "?", bytes: bytes))
        }
        return vectors
    }

    struct VectorError: Error { var line: Int }
}

@Suite struct SpecVectorTests {
    @Test func theSpecHoldsTheRequiredVectors() throws {
        let names = Set(try SpecVector.all().map(\.name))
        #expect(names.isSuperset(of: ["frame-zero", "frame-trigger", "ack-trigger", "frame-corrupt",
                                      "frame-nan", "frame-short", "frame-threshold", "ack-out-of-range"]))
    }

    @Test(arguments: try SpecVector.all())
    func codecAgreesWithVector(_ vector: SpecVector) {
        let result = MotionLinkV1.decodeResult(vector.bytes)
        switch (vector.expect, result) {
        case ("valid", .success(let message)):
            #expect(MotionLinkV1.encode(message) == vector.bytes, "re-encoding must give the vector back")
            #expect(vector.kind == (message.isFrame ? "frame" : "ack"))
        case (let reason, .failure(let error)):
            #expect(error.code.name == reason)
        default:
            Issue.record("\(vector.name): expected \(vector.expect), got \(result)")
        }
    }

    @Test func triggeringVectorDecodesToItsFields() throws {
        let v = try #require(try SpecVector.all().first { $0.name == "frame-trigger" })
        let frame = MotionFrame(tMs: 1_700_000_000_000, ax: 0.03125, ay: 0.75, az: -0.0625, wx: 0.5, wy: -0.25, wz: 0.125)
        #expect(try MotionLinkV1.decode(v.bytes) == .frame(frame))
        #expect(frame.encoded() == v.bytes)
        let ack = try #require(try SpecVector.all().first { $0.name == "ack-trigger" })
        #expect(HapticAck(echoTMs: frame.tMs).encoded() == ack.bytes)
    }

    @Test func errorsNameTheOffendingOffset() throws {
        let vectors = try SpecVector.all()
        func error(_ name: String) -> WireError? {
            guard let v = vectors.first(where: { $0.name == name }),
                  case .failure(let e) = MotionLinkV1.decodeResult(v.bytes) else { return nil }
            return e
        }
        #expect(error("frame-nan")?.offset == 12)
        #expect(error("frame-corrupt")?.offset == 32)
        #expect(error("frame-short")?.offset == 35)
        #expect(error("ack-out-of-range")?.offset == 8)
    }

    @Test func thresholdVectorsFollowTheStrictRule() throws {
        let vectors = try SpecVector.all()
        var tracker = GestureTracker<Int>()
        let zero = try MotionFrame.decodeArray(vectors.first { $0.name == "frame-zero" }!.bytes)
        let trigger = try MotionFrame.decodeArray(vectors.first { $0.name == "frame-trigger" }!.bytes)
        let threshold = try MotionFrame.decodeArray(vectors.first { $0.name == "frame-threshold" }!.bytes)
        #expect(tracker.accept(zero, from: 1) == .accepted)
        #expect(tracker.accept(threshold, from: 2) == .accepted)  // ay == 0.5 is not > 0.5
        #expect(tracker.accept(trigger, from: 3) == .trigger)
    }
}

extension MotionLinkV1.Message {
    var isFrame: Bool { if case .frame = self { return true } else { return false } }
}

extension MotionFrame {
    static func decodeArray(_ bytes: [UInt8]) throws -> MotionFrame {
        try bytes.withUnsafeBytes { raw in try MotionFrame.decode(raw) }
    }
}
