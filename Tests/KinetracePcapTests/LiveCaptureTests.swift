import Foundation
import KinetraceTestSupport
import KinetracePcap
import KinetraceTrace
import KinetraceWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket on a loopback address, bound to port 0.
final class LoopbackSocket {
    let fd: Int32
    let v6: Bool
    let port: UInt16

    init(v6: Bool) throws {
        self.v6 = v6
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: \(String(cString: strerror(errno)))") }
        var storage = sockaddr_storage()
        var length = socklen_t(0)
        Self.fill(&storage, &length, v6: v6, port: 0)
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else {
            close(fd)
            throw FixtureError("bind: \(String(cString: strerror(errno)))")
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) } }
        let port = withUnsafePointer(to: &actual) { pointer in
            v6 ? UInt16(bigEndian: pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port })
               : UInt16(bigEndian: pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port })
        }
        self.fd = fd
        self.port = port
    }

    deinit { close(fd) }

    var address: String { v6 ? "::1" : "127.0.0.1" }
    var endpoint: Endpoint { Endpoint(host: address, port: port) }

    func send(_ payload: [UInt8], to port: UInt16) throws {
        var storage = sockaddr_storage()
        var length = socklen_t(0)
        Self.fill(&storage, &length, v6: v6, port: port)
        let sent = payload.withUnsafeBytes { bytes in
            withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, length) } }
        }
        guard sent == payload.count else { throw FixtureError("sendto: \(String(cString: strerror(errno)))") }
    }

    private static func fill(_ storage: inout sockaddr_storage, _ length: inout socklen_t, v6: Bool, port: UInt16) {
        withUnsafeMutablePointer(to: &storage) { pointer in
            if v6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    $0.pointee.sin6_family = sa_family_t(AF_INET6)
                    $0.pointee.sin6_port = port.bigEndian
                    $0.pointee.sin6_addr = in6addr_loopback
                }
                length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    $0.pointee.sin_family = sa_family_t(AF_INET)
                    $0.pointee.sin_port = port.bigEndian
                    $0.pointee.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
                }
                length = socklen_t(MemoryLayout<sockaddr_in>.size)
            }
        }
    }
}

/// Captures `count` packets to or from `port` on lo with tcpdump, running
/// `traffic` once tcpdump says it is listening. tcpdump stops by itself after
/// `count` packets (-c), writing each packet as it comes (-U).
func captureOnLoopback(port: UInt16, count: Int, file: String, extraArguments: [String] = [], traffic: () throws -> Void) throws {
    let tcpdump = try Tcpdump(["-c", "\(count)", "-w", file] + extraArguments + ["udp port \(port)"])
    defer { tcpdump.stop() }
    try traffic()
    guard tcpdump.waitForExit(timeout: 10), tcpdump.process.terminationStatus == 0 else {
        throw FixtureError("tcpdump did not capture \(count) packets: \(tcpdump.stderr)")
    }
}

/// tcpdump on lo in immediate mode, writing each packet at once (-U), started and
/// waited for until it says it is listening; stopped with SIGKILL, because a child
/// spawned from a test thread inherits the thread's blocked signals and never
/// sees SIGINT or SIGTERM (with -U every packet is already in the file).
final class Tcpdump {
    let process = Process()
    private let errorPipe = Pipe()
    private let errorText = LockedText()

    init(_ arguments: [String]) throws {
        process.executableURL = try Fixture.tool("tcpdump")
        process.arguments = ["-i", "lo", "-n", "-U", "--immediate-mode", "-Z", "root"] + arguments
        process.standardError = errorPipe
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let text = errorText
        errorPipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { text.append(String(decoding: data, as: UTF8.self)) }
        }
        try process.run()
        let ready = Date().addingTimeInterval(10)
        while !errorText.value.contains("listening on") {
            guard process.isRunning, Date() < ready else {
                stop()
                throw FixtureError("tcpdump did not start: \(errorText.value)")
            }
            usleep(10_000)
        }
    }

    var stderr: String { errorText.value }

    /// True when tcpdump exited within `timeout` seconds.
    func waitForExit(timeout: TimeInterval) -> Bool {
        let until = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < until { usleep(10_000) }
        return !process.isRunning
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        errorPipe.fileHandleForReading.readabilityHandler = nil
    }
}

final class LockedText: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    func append(_ more: String) { lock.withLock { text += more } }
    var value: String { lock.withLock { text } }
}

/// Real captures: tcpdump on the loopback interface while MotionLink frames
/// and an ack cross it; tshark as the independent reader to compare with.
@Suite(.enabled(if: Requirement.root.runs, "live capture needs root or CAP_NET_RAW; with CI set this fails instead"))
struct LiveCaptureTests {
    init() throws { try Requirement.root.check() }

    static let frames = (0..<5).map { MotionFrame(tMs: 1_767_225_600_000 + UInt64($0) * 100, ay: Float32($0) * 0.25).encoded() }
    static let ack = HapticAck(echoTMs: 1_767_225_600_300).encoded()

    /// Sends five frames controller→host and one ack host→controller, captured to `file`.
    /// Returns the controller and host endpoints.
    static func session(v6: Bool, file: String, extraArguments: [String]) throws -> (controller: Endpoint, host: Endpoint) {
        let host = try LoopbackSocket(v6: v6)
        let controller = try LoopbackSocket(v6: v6)
        try captureOnLoopback(port: host.port, count: 6, file: file, extraArguments: extraArguments) {
            for frame in frames { try controller.send(frame, to: host.port) }
            try host.send(ack, to: controller.port)
        }
        return (controller.endpoint, host.endpoint)
    }

    static func expectSession(_ records: [TraceRecord], controller: Endpoint, host: Endpoint, file: String) throws {
        let tshark = try tsharkFields(file, ["frame.time_epoch", "udp.payload"])
        try #require(records.count == 6)
        try #require(tshark.count == 6)
        for (index, record) in records.enumerated() {
            guard case .message(let message) = record else { Issue.record("not a message"); continue }
            let isAck = index == 5
            #expect(message.direction == (isAck ? .hostToController : .controllerToHost))
            #expect(message.source == (isAck ? host : controller))
            #expect(message.destination == (isAck ? controller : host))
            #expect(message.payload == (isAck ? ack : frames[index]))
            #expect(message.timeNs == nanoseconds(epochText: tshark[index][0]))
            #expect(hex(message.payload) == tshark[index][1])
        }
    }

    @Test(arguments: [("nano", false), ("micro", false), ("nano", true)])
    func tcpdumpCapture(precision: String, v6: Bool) throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("capture.pcap").path
        let (controller, host) = try Self.session(v6: v6, file: file, extraArguments: ["--time-stamp-precision=\(precision)"])
        #expect(try CaptureFileFormat(fileAt: file) == .pcap(nanosecond: precision == "nano", bigEndian: false))

        let reader = try TraceInput.open(path: file, port: host.port)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        try Self.expectSession(records, controller: controller, host: host, file: file)
        if precision == "micro" {
            #expect(records.allSatisfy { $0.timeNs % 1000 == 0 })
        }
        #expect(reader.unknownRecordCount == 0)
        #expect(controller.host == (v6 ? "::1" : "127.0.0.1"))

        // editcap's pcapng of the same packets reads the same.
        let pcapng = dir.appendingPathComponent("capture.pcapng").path
        try runTool("editcap", ["-F", "pcapng", file, pcapng])
        let ngReader = try TraceInput.open(path: pcapng, port: host.port)
        var ngRecords: [TraceRecord] = []
        while let record = try ngReader.next() { ngRecords.append(record) }
        #expect(ngRecords == records)
        #expect((ngReader as? PcapTraceReader)?.fileFormat == .pcapng)
    }

    @Test func killedTcpdumpLeavesAReadableCapture() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let file = dir.appendingPathComponent("capture.pcap").path
        let (controller, host) = try Self.session(v6: false, file: file, extraArguments: ["--time-stamp-precision=nano"])
        // What a kill mid-write leaves: the last packet cut short.
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        let cutFile = dir.appendingPathComponent("cut.pcap").path
        try whole.prefix(whole.count - 3).write(to: URL(fileURLWithPath: cutFile))
        let reader = try PcapTraceReader(path: cutFile, wireProtocol: MotionLinkV1(), port: host.port)
        var records: [TraceRecord] = []
        while let record = try reader.next() { records.append(record) }
        #expect(records.count == 5)
        let sources = records.compactMap { record -> Endpoint? in
            if case .message(let m) = record { return m.source }
            return nil
        }
        #expect(sources == Array(repeating: controller, count: 5))
        let ackPacket = 14 + 20 + 8 + 20
        #expect(reader.truncation == TraceTruncation(line: 6, byteOffset: whole.count - 16 - ackPacket, droppedBytes: 16 + ackPacket - 3, unit: "packet"))
    }
}
