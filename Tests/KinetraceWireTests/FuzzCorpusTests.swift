import Foundation
import Testing
import KinetraceJSON
import KinetraceTestSupport
import KinetraceWebSocket
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

/// The declaration targets' seeds and saved crashes (Fuzz/declaration.swift, Fuzz/declared.swift).
@Suite struct DeclarationFuzzCorpusTests {
    static func read(_ path: String) throws -> DeclaredProtocol {
        let url = Fixture.packageRoot.appendingPathComponent(path)
        return try DeclaredProtocol.read(Array(try Data(contentsOf: url)), path: path)
    }

    @Test func declarations() throws {
        let inputs = try FuzzInput.all("declaration")
        #expect(inputs.count >= 8)
        for input in inputs {
            do throws(DeclarationError) {
                let declared = try DeclaredProtocol.read(input.bytes, path: "fuzz.json")
                if case .error = input.expectation { Issue.record("\(input): expected a refusal, it reads") }
                // What the target does with an accepted declaration: nothing here may trap.
                _ = declared.sample(MotionReading(userAcceleration: .zero, rotationRate: .zero, gravity: .zero, attitude: .zero), timeMs: 1)
                _ = declared.reply(to: HostDecision(name: "jump", sampleTimeMs: 1, owesReply: true))
                let again = try ProtocolDeclaration.read(Array(declared.declared.canonicalText.utf8), source: "canonical")
                #expect(again.digest == declared.declared.digest, "\(input)")
            } catch {
                if input.expectation == .value { Issue.record("\(input): expected to read: \(error)") }
                #expect(!error.description.contains("\n"), "\(input): \(error.description)")
            }
        }
    }

    /// Byte 0 picks the declaration as the target does: the three seeds, then Fuzz/declarations.
    @Test func declaredMessages() throws {
        let protocols = try ["specs/protocols/motionlink-v1.json", "specs/protocols/keepcalm-json.json", "specs/protocols/attitude-stream.json",
                             "Fuzz/declarations/osc-udp.json", "Fuzz/declarations/ndjson-tcp.json", "Fuzz/declarations/length-prefix-tcp.json"].map(Self.read)
        let inputs = try FuzzInput.all("declared")
        #expect(inputs.count >= 8)
        for input in inputs where !input.bytes.isEmpty {
            let wire = protocols[Int(input.bytes[0] & 7) % 6]
            let bytes = Array(input.bytes.dropFirst())
            // A byte stream is framed first, as the target does; every record keeps the invariant
            // the target checks first: facts and decode agree on validity.
            var records: [[UInt8]] = []
            if wire.transport == .byteStream {
                var framer = wire.makeFramer()
                framer.append(bytes)
                while let record = try? framer.next() { records.append(record.bytes) }
                if let tail = framer.finish() { records.append(tail.bytes) }
            } else {
                records = [bytes]
            }
            for record in records {
                let facts = wire.facts(record)
                #expect(facts.isValid == ((try? wire.decodeResult(record).get()) != nil), "\(input): facts \(facts)")
            }
            _ = wire.sample(MotionReading(userAcceleration: Vector3(1e38, -1e38, 0), rotationRate: .zero,
                                          gravity: Vector3(8.5e37, 0, 0), attitude: .zero), timeMs: 1)
            // A named outcome is checked where the target checks it plainly: one datagram, checks as sent (bit 3 clear).
            guard wire.transport == .datagram, input.bytes[0] & 8 == 0 else { continue }
            let facts = wire.facts(bytes)
            switch input.expectation {
            case .value: #expect(facts.isValid, "\(input): \(facts)")
            case .error(let code): #expect(facts.error?.code.name == code, "\(input): \(facts)")
            case .invariantsOnly: break
            }
        }
    }
}

/// The websocket target's seeds and saved crashes (Fuzz/websocket.swift): byte 0 the cut between
/// two appends, byte 1 the configuration, the rest the stream. The named outcome is that of the
/// sender bit 0 names (after the HTTP head when bit 1 is set): the reader's first error, else the
/// assembler's; `ok-` inputs read at least one frame without an error.
@Suite struct WebSocketFuzzCorpusTests {
    @Test func webSocketStreams() throws {
        let inputs = try FuzzInput.all("websocket")
        #expect(inputs.count >= 20)
        for input in inputs where input.bytes.count >= 2 {
            let config = input.bytes[1]
            let sender: WebSocketFrameReader.Sender = config & 1 == 0 ? .client : .server
            let maximumPayloadBytes = [125, 256, 1024, Int.max][Int(config >> 2 & 3)]
            let maximumFragments = [1, 2, 4, 64][Int(config >> 4 & 3)]
            let maximumMessageBytes = [16, 256, 4096, Int.max][Int(config >> 6 & 3)]
            var stream = Array(input.bytes.dropFirst(2))
            var outcome: Result<Int, WebSocketError> = .success(0)  // the number of frames

            // The head, as the target reads it (limit 1,024): an error lies at a line's start.
            var head: (head: HTTPHead, length: Int)?
            do throws(WebSocketError) {
                head = try HTTPHead.read(stream[...], maximumBytes: 1024)
                if let head { #expect(head.head.request != nil || head.head.status.map { (100...999).contains($0) } == true, "\(input)") }
            } catch {
                #expect(error.offset >= 0 && error.offset <= stream.count, "\(input)")
                if error.offset > 0 { #expect(stream[error.offset - 1] == 10, "\(input): head error at \(error.offset)") }
                if config & 2 != 0 { outcome = .failure(error) }
            }
            if config & 2 != 0, case .success = outcome {
                guard let head else {
                    if input.expectation != .invariantsOnly { Issue.record("\(input): no whole head") }
                    continue
                }
                stream.removeFirst(head.length)
            }

            if case .success = outcome {
                var reader = WebSocketFrameReader(sender: sender, maximumPayloadBytes: maximumPayloadBytes)
                var assembler = WebSocketMessageAssembler(maximumMessageBytes: maximumMessageBytes, maximumFragments: maximumFragments)
                // Two appends, cut where byte 0 says, as the target does.
                let cut = stream.count * Int(input.bytes[0]) / 255
                var frames = 0
                reading: for piece in [stream[..<cut], stream[cut...]] {
                    reader.append(piece)
                    do throws(WebSocketError) {
                        while true {
                            let offset = reader.offset
                            guard let frame = try reader.next() else { break }
                            var again = WebSocketFrameReader(sender: sender, maximumPayloadBytes: maximumPayloadBytes)
                            again.append(frame.encoded())
                            #expect(try again.next() == frame, "\(input): the frame at \(offset) re-encoded reads back otherwise")
                            frames += 1
                            _ = try assembler.take(frame, offset: offset)
                        }
                        #expect(reader.pendingBytes - 14 <= maximumPayloadBytes, "\(input)")
                        outcome = .success(frames)
                    } catch {
                        #expect(error.offset >= 0 && error.offset <= stream.count, "\(input)")
                        outcome = .failure(error)
                        break reading
                    }
                }
            }

            switch (input.expectation, outcome) {
            case (.value, .success(let frames)): #expect(frames > 0, "\(input): no frame")
            case (.value, .failure(let error)): Issue.record("\(input): expected frames, got \(error.code) at \(error.offset)")
            case (.error(let code), .success): Issue.record("\(input): expected \(code), read without an error")
            case (.error(let code), .failure(let error)): #expect(error.code.name == code, "\(input): \(error)")
            case (.invariantsOnly, _): break
            }
        }
    }
}
