import Testing
import KinetraceJSON
import KinetraceTestSupport
import KinetraceWire

/// Every seed and every saved crash of the wire-layer fuzz targets (Fuzz/),
/// through the same calls the targets make, with the outcome each file's name
/// promises (`FuzzInput`): this keeps fixed crashes fixed without the fuzz
/// build, and the corpus from going stale.
@Suite struct FuzzCorpusTests {
    /// The outcome of one input: a value, or the code of the error.
    static func check(_ input: FuzzInput, _ outcome: Result<Void, WireError>) {
        switch (input.expectation, outcome) {
        case (.value, .failure(let error)): Issue.record("\(input): expected a value, got \(error)")
        case (.error(let code), .success): Issue.record("\(input): expected \(code), got a value")
        case (.error(let code), .failure(let error)): #expect(error.code.name == code, "\(input)")
        default: break
        }
    }

    @Test func motionLink() throws {
        let inputs = try FuzzInput.all("motionlink")
        #expect(inputs.count >= 10)
        for input in inputs where !input.bytes.isEmpty {
            var bytes = Array(input.bytes.dropFirst())
            if input.bytes[0] & 1 == 1, bytes.count == MotionFrame.size || bytes.count == HapticAck.size {
                let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<bytes.count - 4])) }
                for i in 0..<4 { bytes[bytes.count - 4 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
            }
            do throws(WireError) {
                let message = try MotionLinkV1.decode(bytes)
                #expect(MotionLinkV1.encode(message) == bytes, "\(input): decode→encode changed the bytes")
                Self.check(input, .success(()))
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count, "\(input)")
                Self.check(input, .failure(error))
            }
        }
    }

    @Test func keepCalm() throws {
        let inputs = try FuzzInput.all("keepcalm")
        #expect(inputs.count >= 10)
        for input in inputs {
            do throws(WireError) {
                let motion = try KeepCalmJSON.decode(input.bytes)
                #expect(try KeepCalmJSON.decode(motion.encoded()) == motion, "\(input): encode→decode changed the message")
                if case .failure(let error) = JSONValue.parse(input.bytes) { Issue.record("\(input): not JSON to the value parser: \(error)") }
                Self.check(input, .success(()))
            } catch {
                #expect(error.offset >= 0 && error.offset <= input.bytes.count, "\(input)")
                Self.check(input, .failure(error))
            }
        }
    }

    @Test func stdioRecords() throws {
        let inputs = try FuzzInput.all("stdio")
        #expect(inputs.count >= 3)
        for input in inputs where !input.bytes.isEmpty {
            let bytes = Array(input.bytes.dropFirst())
            var decoder = StdioRecordDecoder()
            decoder.append(bytes)
            var records: [StdioRecord] = []
            var outcome: Result<Void, WireError> = .success(())
            do throws(WireError) {
                while let record = try decoder.next() {
                    records.append(record)
                    if record.kind == .observation {
                        let observation = try Observation.decode(record.payload)
                        #expect(try Observation.decode(observation.encoded()) == observation, "\(input)")
                    }
                }
                if decoder.pendingBytes > 0 { outcome = .failure(WireError(.invalidLength, offset: decoder.offset, expected: "a whole record")) }
            } catch {
                outcome = .failure(error)
            }
            #expect(records.flatMap { $0.encoded() } == Array(bytes.prefix(decoder.offset)), "\(input): records do not re-encode to their bytes")
            if input.expectation == .value { #expect(!records.isEmpty, "\(input)") }
            Self.check(input, outcome)
        }
    }

    @Test func attitudeStream() throws {
        let inputs = try FuzzInput.all("attitude")
        #expect(inputs.count >= 5)
        for input in inputs where !input.bytes.isEmpty {
            var framer = AttitudeStream.makeFramer()
            framer.append(Array(input.bytes.dropFirst()))
            var messages: [FramedMessage] = []
            while let message = try framer.next() { messages.append(message) }
            if let tail = framer.finish() { messages.append(tail) }
            #expect(messages.flatMap(\.bytes) == Array(input.bytes.dropFirst()), "\(input): framing lost or changed bytes")
            // The first record that fails decides the file's outcome.
            var outcome: Result<Void, WireError> = .success(())
            for message in messages {
                do throws(WireError) {
                    let record = try AttitudeStream.decode(message.bytes)
                    #expect(record.encoded() == message.bytes, "\(input)")
                } catch {
                    outcome = .failure(error)
                    break
                }
            }
            if input.expectation == .value { #expect(!messages.isEmpty, "\(input)") }
            Self.check(input, outcome)
        }
    }
}
