import Foundation
import KinetracePcap
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

/// TCP reassembly of attitude-stream captures written packet by packet
/// (`TCPCaptureScript`): every test compares the exact records with what was
/// sent. Record values and segment sizes come from `SeededGenerator`s whose
/// seeds are in each test.
@Suite struct TCPReassemblyTests {
    typealias Script = TCPCaptureScript

    func path(_ dir: URL, _ name: String = "stream.pcap") -> String { dir.appendingPathComponent(name).path }

    /// Sends `stream` in random segments of up to `maximum` bytes (seeded); returns each segment's (offset, bytes, time).
    @discardableResult
    func send(_ stream: [UInt8], on c: Script.Connection, maximum: Int, seed: UInt64, from start: Int = 0,
              script: Script) -> [(offset: Int, bytes: [UInt8], timeNs: Int64)] {
        var rng = SeededGenerator(seed: seed)
        return randomSegments(stream, maximum: maximum, rng: &rng).map {
            (start + $0.offset, $0.bytes, script.data(c, at: start + $0.offset, $0.bytes))
        }
    }

    // MARK: Handshake, FIN, RST

    @Test func handshakeDataAndFin() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(40, seed: 1)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50001, isn: 1000)
        let script = Script()
        script.handshake(c)
        let segments = send(stream, on: c, maximum: 30, seed: 11, script: script)
        script.close(c, at: stream.count)
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.valid == records)
        #expect(read.flagged.isEmpty)
        #expect(read.unfinished.isEmpty)
        // One chunk per segment, with its bytes, offset order and capture time.
        #expect(read.chunks.map { Array($0.payload) } == segments.map(\.bytes))
        #expect(read.chunks.map(\.timeNs) == segments.map(\.timeNs))
        #expect(read.chunks.allSatisfy { $0.source == c.controller && $0.destination == c.host && $0.direction == .controllerToHost })
        #expect(read.events == [
            .start(source: c.controller, destination: c.host, handshake: true),
            .start(source: c.host, destination: c.controller, handshake: true),
            .end(source: c.controller, destination: c.host, how: .fin, offset: stream.count),
            .end(source: c.host, destination: c.controller, how: .fin, offset: 0),
        ])
        let counts = try #require(read.counts)
        #expect(counts.directions == 2 && counts.midStreamStarts == 0)
        #expect(counts.gaps == 0 && counts.missingBytes == 0 && counts.duplicateBytes == 0 && counts.outOfOrderSegments == 0)
        // Each message takes the time of the chunk that completed it.
        var completed = 0
        for message in read.messages {
            let end = 12 * (completed + 1)
            let segment = try #require(segments.first { $0.offset + $0.bytes.count >= end })
            #expect(message.timeNs == segment.timeNs)
            completed += 1
        }
    }

    @Test func resetEndsBothDirections() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(10, seed: 2)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v6(controllerPort: 50002, isn: 77)
        let script = Script()
        script.handshake(c)
        send(stream, on: c, maximum: 25, seed: 12, script: script)
        script.segment(c, toHost: false, sequence: c.hostISN &+ 1, flags: Script.rst | Script.ack)
        // Bytes the controller sent after the reset are not the stream's.
        script.data(c, at: stream.count, Array(repeating: 0x41, count: 10))
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.valid == records)
        #expect(read.flagged.isEmpty && read.unfinished.isEmpty)
        #expect(read.events.suffix(2) == [
            .end(source: c.host, destination: c.controller, how: .rst, offset: 0),
            .end(source: c.controller, destination: c.host, how: .rst, offset: stream.count),
        ])
        #expect(read.counts?.bytesAfterEnd == 10)
    }

    // MARK: Sequence numbers

    @Test(arguments: [UInt32.max - 200, UInt32.max, UInt32.max - 1])
    func sequenceNumbersWrap(isn: UInt32) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(60, seed: 3)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50003, isn: isn, hostISN: UInt32.max - 3)
        let script = Script()
        script.handshake(c)
        send(stream, on: c, maximum: 50, seed: 13, script: script)
        script.close(c, at: stream.count)
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.valid == records, "ISN \(isn)")
        #expect(read.flagged.isEmpty && read.unfinished.isEmpty)
        #expect(read.events.contains(.end(source: c.controller, destination: c.host, how: .fin, offset: stream.count)))
        #expect(read.counts?.gaps == 0 && read.counts?.duplicateBytes == 0)
    }

    // MARK: Retransmissions, overlaps, reordering

    /// Exact and overlapping copies, some with different bytes: the first copy captured wins.
    @Test func retransmittedAndOverlappingSegmentsAreDeliveredOnce() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(30, seed: 4)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50004, isn: 4_000_000)
        let script = Script()
        func slice(_ range: Range<Int>, corrupt: Bool = false) -> [UInt8] { stream[range].map { corrupt ? $0 ^ 0xFF : $0 } }
        script.handshake(c)
        script.data(c, at: 0, slice(0..<20))
        script.data(c, at: 20, slice(20..<50))
        script.data(c, at: 0, slice(0..<20))                      // retransmission: 20 duplicate bytes
        script.data(c, at: 10, slice(10..<30, corrupt: true))     // overlap, other bytes, all delivered: 20
        script.data(c, at: 43, slice(43..<60))                    // 7 old, 10 new
        script.data(c, at: 80, slice(80..<100))                   // out of order: waits
        script.data(c, at: 80, slice(80..<100, corrupt: true))    // a different copy of what waits: 20
        script.data(c, at: 90, slice(90..<110))                   // 10 waiting already, 10 new
        script.data(c, at: 60, slice(60..<80) + slice(80..<85, corrupt: true))  // fills the hole; 5 other bytes overlap what waits
        send(Array(stream[110...]), on: c, maximum: 40, seed: 14, from: 110, script: script)
        script.data(c, at: 300, slice(300..<360))                 // a late retransmission of the tail: 60
        script.close(c, at: stream.count)
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.chunks.flatMap { Array($0.payload) } == stream)
        let firstChunks: [[UInt8]] = read.chunks.prefix(6).map { Array($0.payload) }
        let cuts: [Range<Int>] = [0..<20, 20..<50, 50..<60, 60..<80, 80..<100, 100..<110]
        #expect(firstChunks == cuts.map { Array(stream[$0]) })
        #expect(read.valid == records)
        #expect(read.flagged.isEmpty && read.unfinished.isEmpty)
        let counts = try #require(read.counts)
        #expect(counts.duplicateBytes == 20 + 20 + 7 + 20 + 10 + 5 + 60)
        #expect(counts.outOfOrderSegments == 3)
        #expect(counts.gaps == 0)
    }

    @Test func outOfOrderSegmentsWaitForTheHole() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(50, seed: 5)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v6(controllerPort: 50005, isn: 123_456)
        var rng = SeededGenerator(seed: 15)
        var segments = randomSegments(stream, maximum: 40, rng: &rng)
        // Swap neighbours and move some segments three places later.
        var i = 0
        while i + 3 < segments.count {
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: segments.swapAt(i, i + 1)
            case 1: segments.insert(segments.remove(at: i), at: i + 3)
            default: break
            }
            i += 2
        }
        let script = Script()
        script.handshake(c)
        var times: [Int: Int64] = [:]
        var arrival: [Int64] = []
        for segment in segments {
            let t = script.data(c, at: segment.offset, segment.bytes)
            times[segment.offset] = t
            arrival.append(t)
        }
        script.close(c, at: stream.count)
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.valid == records)
        #expect(read.flagged.isEmpty && read.unfinished.isEmpty)
        // Still one chunk per segment, in stream order, each stamped when it became deliverable.
        let inOrder = segments.sorted { $0.offset < $1.offset }
        #expect(read.chunks.map { Array($0.payload) } == inOrder.map(\.bytes))
        var deliverable: Int64 = 0
        var expectedTimes: [Int64] = []
        for segment in inOrder {
            deliverable = max(deliverable, times[segment.offset]!)
            expectedTimes.append(deliverable)
        }
        #expect(read.chunks.map(\.timeNs) == expectedTimes)
        #expect((read.counts?.outOfOrderSegments ?? 0) > 0)
        #expect(read.counts?.duplicateBytes == 0 && read.counts?.gaps == 0)
    }

    // MARK: Capture starts mid-stream

    @Test func captureStartingMidStream() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(20, seed: 6)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50006, isn: 900_000)
        let script = Script()
        // The capture begins at record 5: no SYN, the host only ACKs.
        script.segment(c, toHost: false, sequence: c.hostISN &+ 1, flags: Script.ack)
        send(Array(stream[60...]), on: c, maximum: 30, seed: 16, from: 60, script: script)
        script.data(c, at: 48, Array(stream[48..<60]))  // a late retransmission from before the capture began
        script.segment(c, toHost: false, sequence: c.hostISN &+ 1, flags: Script.ack)
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.valid == Array(records[5...]))
        #expect(read.events == [
            .start(source: c.controller, destination: c.host, handshake: false),
            .end(source: c.controller, destination: c.host, how: .captureEnd, offset: stream.count - 60),
        ])
        let counts = try #require(read.counts)
        #expect(counts.midStreamStarts == 1 && counts.bytesBeforeStart == 12 && counts.segmentsIgnored == 0)
    }

    /// Begun inside a record, records are cut from the first byte seen: the event says the cut is a guess.
    @Test func midStreamCutsFromTheFirstByteSeen() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let stream = attitudeRecords(10, seed: 7).flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50007, isn: 5)
        let script = Script()
        send(Array(stream[30...]), on: c, maximum: 20, seed: 17, from: 30, script: script)
        script.write(to: path(dir))
        let read = try ReadBack(path: path(dir))
        let expected = stride(from: 30, to: 30 + (stream.count - 30) / 12 * 12, by: 12).map { Array(stream[$0..<$0 + 12]) }
        #expect(read.messages.map { Array($0.payload) } == expected)
        #expect(read.messages.allSatisfy { $0.framingError == nil })
        #expect(read.events.first == .start(source: c.controller, destination: c.host, handshake: false))
        #expect(read.unfinished.map(\.bytes) == [(stream.count - 30) % 12])
    }

    // MARK: Missing bytes

    @Test func missingBytesFlagExactlyTheUnrecoverableRecords() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(20, seed: 8)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50008, isn: 31_337)
        let script = Script()
        script.handshake(c)
        script.data(c, at: 0, Array(stream[0..<30]))
        script.data(c, at: 30, Array(stream[30..<50]))
        // [50, 80) never captured.
        let afterGap = script.data(c, at: 80, Array(stream[80..<100]))
        send(Array(stream[100...]), on: c, maximum: 20, seed: 18, from: 100, script: script)
        script.close(c, at: stream.count)
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        // Records 0–3 are whole before the gap; record 4's first 2 bytes are cut short by it.
        #expect(read.valid == Array(records[0..<4]))
        let flagged = read.flagged
        #expect(flagged.count == 1 + 13)
        #expect(flagged.allSatisfy { $0.framingError?.code == .streamGap })
        #expect(flagged.allSatisfy { !$0.facts(AttitudeStream()).isValid })
        #expect(Array(flagged[0].payload) == Array(stream[48..<50]))
        #expect(flagged[0].framingError?.offset == 48)
        // After the gap, records are cut from its end: 160 bytes, 13 records and 4 left over.
        #expect(flagged.dropFirst().map { Array($0.payload) } == (0..<13).map { Array(stream[80 + 12 * $0..<92 + 12 * $0]) })
        #expect(flagged.dropFirst().map { $0.framingError!.offset } == (0..<13).map { 80 + 12 * $0 })
        #expect(read.messages.count == 4 + 1 + 13, "every record reaches the engines, valid or not")
        #expect(read.unfinished == [FramingRecordSource.Unfinished(source: c.controller, destination: c.host, offset: 236, bytes: 4)])
        #expect(read.events.contains(.gap(source: c.controller, destination: c.host, offset: 50, missingBytes: 30)))
        #expect(read.events.last == .end(source: c.controller, destination: c.host, how: .fin, offset: 240))
        // The chunk after the gap is the one that followed it on the wire, delivered at the end of the capture.
        let gapChunk = try #require(read.chunks.first { Array($0.payload) == Array(stream[80..<100]) })
        #expect(gapChunk.timeNs >= afterGap)
        let counts = try #require(read.counts)
        #expect(counts.gaps == 1 && counts.missingBytes == 30)

        // Converted to a trace (chunks and events, as `convert` writes them) and framed again: the same records, flagged the same.
        let trace = dir.appendingPathComponent("gap.jsonl").path
        let raw = try PcapTraceReader(path: path(dir), wireProtocol: AttitudeStream())
        let writer = try TraceWriter(path: trace, header: raw.header)
        while let record = try raw.next() { try writer.write(record) }
        try writer.close()
        let framed = try TraceInput.open(path: trace)
        var again: [MessageRecord] = []
        while let record = try framed.next() { if case .message(let m) = record { again.append(m) } }
        #expect(again == read.messages)
        #expect((framed as? FramingRecordSource)?.unfinished == read.unfinished)
    }

    /// A hand-edited trace whose stream event lost its data stops framing with an error, after the records before it.
    @Test func aMalformedStreamEventInATraceIsAnError() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let trace = dir.appendingPathComponent("bad.jsonl").path
        let header = TraceHeader(created: "2026-11-23T08:00:00.000Z", tool: "tests", protocolID: AttitudeStream.id, capturePoint: .network, clock: .pcap)
        let writer = try TraceWriter(path: trace, header: header)
        let controller = Endpoint(host: "10.0.0.11", port: 50019), host = Endpoint(host: "10.0.0.1", port: 47130)
        let record = attitudeRecords(1, seed: 70)[0]
        try writer.write(.message(MessageRecord(timeNs: 1, direction: .controllerToHost, source: controller, destination: host, payload: record)))
        try writer.write(.event(EventRecord(timeNs: 2, event: "stream_gap", data: ["source": .string(controller.description)])))
        try writer.write(.event(EventRecord(timeNs: 3, event: "stream_other", data: [:])))
        try writer.close()
        let framed = try TraceInput.open(path: trace)
        guard case .message(let first)? = try framed.next() else {
            Issue.record("the record before the bad event is not given")
            return
        }
        #expect(Array(first.payload) == record)
        #expect(throws: TraceError.self) { try framed.next() }
    }

    /// Offsets and counts that would overflow the framer's arithmetic are malformed events, not traps.
    @Test func aStreamGapBeyondAnyRealStreamIsAnError() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let controller = Endpoint(host: "10.0.0.11", port: 50019), host = Endpoint(host: "10.0.0.1", port: 47130)
        for (offset, missing) in [(Int64.max, Int64.max), (0, Int64.max), (Int64.max, 1), (StreamEvent.maximumOffset + 1, 1)] {
            let trace = dir.appendingPathComponent("gap-\(offset)-\(missing).jsonl").path
            let header = TraceHeader(created: "2026-11-23T08:00:00.000Z", tool: "tests", protocolID: AttitudeStream.id, capturePoint: .network, clock: .pcap)
            let writer = try TraceWriter(path: trace, header: header)
            try writer.write(.message(MessageRecord(timeNs: 1, direction: .controllerToHost, source: controller, destination: host,
                                                    payload: attitudeRecords(1, seed: 71)[0])))
            try writer.write(.event(EventRecord(timeNs: 2, event: "stream_gap", data: [
                "source": .string(controller.description), "destination": .string(host.description),
                "offset": .integer(offset), "missing_bytes": .integer(missing)])))
            try writer.close()
            let framed = try TraceInput.open(path: trace)
            _ = try framed.next()
            #expect(throws: TraceError.self, "offset \(offset), missing \(missing)") { while try framed.next() != nil {} }
        }
        // At the bound, the event is taken.
        #expect(StreamEvent(StreamEvent.gap(source: controller, destination: host, offset: Int(StreamEvent.maximumOffset), missingBytes: 1)
            .record(timeNs: 0)) != nil)
    }

    @Test func aLostTailBeforeTheFinIsAGap() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(5, seed: 9)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50009, isn: 9)
        let script = Script()
        script.handshake(c)
        script.data(c, at: 0, Array(stream[0..<50]))
        script.close(c, at: stream.count)  // [50, 60) never captured
        script.write(to: path(dir))
        let read = try ReadBack(path: path(dir))
        #expect(read.valid == Array(records[0..<4]))
        #expect(read.flagged.map { Array($0.payload) } == [Array(stream[48..<50])])
        #expect(read.events.contains(.gap(source: c.controller, destination: c.host, offset: 50, missingBytes: 10)))
        #expect(read.events.contains(.end(source: c.controller, destination: c.host, how: .fin, offset: 60)))
        #expect(read.unfinished.isEmpty)
    }

    @Test func aPartialRecordAtCloseIsReported() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(8, seed: 10)
        let stream: [UInt8] = records.flatMap { $0 } + [1, 2, 3, 4, 5, 6, 7]
        let c = Script.Connection.v4(controllerPort: 50010, isn: 10)
        let script = Script()
        script.handshake(c)
        send(stream, on: c, maximum: 17, seed: 20, script: script)
        script.close(c, at: stream.count)
        script.write(to: path(dir))
        let read = try ReadBack(path: path(dir))
        #expect(read.valid == records)
        #expect(read.flagged.isEmpty)
        #expect(read.unfinished == [FramingRecordSource.Unfinished(source: c.controller, destination: c.host, offset: 96, bytes: 7)])
        #expect(read.events.contains(.end(source: c.controller, destination: c.host, how: .fin, offset: 103)))
    }

    // MARK: Several connections

    @Test func interleavedConnections() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let connections = [Script.Connection.v4(controllerPort: 50011, isn: 1), .v6(controllerPort: 50012, isn: UInt32.max - 50),
                           .v4(controllerPort: 50013, isn: 0x8000_0000)]
        let records = (0..<3).map { attitudeRecords(25 + $0, seed: 30 + UInt64($0)) }
        var rng = SeededGenerator(seed: 21)
        var queues = (0..<3).map { randomSegments(records[$0].flatMap { $0 }, maximum: 30, rng: &rng) }
        let script = Script()
        for c in connections { script.handshake(c) }
        while queues.contains(where: { !$0.isEmpty }) {
            let k = Int.random(in: 0..<3, using: &rng)
            guard !queues[k].isEmpty else { continue }
            let segment = queues[k].removeFirst()
            script.data(connections[k], at: segment.offset, segment.bytes)
        }
        for (k, c) in connections.enumerated() { script.close(c, at: records[k].count * 12) }
        script.write(to: path(dir))
        let read = try ReadBack(path: path(dir))
        for (k, c) in connections.enumerated() {
            #expect(read.messages(from: c.controller).map { Array($0.payload) } == records[k], "connection \(k)")
        }
        #expect(read.flagged.isEmpty && read.unfinished.isEmpty)
        #expect(read.counts?.directions == 6)
    }

    @Test func aNewConnectionOnTheSameFourTupleStartsAtOffsetZero() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let first = attitudeRecords(10, seed: 40), second = attitudeRecords(12, seed: 41), third = attitudeRecords(3, seed: 42)
        let old = Script.Connection.v4(controllerPort: 50014, isn: 1_000)
        let new = Script.Connection.v4(controllerPort: 50014, isn: 2_000_000_000, hostISN: 0x7000_0000)
        let newest = Script.Connection.v4(controllerPort: 50014, isn: 3_000_000_000, hostISN: 0x7100_0000)
        let script = Script()
        script.handshake(old)
        send(first.flatMap { $0 }, on: old, maximum: 30, seed: 43, script: script)
        script.close(old, at: 120)
        script.data(old, at: 100, Array(first.flatMap { $0 }[100..<120]))  // a retransmission after the close
        script.handshake(new)
        let secondBytes: [UInt8] = second.flatMap { $0 } + [9, 9, 9, 9, 9]
        send(secondBytes, on: new, maximum: 30, seed: 44, script: script)
        // No FIN: a SYN with a new ISN replaces it.
        script.handshake(newest)
        send(third.flatMap { $0 }, on: newest, maximum: 30, seed: 45, script: script)
        script.close(newest, at: 36)
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.valid == first + second + third)
        #expect(read.flagged.isEmpty)
        let controller = old.controller, host = old.host
        #expect(read.unfinished == [FramingRecordSource.Unfinished(source: controller, destination: host, offset: 144, bytes: 5)])
        let ends = read.events.compactMap { event -> String? in
            guard case .end(let s, _, let how, let offset) = event else { return nil }
            return "\(s == controller ? "c2h" : "h2c") \(how.rawValue) \(offset)"
        }
        #expect(ends == ["c2h fin 120", "h2c fin 0", "c2h reused 149", "h2c reused 0", "c2h fin 36", "h2c fin 0"])
        #expect(read.events.filter { if case .start = $0 { return true } else { return false } }.count == 6)
        #expect(read.counts?.duplicateBytes == 20)
    }

    // MARK: Hostile captures

    @Test func aHugeSequenceJumpIsReportedNotBuffered() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(20, seed: 50)
        let stream = records.flatMap { $0 }
        let c = Script.Connection.v4(controllerPort: 50015, isn: 15)
        let script = Script()
        script.handshake(c)
        script.data(c, at: 0, Array(stream[0..<120]))
        script.data(c, at: 1_500_000_000, Array(repeating: 0x42, count: 12))  // ahead, within the serial window
        script.data(c, at: 3_000_000_000, Array(repeating: 0x43, count: 12))  // behind, reading serially
        script.data(c, at: 120, Array(stream[120...]))
        script.write(to: path(dir))

        let read = try ReadBack(path: path(dir))
        #expect(read.valid == records)
        #expect(read.events.contains(.gap(source: c.controller, destination: c.host, offset: 240, missingBytes: 1_500_000_000 - 240)))
        #expect(read.flagged.map { Array($0.payload) } == [Array(repeating: 0x42, count: 12)])
        #expect(read.events.suffix(2) == [.end(source: c.controller, destination: c.host, how: .captureEnd, offset: 1_500_000_012),
                                          .end(source: c.host, destination: c.controller, how: .captureEnd, offset: 0)])
        let counts = try #require(read.counts)
        #expect(counts.missingBytes == 1_500_000_000 - 240 && counts.bytesBeforeStart == 12)
    }

    /// Thousands of one-byte segments behind a hole that never fills: the
    /// bound gives up on the hole again and again; every byte is delivered once.
    @Test func aFloodOfOutOfOrderSegmentsStaysBounded() throws {
        var limits = TCPReassembler.Limits()
        limits.bufferedBytesPerDirection = 1000
        limits.bufferedSegmentsPerDirection = 100
        var reassembler = TCPReassembler(limits: limits)
        let controller = Endpoint(host: "10.0.0.11", port: 50016), host = Endpoint(host: "10.0.0.1", port: 47130)
        func segment(_ offset: Int, _ bytes: [UInt8], flags: UInt8 = 0x18) -> TCPSegment {
            TCPSegment(timeNs: Int64(offset), direction: .controllerToHost, source: controller, destination: host,
                       sequence: 1001 &+ UInt32(offset), flags: flags, payload: bytes)
        }
        var chunks = reassembler.add(TCPSegment(timeNs: 0, direction: .controllerToHost, source: controller, destination: host,
                                                sequence: 1000, flags: 0x02, payload: []))
        chunks += reassembler.add(segment(0, Array(repeating: 1, count: 12)))
        var largest = 0
        let flood = 20_000
        for k in 0..<flood {  // bytes at 24, 26, 28, …: every other byte missing
            chunks += reassembler.add(segment(24 + 2 * k, [UInt8(truncatingIfNeeded: k)]))
            largest = max(largest, reassembler.largestDirectionBuffer)
        }
        chunks += reassembler.finish()
        #expect(largest <= 1000)
        #expect(reassembler.bufferedBytes == 0)
        let counts = reassembler.counts
        #expect(counts.gapsForcedByBuffer > 0)
        #expect(chunks.reduce(0) { $0 + $1.bytes.count } == 12 + flood, "every byte delivered once")
        #expect(chunks.filter { $0.missingBefore > 0 }.count == counts.gaps)
        #expect(chunks.reduce(0) { $0 + $1.missingBefore } == counts.missingBytes)
        #expect(counts.missingBytes == 12 + flood - 1)
        #expect(chunks.last?.end == .captureEnd && chunks.last.map { $0.offset + $0.bytes.count } == 24 + 2 * (flood - 1) + 1)
    }

    /// The same flood through the capture reader, with the default bounds.
    @Test func aFloodInACaptureIsReported() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let c = Script.Connection.v4(controllerPort: 50017, isn: 17)
        let script = Script()
        script.handshake(c)
        let flood = 6000
        for k in 0..<flood { script.data(c, at: 100 + 2 * k, [UInt8(truncatingIfNeeded: k)]) }
        script.write(to: path(dir))
        let read = try ReadBack(path: path(dir))
        let counts = try #require(read.counts)
        #expect(counts.gapsForcedByBuffer > 0, "past 4096 waiting segments the hole is given up")
        #expect(counts.outOfOrderSegments == flood)
        #expect(read.chunks.reduce(0) { $0 + $1.payload.count } == flood)
        // A gap between every byte: each byte is a record cut short by the next gap, the last one unfinished.
        #expect(read.valid.isEmpty)
        #expect(read.flagged.count == flood - 1 && read.flagged.allSatisfy { $0.payload.count == 1 })
        #expect(read.unfinished.map(\.bytes) == [1])
    }

    /// Issue 24: one-byte segments behind holes in many connections. Their bytes are far
    /// under the total bound, but what holding them costs is not: each is charged
    /// `segmentOverhead` besides its byte, so the bound gives up holes, and what waits
    /// never passes it. Every byte is still delivered once.
    @Test func oneByteSegmentsAreChargedWhatTheyCost() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let script = Script()
        let connections = (0..<20).map { Script.Connection.v4(controllerPort: UInt16(51000 + $0), isn: UInt32(1000 * $0)) }
        connections.forEach(script.handshake)
        let segments = 300
        for offset in 1...segments {  // offset 0 never comes
            for c in connections { script.data(c, at: offset, [UInt8(truncatingIfNeeded: offset)]) }
        }
        script.write(to: path(dir))
        var limits = TCPReassembler.Limits()
        limits.bufferedBytesTotal = 60_000  // 6,000 bytes wait: a tenth of it; with the overhead, eight times it
        let read = try ReadBack(path: path(dir), limits: limits)
        let counts = try #require(read.counts)
        #expect(counts.gapsForcedByBuffer > 0, "the overhead counts toward the bound")
        // A direction whose hole was given up takes its later segments in order: they no longer wait.
        #expect(counts.outOfOrderSegments < connections.count * segments)
        #expect(counts.peakBufferedBytes <= limits.bufferedBytesTotal)
        #expect(counts.peakBufferedBytes >= limits.bufferedBytesTotal - TCPReassembler.segmentOverhead - 1, "it filled up to the bound")
        #expect(counts.gaps == connections.count && counts.missingBytes == connections.count)
        #expect(read.chunks.reduce(0) { $0 + $1.payload.count } == connections.count * segments, "every byte delivered once")
    }

    /// The reassembler's own count of what waits: bytes and overhead, back to 0 when delivered.
    @Test func whatWaitsIsChargedPerSegment() {
        var reassembler = TCPReassembler()
        let controller = Endpoint(host: "10.0.0.12", port: 50019), host = Endpoint(host: "10.0.0.1", port: 47130)
        func segment(_ offset: Int, _ bytes: [UInt8], flags: UInt8 = 0x18) -> TCPSegment {
            TCPSegment(timeNs: Int64(offset), direction: .controllerToHost, source: controller, destination: host,
                       sequence: 2001 &+ UInt32(offset), flags: flags, payload: bytes)
        }
        var chunks = reassembler.add(TCPSegment(timeNs: 0, direction: .controllerToHost, source: controller, destination: host,
                                                sequence: 2000, flags: 0x02, payload: []))
        for offset in 1...10 { chunks += reassembler.add(segment(offset, [UInt8(offset)])) }
        chunks += reassembler.add(segment(20, Array(repeating: 7, count: 100)))
        #expect(reassembler.bufferedBytes == 10 + 100 + 11 * TCPReassembler.segmentOverhead)
        #expect(reassembler.largestDirectionBuffer == reassembler.bufferedBytes)
        chunks += reassembler.add(segment(0, [0]))
        #expect(reassembler.bufferedBytes == 100 + TCPReassembler.segmentOverhead, "the first eleven bytes went out")
        chunks += reassembler.finish()
        #expect(reassembler.bufferedBytes == 0)
        #expect(reassembler.counts.peakBufferedBytes == 10 + 100 + 11 * TCPReassembler.segmentOverhead)
        #expect(chunks.reduce(0) { $0 + $1.bytes.count } == 111)
    }

    /// The end of a capture a direction at a time: each call ends one (in the order they began),
    /// and together they give what `finish` gives in one array.
    @Test func theEndComesOneDirectionAtATime() {
        func flooded() -> TCPReassembler {
            var reassembler = TCPReassembler()
            let host = Endpoint(host: "10.0.0.1", port: 47130)
            for k in 0..<5 {
                let controller = Endpoint(host: "10.0.1.\(k + 1)", port: UInt16(52000 + k))
                func segment(_ offset: Int, flags: UInt8 = 0x18, _ bytes: [UInt8]) -> TCPSegment {
                    TCPSegment(timeNs: Int64(k * 1000 + offset), direction: .controllerToHost, source: controller, destination: host,
                               sequence: UInt32(5000 * k + 1) &+ UInt32(offset), flags: flags, payload: bytes)
                }
                _ = reassembler.add(TCPSegment(timeNs: Int64(k * 1000), direction: .controllerToHost, source: controller,
                                               destination: host, sequence: UInt32(5000 * k), flags: 0x02, payload: []))
                for offset in stride(from: 2, to: 40, by: 3) { _ = reassembler.add(segment(offset, [UInt8(offset), UInt8(offset)])) }
            }
            return reassembler
        }
        var whole = flooded()
        let atOnce = whole.finish()
        var stepwise = flooded()
        var chunks: [StreamChunk] = []
        var ends: [Int] = []
        while stepwise.finishNext(into: &chunks) { ends.append(chunks.filter { $0.end != nil }.count) }
        #expect(ends == [1, 2, 3, 4, 5], "one direction ended per call")
        #expect(chunks == atOnce)
        #expect(stepwise.bufferedBytes == 0 && !stepwise.finishNext(into: &chunks))
        #expect(chunks.map(\.source.port) == atOnce.map(\.source.port))
        #expect(Array(Set(chunks.map(\.source.port))).sorted() == (52000..<52005).map { UInt16($0) })
    }

    @Test func aFloodOfConnectionsStaysBounded() {
        var limits = TCPReassembler.Limits()
        limits.directions = 64
        var reassembler = TCPReassembler(limits: limits)
        let host = Endpoint(host: "10.0.0.1", port: 47130)
        var chunks: [StreamChunk] = []
        var most = 0
        let connections = 1000
        for k in 0..<connections {
            let controller = Endpoint(host: "10.0.\(k / 250).\(k % 250)", port: UInt16(40_000 + k))
            chunks += reassembler.add(TCPSegment(timeNs: Int64(k), direction: .controllerToHost, source: controller, destination: host,
                                                 sequence: UInt32(k), flags: 0x02, payload: []))
            chunks += reassembler.add(TCPSegment(timeNs: Int64(k), direction: .controllerToHost, source: controller, destination: host,
                                                 sequence: UInt32(k) + 1, flags: 0x18, payload: [1, 2, 3, 4, 5]))
            most = max(most, reassembler.trackedDirections)
        }
        chunks += reassembler.finish()
        #expect(most <= 64)
        #expect(reassembler.counts.evictedDirections > 0)
        #expect(reassembler.counts.directions == connections)
        #expect(chunks.reduce(0) { $0 + $1.bytes.count } == 5 * connections)
        #expect(chunks.filter { $0.end != nil }.count == connections, "every connection's end is reported once")
        #expect(chunks.filter { $0.end == .evicted }.count == reassembler.counts.evictedDirections)
    }

    // MARK: The commands' path

    @Test func traceInputReassemblesByteStreamCaptures() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let records = attitudeRecords(6, seed: 60)
        let c = Script.Connection.v4(controllerPort: 50018, isn: 18)
        let script = Script()
        script.handshake(c)
        send(records.flatMap { $0 }, on: c, maximum: 10, seed: 61, script: script)
        script.write(to: path(dir))
        let raw = try TraceInput.open(path: path(dir), wireProtocol: AttitudeStream(), framed: false)
        #expect(raw is PcapTraceReader)
        let framed = try TraceInput.open(path: path(dir), wireProtocol: AttitudeStream())
        var messages: [[UInt8]] = []
        while let record = try framed.next() { if case .message(let m) = record { messages.append(Array(m.payload)) } }
        #expect(messages == records)
    }
}
