import KinetraceJSON
import KinetraceTrace
import KinetraceWire

/// Every record is finite, with roll and yaw in [−π, π] and pitch in [−π/2, π/2].
package struct AttitudeValueCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-AS-VALUES", requirements: ["AS-VALUE-1", "AS-VALUE-2"], level: .must,
        summary: "Every record holds finite float32 roll, pitch and yaw, roll and yaw in [−π, π] and pitch in [−π/2, π/2].")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var checked = 0, afterGap = 0, nonFinite = 0
        var bad = Kept<(MessageRef, WireError)>()

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost else { return }
            guard d.framingError == nil else { afterGap += 1; return }
            checked += 1
            if case .failure(let error) = AttitudeStream.decodeResult(d.payload) {
                if error.code == .nonFinite { nonFinite += 1 }
                bad.add((d.ref, error))
            }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            let measurements = [Measurement("records", Double(checked)), Measurement("non_finite", Double(nonFinite)),
                                Measurement("out_of_range", Double(bad.total - nonFinite)), Measurement("after_a_gap", Double(afterGap))]
            guard checked > 0 else {
                return CaseResult(info, .inconclusive(afterGap > 0 ? "every record follows a gap in the captured stream" : "the capture holds no controller→host records"),
                                  measurements: measurements)
            }
            guard !bad.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            return CaseResult(info, .fail("\(bad.total) of \(checked) records are not finite or out of range"), measurements: measurements,
                              evidence: evidence(bad.items, total: bad.total) { "\(summary.describe($0.0)): expected an attitude in range, found \($0.1)" })
        }
    }
}

/// Each stream is whole records when it ends: its length is a multiple of 12.
package struct AttitudeStreamLengthCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-AS-STREAM-LENGTH", requirements: ["AS-STREAM-1"], level: .must,
        summary: "Each connection's stream ends on a record boundary: its length is a multiple of 12 bytes.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        /// Flows (source → destination) seen, and those whose captured stream lost bytes:
        /// after a gap, where records end cannot be known.
        var flows: Set<[Endpoint]> = []
        var gapped: Set<[Endpoint]> = []

        mutating func observe(_ d: CaptureObservation.Datagram) {
            flows.insert([d.source, d.destination])
            if d.framingError?.code == .streamGap { gapped.insert([d.source, d.destination]) }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            let partial = summary.unfinished.filter { !gapped.contains([$0.source, $0.destination]) }
            let measurements = [Measurement("streams", Double(flows.count)), Measurement("ending_inside_a_record", Double(partial.count)),
                                Measurement("not_judged_after_a_gap", Double(gapped.count))]
            guard !flows.isEmpty else { return CaseResult(info, .inconclusive("the capture holds no stream bytes"), measurements: measurements) }
            guard partial.isEmpty else {
                var why = "\(partial.count) stream(s) end inside a record"
                if let truncation = summary.truncation { why += " (the capture itself is cut short: \(truncation.description))" }
                return CaseResult(info, .fail(why), measurements: measurements,
                                  evidence: evidence(partial) {
                                      "\($0.source) → \($0.destination): expected a multiple of 12 bytes, found \($0.offset + $0.bytes) (\($0.bytes) byte(s) into the record at offset \($0.offset))"
                                  })
            }
            if gapped.count == flows.count {
                return CaseResult(info, .inconclusive("every stream lost bytes in the capture, so where its records end is unknown"), measurements: measurements)
            }
            return CaseResult(info, .pass, measurements: measurements)
        }
    }
}

/// No bytes are missing from a captured stream: after a gap no record boundary can be trusted.
package struct AttitudeStreamGapCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-AS-STREAM-GAPS", requirements: ["AS-STREAM-2"], level: .must,
        summary: "No bytes are missing from any stream: a gap makes every later record of the connection unrecoverable (the protocol cannot resynchronise).")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var firstAfterGap: [[Endpoint]: (ref: MessageRef, error: WireError)] = [:]
        var lost = 0

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard let error = d.framingError, error.code == .streamGap else { return }
            lost += 1
            if firstAfterGap[[d.source, d.destination]] == nil { firstAfterGap[[d.source, d.destination]] = (d.ref, error) }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            let gapEvents = summary.streamEvents.filter { $0.event == "stream_gap" }
            let measurements = [Measurement("streams_with_gaps", Double(max(firstAfterGap.count, gapEvents.isEmpty ? 0 : 1))),
                                Measurement("gap_events", Double(gapEvents.count)), Measurement("records_unrecoverable", Double(lost))]
            guard summary.messages > 0 || !gapEvents.isEmpty else {
                return CaseResult(info, .inconclusive("the capture holds no stream bytes"), measurements: measurements)
            }
            guard firstAfterGap.isEmpty && gapEvents.isEmpty else {
                var lines = firstAfterGap.values.sorted { $0.ref.number < $1.ref.number }.map {
                    "\(summary.describe($0.ref)): expected the stream's bytes without a gap, found \($0.error)"
                }
                lines += evidence(gapEvents) { "stream_gap event at \(fixed(Double($0.timeNs - summary.startNs) / 1e9, 3)) s: \(JSONValueText.describe($0.data))" }
                return CaseResult(info, .fail("bytes are missing from \(max(firstAfterGap.count, 1)) stream(s) (lost by the capture, or never sent); \(lost) record(s) after the gap cannot be framed"),
                                  measurements: measurements, evidence: Array(lines.prefix(evidenceLimit + 1)))
            }
            return CaseResult(info, .pass, measurements: measurements)
        }
    }
}

/// A trace event's data in one line, members sorted.
enum JSONValueText {
    static func describe(_ data: [String: JSONValue]) -> String {
        data.keys.sorted().map { "\($0) \(data[$0]!.jsonText)" }.joined(separator: ", ")
    }
}
