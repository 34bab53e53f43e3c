import KinetraceTrace
import KinetraceWire

/// The suite of a protocol declared in a file, derived from its declaration: the passive
/// cases that follow from its layout, its ranges and its rate (issue 25; the cases that
/// follow from its host behaviour come with the derived active suite). Each cites the
/// requirement IDs the declaration attaches to what it checks.
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
            activeCases: [],
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
            preflight: { senderTimeMs, _ in wireProtocol.sample(MotionReading(userAcceleration: .zero, rotationRate: .zero, gravity: .zero, attitude: .zero), timeMs: senderTimeMs) ?? [] })
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
