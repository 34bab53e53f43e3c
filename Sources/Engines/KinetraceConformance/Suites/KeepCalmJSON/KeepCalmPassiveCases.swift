import KinetraceTrace
import KinetraceWire

extension CaptureObservation.Datagram {
    /// The KeepCalm decode of the payload.
    var keepCalm: Result<KeepCalmMotion, WireError> { KeepCalmJSON.decodeResult(payload) }
}

/// Decode failures that are about the values, not the message's shape.
private func isValueError(_ error: WireError) -> Bool { error.code == .nonFinite || error.code == .outOfRange }

/// Every controller→host datagram is one KeepCalm message: the envelope, the payload's members, the id's form, the size.
package struct KeepCalmMessageCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-KC-MESSAGE", requirements: ["KC-MSG-1", "KC-MSG-2", "KC-MSG-4", "KC-SIZE-1"], level: .must,
        summary: "Every controller→host datagram is one JSON object of 1 to 4,096 bytes: type \"MotionData\", a payload with type \"Combined\", an uppercase UUID id and numbers x, y and z.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var messages = 0
        var invalid = Kept<(MessageRef, WireError)>()
        var byReason: [String: Int] = [:]

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost else { return }
            messages += 1
            guard case .failure(let error) = d.keepCalm, !isValueError(error) else { return }
            invalid.add((d.ref, error))
            byReason[error.code.name, default: 0] += 1
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            guard messages > 0 else { return CaseResult(info, .inconclusive("the capture holds no controller→host datagrams")) }
            let measurements = [Measurement("messages", Double(messages)), Measurement("malformed", Double(invalid.total))]
            guard !invalid.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            let reasons = byReason.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            return CaseResult(info, .fail("\(invalid.total) of \(messages) datagrams are not KeepCalm messages: \(reasons)"),
                              measurements: measurements,
                              evidence: evidence(invalid.items, total: invalid.total) { "\(summary.describe($0.0)): expected a KeepCalm message, found \($0.1)" })
        }
    }
}

/// x, y and z are finite and within ±100.
package struct KeepCalmValueCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-KC-VALUES", requirements: ["KC-VALUE-1", "KC-VALUE-2"], level: .must,
        summary: "x, y and z are finite JSON numbers (not \"NaN\" or \"Infinity\" strings) within ±100.")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var checked = 0, nonFinite = 0
        var bad = Kept<(MessageRef, WireError)>()

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost else { return }
            switch d.keepCalm {
            case .success: checked += 1
            case .failure(let error) where isValueError(error):
                checked += 1
                if error.code == .nonFinite { nonFinite += 1 }
                bad.add((d.ref, error))
            case .failure: return
            }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            guard checked > 0 else { return CaseResult(info, .inconclusive("no datagram is a KeepCalm message whose values could be read")) }
            let measurements = [Measurement("messages", Double(checked)), Measurement("non_finite", Double(nonFinite)),
                                Measurement("out_of_range", Double(bad.total - nonFinite))]
            guard !bad.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            return CaseResult(info, .fail("\(bad.total) of \(checked) messages carry a value that is not finite or is past ±100"),
                              measurements: measurements,
                              evidence: evidence(bad.items, total: bad.total) { "\(summary.describe($0.0)): expected finite values within ±100, found \($0.1)" })
        }
    }
}

/// Every message has a fresh id; a whole datagram seen twice is a duplicate on the path, not a reused id.
package struct KeepCalmUniqueIDCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-KC-UNIQUE-ID", requirements: ["KC-MSG-5"], level: .must,
        summary: "Every message carries a fresh id: no two different messages share one (a datagram repeated byte for byte is a duplicate on the path, reported).")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        /// Each id's first message and a hash of its bytes: the same id with the same bytes is a
        /// duplicate on the path. (Hasher is seeded per process, so no capture can aim at a collision.)
        var first: [MessageID: (ref: MessageRef, hash: Int)] = [:]
        var reused = Kept<(MessageRef, MessageRef)>()
        var duplicates = 0, checked = 0

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost, case .success(let message) = d.keepCalm else { return }
            checked += 1
            var hasher = Hasher()
            hasher.combine(d.payload)
            let hash = hasher.finalize()
            if let earlier = first[message.id] {
                if earlier.hash == hash && earlier.ref.length == d.payload.count { duplicates += 1 } else { reused.add((earlier.ref, d.ref)) }
            } else {
                first[message.id] = (d.ref, hash)
            }
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            let measurements = [Measurement("messages", Double(checked)), Measurement("ids_reused", Double(reused.total)),
                                Measurement("duplicated_datagrams", Double(duplicates))]
            guard checked > 1 else { return CaseResult(info, .inconclusive("fewer than two valid messages"), measurements: measurements) }
            guard reused.isEmpty else {
                return CaseResult(info, .fail("\(reused.total) message(s) reuse the id of a different earlier message"), measurements: measurements,
                                  evidence: evidence(reused.items, total: reused.total) { "\(summary.describe($0.1)): expected a fresh id, found the id of \(summary.describe($0.0))" })
            }
            if duplicates > 0 {
                return CaseResult(info, .informational("every id is fresh; \(duplicates) datagram(s) arrived twice, byte for byte (duplicated on the path)"),
                                  measurements: measurements)
            }
            return CaseResult(info, .pass, measurements: measurements)
        }
    }
}

/// Gaps over 300 ms between one controller's messages, by capture time, reported as loss.
package struct KeepCalmGapCase: PassiveCase {
    package let info = CaseInfo(
        id: "PC-KC-RATE-GAPS", requirements: ["KC-RATE-3"], level: .observation,
        summary: "Gaps over 300 ms between one controller's messages (capture time) are reported as loss (an observation, not a violation).")
    package init() {}

    package func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(info: info) }

    struct Judge: PassiveJudge {
        let info: CaseInfo
        var last: [Endpoint: Int64] = [:]
        var gaps = Kept<(Endpoint, Int64, Int64)>()
        var missing = 0

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost else { return }
            if let previous = last[d.source], d.timeNs - previous > 300_000_000 {
                gaps.add((d.source, previous, d.timeNs))
                missing += Int((Double(d.timeNs - previous) / 1e8).rounded()) - 1
            }
            last[d.source] = d.timeNs
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            let measurements = [Measurement("gaps", Double(gaps.total)), Measurement("messages_missing", Double(missing))]
            guard !gaps.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            let start = summary.startNs
            return CaseResult(info, .informational("\(gaps.total) gap(s) over 300 ms, about \(missing) message(s) missing"),
                              measurements: measurements,
                              evidence: evidence(gaps.items, total: gaps.total) { "\($0.0): \(fixed(Double($0.1 - start) / 1e9, 3)) s → \(fixed(Double($0.2 - start) / 1e9, 3)) s (\(($0.2 - $0.1) / 1_000_000) ms)" })
        }
    }
}
