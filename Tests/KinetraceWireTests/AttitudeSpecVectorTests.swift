import Testing
import KinetraceWire

@Suite struct AttitudeSpecVectorTests {
    struct Vector: CustomTestStringConvertible, Sendable {
        var name: String
        var expect: String
        var bytes: [UInt8]
        var testDescription: String { name }
    }

    static func vectors() throws -> [Vector] {
        try SpecBlocks.read("specs/attitude-stream.md", marker: "vector", fence: "hex").map { block in
            Vector(name: block.attributes["name"] ?? "?", expect: block.attributes["expect"] ?? "?",
                   bytes: try Hex.decode(block.lines.joined()).get())
        }
    }

    @Test func theSpecHoldsTheRequiredVectors() throws {
        #expect(Set(try Self.vectors().map(\.name)).isSuperset(of: ["level", "tilt", "limits", "roll-past-pi", "pitch-range", "roll-nan", "short"]))
    }

    @Test(arguments: try vectors())
    func codecAgreesWithVector(_ vector: Vector) {
        switch (vector.expect, AttitudeStream.decodeResult(vector.bytes)) {
        case ("valid", .success(let record)):
            #expect(AttitudeStream.encode(record) == vector.bytes)
            var model = AttitudeStream.makeHostModel(rule: .default)
            let decision = model.accept(AttitudeStream.facts(vector.bytes), from: 0, receivedNs: 0).decision
            #expect(decision?.name.description == "attitude")
            #expect(decision?.values == [Double(record.roll), Double(record.pitch), Double(record.yaw)])
        case (let reason, .failure(let error)):
            #expect(error.code.name == reason)
            var model = AttitudeStream.makeHostModel(rule: .default)
            #expect(model.accept(AttitudeStream.facts(vector.bytes), from: 0, receivedNs: 0) == .dropped(reason: reason))
        case (_, let result):
            Issue.record("\(vector.name): expected \(vector.expect), got \(result)")
        }
    }

    /// The stream vector: whatever the reads, the framer finds exactly the listed records.
    @Test func streamVectorFramesToItsRecords() throws {
        let streams = try SpecBlocks.read("specs/attitude-stream.md", marker: "stream", fence: "hex")
        let records = try SpecBlocks.read("specs/attitude-stream.md", marker: "records", fence: "hex")
        try #require(streams.count == 1 && records.count == 1)
        let stream = try Hex.decode(streams[0].lines.joined()).get()
        let expected = try records[0].lines.map { try Hex.decode($0).get() }
        let reads = streams[0].attributes["reads"]!.split(separator: ",").map { Int($0)! }
        #expect(reads.reduce(0, +) == stream.count)
        var framer = AttitudeStream.makeFramer()
        var found: [[UInt8]] = []
        var at = 0
        for size in reads {
            framer.append(Array(stream[at..<at + size]))
            at += size
            while let message = try framer.next() { found.append(message.bytes) }
        }
        #expect(found == expected)
        #expect(framer.finish() == nil)
    }
}
