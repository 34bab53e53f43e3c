import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// What a file's first four bytes say it is.
package enum CaptureFileFormat: Hashable, Sendable, CustomStringConvertible {
    /// Classic pcap; `nanosecond` for magic 0xA1B23C4D, `bigEndian` when written by a big-endian host.
    case pcap(nanosecond: Bool, bigEndian: Bool)
    case pcapng
    /// Anything else: read as a kinetrace trace.
    case trace

    /// Classifies a file by its first bytes (at least 4, else it is a trace).
    package init(magic bytes: some Collection<UInt8>) {
        guard bytes.count >= 4 else { self = .trace; return }
        let b = Array(bytes.prefix(4))
        let littleEndian = UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
        switch littleEndian {
        case 0xA1B2_C3D4, 0xA1B2_CD34: self = .pcap(nanosecond: false, bigEndian: false)  // CD34: Kuznetzov's modified pcap
        case 0xD4C3_B2A1, 0x34CD_B2A1: self = .pcap(nanosecond: false, bigEndian: true)
        case 0xA1B2_3C4D: self = .pcap(nanosecond: true, bigEndian: false)
        case 0x4D3C_B2A1: self = .pcap(nanosecond: true, bigEndian: true)
        case 0x0A0D_0D0A: self = .pcapng
        default: self = .trace
        }
    }

    /// Reads the first bytes of the file at `path`.
    package init(fileAt path: String) throws(TraceError) {
        let magic = UnsafeMutableRawBufferPointer.allocate(byteCount: 4, alignment: 4)
        defer { magic.deallocate() }
        var filled = 0
        do throws(FileError) {
            let file = try POSIXFile(path: path, mode: .read)
            while filled < 4 {
                let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: magic[filled...]))
                if n == 0 { break }
                filled += n
            }
            try file.close()
        } catch {
            throw TraceError(error)
        }
        self.init(magic: Array(magic.prefix(filled)))
    }

    package var isCapture: Bool { self != .trace }

    /// `pcap`, `pcapng` or `trace`.
    package var name: String {
        switch self {
        case .pcap: return "pcap"
        case .pcapng: return "pcapng"
        case .trace: return "trace"
        }
    }

    /// `pcap (microsecond timestamps, big-endian)`, `pcapng`, `trace`.
    package var description: String {
        switch self {
        case .pcap(let nanosecond, let bigEndian):
            return "pcap (\(nanosecond ? "nanosecond" : "microsecond") timestamps, \(bigEndian ? "big" : "little")-endian)"
        case .pcapng: return "pcapng"
        case .trace: return "trace"
        }
    }
}

/// Opens any input the commands accept: a kinetrace trace, a pcap or a pcapng.
package enum TraceInput {
    /// Sniffs the file's magic and returns a `PcapTraceReader` for captures or a
    /// `TraceReader` otherwise, framed into messages when the protocol is a byte
    /// stream (unless `framed` is false: its records as stored).
    ///
    /// - Parameters:
    ///   - wireProtocol: the protocol a capture holds (a capture names none), and the one a
    ///     trace must be when given; nil takes a trace's from its header and a capture's
    ///     from `registry`'s default.
    ///   - port: the host's port in a capture, to tell direction; nil is the protocol's default.
    ///   - carrier: what carries the messages in a capture: the protocol's own transport, or
    ///     WebSocket sessions. A trace's records are messages already: `.webSocket` for a trace is an error.
    package static func open(path: String, wireProtocol: (any WireProtocol)? = nil, port: UInt16? = nil,
                            registry: ProtocolRegistry = .standard, framed: Bool = true,
                            carrier: CaptureCarrier = .native, window: TraceWindow? = nil) throws(TraceError) -> any TraceRecordSource {
        let format = try CaptureFileFormat(fileAt: path)
        let window = window.flatMap { $0.isEverything ? nil : $0 }
        let source: any TraceRecordSource
        if format == .trace, try MCAPTraceReader.hasMagic(path: path) {
            guard carrier == .native else {
                throw TraceError(.badHeader, source: path, byteOffset: 0,
                                 message: "a trace, whose records are messages already: WebSocket sessions are read from a pcap or pcapng")
            }
            var registry = registry
            if let wireProtocol { registry.register(wireProtocol) }
            // Peek at the protocol first: a byte stream's window applies after framing, so its chunks are not cut.
            let reader = try MCAPTraceReader(path: path, registry: registry, window: window)
            if reader.wireProtocol.transport == .byteStream, window != nil {
                source = try MCAPTraceReader(path: path, registry: registry)
            } else {
                source = reader
            }
            try checkProtocol(source.header, given: wireProtocol, path: path)
            let framedSource = framed && source.wireProtocol.transport == .byteStream ? FramingRecordSource(source) : source
            if let window, source.wireProtocol.transport == .byteStream { return WindowedRecordSource(framedSource, window: window) }
            return framedSource
        } else if format.isCapture {
            let chosen = wireProtocol ?? registry[ProtocolRegistry.defaultID]!
            source = try PcapTraceReader(path: path, wireProtocol: chosen, port: port,
                                         reassembler: chosen.transport == .byteStream || carrier == .webSocket ? TCPReassembler() : nil,
                                         carrier: carrier)
        } else {
            guard carrier == .native else {
                throw TraceError(.badHeader, source: path, line: 1, byteOffset: 0,
                                 message: "a trace, whose records are messages already: WebSocket sessions are read from a pcap or pcapng")
            }
            // A protocol given by name or file reads a trace of a compiled protocol of that name (so a
            // declaration can be tried on old traces); a trace that embeds a declaration reads by it.
            var registry = registry
            if let wireProtocol { registry.register(wireProtocol) }
            let reader = try TraceReader(path: path, registry: registry)
            try checkProtocol(reader.header, given: wireProtocol, path: path)
            source = reader
        }
        let framedSource = framed && source.wireProtocol.transport == .byteStream ? FramingRecordSource(source) : source
        return window.map { WindowedRecordSource(framedSource, window: $0) } ?? framedSource
    }

    /// A trace must hold the protocol `--protocol` names, and embed the same declaration if it embeds one.
    private static func checkProtocol(_ header: TraceHeader, given wireProtocol: (any WireProtocol)?, path: String) throws(TraceError) {
        if let wireProtocol, wireProtocol.id != header.protocolID {
            throw TraceError(.protocolMismatch, source: path, line: 1, byteOffset: 0,
                             message: "the trace holds \(header.protocolID) traffic, not \(wireProtocol.id) as --protocol says")
        }
        if let wireProtocol, let embedded = header.declaration, let given = wireProtocol.declaration, embedded.digest != given.digest {
            throw TraceError(.protocolMismatch, source: path, line: 1, byteOffset: 0,
                             message: "the trace embeds a declaration of \(wireProtocol.id) (\(embedded.digest)) that differs from --protocol's (\(given.digest))")
        }
    }
}
