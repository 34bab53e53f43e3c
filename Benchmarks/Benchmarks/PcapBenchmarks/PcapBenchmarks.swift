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

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 2,
        maxDuration: .seconds(5))

    Benchmark("pcap decode to trace records (200k packets)") { benchmark in
        let path = capturePath
        for _ in benchmark.scaledIterations {
            do {
                let reader = try PcapTraceReader(path: path, wireProtocol: MotionLinkV1.self, port: MotionLinkV1.defaultPort)
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
