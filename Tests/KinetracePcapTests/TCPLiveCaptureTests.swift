import Foundation
import KinetracePcap
import KinetraceSupport
import KinetraceTestSupport
import KinetraceTrace
import KinetraceWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs tcpdump on lo for `filter` around `traffic`, then stops it once the
/// file holds what `done` looks for (tcpdump -U writes each packet as it comes).
func captureTCPOnLoopback(filter: String, file: String, traffic: () throws -> Void, done: (String) -> Bool) throws {
    // In immediate mode the kernel ring holds buffer ÷ snaplen packets: 64 MiB ÷ 8 KiB is 8,192, more than a test sends.
    let tcpdump = try Tcpdump(["-s", "8192", "-B", "65536", "-w", file, filter])
    defer { tcpdump.stop() }
    try traffic()
    let deadline = Date().addingTimeInterval(20)
    while !done(file) {
        guard Date() < deadline else { throw FixtureError("the capture never held the whole session: \(tcpdump.stderr)") }
        usleep(20_000)
    }
}

/// Live: tcpdump captures a real TCP connection on loopback while a sender
/// writes attitude records with TCP_NODELAY in random-sized writes; the
/// capture read back (library and `kinetrace convert`) gives exactly the
/// records sent. Reordering and duplication are covered by crafted captures
/// (`TCPReassemblyTests`): this machine's kernel has no netem qdisc.
@Suite(.enabled(if: Requirement.root.runs, "live capture needs root or CAP_NET_RAW; with CI set this fails instead"))
struct TCPLiveCaptureTests {
    init() throws { try Requirement.root.check() }

    /// Directions ended by a FIN in the capture so far.
    static func finishedDirections(_ file: String, port: UInt16) -> Int {
        guard let reader = try? PcapTraceReader(path: file, wireProtocol: AttitudeStream(), port: port) else { return 0 }
        var ends = 0
        while let record = try? reader.next() {
            if case .event(let e) = record, let event = StreamEvent(e), case .end(_, _, .fin, _) = event { ends += 1 }
        }
        return ends
    }

    @Test(arguments: [UInt64(7), 8])
    func randomSizedWritesComeBackAsTheRecordsSent(seed: UInt64) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("attitude.pcap").path
        let records = attitudeRecords(400, seed: seed)
        let stream = records.flatMap { $0 }
        let pair = try LoopbackTCPPair()
        // Connected before the capture starts: the capture begins mid-stream, before the first byte.
        try pair.connect()
        var received: [UInt8] = []
        var writes = 0
        try captureTCPOnLoopback(filter: "tcp port \(pair.port)", file: file, traffic: {
            var rng = SeededGenerator(seed: seed &* 1000)
            var offset = 0
            while offset < stream.count {
                let size = min(Int.random(in: 1...40, using: &rng), stream.count - offset)
                try pair.write(Array(stream[offset..<offset + size]))
                offset += size
                writes += 1
            }
            received = try pair.finish()
        }, done: { Self.finishedDirections($0, port: pair.port) >= 1 })
        #expect(received == stream, "the server read what was sent")

        let read = try ReadBack(path: file, port: pair.port)
        #expect(read.valid == records, "seed \(seed), \(writes) writes")
        #expect(read.flagged.isEmpty && read.unfinished.isEmpty)
        #expect(!read.events.contains { if case .gap = $0 { true } else { false } })
        #expect(read.events.first.map { if case .start(_, _, false) = $0 { true } else { false } } == true, "begun mid-stream")
        #expect(read.chunks.flatMap { Array($0.payload) } == stream)

        // The command: convert writes the chunks and events; read back framed, the same records.
        let out = dir.appendingPathComponent("attitude.jsonl").path
        let converted = try kinetrace(["convert", "--protocol", "attitude-stream", "--port", "\(pair.port)", file, out])
        #expect(converted.status == 0, "\(converted.stderr)")
        let trace = try TraceInput.open(path: out)
        var fromTrace: [[UInt8]] = []
        while let record = try trace.next() {
            if case .message(let m) = record {
                #expect(m.framingError == nil)
                fromTrace.append(Array(m.payload))
            }
        }
        #expect(fromTrace == records)
    }

    /// With the handshake captured too, offset 0 is the byte after the SYN.
    @Test func aCapturedHandshake() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("handshake.pcap").path
        let records = attitudeRecords(100, seed: 9)
        let pair = try LoopbackTCPPair()
        try captureTCPOnLoopback(filter: "tcp port \(pair.port)", file: file, traffic: {
            try pair.connect()
            for record in records { try pair.write(record) }
            _ = try pair.finish()
        }, done: { Self.finishedDirections($0, port: pair.port) == 2 })
        let read = try ReadBack(path: file, port: pair.port)
        #expect(read.valid == records)
        #expect(read.flagged.isEmpty && read.unfinished.isEmpty)
        #expect(read.events.first.map { if case .start(_, _, true) = $0 { true } else { false } } == true)
        #expect(read.counts?.midStreamStarts == 0 && read.counts?.gaps == 0)
    }
}
