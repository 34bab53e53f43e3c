/// A conformance case's outcome (issue 5's verdict set).
public enum Verdict: Hashable, Sendable {
    case pass
    /// A MUST is violated.
    case fail(String)
    /// A SHOULD is missed, or a timing falls inside a grace band: a failure only with `--strict`.
    case nonStrict(String)
    /// Worth reporting, never a failure.
    case informational(String)
    /// Not enough evidence to decide (too few samples, loss on the path, one direction missing).
    case inconclusive(String)
    /// The harness failed, not the host.
    case error(String)

    /// The verdict's name in reports.
    public var name: String {
        switch self {
        case .pass: return "PASS"
        case .fail: return "FAIL"
        case .nonStrict: return "NON-STRICT"
        case .informational: return "INFORMATIONAL"
        case .inconclusive: return "INCONCLUSIVE"
        case .error: return "ERROR"
        }
    }

    public var reason: String? {
        switch self {
        case .pass: return nil
        case .fail(let r), .nonStrict(let r), .informational(let r), .inconclusive(let r), .error(let r): return r
        }
    }
}

/// RFC 2119 level of the requirement a case checks.
public enum RequirementLevel: String, Hashable, Sendable {
    case must = "MUST"
    case should = "SHOULD"
    /// An observation the spec asks to be reported (its level "—"): never a failure.
    case observation = "—"
}

/// What a case is: the stable ID reports and selections use, the spec
/// requirements it checks, its level and a one-line description.
public struct CaseInfo: Hashable, Sendable {
    public package(set) var id: String
    public package(set) var requirements: [String]
    public package(set) var level: RequirementLevel
    public package(set) var summary: String
    /// How long the case may take (passive cases read a capture: no waiting).
    public package(set) var timeoutMs: Int
    /// Whether the case judges the host's decisions (triggers, jumps, applied attitudes, and their
    /// replies or observations), as opposed to its transport (connections, reading). A run whose
    /// cases of this kind all ended undecided has not shown the host's behaviour at all.
    public package(set) var judgesDecisions: Bool

    package init(id: String, requirements: [String], level: RequirementLevel, summary: String, timeoutMs: Int = 10_000,
                judgesDecisions: Bool = false) {
        self.id = id
        self.requirements = requirements
        self.level = level
        self.summary = summary
        self.timeoutMs = timeoutMs
        self.judgesDecisions = judgesDecisions
    }
}

/// A number a case measured, always reported whatever the verdict.
public struct Measurement: Hashable, Sendable {
    public package(set) var name: String
    public package(set) var value: Double
    public package(set) var unit: String

    package init(_ name: String, _ value: Double, _ unit: String = "") {
        self.name = name
        self.value = value
        self.unit = unit
    }
}

/// Every value of one quantity a case measured, in the order measured (for plots).
public struct SampleSeries: Hashable, Sendable {
    public package(set) var name: String
    public package(set) var unit: String
    public package(set) var values: [Double]
    /// The bound the case held the values to, if any (a reply deadline).
    public package(set) var limit: Double?

    package init(name: String, unit: String, values: [Double], limit: Double? = nil) {
        self.name = name
        self.unit = unit
        self.values = values
        self.limit = limit
    }
}

/// One case's result: its verdict, what it measured and the evidence (the
/// frames involved, expected against actual).
public struct CaseResult: Hashable, Sendable {
    public package(set) var info: CaseInfo
    public package(set) var verdict: Verdict
    public package(set) var measurements: [Measurement]
    public package(set) var evidence: [String]
    /// Per-sample values behind the measurements, for reports that plot them.
    public package(set) var samples: [SampleSeries] = []
    /// How long the case took, set by the suite.
    public package(set) var durationNs: Int64 = 0

    package init(_ info: CaseInfo, _ verdict: Verdict, measurements: [Measurement] = [], evidence: [String] = []) {
        self.info = info
        self.verdict = verdict
        self.measurements = measurements
        self.evidence = evidence
    }

    /// Whether this result fails the run: a FAIL always, a NON-STRICT under `strict`.
    public func fails(strict: Bool) -> Bool {
        switch verdict {
        case .fail: return true
        case .nonStrict: return strict
        default: return false
        }
    }
}

/// `value` with exactly `digits` decimals ("70.40"), without Foundation.
func fixed(_ value: Double, _ digits: Int) -> String {
    var scale: Double = 1
    for _ in 0..<digits { scale *= 10 }
    // Past Int64 (an interval between hostile stamps): Swift's own spelling, never a trap.
    guard value.isFinite, (abs(value) * scale).rounded() < 0x1p63 else { return String(value) }
    let scaled = Int64((abs(value) * scale).rounded())
    let whole = scaled / Int64(scale), fraction = scaled % Int64(scale)
    var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
    if digits > 0 {
        let digitsText = String(fraction)
        text += "." + String(repeating: "0", count: digits - digitsText.count) + digitsText
    }
    return text
}
