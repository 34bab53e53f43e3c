// Captures through the real reader (Sources/Formats/KinetracePcap): the input
// is written to a file that `PcapTraceReader` opens with libpcap, as a pcap or
// pcapng for each protocol (UDP for motionlink-v1 and keepcalm-json, TCP
// reassembly for attitude-stream); then the same bytes go to `PacketDecoder`
// directly as one packet of every supported link type.
// Checks: errors and truncations point inside the file; records have
// in-range times, the protocol's port on one side, and no more UDP messages
// than packets; a located datagram or segment lies inside its packet.
#if canImport(Glibc)
import Glibc
#endif
import KinetracePcap
import KinetraceTrace
import KinetraceWire

let capturePath: String = {
    let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    return "\(folder)/kinetrace-fuzz-pcap-\(getpid())"
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPcap(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size)
    let fd = open(capturePath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    invariant(fd >= 0, "cannot create \(capturePath)")
    var written = 0
    while written < size {
        let n = write(fd, bytes.baseAddress! + written, size - written)
        invariant(n > 0, "cannot write \(capturePath)")
        written += n
    }
    close(fd)
    for wireProtocol in [MotionLinkV1(), KeepCalmJSON(), AttitudeStream()] as [any WireProtocol] {
        readCapture(as: wireProtocol, fileSize: size)
    }
    var decoder = PacketDecoder()
    for linkType in LinkType.supported + [LinkType(7)] {
        for transport in [IPTransport.udp, .tcp] {
            if case .found(let at) = PacketDecoder.locate(in: bytes, linkType: linkType, transport: transport) {
                invariant(at.payloadOffset >= 0 && at.payloadCount >= 0 && at.payloadOffset + at.payloadCount <= size,
                          "payload \(at.payloadOffset)+\(at.payloadCount) outside a \(size)-byte packet")
                let addressSize = at.family == .ipv4 ? 4 : 16
                invariant(at.sourceAddressOffset >= 0 && at.sourceAddressOffset + addressSize <= size
                          && at.destinationAddressOffset >= 0 && at.destinationAddressOffset + addressSize <= size,
                          "addresses outside the packet")
                invariant(at.transport == transport, "asked for \(transport), found \(at.transport)")
            }
        }
        if case .udp(let datagram) = decoder.decode(bytes, linkType: linkType) {
            invariant(datagram.payload.count <= size, "a datagram longer than its packet")
        }
    }
    return 0
}

func readCapture(as wireProtocol: any WireProtocol, fileSize: Int) {
    do throws(TraceError) {
        // No port given: the reader infers it from the capture (issue 16), so that scan is fuzzed too.
        let reader = try PcapTraceReader(path: capturePath, wireProtocol: wireProtocol)
        let port = reader.port
        if let inferred = reader.portInference?.inferredPort { invariant(inferred == port, "inferred port \(inferred), reading \(port)") }
        var messages = 0
        while let record = try reader.next() {
            invariant(TraceRecord.timeRangeNs.contains(record.timeNs), "record time \(record.timeNs) out of range")
            if case .message(let message) = record {
                messages += 1
                invariant(message.source.port == port || message.destination.port == port, "a message not to or from port \(port)")
                invariant((message.direction == .controllerToHost) == (message.destination.port == port), "direction disagrees with the ports")
                invariant(!message.payload.isEmpty || wireProtocol.transport == .datagram, "an empty stream message")
            }
        }
        invariant(messages == reader.recordCount, "\(messages) messages returned, \(reader.recordCount) counted")
        if wireProtocol.transport == .datagram {
            invariant(messages + reader.skipped.total <= reader.packetCount, "more messages and skips than packets")
        }
        if let cut = reader.truncation {
            invariant(cut.byteOffset >= 0 && cut.byteOffset <= fileSize && cut.droppedBytes >= 0, "truncation \(cut) outside the file")
        }
    } catch {
        invariant((0...fileSize).contains(error.byteOffset ?? 0), "error offset outside the \(fileSize)-byte file: \(error)")
    }
}
