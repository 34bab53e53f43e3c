/// A suite run as a document: what `kinetrace conform --format json` writes, version 2 of
/// specs/conform-report-v2.schema.json. The CLI encodes this type and nothing else, and the
/// tests hold the schema to it, so the report's shape is written once.
public struct ConformanceReport: Codable, Sendable, Equatable {
    public var format = "kinetrace-conform"
    public var version = 2
    public var suiteVersion: String
    /// The specification checked and its version (`NAME VERSION`).
    public var specVersion: String
    /// `active` or `passive`.
    public var mode: String
    public var target: String
    /// Whether a NON-STRICT verdict fails the run.
    public var strict: Bool
    public var parameters: Parameters
    public var cases: [Case]
    /// How many cases ended with each verdict name (only names that occurred).
    public var summary: [String: Int]
    public var failed: Bool
    public var status: String
    /// False when an active run had cases that judge the host's decisions and none could decide.
    public var decisionsJudged: Bool
    public var elapsedMs: Double

    /// The rule and limits the cases judged by.
    public struct Parameters: Codable, Sendable, Equatable {
        public var threshold: Double
        public var refractoryMs: Int
        public var replyDeadlineMs: Double
        public var minSamples: Int
        public var staleResyncMs: Int
        public var maxControllers: Int
        public var maxConnections: Int

        enum CodingKeys: String, CodingKey {
            case threshold, refractoryMs = "refractory_ms", replyDeadlineMs = "reply_deadline_ms", minSamples = "min_samples"
            case staleResyncMs = "stale_resync_ms", maxControllers = "max_controllers", maxConnections = "max_connections"
        }
    }

    /// One case's result.
    public struct Case: Codable, Sendable, Equatable {
        public var id: String
        public var requirements: [String]
        /// `MUST`, `SHOULD` or `—` (an observation).
        public var level: String
        public var summary: String
        public var verdict: String
        /// Why, for every verdict but PASS; written as null then.
        public var detail: String?
        /// Finite measurements by name (a non-finite one is no number, and says so in the evidence).
        public var measurements: [String: Double]
        public var evidence: [String]
        public var durationMs: Double

        enum CodingKeys: String, CodingKey {
            case id, requirements, level, summary, verdict, detail, measurements, evidence, durationMs = "duration_ms"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try c.decode(String.self, forKey: .id)
            requirements = try c.decode([String].self, forKey: .requirements)
            level = try c.decode(String.self, forKey: .level)
            summary = try c.decode(String.self, forKey: .summary)
            verdict = try c.decode(String.self, forKey: .verdict)
            detail = try c.decodeIfPresent(String.self, forKey: .detail)
            measurements = try c.decode([String: Double].self, forKey: .measurements)
            evidence = try c.decode([String].self, forKey: .evidence)
            durationMs = try c.decode(Double.self, forKey: .durationMs)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(requirements, forKey: .requirements)
            try c.encode(level, forKey: .level)
            try c.encode(summary, forKey: .summary)
            try c.encode(verdict, forKey: .verdict)
            try c.encode(detail, forKey: .detail)  // null, not absent: the schema requires the member
            try c.encode(measurements, forKey: .measurements)
            try c.encode(evidence, forKey: .evidence)
            try c.encode(durationMs, forKey: .durationMs)
        }

        package init(_ result: CaseResult) {
            id = result.info.id
            requirements = result.info.requirements
            level = result.info.level.rawValue
            summary = result.info.summary
            verdict = result.verdict.name
            detail = result.verdict.reason
            var finite: [String: Double] = [:]
            for m in result.measurements where m.value.isFinite { finite[m.name] = m.value }
            measurements = finite
            evidence = result.evidence
            durationMs = Double(result.durationNs) / 1e6
        }
    }

    enum CodingKeys: String, CodingKey {
        case format, version, suiteVersion = "suite_version", specVersion = "spec_version", mode, target, strict, parameters, cases
        case summary, failed, status, decisionsJudged = "decisions_judged", elapsedMs = "elapsed_ms"
    }

    /// The document for `report`, judged with or without `strict`.
    public init(_ report: SuiteReport, strict: Bool) {
        let p = report.parameters
        suiteVersion = ConformanceSuite.version
        specVersion = report.specVersion
        mode = report.mode
        target = report.target
        self.strict = strict
        parameters = Parameters(threshold: p.rule.threshold, refractoryMs: Int(p.rule.refractoryMs), replyDeadlineMs: p.replyDeadlineMs,
                                minSamples: p.minimumTimingSamples, staleResyncMs: Int(p.rule.staleResyncMs),
                                maxControllers: p.maxControllers, maxConnections: p.maxConnections)
        cases = report.results.map(Case.init)
        summary = report.counts
        failed = report.failed(strict: strict)
        status = report.status(strict: strict)
        decisionsJudged = !report.decisionsUnjudged
        elapsedMs = Double(report.elapsedNs) / 1e6
    }
}
