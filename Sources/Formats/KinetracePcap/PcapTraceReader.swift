#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CPcap
import KinetraceTrace
import KinetraceWire

/// Per-reason counts of captured packets that became no record.
package struct PacketSkipCounts: Hashable, Sendable, CustomStringConvertible {
    private var counts = [Int](repeating: 0, count: PacketSkipReason.allCases.count)

    package init() {}

    package subscript(reason: PacketSkipReason) -> Int {
        get { counts[Self.index(reason)] }
        set { counts[Self.index(reason)] = newValue }
    }

    package var total: Int { counts.reduce(0, +) }

    /// The non-zero counts, in `PacketSkipReason.allCases` order.
    package var nonZero: [(reason: PacketSkipReason, count: Int)] {
        PacketSkipReason.allCases.compactMap { self[$0] > 0 ? ($0, self[$0]) : nil }
    }

    /// `not_udp 3, other_port 1`, or `none`.
    package var description: String {
        let parts = nonZero.map { "\($0.reason) \($0.count)" }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }

    private static func index(_ reason: PacketSkipReason) -> Int {
        switch reason {
        case .fragment: return 0
        case .notUDP: return 1
        case .notIP: return 2
        case .truncated: return 3
        case .unsupportedLinkType: return 4
        case .otherPort: return 5
        case .notTCP: return 6
        }
    }
}

/// Puts captured TCP segments back into stream order, for byte-stream
/// protocols: the reader hands it every segment to or from the host's port
/// and records the stream bytes it gives back, in order, as they become
/// available. One reassembler serves all of a capture's connections.
package protocol StreamReassembler {
    /// Takes one captured segment; returns the stream bytes it completes, in stream order.
    mutating func add(_ segment: TCPSegment) -> [StreamChunk]
    /// The capture ended: whatever can still be given.
    mutating func finish() -> [StreamChunk]
}

/// One captured TCP segment of one direction of a connection.
package struct TCPSegment: Hashable, Sendable {
    package var timeNs: Int64
    package var direction: Direction
    package var source: Endpoint
    package var destination: Endpoint
    package var sequence: UInt32
    /// FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10.
    package var flags: UInt8
    package var payload: [UInt8]

    package init(timeNs: Int64, direction: Direction, source: Endpoint, destination: Endpoint, sequence: UInt32, flags: UInt8,
                payload: [UInt8]) {
        self.timeNs = timeNs
        self.direction = direction
        self.source = source
        self.destination = destination
        self.sequence = sequence
        self.flags = flags
        self.payload = payload
    }
}

/// Stream bytes of one direction of a connection, in order, with what the
/// reassembler knows about where they lie: a chunk may also mark the start
/// of the direction, bytes missing before it, or its end, and then may hold
/// no bytes at all.
package struct StreamChunk: Hashable, Sendable {
    package var timeNs: Int64
    package var direction: Direction
    package var source: Endpoint
    package var destination: Endpoint
    package var bytes: [UInt8]
    /// Stream offset of `bytes[0]` (0 is the first byte after the SYN, or the first byte seen).
    package var offset: Int
    /// Set on a direction's first chunk: true when its SYN was seen, false when the capture began mid-stream.
    package var startedWithHandshake: Bool?
    /// Stream bytes never captured just before this chunk (0: none).
    package var missingBefore: Int
    /// Set on a direction's last chunk: how it ended.
    package var end: StreamEnd?

    package init(timeNs: Int64, direction: Direction, source: Endpoint, destination: Endpoint, bytes: [UInt8],
                offset: Int = 0, startedWithHandshake: Bool? = nil, missingBefore: Int = 0, end: StreamEnd? = nil) {
        self.timeNs = timeNs
        self.direction = direction
        self.source = source
        self.destination = destination
        self.bytes = bytes
        self.offset = offset
        self.startedWithHandshake = startedWithHandshake
        self.missingBefore = missingBefore
        self.end = end
    }

    /// The trace records the chunk stands for, in order: `stream_start`, `stream_gap`, the bytes, `stream_end`.
    package func records(into out: inout [TraceRecord]) {
        if let startedWithHandshake {
            out.append(.event(StreamEvent.start(source: source, destination: destination, handshake: startedWithHandshake).record(timeNs: timeNs)))
        }
        if missingBefore > 0 {
            out.append(.event(StreamEvent.gap(source: source, destination: destination, offset: offset - missingBefore,
                                              missingBytes: missingBefore).record(timeNs: timeNs)))
        }
        if !bytes.isEmpty {
            out.append(.message(MessageRecord(timeNs: timeNs, direction: direction, source: source, destination: destination,
                                              payload: bytes.withUnsafeBytes { Payload(copying: $0) })))
        }
        if let end {
            out.append(.event(StreamEvent.end(source: source, destination: destination, how: end,
                                              offset: offset + bytes.count).record(timeNs: timeNs)))
        }
    }
}

/// Reads a pcap or pcapng capture (through libpcap) as a stream of trace
/// message records: the protocol's UDP datagrams to or from `port`, or, for
/// a byte-stream protocol, the TCP stream bytes a `StreamReassembler` puts
/// back in order. With `CaptureCarrier.webSocket`, the TCP streams are plain
/// WebSocket sessions, read by a `WebSocketSessionReader` into one message per
/// WebSocket message and the events the host writes of them.
///
/// - Timestamps are read at nanosecond precision; microsecond files are scaled.
/// - Traffic to `port` is controller→host, from `port` host→controller.
/// - Everything else is skipped and counted by reason in `skipped`.
/// - A capture cut short (a killed tcpdump) reads up to its last whole packet
///   and sets `truncation`, whose `line` is the number of the cut packet.
package final class PcapTraceReader: TraceRecordSource {
    package let source: String
    package let header: TraceHeader
    package let wireProtocol: any WireProtocol
    /// What carries the protocol's messages: its own transport, or WebSocket sessions.
    package let carrier: CaptureCarrier
    /// The host's UDP or TCP port: given, inferred from the capture, or the protocol's default.
    package let port: UInt16
    /// How the port was found when none was given (nil when one was).
    package let portInference: PortInference?
    /// "host port 41448, inferred from 1860 valid motionlink-v1 messages sent to it", when the
    /// inferred port is not the protocol's default (the default goes without saying).
    package var readingNote: String? {
        guard let inference = portInference, let inferred = inference.inferredPort, inferred != wireProtocol.defaultPort else { return nil }
        let valid = inference.validByPort[inferred] ?? 0
        let first = inference.stoppedEarly ? "the first " : ""
        if carrier == .webSocket {
            return "\(source): host port \(inferred), inferred from \(first)\(valid) WebSocket upgrade\(valid == 1 ? "" : "s") it accepted"
                + " (the protocol's default is \(wireProtocol.defaultPort); --port chooses)"
        }
        return "\(source): host port \(inferred), inferred from \(first)\(valid) valid \(wireProtocol.id) message\(valid == 1 ? "" : "s") sent to it"
            + " (the protocol's default is \(wireProtocol.defaultPort); --port chooses)"
    }
    package let linkType: LinkType
    package let fileFormat: CaptureFileFormat
    package var truncation: TraceTruncation? { state.truncation }
    /// Packets read from the file so far.
    package var packetCount: Int { state.packetCount }
    /// Message records returned so far.
    package var recordCount: Int { state.recordCount }
    package var skipped: PacketSkipCounts { state.skipped }
    /// Every skipped packet: captures hold no record kinds this reader does not know, only packets it cannot use.
    package var unknownRecordCount: Int { skipped.total }

    private let handle: OpaquePointer
    // All mutable state in one struct behind a pointer: a class's stored
    // properties cost a dynamic exclusivity check on every access, which
    // showed up in profiles of the per-packet loop.
    private let statePointer: UnsafeMutablePointer<State>
    private var state: State { statePointer.pointee }

    private struct State {
        var decoder = PacketDecoder()
        let link: PacketDecoder.LinkLayer
        let transport: IPTransport
        /// Another reassembler, or nil when `tcp` (kept concrete, so the per-segment call is direct) does the work.
        var reassembler: (any StreamReassembler)?
        var tcp: TCPReassembler?
        /// The reassembler's output, and the records it stands for, waiting to be returned.
        var chunks: [StreamChunk] = []
        var queued: [TraceRecord] = []
        var queuedHead = 0
        var truncation: TraceTruncation?
        var packetCount = 0
        var recordCount = 0
        var skipped = PacketSkipCounts()
        /// File offset just after the last whole packet, for truncation reports.
        var offsetAfterLastPacket: Int
        var finished = false
        /// The file has ended and `tcp` is ending its directions one at a time (`finishNext`).
        var finishingStreams = false
        /// A pcapng's packet comments, read beside libpcap: labels and events written by `PcapWriter`.
        var comments: PcapngCommentWalker? = nil
        var wireProtocol: (any WireProtocol)? = nil
        /// With `CaptureCarrier.webSocket`: reads the chunks `tcp` gives as WebSocket sessions.
        var webSocket: WebSocketSessionReader? = nil
    }

    /// Opens the capture at `path`, holding `wireProtocol`'s traffic to and from the host at
    /// `port` (nil: the protocol's default). A byte-stream protocol's segments go
    /// through `reassembler`, a `TCPReassembler` with the default limits when nil.
    /// `tool` goes into the header. With `carrier` `.webSocket` the protocol's messages are
    /// read from WebSocket sessions on TCP, whatever its own transport: the segments go through
    /// `reassembler` (which must then be a `TCPReassembler`) and a `WebSocketSessionReader` with
    /// `webSocketLimits`.
    package init(path: String, wireProtocol: any WireProtocol, port: UInt16? = nil, tool: String = "KinetracePcap",
                reassembler: (any StreamReassembler)? = nil, carrier: CaptureCarrier = .native,
                webSocketLimits: WebSocketSessionReader.Limits = WebSocketSessionReader.Limits()) throws(TraceError) {
        let reassembler = reassembler ?? (wireProtocol.transport == .byteStream || carrier == .webSocket ? TCPReassembler() : nil)
        precondition(carrier == .native || reassembler is TCPReassembler, "WebSocket sessions are read from a TCPReassembler's chunks")
        // Our own open first, so a missing or unreadable file gets the same error as for a trace.
        let format = try CaptureFileFormat(fileAt: path)
        var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let handle = pcap_open_offline_with_tstamp_precision(path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer) else {
            let reason = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw TraceError(.badHeader, source: path, byteOffset: 0, message: "not a readable pcap or pcapng file: \(reason)")
        }
        self.handle = handle
        self.source = path
        self.wireProtocol = wireProtocol
        self.carrier = carrier
        self.fileFormat = format
        self.linkType = LinkType(pcap_datalink(handle))
        if let port {
            self.port = port
            portInference = nil
        } else {
            let inference = PortInference(path: path, wireProtocol: wireProtocol, link: PacketDecoder.LinkLayer(linkType), carrier: carrier)
            self.port = inference.inferredPort ?? wireProtocol.defaultPort
            portInference = inference
        }
        self.statePointer = .allocate(capacity: 1)
        statePointer.initialize(to: State(link: PacketDecoder.LinkLayer(linkType), transport: carrier == .webSocket ? .tcp : IPTransport(wireProtocol.transport),
                                          reassembler: reassembler is TCPReassembler ? nil : reassembler,
                                          tcp: reassembler as? TCPReassembler, offsetAfterLastPacket: Self.fileOffset(handle) ?? 0,
                                          comments: format == .pcapng ? PcapngCommentWalker(path: path) : nil, wireProtocol: wireProtocol,
                                          webSocket: carrier == .webSocket ? WebSocketSessionReader(limits: webSocketLimits) : nil))
        var info = stat()
        let modified = stat(path, &info) == 0 ? Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) : 0
        header = TraceHeader(
            created: RFC3339.string(fromNanoseconds: modified), tool: tool, wireProtocol: wireProtocol, capturePoint: .network, clock: .pcap,
            notes: "read from \(path): \(format), link type \(linkType)" + (carrier == .webSocket ? ", WebSocket (ws://) sessions" : ""))
    }

    deinit {
        pcap_close(handle)
        statePointer.deinitialize(count: 1)
        statePointer.deallocate()
    }

    /// The next record: a message (for a byte-stream protocol, the stream
    /// bytes of one segment) or, for a byte-stream protocol, a `StreamEvent`
    /// (`stream_start`, `stream_gap`, `stream_end`); nil at the end (check `truncation` then).
    /// With `CaptureCarrier.webSocket`: a whole WebSocket message, or a `websocket_close` or
    /// `websocket_error` event (no stream events).
    package func next() throws(TraceError) -> TraceRecord? {
        while true {
            if let record = Self.dequeue(&statePointer.pointee) { return record }
            if let message = try Self.advance(&statePointer.pointee, handle: handle, port: port, fileFormat: fileFormat, source: source) {
                return .message(message)
            }
            if state.queuedHead == state.queued.count { try noMessagesCheck(); return nil }
        }
    }

    /// The next message, skipping stream events; nil at the end (check `truncation` then).
    package func nextMessage() throws(TraceError) -> MessageRecord? {
        while true {
            while let record = Self.dequeue(&statePointer.pointee) {
                if case .message(let message) = record { return message }
            }
            if let message = try Self.advance(&statePointer.pointee, handle: handle, port: port, fileFormat: fileFormat, source: source) {
                return message
            }
            if state.queuedHead == state.queued.count { try noMessagesCheck(); return nil }
        }
    }

    /// A capture that held none of the protocol's messages is an error, not an empty result:
    /// a run that read nothing must not pass (the usual cause is the host's port).
    private func noMessagesCheck() throws(TraceError) {
        guard state.recordCount == 0 else { return }
        if carrier == .webSocket { throw noWebSocketMessages() }
        let transport = IPTransport(wireProtocol.transport)
        // With --port given nothing was scanned; the ports are worth a scan now, to say where the traffic went.
        let inference = portInference ?? PortInference(path: source, wireProtocol: wireProtocol, link: state.link, settling: false)
        var why = "no \(wireProtocol.id) messages to or from \(transport) port \(port) in \(state.packetCount) packet\(state.packetCount == 1 ? "" : "s")"
        why += "; \(transport) ports seen: \(inference.portsSeen())"
        if let other = inference.inferredPort, other != port {
            why += "; valid \(wireProtocol.id) messages go to port \(other): give --port \(other)"
        } else if inference.inferredPort == nil {
            why += ", none of them carrying a valid \(wireProtocol.id) message"
            // The usual cause is the wrong protocol: try the others, and name the one that fits.
            for other in ProtocolRegistry.standard.protocols where other.id != wireProtocol.id {
                let found = PortInference(path: source, wireProtocol: other, link: state.link, settling: false)
                if let otherPort = found.inferredPort {
                    why += "; they are \(other.id) messages on \(IPTransport(other.transport)) port \(otherPort): give --protocol \(other.id)"
                        + (otherPort == other.defaultPort ? "" : " --port \(otherPort)")
                    break
                }
            }
        }
        throw TraceError(.noMessages, source: source, message: why)
    }

    @inline(__always)
    private static func dequeue(_ state: inout State) -> TraceRecord? {
        guard state.queuedHead < state.queued.count else { return nil }
        let record = state.queued[state.queuedHead]
        state.queuedHead += 1
        if case .message = record { state.recordCount += 1 }
        return record
    }

    /// What the TCP reassembler saw and did, when it is a `TCPReassembler`.
    package var reassemblyCounts: TCPReassembler.Counts? { state.tcp?.counts }
    /// What the WebSocket session reader saw, with `CaptureCarrier.webSocket`.
    package var webSocketCounts: WebSocketSessionReader.Counts? { state.webSocket?.counts }

    /// The error for a WebSocket capture that gave no message: where the upgrades went, and what could not be read.
    private func noWebSocketMessages() -> TraceError {
        let inference = portInference ?? PortInference(path: source, wireProtocol: wireProtocol, link: state.link, settling: false, carrier: .webSocket)
        var why = "no WebSocket messages to or from TCP port \(port) in \(state.packetCount) packet\(state.packetCount == 1 ? "" : "s")"
        why += "; TCP ports seen: \(inference.portsSeen())"
        if let counts = state.webSocket?.counts {
            why += "; \(counts.upgradeRequests) upgrade request\(counts.upgradeRequests == 1 ? "" : "s") and \(counts.upgradesAccepted) accepted at port \(port)"
        }
        if let first = state.webSocket?.firstError {
            why += "; \(state.webSocket!.counts.errors) websocket_error event\(state.webSocket!.counts.errors == 1 ? "" : "s"), the first: \(first)"
        }
        if let other = inference.inferredPort, other != port {
            why += "; WebSocket upgrades are accepted from port \(other): give --port \(other)"
        } else if inference.inferredPort == nil {
            // Perhaps the protocol's own transport carries it.
            let native = PortInference(path: source, wireProtocol: wireProtocol, link: state.link, settling: false)
            if let nativePort = native.inferredPort {
                why += "; the capture holds \(wireProtocol.id) messages on its own transport, \(IPTransport(wireProtocol.transport)) port \(nativePort): leave out --transport ws"
            }
        }
        return TraceError(.noMessages, source: source, message: why)
    }

    /// Reads packets until one gives a datagram message (returned) or stream
    /// records (queued; nil returned), or the file ends (nil, nothing queued).
    private static func advance(_ state: inout State, handle: OpaquePointer, port: UInt16,
                                fileFormat: CaptureFileFormat, source: String) throws(TraceError) -> MessageRecord? {
        var headerPointer: UnsafeMutablePointer<pcap_pkthdr>?
        var dataPointer: UnsafePointer<UInt8>?
        while true {
            if !state.chunks.isEmpty {
                state.queued.removeAll(keepingCapacity: true)
                state.queuedHead = 0
                if state.webSocket != nil {
                    for chunk in state.chunks { state.webSocket!.take(chunk, into: &state.queued) }
                } else {
                    for chunk in state.chunks { chunk.records(into: &state.queued) }
                }
                state.chunks.removeAll(keepingCapacity: true)
                if !state.queued.isEmpty { return nil }
                continue
            }
            guard !state.finished else {
                if state.finishingStreams, state.tcp!.finishNext(into: &state.chunks) { continue }
                return nil
            }
            let status = pcap_next_ex(handle, &headerPointer, &dataPointer)
            guard status == 1, let packetHeader = headerPointer?.pointee, let data = dataPointer else {
                state.finished = true
                if status != PCAP_ERROR_BREAK { try failOrTruncate(&state, handle: handle, source: source) }  // else end of file
                if state.tcp != nil {
                    state.finishingStreams = true
                } else if state.reassembler != nil {
                    state.chunks = state.reassembler!.finish()
                }
                continue
            }
            state.packetCount += 1
            if fileFormat == .pcapng, let offset = fileOffset(handle) {
                state.offsetAfterLastPacket = offset
            } else {
                state.offsetAfterLastPacket += 16 + Int(packetHeader.caplen)
            }
            // A packet's comments (labels and events in a pcapng kinetrace wrote) come out with it,
            // those stamped no later than the packet before its message and the rest after.
            let packetTimeNs = Self.nanoseconds(seconds: Int64(packetHeader.ts.tv_sec), nanoseconds: Int64(packetHeader.ts.tv_usec))
            var commentRecords: [TraceRecord] = []
            if let walker = state.comments, let wireProtocol = state.wireProtocol {
                commentRecords = walker.nextPacketComments().compactMap {
                    PcapngCommentWalker.record($0, packetTimeNs: packetTimeNs ?? 0, wireProtocol: wireProtocol)
                }
            }
            func queueComments(around message: MessageRecord?) -> Bool {
                guard !commentRecords.isEmpty else { return false }
                let at = packetTimeNs ?? 0
                state.queued.removeAll(keepingCapacity: true)
                state.queuedHead = 0
                state.queued += commentRecords.filter { $0.timeNs <= at }
                if let message { state.queued.append(.message(message)) }
                state.queued += commentRecords.filter { $0.timeNs > at }
                return true
            }
            let packet = UnsafeRawBufferPointer(start: data, count: Int(packetHeader.caplen))
            let location: TransportLocation
            switch PacketDecoder.locate(in: packet, link: state.link, transport: state.transport) {
            case .skipped(let reason):
                state.skipped[reason] += 1
                if queueComments(around: nil) { return nil }
                continue
            case .found(let found):
                location = found
            }
            guard let direction = Direction(sourcePort: location.sourcePort, destinationPort: location.destinationPort, hostPort: port) else {
                state.skipped[.otherPort] += 1
                if queueComments(around: nil) { return nil }
                continue
            }
            let (sourceEndpoint, destinationEndpoint) = state.decoder.endpoints(of: location, in: packet)
            let bytes = UnsafeRawBufferPointer(rebasing: packet[location.payloadOffset..<location.payloadOffset + location.payloadCount])
            // With nanosecond precision requested, tv_usec holds nanoseconds. A pcapng stamp is 64 bits
            // of any unit, so a hostile one can name a time no nanosecond clock holds.
            guard let timeNs = packetTimeNs else {
                throw TraceError(.badRecord, source: source, message: "packet \(state.packetCount): timestamp \(packetHeader.ts.tv_sec) s \(packetHeader.ts.tv_usec) ns is outside what a trace holds, \(TraceRecord.timeRangeText)")
            }
            if location.transport == .tcp {
                let segment = TCPSegment(timeNs: timeNs, direction: direction, source: sourceEndpoint, destination: destinationEndpoint,
                                         sequence: location.sequence, flags: location.flags, payload: Array(bytes))
                if state.tcp != nil {
                    state.tcp!.add(segment, into: &state.chunks)
                } else {
                    state.chunks = state.reassembler!.add(segment)
                }
                if queueComments(around: nil) { return nil }  // the segment's chunks follow on the next call
                continue
            }
            // Inline for small payloads: no allocation per record.
            let payload = Payload(copying: bytes)
            let message = MessageRecord(timeNs: timeNs, direction: direction, source: sourceEndpoint,
                                        destination: destinationEndpoint, payload: payload)
            if queueComments(around: message) { return nil }  // counted as it is dequeued
            state.recordCount += 1
            return message
        }
    }

    /// Seconds and nanoseconds since the epoch as one count of nanoseconds, when a trace can hold it.
    static func nanoseconds(seconds: Int64, nanoseconds: Int64) -> Int64? {
        guard seconds >= 0, (0..<1_000_000_000).contains(nanoseconds) else { return nil }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        let (total, carry) = whole.addingReportingOverflow(nanoseconds)
        return carry || !TraceRecord.timeRangeNs.contains(total) ? nil : total
    }

    /// A read error: a file that simply ends inside a packet is a truncation
    /// (what a killed capture leaves); anything else is corrupt data.
    private static func failOrTruncate(_ state: inout State, handle: OpaquePointer, source: String) throws(TraceError) {
        let reason = String(cString: pcap_geterr(handle))
        let packetNumber = state.packetCount + 1
        let offset = state.offsetAfterLastPacket
        if reason.hasPrefix("truncated") {
            let size = fileSize(handle) ?? offset
            state.truncation = TraceTruncation(line: packetNumber, byteOffset: offset, droppedBytes: max(0, size - offset), unit: "packet")
            return
        }
        throw TraceError(.badRecord, source: source, byteOffset: offset, message: "packet \(packetNumber): \(reason)")
    }

    private static func fileOffset(_ handle: OpaquePointer) -> Int? {
        guard let file = pcap_file(handle) else { return nil }
        let offset = ftello(file)
        return offset >= 0 ? Int(offset) : nil
    }

    private static func fileSize(_ handle: OpaquePointer) -> Int? {
        guard let file = pcap_file(handle) else { return nil }
        var info = stat()
        return fstat(fileno(file), &info) == 0 ? Int(info.st_size) : nil
    }
}

extension Direction {
    /// The direction of a datagram or segment relative to the host's port:
    /// to it is controller→host, from it host→controller, else not the protocol's.
    package init?(sourcePort: UInt16, destinationPort: UInt16, hostPort: UInt16) {
        if destinationPort == hostPort {
            self = .controllerToHost
        } else if sourcePort == hostPort {
            self = .hostToController
        } else {
            return nil
        }
    }
}
