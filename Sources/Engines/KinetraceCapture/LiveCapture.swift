import CPcap
import KinetracePcap
import KinetraceSupport
import KinetraceTrace
import KinetraceWire
import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Live capture of a protocol's traffic through libpcap, written at once to
/// a nanosecond pcap (libpcap's own dumper) and to a trace: a datagram
/// protocol's datagrams, or a byte-stream protocol's TCP segments put back in
/// stream order by a `TCPReassembler`, one chunk record per segment with the
/// `StreamEvent`s (start, gap, end) between them, as `convert` makes of the pcap.
/// With `CaptureCarrier.webSocket` the host's TCP connections are plain WebSocket
/// sessions: the reassembled streams go through a `WebSocketSessionReader`, one
/// message record per WebSocket message, as `convert --transport ws` makes of the pcap.
///
/// The handle is made with pcap_create (TPACKET_V3 ring, not immediate mode) with nanosecond
/// timestamps, tcpdump's 262,144-byte snapshot length (always that for a byte
/// stream, whose segments must not be cut) and a 32 MiB buffer. The files are
/// flushed at least every 250 ms, and rotated (tcpdump's -G and -C) between
/// packets, so each rotated pcap and trace is complete on its own. On stop (a
/// signal, the duration or the count) the handle is put in non-blocking mode and
/// drained until the kernel has nothing left, so nothing captured before the
/// stop is lost.
package final class LiveCapture: @unchecked Sendable {  // `stopRequested` is behind `lock`; the rest is used on the capturing thread
    package struct Configuration: Sendable {
        package var wireProtocol: any WireProtocol
        package var interface: String
        /// The host's port; nil: the protocol's default.
        package var port: UInt16?
        /// Narrows the default filter, `udp port PORT`, further.
        package var filter: String?
        /// The pcap to write, the trace to write, or both; a strftime template when rotating by time.
        package var pcapPath: String?
        package var tracePath: String?
        /// Start new files after this many seconds (tcpdump's -G): names from strftime of the moment each is opened.
        package var rotateSeconds: Int?
        /// Start new files once the pcap holds this many bytes (tcpdump's -C, in millions of bytes); later files get 1, 2, … appended.
        package var rotateBytes: Int64?
        package var durationS: Double?
        /// Stop after this many packets.
        package var count: Int?
        /// Kernel ring size. The TPACKET_V3 ring packs packets at their captured length:
        /// 32 MiB held 97,500 36-byte datagrams on lo while the capture was paused.
        package var bufferBytes: Int32 = 32 << 20
        /// Bytes kept of each packet, tcpdump's default; the seed protocols' messages need under 200.
        package var snaplen: Int32 = Self.defaultSnaplen
        package static let defaultSnaplen: Int32 = 262_144
        /// A byte stream's reassembly bounds (what may wait behind holes, and how many directions).
        package var reassemblyLimits = TCPReassembler.Limits()
        /// What carries the protocol: its own transport, or WebSocket sessions on TCP.
        package var carrier = CaptureCarrier.native

        package init(wireProtocol: any WireProtocol, interface: String, pcapPath: String?, tracePath: String?) {
            self.wireProtocol = wireProtocol
            self.interface = interface
            self.pcapPath = pcapPath
            self.tracePath = tracePath
        }

        /// The host's port in use.
        package var hostPort: UInt16 { port ?? wireProtocol.defaultPort }

        /// Whether the protocol travels in TCP streams: a byte-stream protocol, or any protocol over WebSocket.
        package var readsStreams: Bool { wireProtocol.transport == .byteStream || carrier == .webSocket }

        /// The snapshot length used: a stream's is at least 256 KiB, since a cut segment loses stream bytes.
        package var effectiveSnaplen: Int32 {
            readsStreams ? max(snaplen, Self.defaultSnaplen) : snaplen
        }

        /// The BPF program actually compiled.
        package var effectiveFilter: String {
            let base = "\(readsStreams ? "tcp" : "udp") port \(hostPort)"
            guard let filter, !filter.isEmpty else { return base }
            return "(\(base)) and (\(filter))"
        }
    }

    package let configuration: Configuration
    /// libpcap's read timeout, which is also the kernel's block-retire timer: the longest a packet waits in a partly filled block.
    static let blockTimeoutMs = 100
    private let logger: Logger
    private let handle: OpaquePointer
    /// The files being written now.
    private var files: OutputFiles
    private let linkType: LinkType
    private var decoder = PacketDecoder()
    /// For a byte-stream protocol, and for WebSocket sessions.
    private var reassembler: TCPReassembler?
    /// For WebSocket sessions: reads the reassembled streams.
    private var webSocket: WebSocketSessionReader?
    private var chunks: [StreamChunk] = []
    private var records: [TraceRecord] = []
    private let lock = NIOLock()
    private var stopRequested = false
    private var report = CaptureReport()
    /// The first write that failed (a full disk): the capture stops, and no later packet is counted.
    private var writeFailure: CaptureError?
    private var rotationFailure: CaptureError?
    /// Files opened in the current -G period, for -C's numbering.
    private var filesInPeriod = 0
    /// Every name this capture has written, so a rotation never overwrites one of its own files.
    private var namesUsed: Set<String> = []

    /// Opens and activates the capture and creates both output files.
    package init(configuration: Configuration, logger: Logger) throws(CaptureError) {
        self.configuration = configuration
        if configuration.readsStreams { reassembler = TCPReassembler(limits: configuration.reassemblyLimits) }
        if configuration.carrier == .webSocket { webSocket = WebSocketSessionReader() }
        self.logger = logger
        var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let handle = pcap_create(configuration.interface, &errorBuffer) else {
            throw CaptureError(.other, "cannot open \(configuration.interface): \(cText(errorBuffer))")
        }
        func fail(_ error: CaptureError) -> CaptureError { pcap_close(handle); return error }
        pcap_set_snaplen(handle, configuration.effectiveSnaplen)
        // Not immediate mode: libpcap then uses TPACKET_V3, whose ring blocks hold packets
        // packed at their captured length, so tcpdump's 256 KiB snapshot length costs no ring
        // space (immediate mode gives every packet a slot of the snapshot length: 32 MiB held
        // 256 packets on lo). The kernel hands a partly filled block over after the timeout.
        pcap_set_timeout(handle, Int32(Self.blockTimeoutMs))
        pcap_set_buffer_size(handle, configuration.bufferBytes)
        if pcap_set_tstamp_precision(handle, Int32(PCAP_TSTAMP_PRECISION_NANO)) != 0 {
            throw fail(CaptureError(.other, "\(configuration.interface): libpcap cannot give nanosecond timestamps here"))
        }
        let status = pcap_activate(handle)
        if status < 0 {
            let detail = cText(pcap_geterr(handle))
            switch status {
            case PCAP_ERROR_PERM_DENIED:
                throw fail(CaptureError(.permissionDenied,
                    "cannot capture on \(configuration.interface): permission denied (live capture needs root or CAP_NET_RAW)"))
            case PCAP_ERROR_NO_SUCH_DEVICE:
                throw fail(CaptureError(.noSuchInterface, "no such interface: \(configuration.interface)"))
            default:
                throw fail(CaptureError(.other, "cannot capture on \(configuration.interface): \(detail)"))
            }
        } else if status > 0 {
            logger.warning("pcap_activate warning", metadata: ["detail": "\(cText(pcap_geterr(handle)))"])
        }
        var program = bpf_program()
        guard pcap_compile(handle, &program, configuration.effectiveFilter, 1, PCAP_NETMASK_UNKNOWN) == 0 else {
            throw fail(CaptureError(.badFilter, "bad filter \"\(configuration.filter ?? "")\": \(cText(pcap_geterr(handle)))"))
        }
        defer { pcap_freecode(&program) }
        guard pcap_setfilter(handle, &program) == 0 else {
            throw fail(CaptureError(.badFilter, "cannot apply the filter: \(cText(pcap_geterr(handle)))"))
        }
        linkType = LinkType(pcap_datalink(handle))
        self.handle = handle
        do throws(CaptureError) {
            files = try OutputFiles.open(configuration, handle: handle, linkType: linkType, nowNs: SystemClock.realtimeNs(),
                                         number: 0, namesUsed: namesUsed)
        } catch {
            pcap_close(handle)
            throw error
        }
        report.files = files.paths
        namesUsed.formUnion(files.paths)
    }

    deinit {
        files.abandon()
        pcap_close(handle)
    }

    /// Asks `run` to stop; safe from any thread.
    package func stop() {
        lock.withLock { stopRequested = true }
    }

    /// Captures until stopped, the duration ends or the count is reached, then drains and reports.
    package func run() throws(CaptureError) -> CaptureReport {
        let startNs = SystemClock.monotonicNs()
        let deadline = configuration.durationS.map { startNs + Int64($0 * 1e9) }
        var lastFlush = startNs
        let context = Unmanaged.passUnretained(self).toOpaque()
        // Non-blocking reads after our own poll: with TPACKET_V3 libpcap's own poll waits for
        // a block without a timeout, so a quiet interface would never let the loop look at
        // the stop flag or the deadline.
        var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard pcap_setnonblock(handle, 1, &errorBuffer) == 0 else {
            throw CaptureError(.other, "cannot read \(configuration.interface) without blocking: \(cText(errorBuffer))")
        }
        let descriptor = pcap_get_selectable_fd(handle)
        func waitForPackets() {
            guard descriptor >= 0 else { usleep(useconds_t(Self.blockTimeoutMs) * 1000); return }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, Int32(Self.blockTimeoutMs))
        }
        func dispatch() throws(CaptureError) -> Int32 {
            let budget = configuration.count.map { Int32(clamping: $0 - report.packets) } ?? -1
            let n = pcap_dispatch(handle, budget, captureCallback, context.assumingMemoryBound(to: UInt8.self))
            if n == PCAP_ERROR { throw CaptureError(.other, "capture failed: \(cText(pcap_geterr(handle)))") }
            return n
        }
        while writeFailure == nil {
            if lock.withLock({ stopRequested }) { break }
            if let count = configuration.count, report.packets >= count { break }
            let now = SystemClock.monotonicNs()
            if let deadline, now >= deadline { break }
            if try dispatch() <= 0 { waitForPackets() }
            if SystemClock.monotonicNs() - lastFlush >= 250_000_000 {
                flush()
                lastFlush = SystemClock.monotonicNs()
            }
        }
        // Drain what the kernel already holds: its last, partly filled block is handed over
        // only when the block timer fires, so read until quiet for longer than that.
        var quietSince = SystemClock.monotonicNs()
        while configuration.count.map({ report.packets < $0 }) ?? true, rotationFailure == nil, writeFailure == nil {
            if try dispatch() > 0 { quietSince = SystemClock.monotonicNs(); continue }
            if SystemClock.monotonicNs() - quietSince >= Int64(Self.blockTimeoutMs) * 3_000_000 { break }
            waitForPackets()
        }
        if reassembler != nil, writeFailure == nil {
            // A direction at a time: what waited behind holes in all of them at once would be held twice over.
            chunks.removeAll(keepingCapacity: true)
            while writeFailure == nil, reassembler!.finishNext(into: &chunks) {
                write(chunks)
                chunks.removeAll(keepingCapacity: true)
            }
            report.reassembly = reassembler!.counts
            report.webSocket = webSocket?.counts
        }
        var stats = pcap_stat()
        if pcap_stats(handle, &stats) == 0 {
            report.kernelReceived = Int(stats.ps_recv)
            report.kernelDropped = Int(stats.ps_drop)
            report.interfaceDropped = Int(stats.ps_ifdrop)
        }
        closeFiles()
        if let writeFailure {
            var failure = writeFailure
            failure.description += "; the capture stopped: " + report.onDiskSummary(
                captured: report.packets, pcap: configuration.pcapPath != nil, trace: configuration.tracePath != nil)
            failure.report = report
            throw failure
        }
        if let rotationFailure {
            var failure = rotationFailure
            failure.report = report
            throw failure
        }
        return report
    }

    /// Flushes both files; a failed write stops the capture.
    private func flush() {
        guard writeFailure == nil else { return }
        do throws(CaptureError) { try files.flush() } catch { failWriting(error) }
    }

    private func failWriting(_ error: CaptureError) {
        if writeFailure == nil { writeFailure = error }
        lock.withLock { stopRequested = true }
    }

    /// Closes the current files and counts what reached them: all of it, or after a failed
    /// write, what the last whole flush put there (each file is cut back to that point).
    private func closeFiles() {
        if writeFailure == nil {
            do throws(CaptureError) { try files.close() } catch { failWriting(error) }
        }
        if writeFailure != nil { files.closeAfterFailure() }
        report.pcapPacketsOnDisk += files.flushedPcapPackets
        report.traceRecordsOnDisk += files.flushedTraceRecords
        if writeFailure != nil { files.forgetEmptyAfterFailure(&report.files) }
    }

    /// Between packets: closes the files and opens the next ones when -G's period or -C's size is reached.
    private func rotateIfDue(packetBytes: Int) {
        guard rotationFailure == nil, writeFailure == nil else { return }
        let nowNs = SystemClock.realtimeNs()
        let periodOver = configuration.rotateSeconds.map { nowNs - files.openedNs >= Int64($0) * 1_000_000_000 } ?? false
        let full = configuration.rotateBytes.map { files.pcapBytes > 24 && files.pcapBytes + Int64(16 + packetBytes) > $0 } ?? false
        guard periodOver || full else { return }
        filesInPeriod = periodOver ? 0 : filesInPeriod + 1
        closeFiles()
        guard writeFailure == nil else { return }
        do throws(CaptureError) {
            files = try OutputFiles.open(configuration, handle: handle, linkType: linkType, nowNs: nowNs, number: filesInPeriod,
                                         namesUsed: namesUsed)
            report.files += files.paths
            namesUsed.formUnion(files.paths)
        } catch {
            rotationFailure = error
            lock.withLock { stopRequested = true }
        }
    }

    fileprivate func handle(header: UnsafePointer<pcap_pkthdr>, bytes: UnsafePointer<UInt8>) {
        if configuration.rotateSeconds != nil || configuration.rotateBytes != nil { rotateIfDue(packetBytes: Int(header.pointee.caplen)) }
        guard rotationFailure == nil, writeFailure == nil else { return }
        do throws(CaptureError) { try files.dump(header, bytes) } catch { return failWriting(error) }
        report.packets += 1
        // With nanosecond precision the field named tv_usec holds nanoseconds.
        let timeNs = Int64(header.pointee.ts.tv_sec) * 1_000_000_000 + Int64(header.pointee.ts.tv_usec)
        let packet = UnsafeRawBufferPointer(start: bytes, count: Int(header.pointee.caplen))
        if reassembler != nil { return handleSegment(packet, timeNs: timeNs) }
        switch decoder.decode(packet, linkType: linkType) {
        case .skipped(let reason):
            report.skipped[reason.rawValue, default: 0] += 1
        case .udp(let datagram):
            guard let direction = Direction(sourcePort: datagram.source.port, destinationPort: datagram.destination.port,
                                            hostPort: configuration.hostPort) else {
                report.skipped[PacketSkipReason.otherPort.rawValue, default: 0] += 1
                return
            }
            report.messages[direction.rawValue, default: 0] += 1
            guard writeFailure == nil, let writer = files.writer else { return }
            do throws(TraceError) {
                try writer.write(.message(MessageRecord(timeNs: timeNs, direction: direction, source: datagram.source,
                                                        destination: datagram.destination, payload: datagram.payload)))
            } catch {
                failWriting(CaptureError(.io, error.description))
            }
        }
    }
}

extension LiveCapture {
    fileprivate func handleSegment(_ packet: UnsafeRawBufferPointer, timeNs: Int64) {
        let location: TransportLocation
        switch PacketDecoder.locate(in: packet, linkType: linkType, transport: .tcp) {
        case .skipped(let reason):
            report.skipped[reason.rawValue, default: 0] += 1
            return
        case .found(let found):
            location = found
        }
        guard let direction = Direction(sourcePort: location.sourcePort, destinationPort: location.destinationPort,
                                        hostPort: configuration.hostPort) else {
            report.skipped[PacketSkipReason.otherPort.rawValue, default: 0] += 1
            return
        }
        let (source, destination) = decoder.endpoints(of: location, in: packet)
        let payload = Array(UnsafeRawBufferPointer(rebasing: packet[location.payloadOffset..<location.payloadOffset + location.payloadCount]))
        chunks.removeAll(keepingCapacity: true)
        reassembler!.add(TCPSegment(timeNs: timeNs, direction: direction, source: source, destination: destination,
                                    sequence: location.sequence, flags: location.flags, payload: payload), into: &chunks)
        write(chunks)
    }

    /// Writes the chunks' records: stream bytes as messages, and the stream events.
    fileprivate func write(_ chunks: [StreamChunk]) {
        records.removeAll(keepingCapacity: true)
        if webSocket != nil {
            for chunk in chunks { webSocket!.take(chunk, into: &records) }
        } else {
            for chunk in chunks { chunk.records(into: &records) }
        }
        for record in records {
            switch record {
            case .message(let message): report.messages[message.direction.rawValue, default: 0] += 1
            case .event(let event): report.streamEvents[event.event, default: 0] += 1
            default: break
            }
            guard writeFailure == nil, let writer = files.writer else { continue }
            do throws(TraceError) { try writer.write(record) } catch { failWriting(CaptureError(.io, error.description)) }
        }
    }
}

/// One pcap and/or one trace, opened together and closed together. Every write is
/// checked: libpcap's dumper writes through stdio, whose errors show only in the
/// stream's error flag and fflush's result.
private struct OutputFiles {
    var dumper: OpaquePointer?
    var pcapPath: String?
    var writer: (any TraceSink)?
    var paths: [String] = []
    /// Wall-clock time the files were opened, for -G.
    var openedNs: Int64
    /// Bytes in the pcap so far (its 24-byte header, then 16 per packet plus the bytes kept), for -C.
    var pcapBytes: Int64 = 0
    var pcapPackets = 0
    /// What the last whole, successful flush put in the pcap.
    var flushedPcapBytes: Int64 = 0
    var flushedPcapPackets = 0
    /// Where each packet dumped since that flush ends in the file: stdio writes its buffer out
    /// as it fills, so after a failed write the packets wholly on disk are found by the file's size.
    private var unflushedPacketEnds: [Int64] = []
    var flushedTraceRecords: Int { writer?.flushedRecordCount ?? closedTraceRecords }
    private var closedTraceRecords = 0

    /// Opens the files named from the configuration: strftime of `nowNs` when rotating by time, and
    /// `number` appended past the first. A name in `namesUsed` is refused: it would overwrite this capture's own file.
    static func open(_ configuration: LiveCapture.Configuration, handle: OpaquePointer, linkType: LinkType,
                     nowNs: Int64, number: Int, namesUsed: Set<String>) throws(CaptureError) -> OutputFiles {
        var files = OutputFiles(openedNs: nowNs)
        func name(_ template: String) throws(CaptureError) -> String {
            let base = configuration.rotateSeconds != nil ? strftimeName(template, seconds: nowNs / 1_000_000_000) : template
            let path = number > 0 ? base + "\(number)" : base
            guard !namesUsed.contains(path) else {
                throw CaptureError(.wouldOverwrite, "\(path): this capture already wrote a file of that name, and the next rotation would overwrite it")
            }
            return path
        }
        if let template = configuration.pcapPath {
            let path = try name(template)
            guard let dumper = pcap_dump_open(handle, path) else {
                // libpcap's message already starts with the path: say it once.
                var reason = cText(pcap_geterr(handle))
                if reason.hasPrefix(path + ": ") { reason.removeFirst(path.count + 2) }
                throw CaptureError(.cannotCreate, "\(path): cannot create: \(reason)")
            }
            files.dumper = dumper
            files.pcapPath = path
            files.pcapBytes = 24
            files.paths.append(path)
        }
        if let template = configuration.tracePath {
            do throws(CaptureError) {
                let path = try name(template)
                do throws(TraceError) {
                    // A numbered rotation (".jsonl.gz1") is compressed as its template says.
                    files.writer = try TraceOutput.create(path: path, header: TraceHeader(
                        created: RFC3339.string(fromNanoseconds: nowNs), tool: "kinetrace capture",
                        wireProtocol: configuration.wireProtocol, capturePoint: .network, clock: .pcap,
                        notes: "live capture on \(configuration.interface), filter \"\(configuration.effectiveFilter)\", link type \(linkType)"
                            + (configuration.carrier == .webSocket ? ", WebSocket (ws://) sessions" : "")),
                        form: TraceOutput.form(forPath: template), gzip: template.hasSuffix(".gz"))
                    files.paths.append(path)
                } catch {
                    throw CaptureError(error.code == .cannotCreate ? .cannotCreate : .io, error.description)
                }
            } catch {
                if let dumper = files.dumper, let pcapPath = files.pcapPath {
                    pcap_dump_close(dumper)
                    unlink(pcapPath)  // don't leave an empty pcap behind
                }
                throw error
            }
        }
        return files
    }

    mutating func dump(_ header: UnsafePointer<pcap_pkthdr>, _ bytes: UnsafePointer<UInt8>) throws(CaptureError) {
        guard let dumper else { return }
        pcap_dump(UnsafeMutableRawPointer(dumper).assumingMemoryBound(to: UInt8.self), header, bytes)
        // stdio writes its buffer out as it fills; a failed write only sets the stream's error flag.
        if let stream = pcap_dump_file(dumper), ferror(stream) != 0 { throw pcapWriteError(errno) }
        pcapBytes += 16 + Int64(header.pointee.caplen)
        pcapPackets += 1
        unflushedPacketEnds.append(pcapBytes)
    }

    private func pcapWriteError(_ code: Int32) -> CaptureError {
        CaptureError(.io, "\(pcapPath ?? "the pcap"): cannot write: \(code != 0 ? String(cString: strerror(code)) : "a write failed")")
    }

    /// Hands both files' buffers to the kernel, or throws naming the file that could not take them.
    mutating func flush() throws(CaptureError) {
        if let dumper {
            errno = 0
            let flushed = pcap_dump_flush(dumper) == 0
            let code = errno
            if !flushed || pcap_dump_file(dumper).map({ ferror($0) != 0 }) ?? false { throw pcapWriteError(code) }
            flushedPcapBytes = pcapBytes
            flushedPcapPackets = pcapPackets
            unflushedPacketEnds.removeAll(keepingCapacity: true)
        }
        do { try writer?.flush() } catch { throw CaptureError(.io, error.description) }
    }

    /// Flushes and closes both; a closed OutputFiles writes nothing more.
    mutating func close() throws(CaptureError) {
        try flush()
        if let dumper { pcap_dump_close(dumper) }
        dumper = nil
        guard let writer else { return }
        do { try writer.close() } catch { throw CaptureError(.io, error.description) }
        closedTraceRecords = writer.flushedRecordCount
        self.writer = nil
    }

    /// After a failed write: cuts each file back to where its last whole flush ended, so it
    /// holds exactly what the report counts (a gzip trace then lacks its trailer, as a killed
    /// capture's does), and closes it.
    mutating func closeAfterFailure() {
        // The file that did not fail (the pcap on a healthy disk when the trace's filled) keeps all it was given.
        if let dumper, let stream = pcap_dump_file(dumper), ferror(stream) == 0, pcap_dump_flush(dumper) == 0, ferror(stream) == 0 {
            flushedPcapBytes = pcapBytes
            flushedPcapPackets = pcapPackets
            unflushedPacketEnds.removeAll()
        }
        if let dumper {
            // fclose may write part of its buffer once more; measure and cut after it, through a duplicate descriptor.
            let descriptor = pcap_dump_file(dumper).map { dup(fileno($0)) } ?? -1
            pcap_dump_close(dumper)
            if descriptor >= 0 {
                var info = stat()
                let size = fstat(descriptor, &info) == 0 ? Int64(info.st_size) : flushedPcapBytes
                // The packets that stdio's own writes put wholly on disk after the last flush count too.
                let whole = unflushedPacketEnds.prefix { $0 <= size }
                flushedPcapPackets += whole.count
                flushedPcapBytes = whole.last ?? (size >= 24 ? max(flushedPcapBytes, 24) : flushedPcapBytes)
                unflushedPacketEnds.removeAll()
                _ = ftruncate(descriptor, off_t(flushedPcapBytes))
                closeDescriptor(descriptor)
            }
            self.dumper = nil
        }
        if let writer {
            do throws(TraceError) {
                try writer.flush()
                try? writer.close()  // a gzip trailer that does not fit leaves a truncated stream, its records readable
            } catch {
                try? writer.truncateToFlushed()  // never closed: a gzip trailer after the cut would corrupt the stream
            }
            closedTraceRecords = writer.flushedRecordCount
            self.writer = nil
        }
    }

    /// After a failed write, a file that holds nothing (not even its header) is removed and not listed.
    func forgetEmptyAfterFailure(_ listed: inout [String]) {
        for path in paths {
            var info = stat()
            guard stat(path, &info) == 0, info.st_size == 0 else { continue }
            unlink(path)
            listed.removeAll { $0 == path }
        }
    }

    /// For deinit: closes whatever is still open, ignoring errors (run reports them).
    mutating func abandon() {
        if let dumper { pcap_dump_close(dumper) }
        dumper = nil
        writer = nil
    }
}

private func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }

/// Checks a -G template before capturing: names the first two periods that would get the
/// same file name (so the second would overwrite the first), within `horizonSeconds` from
/// `startSeconds`, or nil when every period's name differs. At most `maxPeriods` are tried.
package func firstRepeatedRotationName(template: String, periodSeconds: Int, startSeconds: Int64,
                                      horizonSeconds: Int64, maxPeriods: Int = 200_000) -> (name: String, first: Int64, again: Int64)? {
    guard periodSeconds > 0 else { return nil }
    var seen: [String: Int64] = [:]
    // The periods that start before the horizon ends: a capture of exactly a day at -G 600 opens 144 files.
    let periods = min(Int64(maxPeriods), max(1, (horizonSeconds + Int64(periodSeconds) - 1) / Int64(periodSeconds)))
    var k: Int64 = 0
    while k < periods {
        let instant = startSeconds + k * Int64(periodSeconds)
        let name = strftimeName(template, seconds: instant)
        if let first = seen[name] { return (name, first, instant) }
        seen[name] = instant
        k += 1
    }
    return nil
}

/// A rotated file's name: the template through strftime(3) in local time, as tcpdump -G names its files.
func strftimeName(_ template: String, seconds: Int64) -> String {
    var time = time_t(seconds)
    var parts = tm()
    localtime_r(&time, &parts)
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = strftime(&buffer, buffer.count, template, &parts)
    return count > 0 ? cText(buffer) : template
}

private func captureCallback(_ user: UnsafeMutablePointer<UInt8>?, _ header: UnsafePointer<pcap_pkthdr>?, _ bytes: UnsafePointer<UInt8>?) {
    guard let user, let header, let bytes else { return }
    Unmanaged<LiveCapture>.fromOpaque(UnsafeRawPointer(user)).takeUnretainedValue().handle(header: header, bytes: bytes)
}

/// What a capture saw.
package struct CaptureReport: Sendable, Equatable {
    /// Packets that passed the filter and were handed to the pcap writer (or decoded for the trace alone).
    package var packets = 0
    /// Packets that reached the pcap files, summed over rotated files: `packets` unless a write failed.
    package var pcapPacketsOnDisk = 0
    /// Records that reached the trace files, summed over rotated files.
    package var traceRecordsOnDisk = 0
    /// Every file written, in order (more than one pcap and trace when rotating).
    package var files: [String] = []
    /// Messages written to the trace, by direction (`c2h`, `h2c`): datagrams, or a byte stream's chunks.
    package var messages: [String: Int] = [:]
    /// A byte stream's `StreamEvent`s written to the trace, by name (`stream_start`, `stream_gap`, `stream_end`);
    /// for WebSocket sessions, their events (`websocket_close`, `websocket_error`).
    package var streamEvents: [String: Int] = [:]
    /// What the WebSocket session reader saw, for WebSocket sessions, once the capture has ended.
    package var webSocket: WebSocketSessionReader.Counts?
    /// A byte stream's reassembly counts (gaps, duplicates, …), once the capture has ended.
    package var reassembly: TCPReassembler.Counts?
    /// Packets not written to the trace, by reason.
    package var skipped: [String: Int] = [:]
    /// libpcap's pcap_stats: packets the kernel saw, dropped for lack of buffer, dropped by the interface.
    package var kernelReceived = 0
    package var kernelDropped = 0
    package var interfaceDropped = 0
    package init() {}

    /// "N of M packets reached the pcap files; R records reached the traces".
    package func onDiskSummary(captured: Int, pcap: Bool, trace: Bool) -> String {
        var parts: [String] = []
        if pcap { parts.append("\(pcapPacketsOnDisk) of \(captured) packets reached the pcap files") }
        if trace { parts.append("\(traceRecordsOnDisk) records reached the traces") }
        return parts.joined(separator: "; ") + " (each file cut back to its last whole packet or record)"
    }
}

/// A capture could not start or continue.
package struct CaptureError: Error, CustomStringConvertible, Sendable {
    package struct Code: Hashable, Sendable {
        package let name: String
        package init(_ name: String) { self.name = name }
        package static let permissionDenied = Code("permission_denied")
        package static let noSuchInterface = Code("no_such_interface")
        package static let badFilter = Code("bad_filter")
        package static let cannotCreate = Code("cannot_create")
        /// A rotation would have reused a name this capture already wrote.
        package static let wouldOverwrite = Code("would_overwrite")
        package static let io = Code("io")
        package static let other = Code("other")
    }

    package var code: Code
    package var description: String
    /// What the capture had done when it stopped on this error (a failed write or rotation).
    package var report: CaptureReport?
    package init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

func cText(_ chars: [CChar]) -> String {
    String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func cText(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
}
