/// A deliberate fault of the reference host (`kinetrace host --fault`): a wrong host on demand,
/// to show that a conformance suite fails it. Each is a mistake real hosts make.
package enum HostFault: Hashable, Sendable {
    /// One state for every controller: one's trigger suppresses another's.
    case sharedState
    /// One reassembly buffer for every controller's byte stream.
    case sharedBuffer
    /// Only the first whole record of each read is handled; the rest of the read is lost.
    case oneRecordPerRead
    /// A record cut at the end of its stream is completed with zeros and handled.
    case padCutRecord
    /// Each decision is reported this many ms late.
    case late(ms: Int)
    /// Messages invalid for this reason (`WireError` code name) are decided on as if valid: a host that skips that check.
    case acceptInvalid(reason: String)

    /// Parses `shared-state`, `shared-buffer`, `one-record-per-read`, `pad-cut-record`, `late` / `late=MS`, `accept-invalid=REASON`.
    package init?(_ text: String) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        switch (parts.first ?? "", parts.count > 1 ? parts[1] : nil) {
        case ("shared-state", nil): self = .sharedState
        case ("shared-buffer", nil): self = .sharedBuffer
        case ("one-record-per-read", nil): self = .oneRecordPerRead
        case ("pad-cut-record", nil): self = .padCutRecord
        case ("late", nil): self = .late(ms: 150)
        case ("late", let ms?):
            guard let v = Int(ms), (1...10_000).contains(v) else { return nil }
            self = .late(ms: v)
        case ("accept-invalid", let reason?):
            guard !reason.isEmpty, reason.count <= 40, reason.allSatisfy({ $0.isASCII && ($0.isLetter || $0 == "_") }) else { return nil }
            self = .acceptInvalid(reason: reason)
        default: return nil
        }
    }

    package static let names = ["shared-state", "shared-buffer", "one-record-per-read", "pad-cut-record", "late[=MS]", "accept-invalid=REASON"]
}

extension Set where Element == HostFault {
    var lateMs: Int? { lazy.compactMap { if case .late(let ms) = $0 { return ms } else { return nil } }.first }
    var acceptedReason: String? { lazy.compactMap { if case .acceptInvalid(let r) = $0 { return r } else { return nil } }.first }
}
