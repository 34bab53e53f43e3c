import Testing
@testable import KinetraceTrace

@Suite struct PayloadTests {
    @Test(arguments: [0, 1, 20, 36, 39, 40, 41, 64, 300])
    func behavesLikeAnArrayOnBothSidesOfTheInlineLimit(_ count: Int) throws {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let payload = Payload(bytes)
        #expect(payload.count == count)
        #expect(payload == bytes)
        #expect(Array(payload) == bytes)
        #expect(payload.bytes == bytes)
        #expect(payload.withUnsafeBytes { Array($0) } == bytes)
        for i in 0..<count { #expect(payload[i] == bytes[i]) }
        let copied = bytes.withUnsafeBytes { Payload(copying: $0) }
        #expect(copied == payload)
        #expect(copied.hashValue == payload.hashValue)
        #expect(payload.description == bytes.description)
        if count > 0 {
            var other = bytes
            other[count - 1] ^= 1
            #expect(Payload(other) != payload)
            #expect(payload != other)
        }
        #expect(Payload(bytes + [0]) != payload)  // a trailing zero is a different payload
    }

    struct Stop: Error, Equatable { var at: Int }

    @Test func initializerPassesItsTypedErrorThrough() {
        for count in [8, 100] {
            #expect(throws: Stop(at: 3)) {
                _ = try Payload(count: count) { (raw: UnsafeMutableRawBufferPointer) throws(Stop) in
                    raw[0] = 1
                    throw Stop(at: 3)
                }
            }
            let made = try? Payload(count: count) { (raw: UnsafeMutableRawBufferPointer) throws(Stop) in
                for i in 0..<raw.count { raw[i] = UInt8(i & 0xFF) }
            }
            #expect(made?.bytes == (0..<count).map { UInt8($0 & 0xFF) })
        }
    }

    @Test func arrayLiteralsAndEmptiness() {
        let p: Payload = [1, 2, 3]
        #expect(p == [1, 2, 3])
        #expect(Payload().isEmpty)
        #expect(Payload() == [UInt8]())
    }
}
