import Foundation
import KinetraceHash
import Testing

/// SHA-1 against FIPS 180-2's examples (RFC 3174's test cases) and Python's hashlib.
struct SHA1Tests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func theStandardsExamples() {
        #expect(Self.hex(SHA1.digest(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Self.hex(SHA1.digest([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Self.hex(SHA1.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(Self.hex(SHA1.digest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    /// Every length from 0 to 200 (each padding case), against hashlib.
    @Test func everyPaddingCaseAgreesWithHashlib() throws {
        let inputs = (0...200).map { n in (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) } }
        let script = "import hashlib,sys\nfor line in sys.stdin: print(hashlib.sha1(bytes.fromhex(line.strip())).hexdigest())"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(inputs.map { Self.hex($0) }.joined(separator: "\n").utf8 + [10]))
        try input.fileHandleForWriting.close()
        let answers = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map(String.init)
        process.waitUntilExit()
        #expect(answers.count == inputs.count)
        for (bytes, expected) in zip(inputs, answers) { #expect(Self.hex(SHA1.digest(bytes)) == expected, "\(bytes.count) bytes") }
    }
}
