import KinetraceTrace
import KinetraceWire

extension CaptureObservation.Datagram {
    /// The KeepCalm decode of the payload.
    var keepCalm: Result<KeepCalmMotion, WireError> { KeepCalmJSON.decodeResult(payload) }
}

/// Decode failures that are about the values, not the message's shape.
private func isValueError(_ error: WireError) -> Bool { error.code == .nonFinite || error.code == .outOfRange }

/// Every controller→host datagram is one KeepCalm message: the envelope, the payload's members, the id's form, the size.
public struct KeepCalmMessageCase: PassiveCase {
    public let info = CaseInfo(
        id: "PC-KC-MESSAGE", requirements: ["KC-MSG-1", "KC-MSG-2", "KC-MSG-4", "KC-SIZE-1"], level: .must,
        summary: "Every controller→host datagram is one JSON object of 1 to 4,096 bytes: type \"MotionData\", a payload with type \"Combined\", an uppercase UUID id and numbers x, y and z.")
    public init() {}

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        let messages = context.observation.frames
        guard !messages.isEmpty else { return CaseResult(info, .inconclusive("the capture holds no controller→host datagrams")) }
        var invalid: [(CaptureObservation.Datagram, WireError)] = []
        var byReason: [String: Int] = [:]
        for d in messages {
            guard case .failure(let error) = d.keepCalm, !isValueError(error) else { continue }
            invalid.append((d, error))
            byReason[error.code.name, default: 0] += 1
        }
        let measurements = [Measurement("messages", Double(messages.count)), Measurement("malformed", Double(invalid.count))]
        guard !invalid.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
        let reasons = byReason.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        return CaseResult(info, .fail("\(invalid.count) of \(messages.count) datagrams are not KeepCalm messages: \(reasons)"),
                          measurements: measurements,
                          evidence: evidence(invalid) { "\(context.describe($0.0)): expected a KeepCalm message, found \($0.1)" })
    }
}

/// x, y and z are finite and within ±100.
public struct KeepCalmValueCase: PassiveCase {
    public let info = CaseInfo(
        id: "PC-KC-VALUES", requirements: ["KC-VALUE-1", "KC-VALUE-2"], level: .must,
        summary: "x, y and z are finite JSON numbers (not \"NaN\" or \"Infinity\" strings) within ±100.")
    public init() {}

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        var checked = 0
        var bad: [(CaptureObservation.Datagram, WireError)] = []
        for d in context.observation.frames {
            switch d.keepCalm {
            case .success: checked += 1
            case .failure(let error) where isValueError(error):
                checked += 1
                bad.append((d, error))
            case .failure: continue
            }
        }
        guard checked > 0 else { return CaseResult(info, .inconclusive("no datagram is a KeepCalm message whose values could be read")) }
        let nonFinite = bad.filter { $0.1.code == .nonFinite }.count
        let measurements = [Measurement("messages", Double(checked)), Measurement("non_finite", Double(nonFinite)),
                            Measurement("out_of_range", Double(bad.count - nonFinite))]
        guard !bad.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
        return CaseResult(info, .fail("\(bad.count) of \(checked) messages carry a value that is not finite or is past ±100"),
                          measurements: measurements,
                          evidence: evidence(bad) { "\(context.describe($0.0)): expected finite values within ±100, found \($0.1)" })
    }
}

/// Every message has a fresh id; a whole datagram seen twice is a duplicate on the path, not a reused id.
public struct KeepCalmUniqueIDCase: PassiveCase {
    public let info = CaseInfo(
        id: "PC-KC-UNIQUE-ID", requirements: ["KC-MSG-5"], level: .must,
        summary: "Every message carries a fresh id: no two different messages share one (a datagram repeated byte for byte is a duplicate on the path, reported).")
    public init() {}

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        var first: [MessageID: CaptureObservation.Datagram] = [:]
        var reused: [(CaptureObservation.Datagram, CaptureObservation.Datagram)] = []
        var duplicates = 0, checked = 0
        for d in context.observation.frames {
            guard case .success(let message) = d.keepCalm else { continue }
            checked += 1
            if let earlier = first[message.id] {
                if earlier.payload == d.payload { duplicates += 1 } else { reused.append((earlier, d)) }
            } else {
                first[message.id] = d
            }
        }
        let measurements = [Measurement("messages", Double(checked)), Measurement("ids_reused", Double(reused.count)),
                            Measurement("duplicated_datagrams", Double(duplicates))]
        guard checked > 1 else { return CaseResult(info, .inconclusive("fewer than two valid messages"), measurements: measurements) }
        guard reused.isEmpty else {
            return CaseResult(info, .fail("\(reused.count) message(s) reuse the id of a different earlier message"), measurements: measurements,
                              evidence: evidence(reused) { "\(context.describe($0.1)): expected a fresh id, found the id of \(context.describe($0.0))" })
        }
        if duplicates > 0 {
            return CaseResult(info, .informational("every id is fresh; \(duplicates) datagram(s) arrived twice, byte for byte (duplicated on the path)"),
                              measurements: measurements)
        }
        return CaseResult(info, .pass, measurements: measurements)
    }
}

/// Gaps over 300 ms between one controller's messages, by capture time, reported as loss.
public struct KeepCalmGapCase: PassiveCase {
    public let info = CaseInfo(
        id: "PC-KC-RATE-GAPS", requirements: ["KC-RATE-3"], level: .observation,
        summary: "Gaps over 300 ms between one controller's messages (capture time) are reported as loss (an observation, not a violation).")
    public init() {}

    public func evaluate(_ context: PassiveContext) -> CaseResult {
        var gaps: [(Endpoint, Int64, Int64)] = []
        var missing = 0
        for (controller, messages) in context.observation.framesByController {
            for (a, b) in zip(messages, messages.dropFirst()) where b.timeNs - a.timeNs > 300_000_000 {
                gaps.append((controller, a.timeNs, b.timeNs))
                missing += Int((Double(b.timeNs - a.timeNs) / 1e8).rounded()) - 1
            }
        }
        let measurements = [Measurement("gaps", Double(gaps.count)), Measurement("messages_missing", Double(missing))]
        guard !gaps.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
        let start = context.observation.startNs
        return CaseResult(info, .informational("\(gaps.count) gap(s) over 300 ms, about \(missing) message(s) missing"),
                          measurements: measurements,
                          evidence: evidence(gaps) { "\($0.0): \(fixed(Double($0.1 - start) / 1e9, 3)) s → \(fixed(Double($0.2 - start) / 1e9, 3)) s (\(($0.2 - $0.1) / 1_000_000) ms)" })
    }
}
