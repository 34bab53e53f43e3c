import KinetraceJSON
import KinetraceWire

/// How trace records become MCAP messages (docs/guide/mcap.md has the table):
/// one channel per record kind, a message's channel also by its protocol's
/// message kind, every channel's schema a ROS 1 message definition (`ros1msg`)
/// so viewers and `mcap_ros1` decode the fields with no Kinetrace code.
/// A record's time is the message's `log_time` (and `publish_time`).
enum MCAPRecordKind: String {
    case message = "msg", label, event, motion
}

/// A channel as the writer declares it.
struct MCAPChannelLayout: Hashable {
    var kind: MCAPRecordKind
    var topic: String
    var schemaName: String
    var schemaText: String

    /// The metadata key on every channel that names its record kind, which is how a reader knows it.
    static let recordKey = "kinetrace_record"

    static let label = MCAPChannelLayout(kind: .label, topic: "/label", schemaName: "kinetrace/Label", schemaText: """
        # Ground truth: a gesture a controller performed. Optional fields have a has_ flag.
        bool has_controller
        string controller
        string gesture
        bool has_sender_time
        uint64 sender_time_ms
        bool has_duration
        uint64 duration_ms

        """)

    static let event = MCAPChannelLayout(kind: .event, topic: "/event", schemaName: "kinetrace/Event", schemaText: """
        # Something a tool did or decided; data is a JSON object.
        string event
        string data_json

        """)

    static let motion = MCAPChannelLayout(kind: .motion, topic: "/motion", schemaName: "kinetrace/Motion", schemaText: """
        # A device-motion sample: acceleration and gravity in g, rotation rate in rad/s, attitude a unit quaternion.
        string controller
        uint64 sender_time_ms
        float64 user_accel_x
        float64 user_accel_y
        float64 user_accel_z
        float64 rotation_rate_x
        float64 rotation_rate_y
        float64 rotation_rate_z
        bool has_gravity
        float64 gravity_x
        float64 gravity_y
        float64 gravity_z
        bool has_attitude
        float64 attitude_w
        float64 attitude_x
        float64 attitude_y
        float64 attitude_z

        """)

    /// Every message channel's first fields; a reader needs only these (the payload is the truth).
    static let messagePrefix = """
        # A wire message (the payload is the truth; fields after it are derived). direction: 0 controller to host, 1 host to controller.
        uint8 direction
        string src
        string dst
        uint8[] payload
        bool has_rtt
        int64 rtt_ns

        """

    /// A byte stream's chunk of a connection: no kind, verdict or fields (TR-MSG-4).
    static let streamChunk = MCAPChannelLayout(kind: .message, topic: "/chunk", schemaName: "kinetrace/Chunk", schemaText: messagePrefix)

    /// A datagram's channel: its verdict, then the fields its protocol decodes, in the protocol's order.
    static func message(kind: String?, fields signature: String, copy: Int) -> MCAPChannelLayout {
        let base = kind.map { "/msg/\($0)" } ?? "/msg"
        let typeName = kind.map { "kinetrace/Message_\($0)" } ?? "kinetrace/Message"
        return MCAPChannelLayout(kind: .message, topic: copy == 0 ? base : "\(base)_\(copy + 1)",
                                 schemaName: copy == 0 ? typeName : "\(typeName)_\(copy + 1)",
                                 schemaText: messagePrefix + "bool valid\nstring reason\n" + signature)
    }
}

/// Collects what a protocol's `describe` says of one message: its kind, the field
/// list as ROS 1 definition lines, and the values in ROS 1 serialisation.
struct MCAPDecodedFields: DecodedFieldVisitor {
    /// A field's ROS 1 type.
    enum FieldType: UInt8 {
        case uint64, uint32, int64, float32, float64, string
        var name: String { ["uint64", "uint32", "int64", "float32", "float64", "string"][Int(rawValue)] }
    }

    var kind: String?
    /// The fields in order; names are the protocol's own strings, so keeping them costs no copy of their text.
    var fields: [(name: String, type: FieldType)] = []
    var values = MCAPOutput()

    mutating func reset() {
        kind = nil
        fields.removeAll(keepingCapacity: true)
        values.bytes.removeAll(keepingCapacity: true)
    }

    /// The fields as ROS 1 definition lines: built only when a new channel is declared.
    var signature: String { fields.map { "\($0.type.name) \($0.name)\n" }.joined() }

    func sameShape(_ other: [(name: String, type: FieldType)]) -> Bool {
        fields.count == other.count && zip(fields, other).allSatisfy { $0.type == $1.type && $0.name == $1.name }
    }

    mutating func kind(_ name: String) { kind = name }
    mutating func field(_ name: String, _ value: UInt64) { fields.append((name, .uint64)); values.u64(value) }
    mutating func field(_ name: String, _ value: UInt32) { fields.append((name, .uint32)); values.u32(value) }
    mutating func field(_ name: String, _ value: Int64) { fields.append((name, .int64)); values.i64(value) }
    mutating func field(_ name: String, _ value: Float32) { fields.append((name, .float32)); values.f32(value) }
    mutating func field(_ name: String, _ value: Double) { fields.append((name, .float64)); values.f64(value) }
    mutating func field(_ name: String, _ value: String) { fields.append((name, .string)); values.string(value) }
}

/// Turns the data of a channel's message back into a record: the reader's side of the layout.
/// Every value is range-checked as the JSON Lines reader checks it; a failure names the byte within the message.
struct MCAPRecordDecoder {
    struct Failure: Error {
        var offset: Int
        var message: String
    }

    /// 4,096 slots (about 300 KB): a stadium's controllers stay parsed, where 256 would thrash.
    var endpoints = EndpointCache(slots: 4096, maximum: 4096)

    mutating func record(_ kind: MCAPRecordKind, timeNs: Int64, data: UnsafeRawBufferPointer) throws(Failure) -> TraceRecord {
        var input = MCAPInput(data)
        func fail(_ what: String) -> Failure { Failure(offset: input.offset, message: what) }
        switch kind {
        case .message:
            guard let directionCode = input.u8() else { throw fail("the message ends before its direction") }
            guard directionCode <= 1 else { throw fail("direction must be 0 (controller to host) or 1 (host to controller), found \(directionCode)") }
            let source = try endpoint(&input, "src")
            let destination = try endpoint(&input, "dst")
            guard let payload = input.prefixed() else { throw fail("the payload runs past the end of the message") }
            guard let hasRTT = input.bool(), let rtt = input.i64() else { throw fail("the message ends before rtt_ns, or has_rtt is not 0 or 1") }
            return .message(MessageRecord(timeNs: timeNs, direction: directionCode == 0 ? .controllerToHost : .hostToController,
                                          source: source, destination: destination, payload: Payload(copying: payload),
                                          rttNs: hasRTT ? rtt : nil))
        case .label:
            guard let hasController = input.bool() else { throw fail("has_controller must be 0 or 1") }
            let controller = hasController ? try endpoint(&input, "controller") : try skipString(&input, "controller")
            guard let gesture = input.string() else { throw fail("the gesture is not a UTF-8 string within the message") }
            guard let hasSenderTime = input.bool(), let senderTime = input.u64(),
                  let hasDuration = input.bool(), let duration = input.u64() else {
                throw fail("the label ends early, or a has_ flag is not 0 or 1")
            }
            return .label(LabelRecord(timeNs: timeNs, controller: controller, gesture: gesture,
                                      senderTimeMs: hasSenderTime ? senderTime : nil, durationMs: hasDuration ? duration : nil))
        case .event:
            guard let event = input.string() else { throw fail("the event name is not a UTF-8 string within the message") }
            let at = input.offset
            guard let json = input.prefixed() else { throw fail("data_json runs past the end of the message") }
            var scanner = JSONScanner(json)
            let value: JSONValue
            do throws(JSONScanner.SyntaxError) {
                value = try scanner.readValue()
                try scanner.expectEnd()
            } catch {
                throw Failure(offset: at + 4 + error.offset, message: "data_json: \(error.message)")
            }
            guard case .object(let members) = value else { throw Failure(offset: at, message: "data_json must be a JSON object") }
            return .event(EventRecord(timeNs: timeNs, event: event, data: members))
        case .motion:
            let controller = try endpoint(&input, "controller")
            guard let senderTime = input.u64() else { throw fail("the sample ends before sender_time_ms") }
            let userAcceleration = try vector(&input, "user_accel")
            let rotationRate = try vector(&input, "rotation_rate")
            guard let hasGravity = input.bool() else { throw fail("has_gravity must be 0 or 1") }
            let gravity = try vector(&input, "gravity")
            guard let hasAttitude = input.bool() else { throw fail("has_attitude must be 0 or 1") }
            let q = try numbers(&input, "attitude", count: 4)
            return .motion(MotionSampleRecord(timeNs: timeNs, controller: controller, senderTimeMs: senderTime,
                                              userAcceleration: userAcceleration, rotationRate: rotationRate,
                                              gravity: hasGravity ? gravity : nil,
                                              attitude: hasAttitude ? .init(w: q[0], x: q[1], y: q[2], z: q[3]) : nil))
        }
    }

    private mutating func endpoint(_ input: inout MCAPInput, _ name: String) throws(Failure) -> Endpoint {
        let at = input.offset
        guard let text = input.prefixed() else { throw Failure(offset: at, message: "\(name) runs past the end of the message") }
        guard let endpoint = endpoints.endpoint(for: text) else {
            throw Failure(offset: at, message: "\(name) must be ADDRESS:PORT or [ADDRESS]:PORT, found \(String(decoding: text.prefix(64), as: UTF8.self).debugDescription)")
        }
        return endpoint
    }

    private func skipString(_ input: inout MCAPInput, _ name: String) throws(Failure) -> Endpoint? {
        let at = input.offset
        guard input.prefixed() != nil else { throw Failure(offset: at, message: "\(name) runs past the end of the message") }
        return nil
    }

    private func vector(_ input: inout MCAPInput, _ name: String) throws(Failure) -> Vector3 {
        let v = try numbers(&input, name, count: 3)
        return Vector3(v[0], v[1], v[2])
    }

    private func numbers(_ input: inout MCAPInput, _ name: String, count: Int) throws(Failure) -> [Double] {
        var out: [Double] = []
        out.reserveCapacity(count)
        for _ in 0..<count {
            let at = input.offset
            guard let value = input.f64() else { throw Failure(offset: at, message: "the sample ends inside \(name)") }
            // Absent vectors are written as zeros, so every value must be finite, as in JSON Lines.
            guard value.isFinite else { throw Failure(offset: at, message: "\(name) must hold finite numbers") }
            out.append(value)
        }
        return out
    }
}
