import KinetraceJSON
import KinetraceWire

/// The first line of a trace (specs/trace-v1.md, TR-HEADER-*).
package struct TraceHeader: Hashable, Sendable {
    package static let formatName = "kinetrace-trace"
    /// The major version this library reads and writes.
    package static let currentMajor = 1
    /// The minor version this library writes; readers accept any minor. Minor 2: byte-stream
    /// chunks carry no verdict (TR-MSG-4), and a declared protocol's declaration rides in the header (TR-HEADER-8).
    package static let currentMinor = 2

    package var major: Int
    package var minor: Int
    /// RFC 3339 UTC time the trace was created.
    package var created: String
    /// The writing tool and its version, e.g. `kinetrace 0.1.0`.
    package var tool: String
    /// The wire protocol of the messages. Written as the header member
    /// "profile" (its name before "protocol" became the word for it), so every
    /// trace ever written still reads; readers also accept "protocol".
    package var protocolID: ProtocolID
    package var capturePoint: CapturePoint
    /// Which clock `t_ns` comes from.
    package var clock: ClockSource
    package var notes: String
    /// The declaration of a protocol declared in a file (TR-HEADER-8): written as its canonical
    /// text and digest, so the trace reads anywhere without the file; nil for a compiled protocol.
    package var declaration: ProtocolDeclaration?
    /// Header fields this version does not know, kept so a rewrite loses nothing.
    package var extra: [String: JSONValue]

    package init(created: String, tool: String, protocolID: ProtocolID = ProtocolRegistry.defaultID,
                capturePoint: CapturePoint, clock: ClockSource, notes: String = "",
                extra: [String: JSONValue] = [:]) {
        self.major = Self.currentMajor
        self.minor = Self.currentMinor
        self.created = created
        self.tool = tool
        self.protocolID = protocolID
        self.capturePoint = capturePoint
        self.clock = clock
        self.notes = notes
        self.extra = extra
    }

    /// A header for `wireProtocol`'s messages: its name, and its declaration when it was declared.
    package init(created: String, tool: String, wireProtocol: any WireProtocol, capturePoint: CapturePoint, clock: ClockSource,
                notes: String = "", extra: [String: JSONValue] = [:]) {
        self.init(created: created, tool: tool, protocolID: wireProtocol.id, capturePoint: capturePoint, clock: clock, notes: notes, extra: extra)
        declaration = wireProtocol.declaration
    }

    package static func == (a: TraceHeader, b: TraceHeader) -> Bool {
        a.major == b.major && a.minor == b.minor && a.created == b.created && a.tool == b.tool && a.protocolID == b.protocolID
            && a.capturePoint == b.capturePoint && a.clock == b.clock && a.notes == b.notes && a.extra == b.extra
            && a.declaration?.digest == b.declaration?.digest
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(protocolID)
        hasher.combine(created)
        hasher.combine(declaration?.digest)
    }
}

/// Where the recorded traffic was observed.
package struct CapturePoint: Hashable, Sendable, CustomStringConvertible {
    package let name: String
    package init(_ name: String) { self.name = name }
    package var description: String { name }

    /// At the host's socket (what the host received and sent).
    package static let host = CapturePoint("host")
    /// At a controller's socket.
    package static let controller = CapturePoint("controller")
    /// On the wire, by a packet capture.
    package static let network = CapturePoint("network")
    /// Not observed: generated offline by a model.
    package static let synthetic = CapturePoint("synthetic")
}

/// The clock behind record timestamps.
package struct ClockSource: Hashable, Sendable, CustomStringConvertible {
    package let name: String
    package init(_ name: String) { self.name = name }
    package var description: String { name }

    /// CLOCK_REALTIME of the recording machine.
    package static let realtime = ClockSource("realtime")
    /// Kernel packet timestamps from libpcap.
    package static let pcap = ClockSource("pcap")
    /// A model's clock (synthetic traces).
    package static let model = ClockSource("model")
}
