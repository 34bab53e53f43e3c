import KinetraceTestSupport
import PropertyBased
import Testing
@testable import KinetraceWire

@Suite struct CodecTests {
    static let specials: [Float32] = [
        .nan, -.nan, .signalingNaN, .infinity, -.infinity, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
        .leastNormalMagnitude, Float32(bitPattern: 0x007F_FFFF), .greatestFiniteMagnitude,
        -.greatestFiniteMagnitude, 0, -0.0, 0.5, Float32(0.5).nextUp,
    ]

    /// A float from a selector and random bits: 30% a special value (NaN,
    /// ±inf, subnormals, extremes), 30% any bit pattern, 40% a plausible IMU value.
    static func float(_ selector: Int, _ bits: UInt32) -> Float32 {
        switch selector {
        case 0..<3: return specials[Int(bits % UInt32(specials.count))]
        case 3..<6: return Float32(bitPattern: bits)
        default: return Float32(Int32(bitPattern: bits)) / Float32(Int32.max) * 4
        }
    }

    static func frame(_ t: UInt64, _ bits: [UInt32], _ selectors: [Int]) -> MotionFrame {
        let v = (0..<6).map { float(selectors[$0], bits[$0]) }
        return MotionFrame(tMs: t, ax: v[0], ay: v[1], az: v[2], wx: v[3], wy: v[4], wz: v[5])
    }

    @Test func framesRoundTripBitForBitOrFailOnTheFirstNonFiniteField() async {
        await seededPropertyCheck(count: 2000, input: Gen.uint64(), Gen.uint32().array(of: 6), Gen.int(in: 0...9).array(of: 6)) { t, bits, selectors in
            let frame = Self.frame(t, bits, selectors)
            let bytes = frame.encoded()
            #expect(bytes.count == 36)
            switch MotionLinkV1.decodeResult(bytes) {
            case .success(.frame(let decoded)):
                #expect(frame.firstNonFiniteField == nil)
                #expect(decoded.tMs == frame.tMs)
                #expect(decoded.values.map(\.bitPattern) == frame.values.map(\.bitPattern))
                #expect(decoded.encoded() == bytes)
            case .failure(let error):
                let field = frame.firstNonFiniteField
                #expect(field != nil)
                #expect(error.code == .nonFinite)
                #expect(error.offset == 8 + 4 * (field ?? 0))
            case .success(.ack):
                Issue.record("a 36-byte message decoded as an ack")
            }
        }
    }

    @Test func subnormalsAreValid() throws {
        let frame = MotionFrame(tMs: 1, ax: .leastNonzeroMagnitude, ay: Float32(bitPattern: 0x007F_FFFF), az: -.leastNonzeroMagnitude)
        #expect(try MotionLinkV1.decode(frame.encoded()) == .frame(frame))
    }

    @Test func acksRoundTripWhenInRange() async {
        await seededPropertyCheck(count: 1000, input: Gen.uint64(), Gen.uint32().array(of: 2), Gen.int(in: 0...9).array(of: 2)) { echo, bits, selectors in
            let intensity = Self.float(selectors[0], bits[0]) / (selectors[0] >= 6 ? 4 : 1)
            let sharpness = abs(Self.float(selectors[1], bits[1]))
            let ack = HapticAck(echoTMs: echo, intensity: intensity, sharpness: sharpness)
            let inRange = [intensity, sharpness].allSatisfy { $0.isFinite && $0 >= 0 && $0 <= 1 }
            switch MotionLinkV1.decodeResult(ack.encoded()) {
            case .success(.ack(let decoded)):
                #expect(inRange)
                #expect(decoded.echoTMs == echo)
                #expect(decoded.intensity.bitPattern == intensity.bitPattern)
            case .failure(let error):
                #expect(!inRange)
                #expect([WireError.Code.nonFinite, .outOfRange].contains(error.code))
            case .success(.frame):
                Issue.record("a 20-byte message decoded as a frame")
            }
        }
    }

    @Test func everyOtherLengthUpTo100IsRejected() {
        let source = MotionFrame(tMs: 7, ay: 0.9).encoded() + [UInt8](repeating: 0xAB, count: 70)
        for length in 0...100 where length != 36 && length != 20 {
            let result = MotionLinkV1.decodeResult(Array(source.prefix(length)))
            guard case .failure(let error) = result else {
                Issue.record("length \(length) was accepted")
                continue
            }
            #expect(error.code == .invalidLength, "length \(length)")
            #expect(error.offset == length)
        }
    }

    @Test func everySingleBitFlipOfAFrameIsRejected() {
        let valid = MotionFrame(tMs: 1_700_000_000_000, ax: 0.1, ay: 0.75, az: -0.2, wx: 1, wy: -1, wz: 0.5).encoded()
        for bit in 0..<(36 * 8) {
            var flipped = valid
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            guard case .failure(let error) = MotionLinkV1.decodeResult(flipped) else {
                Issue.record("bit \(bit) flip was accepted")
                continue
            }
            #expect(error.code == .checksumMismatch, "bit \(bit)")
        }
    }

    @Test func everySingleBitFlipOfAnAckIsRejected() {
        let valid = HapticAck(echoTMs: 1_700_000_000_000).encoded()
        for bit in 0..<(20 * 8) {
            var flipped = valid
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            guard case .failure(let error) = MotionLinkV1.decodeResult(flipped) else {
                Issue.record("bit \(bit) flip was accepted")
                continue
            }
            #expect(error.code == .checksumMismatch, "bit \(bit)")
        }
    }

    @Test func byteReaderGetLeavesTheIndexAndReadAdvancesIt() {
        let bytes: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3F]
        bytes.withUnsafeBytes { raw in
            var reader = ByteReader(raw)
            #expect(reader.getInteger(at: 0, as: UInt64.self) == 1)
            #expect(reader.readerIndex == 0)
            #expect(reader.readInteger(as: UInt64.self) == 1)
            #expect(reader.readerIndex == 8)
            #expect(reader.readFloat32() == 1.0)
            #expect(reader.readableBytes == 0)
            // Short input: nil, and the index stays put.
            #expect(reader.readInteger(as: UInt8.self) == nil)
            #expect(reader.getInteger(at: 5, as: UInt64.self) == nil)
            #expect(reader.getInteger(at: -1, as: UInt8.self) == nil)
            #expect(reader.getBytes(at: 10, length: 3) == nil)
            #expect(reader.readerIndex == 12)
        }
    }

    @Test func errorsDescribeThemselvesOnOneLine() {
        let error = WireError(.checksumMismatch, offset: 32, expected: "CRC-32 of bytes 0..<32")
        #expect(error.description == "crc_mismatch at byte 32: expected CRC-32 of bytes 0..<32")
        #expect(!error.description.contains("\n"))
    }

    @Test func hexRoundTripsAndRejectsJunk() {
        #expect(Hex.encode([0x00, 0xAB, 0xFF]) == "00abff")
        #expect(Hex.decode("00AB ff") == .success([0x00, 0xAB, 0xFF]))
        #expect(Hex.decode("0g") == .failure(HexError(index: 1)))
        #expect(Hex.decode("abc") == .failure(HexError(index: 3)))
    }
}
