import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// The suite of a protocol declared in a file, derived from its declaration: the passive
/// cases that follow from its layout, its ranges and its rate, and, for a declared host
/// behaviour, the active case that times its decisions (the rest of the derived active
/// suite is issue 26's to come). Each cites the requirement IDs the declaration attaches
/// to what it checks.
enum DeclaredSuite {
    static func make(_ wireProtocol: any WireProtocol, _ declaration: ProtocolDeclaration) -> ProtocolSuite {
        let samples = declaration.kinds.filter { $0.direction == .controllerToHost }
        let layoutRequirements = unique(samples.compactMap(\.requirement))
        let valueRequirements = unique(samples.flatMap { $0.fields.filter { $0.finite || $0.range != nil }.compactMap(\.requirement) })
        let name = declaration.name
        let intervalMs = 1000 / declaration.rateHz
        return ProtocolSuite(
            wireProtocol: wireProtocol,
            specVersion: "\(name) \(declaration.version) (declared, \(declaration.digest.prefix(19)))",
            activeCases: activeCases(wireProtocol, declaration),
            passiveCases: [
                DeclaredLayoutCase(wireProtocol: wireProtocol, info: CaseInfo(
                    id: "PC-DECL-LAYOUT", requirements: layoutRequirements.isEmpty ? ["\(name): messages"] : layoutRequirements, level: .must,
                    summary: "Every controller→host message is one of the declared kinds (\(samples.map(\.name).joined(separator: ", "))): its length, encoding, constants and checks as declared.")),
                DeclaredValueCase(wireProtocol: wireProtocol, info: CaseInfo(
                    id: "PC-DECL-VALUES", requirements: valueRequirements.isEmpty ? ["\(name): ranges"] : valueRequirements, level: .must,
                    summary: "Every declared value of a controller→host message is finite where declared so, and within its declared range.")),
                CaptureRateCase(info: CaseInfo(id: "PC-DECL-RATE-BAND", requirements: ["\(name): rate_hz"], level: .must,
                                               summary: "The mean interval between one controller's messages (capture time) over any 10 s window is \(format(intervalMs)) ms ± 10 % (rate_hz \(format(declaration.rateHz)))."),
                                tolerance: 0.1),
                CaptureRateCase(info: CaseInfo(id: "PC-DECL-RATE-NOMINAL", requirements: ["\(name): rate_hz"], level: .should,
                                               summary: "The mean interval between one controller's messages (capture time) over any 10 s window is \(format(intervalMs)) ms ± 2 %."),
                                tolerance: 0.02),
            ],
            // Its decisions are judged on the observation channel: with no target, the reference host runs behind the stdio adapter.
            judgesObservations: declaration.host != nil,
            preflight: { senderTimeMs, _ in wireProtocol.sample(MotionReading(userAcceleration: .zero, rotationRate: .zero, gravity: .zero, attitude: .zero), timeMs: senderTimeMs) ?? [] })
    }

    /// The active cases a declared host behaviour implies: each decision reported in time.
    static func activeCases(_ wireProtocol: any WireProtocol, _ declaration: ProtocolDeclaration) -> [any ActiveCase] {
        guard let host = declaration.host else { return [] }
        let requirement = host.requirement.map { [$0] } ?? ["\(declaration.name): host"]
        return [ObservationTimingCase(info: CaseInfo(
            id: "AC-DECL-OBS-TIMELY", requirements: requirement, level: .must,
            summary: "Messages the host must decide on (\(host.decision)), one from each of 20 fresh controllers 25 ms apart: each decision is reported within the reply deadline (--reply-deadline-ms, 50 ms) of its message; at most 2 later.",
            timeoutMs: 3_000, judgesDecisions: true), decision: host.decision) { _, parameters in
            decidingSample(wireProtocol, declaration, rule: parameters.rule) ?? []
        }]
    }

    /// A sample the declared host must decide on from a fresh controller: any valid sample for
    /// an apply host; for a threshold, its quantity above the rule's threshold (inside the
    /// field's declared range), every other value 0, stamped now.
    static func decidingSample(_ wireProtocol: any WireProtocol, _ declaration: ProtocolDeclaration, rule: GestureRule) -> [UInt8]? {
        var reading = MotionReading(userAcceleration: .zero, rotationRate: .zero, gravity: .zero, attitude: .zero)
        if case .threshold(let quantity, _, _, _, _, _)? = declaration.host?.behaviour, case .motion(let slot, let axis) = quantity {
            let upper = declaration.kinds.lazy.flatMap(\.fields).first { $0.role == quantity }?.range?.upperBound ?? .infinity
            let level = min(rule.threshold + 0.25, (rule.threshold + upper) / 2)
            func with(_ v: Vector3?) -> Vector3 {
                var v = v ?? .zero
                switch axis {
                case 0: v.x = level
                case 1: v.y = level
                default: v.z = level
                }
                return v
            }
            switch slot {
            case .userAcceleration: reading.userAcceleration = with(reading.userAcceleration)
            case .rotationRate: reading.rotationRate = with(reading.rotationRate)
            case .gravity: reading.gravity = with(reading.gravity)
            case .attitude: reading.attitude = with(reading.attitude)
            case .own: reading.own = with(reading.own)
            }
        }
        return wireProtocol.sample(reading, timeMs: UInt64(SystemClock.realtimeNs() / 1_000_000))
    }

    static func unique(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        return ids.filter { seen.insert($0).inserted }
    }

    static func format(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String((v * 100).rounded() / 100) }
}

/// Value errors are the value case's; every other failure is the layout case's.
private func isValueError(_ error: WireError) -> Bool { error.code == .nonFinite || error.code == .outOfRange }

/// Every controller→host message decodes as a declared kind (values aside).
struct DeclaredLayoutCase: PassiveCase {
    let wireProtocol: any WireProtocol
    let info: CaseInfo

    func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(wireProtocol: wireProtocol, info: info) }

    struct Judge: PassiveJudge {
        let wireProtocol: any WireProtocol
        let info: CaseInfo
        var messages = 0
        var invalid = Kept<(MessageRef, WireError)>()
        var byReason: [String: Int] = [:]

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost else { return }
            messages += 1
            let error = d.framingError ?? wireProtocol.facts(d.payload).error
            guard let error, !isValueError(error) else { return }
            invalid.add((d.ref, error))
            byReason[error.code.name, default: 0] += 1
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            guard messages > 0 else { return CaseResult(info, .inconclusive("the capture holds no controller→host messages")) }
            let measurements = [Measurement("messages", Double(messages)), Measurement("not_declared", Double(invalid.total))]
            guard !invalid.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            let reasons = byReason.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            return CaseResult(info, .fail("\(invalid.total) of \(messages) messages are none of the declared kinds: \(reasons)"),
                              measurements: measurements,
                              evidence: evidence(invalid.items, total: invalid.total) { "\(summary.describe($0.0)): \($0.1)" })
        }
    }
}

/// Declared values are finite and within their ranges.
struct DeclaredValueCase: PassiveCase {
    let wireProtocol: any WireProtocol
    let info: CaseInfo

    func makeJudge(_ parameters: SuiteParameters) -> any PassiveJudge { Judge(wireProtocol: wireProtocol, info: info) }

    struct Judge: PassiveJudge {
        let wireProtocol: any WireProtocol
        let info: CaseInfo
        var checked = 0
        var bad = Kept<(MessageRef, WireError)>()

        mutating func observe(_ d: CaptureObservation.Datagram) {
            guard d.direction == .controllerToHost, d.framingError == nil else { return }
            let facts = wireProtocol.facts(d.payload)
            guard let error = facts.error else { checked += 1; return }
            guard isValueError(error) else { return }
            checked += 1
            bad.add((d.ref, error))
        }

        func verdict(_ summary: PassiveSummary) -> CaseResult {
            guard checked > 0 else { return CaseResult(info, .inconclusive("no message of a declared kind whose values could be read")) }
            let measurements = [Measurement("messages", Double(checked)), Measurement("bad_values", Double(bad.total))]
            guard !bad.isEmpty else { return CaseResult(info, .pass, measurements: measurements) }
            return CaseResult(info, .fail("\(bad.total) of \(checked) messages carry a value that is not finite or is outside its declared range"),
                              measurements: measurements,
                              evidence: evidence(bad.items, total: bad.total) { "\(summary.describe($0.0)): \($0.1)" })
        }
    }
}
