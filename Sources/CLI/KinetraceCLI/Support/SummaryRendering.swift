import KinetraceAnalysis
import KinetraceJSON
import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// Renders a `TraceSummary` for `inspect`: aligned text, or a JSON object
/// whose shape is documented in README ("inspect --format json").
enum SummaryRendering {
    /// `mcap`: the input is an MCAP trace, whose bytes read are its file's and its chunks' records'.
    static func text(_ s: TraceSummary, bytes: (file: Int, uncompressed: Int)? = nil, mcap: Bool = false) -> String {
        var out = ""
        // Header fields, sources, labels and events come from the trace: never raw to a terminal.
        func line(_ text: String = "") { out += TerminalText.escaped(text) + "\n" }
        let h = s.header
        line("Trace      \(s.source)")
        line("Format     \(TraceHeader.formatName) \(h.major).\(h.minor), protocol \(h.protocolID), captured at \(h.capturePoint) (clock \(h.clock))")
        if !h.tool.isEmpty || !h.created.isEmpty { line("Written    \(h.created) by \(h.tool)") }
        if let first = s.firstTimeNs, let last = s.lastTimeNs {
            line("Span       \(ms(Double(s.durationNs) / 1e6, 3)) ms, \(RFC3339.string(fromNanoseconds: first)) to \(RFC3339.string(fromNanoseconds: last))")
        } else {
            line("Span       no records")
        }
        let labels = s.labels.values.reduce(0, +), events = s.events.values.reduce(0, +)
        let messages = s.messages.values.reduce(0) { $0 + $1.total }
        line("Records    \(messages) messages, \(labels) labels, \(events) events"
             + (s.motionSamples > 0 ? ", \(s.motionSamples) motion samples" : "")
             + (s.unknownRecords > 0 ? ", \(s.unknownRecords) skipped (unknown record kinds, or packets that are not \(h.protocolID))" : ""))
        if let bytes, mcap {
            line("Bytes      \(bytes.file) read of the MCAP file, \(bytes.uncompressed) of records in the chunks read")
        } else if let bytes {
            line("Bytes      \(bytes.file) read" + (bytes.file != bytes.uncompressed ? ", \(bytes.uncompressed) after gzip decompression" : ""))
        }
        line()

        var table = TextTable(["Direction", "Messages", "Valid", "Invalid", "Invalid by reason"])
        for direction in Direction.allCases {
            let c = s.messages[direction] ?? .init()
            // A protocol without replies has no host→controller row, unless something travelled that way.
            if direction == .hostToController && !s.hasReplies && c.total == 0 { continue }
            let name = direction == .controllerToHost ? "controller→host" : "host→controller"
            table.add([name, "\(c.total)", "\(c.valid)", "\(c.invalid)", reasons(c.invalidByReason)])
        }
        out += table.render()
        line()
        if s.hasReplies {
            out += repliedControllers(s)
        } else {
            line("Replies    none: \(h.protocolID) has no replies, so there are none to match or miss.")
            line()
            out += unrepliedControllers(s)
        }
        line()

        line("\(s.hasReplies ? "Frame" : "Sample") intervals, per controller, all controllers pooled:")
        if s.hasSenderClock {
            line("  sender clock          \(stats(s.senderIntervals))")
        } else {
            line("  sender clock          none: \(h.protocolID) messages carry no sender timestamp")
        }
        line("  capture clock (t_ns)  \(stats(s.captureIntervals))")
        if s.staleFrames > 0 { line("  stale frames ignored  \(s.staleFrames)") }
        line()
        if s.hasReplies {
            line("Host (\(s.hostRule)):")
            line("  triggers \(s.triggers), replies seen \(s.replies), matched \(s.matchedReplies), "
                 + "missing \(s.missingReplies), unexpected \(s.unexpectedReplies)")
            if s.replyDelay.count > 0 { line("  reply after trigger frame (capture clock)  \(stats(s.replyDelay))") }
        } else {
            line("Host (\(s.hostRule)):")
            line("  decisions " + (s.decisions.isEmpty ? "none" : s.decisions.keys.sorted().map { "\($0) \(s.decisions[$0]!)" }.joined(separator: ", ")))
        }
        if s.roundTrips.count > 0 { line("  round trips measured by the recorder       \(stats(s.roundTrips))") }
        if let duplicates = s.duplicateIDs { line("Duplicate ids  \(duplicates) (an id seen again within \(TraceSummary.duplicateWindowNs / 1_000_000_000) s)") }
        if let range = s.attitudeRange {
            line("Attitude   roll \(interval(range.min.x, range.max.x)), pitch \(interval(range.min.y, range.max.y)), "
                 + "yaw \(interval(range.min.z, range.max.z)) rad")
        }
        for u in s.unfinishedStreams {
            line("Unfinished the stream \(u.source) → \(u.destination) ended inside a record: \(u.bytes) byte(s) from stream offset \(u.offset)")
        }
        if !s.labels.isEmpty {
            line("Labels     " + s.labels.keys.sorted().map { "\($0) \(s.labels[$0]!)" }.joined(separator: ", "))
        }
        if !s.events.isEmpty {
            line("Events     " + s.events.keys.sorted().map { "\($0) \(s.events[$0]!)" }.joined(separator: ", "))
        }
        if let t = s.truncation { line("Truncated  \(t)") }
        return out
    }

    /// The controller table of a protocol with replies: samples, triggers and the replies that answered them.
    private static func repliedControllers(_ s: TraceSummary) -> String {
        var controllers = TextTable(["Controller", "Frames", "Valid", "Triggers", "Replies", "Matched", "Gaps>\(s.gapThresholdMs)ms",
                                     "Interval mean/p50/p99 ms"])
        for endpoint in s.controllers.keys.sorted() {
            let c = s.controllers[endpoint]!
            controllers.add([endpoint.description, "\(c.frames)", "\(c.validFrames)", "\(c.triggers)", "\(c.replies)",
                             "\(c.matchedReplies)", c.gaps == 0 ? "0" : "\(c.gaps) (~\(c.framesMissing) lost)",
                             triple(c.senderIntervals)])
        }
        return controllers.render()
    }

    /// A protocol without replies: messages, the host model's decisions and the arrival rate.
    private static func unrepliedControllers(_ s: TraceSummary) -> String {
        let clock = s.hasSenderClock ? "sender" : "capture"
        var controllers = TextTable(["Controller", "Messages", "Valid", "Decisions", "Valid/s",
                                     "Interval mean/p50/p99 ms (\(clock) clock)"])
        for endpoint in s.controllers.keys.sorted() {
            let c = s.controllers[endpoint]!
            controllers.add([endpoint.description, "\(c.frames)", "\(c.validFrames)", "\(c.triggers)",
                             c.samplesPerSecond.map { ms($0, 1) } ?? "–",
                             triple(s.hasSenderClock ? c.senderIntervals : c.captureIntervals)])
        }
        return controllers.render()
    }

    private static func interval(_ low: Double, _ high: Double) -> String { "[\(ms(low, 3)), \(ms(high, 3))]" }

    static func json(_ s: TraceSummary, bytes: (file: Int, uncompressed: Int)? = nil) -> JSONValue {
        var object = members(s, bytes: bytes)
        object["controllers"] = .array(s.controllers.keys.sorted().map { controllerJSON(s, $0) })
        return .object(object)
    }

    /// `json(_:bytes:)` as text and a newline, each controller's object made and written in turn:
    /// 100,000 controllers' value trees took 100 MB more than their text.
    static func jsonLine(_ s: TraceSummary, bytes: (file: Int, uncompressed: Int)? = nil) -> String {
        let endpoints = s.controllers.keys.sorted()
        var out = JSONOutput()
        out.object(members(s, bytes: bytes), written: ["controllers": { out in
            out.array(count: endpoints.count) { i, out in out.append(controllerJSON(s, endpoints[i])) }
        }])
        out.bytes.append(UInt8(ascii: "\n"))  // here, not by `+`: that would copy the whole text once more
        return out.text
    }

    private static func controllerJSON(_ s: TraceSummary, _ endpoint: Endpoint) -> JSONValue {
        let c = s.controllers[endpoint]!
        if !s.hasReplies {
            return .object([
                "controller": .string(endpoint.description), "frames": .integer(Int64(c.frames)),
                "valid_frames": .integer(Int64(c.validFrames)), "decisions": .integer(Int64(c.triggers)),
                "samples_per_s": c.samplesPerSecond.map { .number(($0 * 1000).rounded() / 1000) } ?? .null,
                "sender_intervals_ms": stats(c.senderIntervals), "capture_intervals_ms": stats(c.captureIntervals),
            ])
        }
        return .object([
            "controller": .string(endpoint.description), "frames": .integer(Int64(c.frames)),
            "valid_frames": .integer(Int64(c.validFrames)), "triggers": .integer(Int64(c.triggers)),
            "replies_seen": .integer(Int64(c.replies)), "matched_replies": .integer(Int64(c.matchedReplies)),
            "gaps": .integer(Int64(c.gaps)), "frames_missing": .integer(Int64(c.framesMissing)),
            "sender_intervals_ms": stats(c.senderIntervals),
        ])
    }

    /// Every member of the report but `controllers`.
    private static func members(_ s: TraceSummary, bytes: (file: Int, uncompressed: Int)?) -> [String: JSONValue] {
        let h = s.header
        func counts(_ d: Direction) -> JSONValue {
            let c = s.messages[d] ?? .init()
            var members: [String: JSONValue] = [:]
            members["total"] = .integer(Int64(c.total))
            members["valid"] = .integer(Int64(c.valid))
            members["invalid"] = .integer(Int64(c.invalid))
            members["invalid_by_reason"] = .object(c.invalidByReason.mapValues { JSONValue.integer(Int64($0)) })
            return .object(members)
        }
        var object: [String: JSONValue] = [
            "source": .string(s.source),
            "header": .object(["format": .string(TraceHeader.formatName), "version": .integer(Int64(h.major)),
                               "minor": .integer(Int64(h.minor)), "protocol": .string(h.protocolID.name),
                               "capture_point": .string(h.capturePoint.name), "clock": .string(h.clock.name),
                               "created": .string(h.created), "tool": .string(h.tool), "notes": .string(h.notes)]),
            "first_t_ns": s.firstTimeNs.map { .integer($0) } ?? .null,
            "last_t_ns": s.lastTimeNs.map { .integer($0) } ?? .null,
            "duration_ns": .integer(s.durationNs),
            "messages": .object(["c2h": counts(.controllerToHost), "h2c": counts(.hostToController)]),
            "intervals_ms": .object(["sender": stats(s.senderIntervals), "capture": stats(s.captureIntervals)]),
            "stale_frames": .integer(Int64(s.staleFrames)),
            "gesture_rule": .object(["threshold": .number(s.rule.threshold), "refractory_ms": .integer(Int64(s.rule.refractoryMs))]),
            "triggers": .integer(Int64(s.triggers)), "replies_seen": .integer(Int64(s.replies)),
            "matched_replies": .integer(Int64(s.matchedReplies)), "missing_replies": .integer(Int64(s.missingReplies)),
            "unexpected_replies": .integer(Int64(s.unexpectedReplies)),
            "reply_delay_ms": stats(s.replyDelay), "round_trip_ms": stats(s.roundTrips),
            "labels": .object(s.labels.mapValues { .integer(Int64($0)) }),
            "events": .object(s.events.mapValues { .integer(Int64($0)) }),
            "unknown_records": .integer(Int64(s.unknownRecords)),
            "motion_samples": .integer(Int64(s.motionSamples)),
        ]
        if !s.hasReplies {
            // No replies: no reply members at all (none can be missing), and what the host decided instead.
            for member in ["replies_seen", "matched_replies", "missing_replies", "unexpected_replies", "reply_delay_ms"] { object[member] = nil }
            object["replies"] = .bool(false)
            object["decisions"] = .object(s.decisions.mapValues { .integer(Int64($0)) })
        }
        if !s.hasSenderClock { object["sender_clock"] = .bool(false) }
        if let duplicates = s.duplicateIDs { object["duplicate_ids"] = .integer(Int64(duplicates)) }
        if let range = s.attitudeRange {
            func axis(_ low: Double, _ high: Double) -> JSONValue { .object(["min": .number(low), "max": .number(high)]) }
            object["attitude_range_rad"] = .object(["roll": axis(range.min.x, range.max.x), "pitch": axis(range.min.y, range.max.y),
                                                    "yaw": axis(range.min.z, range.max.z)])
        }
        if !s.unfinishedStreams.isEmpty || s.transport == .byteStream {
            object["unfinished_streams"] = .array(s.unfinishedStreams.map { u in
                .object(["source": .string(u.source.description), "destination": .string(u.destination.description),
                         "offset": .integer(Int64(u.offset)), "bytes": .integer(Int64(u.bytes))])
            })
        }
        if let bytes {
            object["bytes"] = .object(["file": .integer(Int64(bytes.file)), "uncompressed": .integer(Int64(bytes.uncompressed))])
        }
        if let t = s.truncation {
            object["truncation"] = .object(["line": .integer(Int64(t.line)), "byte_offset": .integer(Int64(t.byteOffset)),
                                            "dropped_bytes": .integer(Int64(t.droppedBytes))])
        } else {
            object["truncation"] = .null
        }
        return object
    }

    private static func stats(_ d: DurationStatistics) -> JSONValue {
        guard d.count > 0 else { return .object(["count": .integer(0)]) }
        func r(_ v: Double?) -> JSONValue { .number(((v ?? 0) * 1000).rounded() / 1000) }
        return .object(["count": .integer(Int64(d.count)), "mean": r(d.meanMs), "p50": r(d.percentileMs(50)),
                        "p99": r(d.percentileMs(99)), "min": r(d.minMs), "max": r(d.maxMs)])
    }

    private static func stats(_ d: DurationStatistics) -> String {
        guard d.count > 0, let mean = d.meanMs else { return "no data" }
        return "mean \(ms(mean)) ms, p50 \(ms(d.percentileMs(50)!)), p99 \(ms(d.percentileMs(99)!)), "
            + "min \(ms(d.minMs!)), max \(ms(d.maxMs!)) (n = \(d.count))"
    }

    private static func triple(_ d: DurationStatistics) -> String {
        guard d.count > 0, let mean = d.meanMs else { return "–" }
        return "\(ms(mean, 1)) / \(ms(d.percentileMs(50)!, 1)) / \(ms(d.percentileMs(99)!, 1))"
    }

    private static func reasons(_ r: [String: Int]) -> String {
        r.isEmpty ? "–" : r.keys.sorted().map { "\($0) \(r[$0]!)" }.joined(separator: ", ")
    }

    /// Fixed-point text without Foundation's String(format:).
    static func ms(_ value: Double, _ decimals: Int = 2) -> String { FixedPoint.text(value, decimals) }
}

/// A plain left-aligned text table.
struct TextTable {
    private var rows: [[String]]
    init(_ header: [String]) { rows = [header] }
    /// Cells may hold text from input (endpoints, names): control characters show as escapes.
    mutating func add(_ row: [String]) { rows.append(row.map { TerminalText.escaped($0) }) }

    func render() -> String {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            var text = ""
            for (i, cell) in row.enumerated() {
                let last = i == row.count - 1
                text += last ? cell : cell + String(repeating: " ", count: widths[i] - cell.count + 2)
            }
            return "  " + text
        }.joined(separator: "\n") + "\n"
    }
}
