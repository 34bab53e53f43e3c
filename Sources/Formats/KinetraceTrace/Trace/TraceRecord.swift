import KinetraceJSON
import KinetraceWire

/// One line after the header (specs/trace-v1.md, TR-RECORD-*).
package enum TraceRecord: Hashable, Sendable {
    case message(MessageRecord)
    case label(LabelRecord)
    case event(EventRecord)
    /// A device-motion sample (minor version 1).
    case motion(MotionSampleRecord)

    /// The capture times a trace may hold (TR-RECORD-2): from the epoch to 2^62 ns, early in 2116.
    /// Bounded so that any span, sum or shift of times an engine computes stays within Int64.
    package static let timeRangeNs: Range<Int64> = 0..<(1 << 62)
    package static let timeRangeText = "0 to 4611686018427387903 ns (1970-01-01 to 2116-02-20)"

    /// Capture time, integer nanoseconds since the UNIX epoch.
    package var timeNs: Int64 {
        switch self {
        case .message(let m): return m.timeNs
        case .label(let l): return l.timeNs
        case .event(let e): return e.timeNs
        case .motion(let m): return m.timeNs
        }
    }
}

/// A wire message as observed. The payload is the truth: decoded fields and
/// the validity verdict in the file are derived from it, and readers derive
/// them again rather than trusting the file.
package struct MessageRecord: Hashable, Sendable {
    package var timeNs: Int64
    package var direction: Direction
    package var source: Endpoint
    package var destination: Endpoint
    package var payload: Payload
    /// Round-trip time measured by the recorder's own clock, when it knows one
    /// (a controller recording the ack to its frame).
    package var rttNs: Int64?
    /// Set by a framing reader when these bytes cannot be trusted as a message
    /// whatever they hold: bytes of a captured stream were missing before or
    /// inside them (code `stream_gap`). Never written to a trace: the gap is.
    package var framingError: WireError? {
        get { framingErrorBox?.error }
        set { framingErrorBox = newValue.map(FramingErrorBox.init) }
    }
    /// Boxed: it is rare, and inline its 40 bytes would be copied with every record (a record is
    /// copied a few dozen times between a reader, its batches and an analysis).
    private var framingErrorBox: FramingErrorBox?

    package init(timeNs: Int64, direction: Direction, source: Endpoint, destination: Endpoint,
                payload: [UInt8], rttNs: Int64? = nil) {
        self.init(timeNs: timeNs, direction: direction, source: source, destination: destination,
                  payload: Payload(payload), rttNs: rttNs)
    }

    package init(timeNs: Int64, direction: Direction, source: Endpoint, destination: Endpoint,
                payload: Payload, rttNs: Int64? = nil) {
        self.timeNs = timeNs
        self.direction = direction
        self.source = source
        self.destination = destination
        self.payload = payload
        self.rttNs = rttNs
    }

    /// What the engines need of the payload, under `wireProtocol` (invalid when framing says so).
    package func facts(_ wireProtocol: any WireProtocol) -> MessageFacts {
        if let framingError { return MessageFacts(invalid: framingError) }
        return payload.withUnsafeBytes { wireProtocol.facts($0) }
    }

    /// The payload decoded as one of `P`'s messages, or why it is not one.
    package func decoded<P: WireProtocol>(as wireProtocol: P) -> Result<P.Message, WireError> {
        payload.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try wireProtocol.decode(raw)) } catch { return .failure(error) }
        }
    }

    /// The controller this message belongs to: its source when sent by a
    /// controller, its destination when sent by the host.
    package var controller: Endpoint { direction == .controllerToHost ? source : destination }
}

/// Ground truth: a gesture a controller performed, for regression tests.
package struct LabelRecord: Hashable, Sendable {
    package var timeNs: Int64
    package var controller: Endpoint?
    /// `jump`, `duck`, `tilt_left`, … (free text; see the spec's list).
    package var gesture: String
    /// The frame timestamp (`t_ms`) at which the gesture starts, if known.
    package var senderTimeMs: UInt64?
    package var durationMs: UInt64?

    package init(timeNs: Int64, controller: Endpoint?, gesture: String, senderTimeMs: UInt64? = nil, durationMs: UInt64? = nil) {
        self.timeNs = timeNs
        self.controller = controller
        self.gesture = gesture
        self.senderTimeMs = senderTimeMs
        self.durationMs = durationMs
    }
}

/// Something a tool did or decided (an impairment, a seed, a phase change).
package struct EventRecord: Hashable, Sendable {
    package var timeNs: Int64
    package var event: String
    package var data: [String: JSONValue]

    package init(timeNs: Int64, event: String, data: [String: JSONValue] = [:]) {
        self.timeNs = timeNs
        self.event = event
        self.data = data
    }
}

/// One device-motion sample as the phone's motion API delivers it, at its own
/// rate (typically 50–100 Hz), richer than the 10 Hz wire frames: user
/// acceleration and gravity in g, rotation rate in rad/s, attitude as a unit
/// quaternion (w, x, y, z).
package struct MotionSampleRecord: Hashable, Sendable {
    package var timeNs: Int64
    package var controller: Endpoint
    /// The sample's time on the controller's clock, ms since the epoch (as frames' `t_ms`).
    package var senderTimeMs: UInt64
    package var userAcceleration: Vector3
    package var rotationRate: Vector3
    package var gravity: Vector3?
    package var attitude: Attitude?

    package struct Attitude: Hashable, Sendable {
        package var w: Double, x: Double, y: Double, z: Double
        package init(w: Double, x: Double, y: Double, z: Double) {
            self.w = w
            self.x = x
            self.y = y
            self.z = z
        }
    }

    package init(timeNs: Int64, controller: Endpoint, senderTimeMs: UInt64, userAcceleration: Vector3, rotationRate: Vector3,
                gravity: Vector3? = nil, attitude: Attitude? = nil) {
        self.timeNs = timeNs
        self.controller = controller
        self.senderTimeMs = senderTimeMs
        self.userAcceleration = userAcceleration
        self.rotationRate = rotationRate
        self.gravity = gravity
        self.attitude = attitude
    }
}

/// A framing error, behind a reference so a record without one carries 8 bytes for it.
private final class FramingErrorBox: Hashable, Sendable {
    let error: WireError
    init(_ error: WireError) { self.error = error }
    static func == (a: FramingErrorBox, b: FramingErrorBox) -> Bool { a.error == b.error }
    func hash(into hasher: inout Hasher) { hasher.combine(error) }
}
