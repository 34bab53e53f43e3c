#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// A host process on the stdio adapter (specs/stdio-adapter-v1.md): sends
/// controller→host records, and reads and checks host→controller records.
/// The replayer and the conformance suite both talk to exec hosts through it.
package final class StdioHostConnection: @unchecked Sendable {  // the decoder is used by one receiving thread
    package enum Event: Sendable {
        case datagram(controller: Int, payload: [UInt8])
        /// A decision the host reported on the observation channel (record kind 0x03).
        case observation(controller: Int, Observation)
        /// The host closed its output; `pendingBytes` were left inside a record.
        case closed(pendingBytes: Int)
        /// The host wrote something that is not a host→controller or observation record for a known controller.
        case protocolError(String)
    }

    package let child: ChildProcess
    private var decoder = StdioRecordDecoder()
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    /// True once the output closed or broke: nothing more will be read.
    package private(set) var ended = false

    package init(command: String) throws(SocketError) { child = try ChildProcess(command: command) }

    package func send(controller: Int, _ payload: [UInt8], deadlineMonotonicNs: Int64) -> Int32? {
        let record = StdioRecord(kind: .controllerToHost, controller: UInt16(truncatingIfNeeded: controller), payload: payload)
        return child.write(record.encoded(), deadlineMonotonicNs: deadlineMonotonicNs)
    }

    /// Waits up to `timeoutMs`, reads all that is there, and hands each record
    /// (from controllers below `controllers`) to `handle`, then the end if it came.
    package func receive(timeoutMs: Int32, controllers: Int, _ handle: (Event) -> Void) {
        guard !ended else {
            usleep(UInt32(clamping: Int64(max(timeoutMs, 0)) * 1000))
            return
        }
        var pfd = pollfd(fd: child.fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeoutMs) > 0 else { return }
        var closed = false
        // At most 16 reads (1 MiB) before decoding: a child that writes without pause must not
        // make the undecoded bytes grow without bound.
        for _ in 0..<16 {
            let n = buffer.withUnsafeMutableBytes { recv(child.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { decoder.append(buffer[0..<n]); continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            if n < 0 && errno == EINTR { continue }
            closed = true
            break
        }
        do throws(WireError) {
            var at = decoder.offset
            while let record = try decoder.next() {
                defer { at = decoder.offset }
                guard record.kind == .hostToController || record.kind == .observation else {
                    throw WireError(.outOfRange, offset: at + 4,
                                    expected: "record kind 0x02 (host to controller) or 0x03 (observation), found \(record.kind)")
                }
                guard Int(record.controller) < controllers else {
                    throw WireError(.outOfRange, offset: at + 6, expected: "a controller id below \(controllers), found \(record.controller)")
                }
                if record.kind == .observation {
                    do throws(WireError) {
                        handle(.observation(controller: Int(record.controller), try Observation.decode(record.payload)))
                    } catch {
                        throw WireError(error.code, offset: at + StdioRecord.headerSize + error.offset,
                                        expected: "an observation payload (SA-OBS-2): \(error.expected)")
                    }
                } else {
                    handle(.datagram(controller: Int(record.controller), payload: record.payload))
                }
            }
        } catch {
            ended = true
            handle(.protocolError("the host process's output is not stdio records: byte \(error.offset): expected \(error.expected)"))
            return
        }
        if closed {
            ended = true
            handle(.closed(pendingBytes: decoder.pendingBytes))
        }
    }

    /// The exit status, described, if the host exits within `ms`.
    package func exitStatus(waitingMs ms: Int) -> String? {
        for _ in 0..<max(ms / 10, 1) {
            if let status = child.exitStatus() { return ChildProcess.describe(status: status) }
            usleep(10_000)
        }
        return nil
    }
}
