import KinetraceWire

/// Turns headers and records into trace lines (compact JSON plus "\n").
/// Field order is fixed so output is byte-for-byte reproducible.
public enum TraceEncoder {
    public static func line(for header: TraceHeader) -> [UInt8] {
        var members = header.extra
        members["format"] = .string(TraceHeader.formatName)
        members["version"] = .integer(Int64(header.major))
        members["minor"] = .integer(Int64(header.minor))
        members["created"] = .string(header.created)
        members["tool"] = .string(header.tool)
        members["profile"] = .string(header.profile.name)
        members["capture_point"] = .string(header.capturePoint.name)
        members["clock"] = .string(header.clock.name)
        members["notes"] = .string(header.notes)
        // Sorted keys would bury "format"; put it first so `head -c 40` identifies the file.
        var out = JSONOutput()
        out.raw("{\"format\":")
        out.string(TraceHeader.formatName)
        for key in members.keys.sorted() where key != "format" {
            out.raw(",")
            out.string(key)
            out.raw(":")
            out.append(members[key]!)
        }
        out.raw("}\n")
        return out.bytes
    }

    public static func line(for record: TraceRecord) -> [UInt8] {
        var out = JSONOutput()
        out.bytes.reserveCapacity(320)
        append(record, to: &out)
        return out.bytes
    }

    static func append(_ record: TraceRecord, to out: inout JSONOutput) {
        switch record {
        case .message(let m): appendMessage(m, to: &out)
        case .label(let l):
            out.raw("{\"kind\":\"label\",\"t_ns\":")
            out.integer(l.timeNs)
            if let c = l.controller { out.raw(",\"controller\":"); out.string(c.description) }
            out.raw(",\"gesture\":")
            out.string(l.gesture)
            if let t = l.tMs { out.raw(",\"t_ms\":"); out.integer(t) }
            if let d = l.durationMs { out.raw(",\"duration_ms\":"); out.integer(d) }
            out.raw("}\n")
        case .event(let e):
            out.raw("{\"kind\":\"event\",\"t_ns\":")
            out.integer(e.timeNs)
            out.raw(",\"event\":")
            out.string(e.event)
            out.raw(",\"data\":")
            out.append(.object(e.data))
            out.raw("}\n")
        case .motion(let m):
            out.raw("{\"kind\":\"motion\",\"t_ns\":")
            out.integer(m.timeNs)
            out.raw(",\"controller\":")
            out.string(m.controller.description)
            out.raw(",\"t_ms\":")
            out.integer(m.tMs)
            vector("user_accel", m.userAcceleration, to: &out)
            vector("rotation_rate", m.rotationRate, to: &out)
            if let g = m.gravity { vector("gravity", g, to: &out) }
            if let q = m.attitude { numbers("attitude", [q.w, q.x, q.y, q.z], to: &out) }
            out.raw("}\n")
        }
    }

    private static func vector(_ name: String, _ v: Vector3, to out: inout JSONOutput) {
        numbers(name, [v.x, v.y, v.z], to: &out)
    }

    private static func numbers(_ name: String, _ values: [Double], to out: inout JSONOutput) {
        out.raw(",\"\(name)\":[")
        for (i, value) in values.enumerated() {
            if i > 0 { out.raw(",") }
            out.double(value)
        }
        out.raw("]")
    }

    private static func appendMessage(_ m: MessageRecord, to out: inout JSONOutput) {
        out.raw("{\"kind\":\"msg\",\"t_ns\":")
        out.integer(m.timeNs)
        out.raw(",\"dir\":\"")
        out.raw(m.direction.rawValue)
        out.raw("\",\"src\":")
        out.string(m.source.description)
        out.raw(",\"dst\":")
        out.string(m.destination.description)
        out.raw(",\"len\":")
        out.integer(m.payload.count)
        out.raw(",\"payload\":\"")
        let digits: StaticString = "0123456789abcdef"
        let hex = digits.utf8Start
        for byte in m.payload {
            out.bytes.append(hex[Int(byte >> 4)])
            out.bytes.append(hex[Int(byte & 0x0F)])
        }
        out.raw("\"")
        if let rtt = m.rttNs { out.raw(",\"rtt_ns\":"); out.integer(rtt) }
        // Informative fields, derived from the payload.
        appendDecoded(m, to: &out)
        out.raw("}\n")
    }

    /// `"msg"`, `"decoded"` (whenever the length names a kind, even if the
    /// CRC fails, so a reader can see what was corrupted), `"valid"`, `"reason"`.
    private static func appendDecoded(_ m: MessageRecord, to out: inout JSONOutput) {
        let payload = m.payload
        let verdict: WireError?
        if case .failure(let error) = m.decoded { verdict = error } else { verdict = nil }
        payload.withUnsafeBytes { raw in
            let reader = ByteReader(raw)
            switch MotionLinkV1.kind(forLength: raw.count) {
            case .frame:
                out.raw(",\"msg\":\"frame\",\"decoded\":{\"t_ms\":")
                out.integer(reader.getInteger(at: 0, as: UInt64.self)!)
                for (i, name) in MotionFrame.valueNames.enumerated() {
                    out.raw(",\"")
                    out.raw(name)
                    out.raw("\":")
                    out.float(reader.getFloat32(at: 8 + 4 * i)!)
                }
                out.raw(",\"check\":")
                out.integer(reader.getInteger(at: 32, as: UInt32.self)!)
                out.raw("}")
            case .ack:
                out.raw(",\"msg\":\"ack\",\"decoded\":{\"echo_t_ms\":")
                out.integer(reader.getInteger(at: 0, as: UInt64.self)!)
                out.raw(",\"intensity\":")
                out.float(reader.getFloat32(at: 8)!)
                out.raw(",\"sharpness\":")
                out.float(reader.getFloat32(at: 12)!)
                out.raw(",\"check\":")
                out.integer(reader.getInteger(at: 16, as: UInt32.self)!)
                out.raw("}")
            case nil:
                out.raw(",\"msg\":\"unknown\"")
            }
        }
        if let verdict {
            out.raw(",\"valid\":false,\"reason\":")
            out.string(verdict.code.name)
        } else {
            out.raw(",\"valid\":true")
        }
    }
}
