import KinetraceSupport
import KinetraceTestSupport
import PropertyBased
import Testing
import KinetraceWire

@Suite struct AttitudeCodecTests {
    @Test func anyBitsRoundTripOrFailOnTheFirstBadField() async {
        await seededPropertyCheck(count: 3000, input: Gen.uint32().array(of: 3)) { bits in
            let record = AttitudeRecord(roll: Float32(bitPattern: bits[0]), pitch: Float32(bitPattern: bits[1]), yaw: Float32(bitPattern: bits[2]))
            let bytes = record.encoded()
            let values = [record.roll, record.pitch, record.yaw]
            let limits: [Float32] = [Float32(Double.pi), Float32(Double.pi / 2), Float32(Double.pi)]
            let firstBad = (0..<3).first { !values[$0].isFinite || abs(values[$0]) > limits[$0] }
            switch AttitudeStream.decodeResult(bytes) {
            case .success(let decoded):
                #expect(firstBad == nil)
                #expect(decoded.encoded() == bytes)
            case .failure(let error):
                let bad = try #require(firstBad)
                #expect(error.offset == 4 * bad)
                #expect(error.code == (values[bad].isFinite ? .outOfRange : .nonFinite))
            }
        }
    }

    @Test func recordsSurviveAnyReadBoundaries() throws {
        var generator = SeededGenerator(seed: 7)
        let records = (0..<40).map { _ in
            AttitudeRecord(roll: .random(in: -3...3, using: &generator), pitch: .random(in: -1.5...1.5, using: &generator),
                           yaw: .random(in: -3...3, using: &generator))
        }
        let stream = records.flatMap { $0.encoded() }
        func frame(_ reads: [Int]) throws -> [AttitudeRecord] {
            var framer = AttitudeStream.makeFramer()
            var out: [AttitudeRecord] = []
            var at = 0
            for size in reads {
                framer.append(Array(stream[at..<min(stream.count, at + size)]))
                at += size
                while let message = try framer.next() { out.append(try AttitudeStream.decode(message.bytes)) }
            }
            #expect(framer.finish() == nil)
            return out
        }
        // Split inside the first record at every offset, then the rest in one write.
        for split in 1...11 { #expect(try frame([split, stream.count - split]) == records, "split at \(split)") }
        #expect(try frame([stream.count]) == records, "all coalesced")
        #expect(try frame(Array(repeating: 1, count: stream.count)) == records, "byte at a time")
        var sizes: [Int] = []
        var left = stream.count
        while left > 0 { let n = Int.random(in: 1...50, using: &generator); sizes.append(n); left -= n }
        #expect(try frame(sizes) == records, "random reads \(sizes)")
    }

    @Test func aStreamEndingInsideARecordLeavesItsBytes() throws {
        var framer = AttitudeStream.makeFramer()
        framer.append(AttitudeRecord(roll: 0, pitch: 0, yaw: 0).encoded() + [1, 2, 3, 4, 5])
        #expect(try framer.next()?.bytes.count == 12)
        #expect(try framer.next() == nil)
        #expect(framer.finish() == FramedMessage(bytes: [1, 2, 3, 4, 5], offset: 12))
    }

    @Test func invalidRecordsAreNotAppliedAndLaterOnesAre() {
        var model = AttitudeStream.makeHostModel(rule: .default)
        let nan = AttitudeRecord(roll: .nan, pitch: 0, yaw: 0).encoded()
        let good = AttitudeRecord(roll: 0.25, pitch: -0.5, yaw: 1).encoded()
        #expect(model.accept(AttitudeStream.facts(nan), from: 0, receivedNs: 0) == .dropped(reason: "non_finite"))
        #expect(model.accept(AttitudeStream.facts(good), from: 0, receivedNs: 1).decision?.values == [0.25, -0.5, 1])
        #expect(model.controllerCount == 1)
        var gap = AttitudeStream.facts(good)
        gap = MessageFacts(invalid: WireError(.streamGap, offset: 24, expected: "the bytes before"))
        #expect(model.accept(gap, from: 3, receivedNs: 2) == .dropped(reason: "stream_gap"))
        #expect(model.controllerCount == 2)
    }

    @Test func samplesCarryTheReadingsAttitude() throws {
        let bytes = try #require(AttitudeStream.sample(MotionReading(attitude: Vector3(0.5, -0.25, 3)), timeMs: 0))
        #expect(try AttitudeStream.decode(bytes) == AttitudeRecord(roll: 0.5, pitch: -0.25, yaw: 3))
        #expect(AttitudeStream.sample(MotionReading(), timeMs: 0) == [UInt8](repeating: 0, count: 12))
    }
}
