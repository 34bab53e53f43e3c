import KinetraceTestSupport
import PropertyBased
import Testing
import KinetraceWire

@Suite struct KeepCalmCodecTests {
    static let canonical = Array(#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":0.75,"z":-0.5}}"#.utf8)

    @Test func finiteValuesRoundTripExactly() async {
        await seededPropertyCheck(count: 2000, input: Gen.uint64().array(of: 2), Gen.double(in: -100...100).array(of: 3)) { id, v in
            let message = KeepCalmMotion(id: MessageID(high: id[0], low: id[1]), x: v[0], y: v[1], z: v[2])
            let decoded = try KeepCalmJSON.decode(KeepCalmJSON.encode(message))
            #expect(decoded == message)
            #expect(decoded.x.bitPattern == v[0].bitPattern && decoded.y.bitPattern == v[1].bitPattern && decoded.z.bitPattern == v[2].bitPattern)
        }
    }

    @Test func anyMemberOrderDecodesToTheSameMessage() throws {
        let expected = try KeepCalmJSON.decode(Self.canonical)
        let members = [#""id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#, #""type":"Combined""#, #""x":0.125"#, #""y":0.75"#, #""z":-0.5"#]
        func permutations(_ items: [String]) -> [[String]] {
            items.count <= 1 ? [items] : items.indices.flatMap { i -> [[String]] in
                var rest = items
                let head = rest.remove(at: i)
                return permutations(rest).map { [head] + $0 }
            }
        }
        var count = 0
        for order in permutations(members) {
            let payload = "{" + order.joined(separator: ",") + "}"
            for text in [#"{"type":"MotionData","payload":"# + payload + "}", #"{"payload":"# + payload + #","type":"MotionData"}"#] {
                #expect(try KeepCalmJSON.decode(Array(text.utf8)) == expected, "\(text)")
                count += 1
            }
        }
        #expect(count == 240)
    }

    @Test func everyProperPrefixIsMalformedNotATrap() {
        for length in 1..<Self.canonical.count {
            let facts = KeepCalmJSON.facts(Array(Self.canonical[..<length]))
            #expect(facts.error?.code == .malformed, "prefix of \(length) bytes")
        }
    }

    @Test func sizesOutsideTheLimitsAreInvalidLength() {
        #expect(KeepCalmJSON.facts([UInt8]()).error?.code == .invalidLength)
        var padded = Array(Self.canonical.dropLast())
        padded += Array(#","pad":""#.utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 4096) + Array(#""}"#.utf8)
        #expect(padded.count > KeepCalmMotion.maximumSize)
        #expect(KeepCalmJSON.facts(padded).error?.code == .invalidLength)
        // Exactly at the limit, an unknown member makes no difference.
        var atLimit = Array(Self.canonical.dropLast()) + Array(#","pad":""#.utf8)
        atLimit += [UInt8](repeating: UInt8(ascii: "a"), count: KeepCalmMotion.maximumSize - atLimit.count - 2) + Array(#""}"#.utf8)
        #expect(atLimit.count == KeepCalmMotion.maximumSize)
        #expect(KeepCalmJSON.facts(atLimit).isValid)
    }

    @Test func hostileShapesAreRejectedWithTheirReason() {
        let deep = #"{"type":"MotionData","x":"# + String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000) + "}"
        let cases: [(String, WireError.Code)] = [
            (deep, .malformed),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":"Infinity","z":-0.5}}"#, .nonFinite),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":"0.75","z":-0.5}}"#, .malformed),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":1e400,"z":-0.5}}"#, .outOfRange),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":-100.000001,"z":-0.5}}"#, .outOfRange),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":true,"z":-0.5}}"#, .malformed),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8C36C495A93FC0C247A3E6E5F","type":"Combined","x":0.125,"y":0.75,"z":-0.5}}"#, .malformed),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Gyro","x":0.125,"y":0.75,"z":-0.5}}"#, .malformed),
            (#"{"type":"MotionData","payload":[1,2,3]}"#, .malformed),
            (#"{"type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":0.75,"z":-0.5}} x"#, .malformed),
            (#"{"type":"MotionData","type":"MotionData","payload":{"id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","type":"Combined","x":0.125,"y":0.75,"z":-0.5}}"#, .malformed),
            ("[]", .malformed),
            ("\u{FEFF}{}", .malformed),
        ]
        for (text, code) in cases {
            #expect(KeepCalmJSON.facts(Array(text.utf8)).error?.code == code, "\(text.prefix(120))")
        }
    }

    @Test func mutatedMessagesNeverTrapAndValidOnesReencode() async {
        await seededPropertyCheck(count: 3000, input: Gen.int(in: 0...(Self.canonical.count - 1)).array(of: 1...4), Gen.uint8().array(of: 4)) { positions, bytes in
            var message = Self.canonical
            for (i, position) in positions.enumerated() { message[position] = bytes[i % bytes.count] }
            if case .success(let decoded) = KeepCalmJSON.decodeResult(message) {
                #expect(KeepCalmJSON.decodeResult(KeepCalmJSON.encode(decoded)) == .success(decoded))
            }
        }
    }

    @Test func samplesAreDeterministicVersion4AndDistinct() throws {
        let reading = MotionReading(userAcceleration: Vector3(0.1, 0.6, 0), rotationRate: Vector3(0.01, 0.02, 0.03))
        let a = try #require(KeepCalmJSON.sample(reading, timeMs: 1000))
        #expect(KeepCalmJSON.sample(reading, timeMs: 1000) == a)
        let message = try KeepCalmJSON.decode(a)
        #expect(message.y == 0.6 + 0.02)
        let text = message.id.description
        #expect(Array(text)[14] == "4", "version 4: \(text)")
        #expect("89AB".contains(Array(text)[19]), "RFC 4122 variant: \(text)")
        var ids = Set<MessageID>()
        for t in 0..<10_000 { ids.insert(try KeepCalmJSON.decode(KeepCalmJSON.sample(reading, timeMs: UInt64(t))!).id) }
        #expect(ids.count == 10_000)
    }
}

@Suite struct KeepCalmHostModelTests {
    static func spike(_ y: Double) -> [UInt8] {
        KeepCalmMotion(id: MessageID(high: 1, low: 2), x: 0, y: y, z: 0).encoded()
    }

    static func decisions(_ arrivals: [(controller: Int, ms: Int64, y: Double)], rule: GestureRule = .default) -> [Bool] {
        var model = KeepCalmJSON.makeHostModel(rule: rule)
        return arrivals.map { model.accept(KeepCalmJSON.facts(spike($0.y)), from: $0.controller, receivedNs: $0.ms * 1_000_000).decision != nil }
    }

    @Test func theJumpLatchesForTheWindowOnTheHostClock() {
        // Spikes at 0, 100, 399.999 and 400 ms: only the first and the last jump.
        var model = KeepCalmJSON.makeHostModel(rule: .default)
        let at: [Int64] = [0, 100_000_000, 399_999_999, 400_000_000, 500_000_000, 800_000_000]
        let jumped = at.map { model.accept(KeepCalmJSON.facts(Self.spike(0.9)), from: 0, receivedNs: $0).decision != nil }
        #expect(jumped == [true, false, false, true, false, true])
    }

    @Test func theThresholdIsStrictAndCalmMessagesNeverJump() {
        #expect(Self.decisions([(0, 0, 0.5), (0, 1000, 0.5000001), (0, 2000, -3)]) == [false, true, false])
    }

    @Test func controllersLatchIndependently() {
        #expect(Self.decisions([(0, 0, 0.9), (1, 100, 0.9), (0, 200, 0.9), (2, 200, 0.9), (1, 500, 0.9)]) == [true, true, false, true, true])
    }

    @Test func invalidMessagesAreDroppedAndChangeNothing() {
        var model = KeepCalmJSON.makeHostModel(rule: .default)
        #expect(model.accept(KeepCalmJSON.facts(Array("nope".utf8)), from: 0, receivedNs: 0) == .dropped(reason: "malformed"))
        #expect(model.accept(KeepCalmJSON.facts(Self.spike(0.9)), from: 0, receivedNs: 1).decision != nil)
    }

    @Test func extremeWindowsAndClocksDoNotTrap() {
        #expect(Self.decisions([(0, 0, 0.9), (0, 1_000_000, 0.9)], rule: GestureRule(threshold: 0.5, refractoryMs: .max)) == [true, false])
        var model = KeepCalmJSON.makeHostModel(rule: .default)
        #expect(model.accept(KeepCalmJSON.facts(Self.spike(0.9)), from: 0, receivedNs: .max).decision != nil)
        #expect(model.accept(KeepCalmJSON.facts(Self.spike(0.9)), from: 0, receivedNs: .max).decision == nil)
        #expect(model.accept(KeepCalmJSON.facts(Self.spike(0.9)), from: 1, receivedNs: .min).decision != nil)
    }
}
