import Benchmark
import CPcap
import KinetracePcap
import KinetraceSupport
import KinetraceTrace
import KinetraceWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// One capture of `packetCount` MotionLink packets, written once by PcapWriter
// into /tmp. Both benchmarks read the whole file per iteration: the raw
// libpcap loop is the floor any pcap reader pays, the decode adds
// Ethernet/IP/UDP parsing, endpoints and a payload copy per record.

let packetCount = 200_000

/// 40 controllers at 10 Hz, an ack every 25th frame, IPv4, as a real session would hold.
let capturePath: String = {
    let path = "/tmp/kinetrace-pcap-bench-\(getpid())-\(SystemClock.realtimeNs()).pcap"
    do {
        let writer = try PcapWriter(path: path)
        let host = Endpoint(host: "10.0.0.1", port: MotionLinkV1.defaultPort)
        var timeNs: Int64 = 1_767_225_600_000_000_000
        for i in 0..<packetCount {
            let controller = Endpoint(host: "10.0.0.\(10 + i % 40)", port: UInt16(50_000 + i % 40))
            timeNs += 2_500_000 + Int64(i % 7) * 1_000
            if i % 25 == 24 {
                let ack = HapticAck(echoTMs: UInt64(timeNs / 1_000_000)).encoded()
                try writer.write(MessageRecord(timeNs: timeNs, direction: .hostToController, source: host, destination: controller, payload: ack))
            } else {
                let frame = MotionFrame(tMs: UInt64(timeNs / 1_000_000), ax: 0.01, ay: Float32(i % 100) / 100, az: -0.02).encoded()
                try writer.write(MessageRecord(timeNs: timeNs, direction: .controllerToHost, source: controller, destination: host, payload: frame))
            }
        }
        try writer.close()
    } catch {
        fatalError("cannot write the benchmark capture: \(error)")
    }
    atexit { unlink(capturePath) }
    return path
}()

// An attitude-stream capture for TCP reassembly: `streamRecordCount`
// records from 8 controllers, one to three records per segment, a host ACK
// after each, handshakes and FINs, Ethernet/IPv4, written byte by byte here.
let streamRecordCount = 200_000

let streamCapturePath: String = {
    let path = "/tmp/kinetrace-stream-bench-\(getpid())-\(SystemClock.realtimeNs()).pcap"
    var out: [UInt8] = []
    func le32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
    func be16(_ v: UInt16, _ into: inout [UInt8]) { withUnsafeBytes(of: v.bigEndian) { into += $0 } }
    func be32(_ v: UInt32, _ into: inout [UInt8]) { withUnsafeBytes(of: v.bigEndian) { into += $0 } }
    le32(0xA1B2_3C4D); out += [2, 0, 4, 0]; le32(0); le32(0); le32(262_144); le32(1)
    var timeNs: Int64 = 1_767_225_600_000_000_000
    func packet(_ controller: UInt8, toHost: Bool, port: UInt16, sequence: UInt32, ack: UInt32, flags: UInt8, payload: [UInt8]) {
        var tcp: [UInt8] = []
        be16(toHost ? port : AttitudeStream.defaultPort, &tcp); be16(toHost ? AttitudeStream.defaultPort : port, &tcp)
        be32(sequence, &tcp); be32(ack, &tcp); tcp += [5 << 4, flags]; be16(65535, &tcp); tcp += [0, 0, 0, 0]
        tcp += payload
        let (source, destination): ([UInt8], [UInt8]) = toHost ? ([10, 0, 1, controller], [10, 0, 0, 1]) : ([10, 0, 0, 1], [10, 0, 1, controller])
        var frame: [UInt8] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0, 0x45, 0]
        be16(UInt16(20 + tcp.count), &frame)
        frame += [0, 0, 0x40, 0, 64, 6, 0, 0] + source + destination + tcp
        timeNs += 16_666_667 / 8
        le32(UInt32(timeNs / 1_000_000_000)); le32(UInt32(timeNs % 1_000_000_000)); le32(UInt32(frame.count)); le32(UInt32(frame.count))
        out += frame
    }
    var rng = SeededGenerator(seed: 1)
    let controllers = 8
    var sequences = (0..<controllers).map { _ in UInt32.random(in: 0...UInt32.max, using: &rng) }
    let hostSequences = (0..<controllers).map { _ in UInt32.random(in: 0...UInt32.max, using: &rng) }
    for k in 0..<controllers {
        let port = UInt16(50_000 + k)
        packet(UInt8(k + 1), toHost: true, port: port, sequence: sequences[k], ack: 0, flags: 0x02, payload: [])
        packet(UInt8(k + 1), toHost: false, port: port, sequence: hostSequences[k], ack: sequences[k] &+ 1, flags: 0x12, payload: [])
        sequences[k] &+= 1
    }
    var left = streamRecordCount
    var k = 0
    while left > 0 {
        let n = min(left, [1, 1, 1, 1, 2, 3][Int.random(in: 0..<6, using: &rng)])
        let payload = (0..<n).flatMap { _ in
            AttitudeRecord(roll: Float32.random(in: -3...3, using: &rng), pitch: Float32.random(in: -1.5...1.5, using: &rng),
                           yaw: Float32.random(in: -3...3, using: &rng)).encoded()
        }
        let port = UInt16(50_000 + k)
        packet(UInt8(k + 1), toHost: true, port: port, sequence: sequences[k], ack: hostSequences[k] &+ 1, flags: 0x18, payload: payload)
        sequences[k] &+= UInt32(payload.count)
        packet(UInt8(k + 1), toHost: false, port: port, sequence: hostSequences[k] &+ 1, ack: sequences[k], flags: 0x10, payload: [])
        left -= n
        k = (k + 1) % controllers
    }
    for k in 0..<controllers {
        let port = UInt16(50_000 + k)
        packet(UInt8(k + 1), toHost: true, port: port, sequence: sequences[k], ack: hostSequences[k] &+ 1, flags: 0x11, payload: [])
        packet(UInt8(k + 1), toHost: false, port: port, sequence: hostSequences[k] &+ 1, ack: sequences[k] &+ 1, flags: 0x11, payload: [])
    }
    guard let file = fopen(path, "wb"), fwrite(out, 1, out.count, file) == out.count, fclose(file) == 0 else {
        fatalError("cannot write the stream benchmark capture")
    }
    atexit { unlink(streamCapturePath) }
    return path
}()

/// Every packet through libpcap, the floor under any reader of the file.
func rawLoop(_ path: String) -> Int {
    var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
    guard let handle = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer) else {
        fatalError("pcap_open_offline failed")
    }
    var header: UnsafeMutablePointer<pcap_pkthdr>?
    var data: UnsafePointer<UInt8>?
    var count = 0
    var sum = 0
    while pcap_next_ex(handle, &header, &data) == 1 {
        count += 1
        sum &+= Int(header!.pointee.caplen)
    }
    pcap_close(handle)
    blackHole(sum)
    return count
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 2,
        maxDuration: .seconds(5))

    Benchmark("pcap decode to trace records (200k packets)") { benchmark in
        let path = capturePath
        for _ in benchmark.scaledIterations {
            do {
                let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1(), port: MotionLinkV1.defaultPort)
                var count = 0
                var sum: Int64 = 0
                while let message = try reader.nextMessage() {
                    count += 1
                    sum &+= message.timeNs &+ Int64(message.payload.count)
                }
                precondition(count == packetCount)
                blackHole(sum)
            } catch {
                fatalError("\(error)")
            }
        }
    }

    Benchmark("attitude-stream reassembly from pcap (200k records)") { benchmark in
        let path = streamCapturePath
        for _ in benchmark.scaledIterations {
            do {
                let reader = FramingRecordSource(try PcapTraceReader(path: path, wireProtocol: AttitudeStream()))
                var count = 0
                var sum: Int64 = 0
                while let record = try reader.next() {
                    guard case .message(let message) = record else { continue }
                    precondition(message.framingError == nil)
                    count += 1
                    sum &+= message.timeNs &+ Int64(message.payload.count)
                }
                precondition(count == streamRecordCount && reader.unfinished.isEmpty)
                blackHole(sum)
            } catch {
                fatalError("\(error)")
            }
        }
    }

    Benchmark("baseline: raw libpcap loop over the stream capture") { benchmark in
        let path = streamCapturePath
        for _ in benchmark.scaledIterations {
            blackHole(rawLoop(path))
        }
    }

    Benchmark("baseline: raw libpcap loop (200k packets)") { benchmark in
        let path = capturePath
        for _ in benchmark.scaledIterations {
            var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
            guard let handle = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer) else {
                fatalError("pcap_open_offline failed")
            }
            var header: UnsafeMutablePointer<pcap_pkthdr>?
            var data: UnsafePointer<UInt8>?
            var count = 0
            var sum = 0
            while pcap_next_ex(handle, &header, &data) == 1 {
                count += 1
                sum &+= Int(header!.pointee.caplen)
            }
            pcap_close(handle)
            precondition(count == packetCount)
            blackHole(sum)
        }
    }
}
