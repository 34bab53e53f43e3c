import KinetraceSupport
import KinetraceTrace
import KinetraceTransport
import KinetraceWire

/// The suite of a protocol declared in a file, derived from its declaration: the passive
/// cases that follow from its layout, its ranges and its rate, and, for a declared host
/// behaviour, the active case that times its decisions (the rest of the derived active
/// suite is issue 26's to come). Each cites the requirement IDs the declaration attaches
/// to what it checks.
package enum DeclaredSuite {
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
                    id: "PC-DECL-LAYOUT", requirements: layoutRequirements.isEmpty ? ["PD-KIND-5"] : layoutRequirements, level: .must,
                    summary: "Every controller→host message is one of the declared kinds (\(samples.map(\.name).joined(separator: ", "))): its length, encoding, constants and checks as declared.")),
                DeclaredValueCase(wireProtocol: wireProtocol, info: CaseInfo(
                    id: "PC-DECL-VALUES", requirements: valueRequirements.isEmpty ? ["PD-RANGE-1", "PD-RANGE-3"] : valueRequirements, level: .must,
                    summary: "Every declared value of a controller→host message is finite where declared so, and within its declared range.")),
                CaptureRateCase(info: CaseInfo(id: "PC-DECL-RATE-BAND", requirements: ["PD-SIM-1"], level: .must,
                                               summary: "The mean interval between one controller's messages (capture time) over any 10 s window is \(format(intervalMs)) ms ± 10 % (rate_hz \(format(declaration.rateHz)))."),
                                tolerance: 0.1),
                CaptureRateCase(info: CaseInfo(id: "PC-DECL-RATE-NOMINAL", requirements: ["PD-SIM-1"], level: .should,
                                               summary: "The mean interval between one controller's messages (capture time) over any 10 s window is \(format(intervalMs)) ms ± 2 %."),
                                tolerance: 0.02),
            ],
            // Its decisions are judged on the observation channel: with no target, the reference host runs behind the stdio adapter.
            judgesObservations: declaration.host != nil,
            // A sample every declared behaviour decides on, whatever axis it watches: a host that reports it shows its observation channel works.
            preflight: { senderTimeMs, parameters in preflightSample(wireProtocol, declaration, rule: parameters, senderTimeMs: senderTimeMs) })
    }

    /// The active cases a declared host behaviour implies (see `derivedCases`).
    static func activeCases(_ wireProtocol: any WireProtocol, _ declaration: ProtocolDeclaration) -> [any ActiveCase] {
        guard let declared = wireProtocol as? DeclaredProtocol else { return [] }
        return derivedCases(declared, prefix: "AC-DECL-")
    }

    /// The active cases a declaration implies, IDs `prefix` + their name: the threshold's edges and
    /// window, isolation, stale samples, each category of invalid input, byte-stream reads and a
    /// record cut at the end of its stream, load, and decisions reported in time; for an apply host,
    /// its values. Each names the faults it exists to catch.
    /// `renamed` gives some cases another name (a built-in suite keeps the IDs its reports always had).
    /// `cited` adds requirement IDs a case also checks, by name (a built-in spec says more than its declaration can).
    package static func derivedCases(_ declared: DeclaredProtocol, prefix: String, renamed: [String: String] = [:],
                                    cited: [String: [String]] = [:]) -> [any DerivedActiveCase] {
        let declaration = declared.declared
        guard let host = declaration.host, let messages = DerivedMessages(declared) else { return [] }
        let context = DerivedContext(messages: messages, host: host)
        // Where the declaration states no requirement of its own, a case cites the declaration language's rule it checks.
        let behaviour = host.requirement.map { [$0] } ?? []
        let samples = declaration.kinds.filter { $0.direction == .controllerToHost }
        let layout = unique(samples.compactMap(\.requirement) + samples.flatMap { $0.fields.filter { !$0.finite && $0.range == nil }.compactMap(\.requirement) })
            .nilIfEmpty ?? ["PD-KIND-5"]
        let values = unique(samples.flatMap { $0.fields.filter { $0.finite || $0.range != nil }.compactMap(\.requirement) }).nilIfEmpty
            ?? ["PD-RANGE-1", "PD-RANGE-3"]
        // The declaration language's rule behind each case, cited when the declaration names none for its host.
        let rules: [String: [String]] = [
            "EDGE-THRESHOLD": ["PD-HOST-4", "PD-HOST-10"], "STALE": ["PD-HOST-7"], "APPLY-VALUES": ["PD-HOST-9", "PD-HOST-10"],
            "ISOLATION": ["PD-HOST-2"], "STREAM-READS": ["PD-FRAME-5"], "CUT-AT-END": ["PD-FRAME-5"], "LOAD": ["PD-HOST-2"],
            "OBS-TIMELY": ["SA-OBS-3"], "INVALID-RANGE": ["PD-HOST-3"], "INVALID-FINITE": ["PD-HOST-3"], "INVALID-CHECK": ["PD-CHECK-3", "PD-HOST-3"],
            "INVALID-LENGTH": ["PD-HOST-3"], "INVALID-TYPE": ["PD-HOST-3"], "INVALID-MEMBERS": ["PD-HOST-3"],
            "REPLY": ["PD-REPLY-2", "PD-REPLY-3", "PD-REPLY-4"],
        ]
        func info(_ name: String, _ requirements: [String], _ summary: String, timeoutMs: Int = 10_000) -> CaseInfo {
            var requirements = requirements
            if host.requirement == nil {
                requirements += name == "EDGE-WINDOW" ? (isSenderWindow ? ["PD-HOST-5"] : ["PD-HOST-6"]) : rules[name] ?? []
            }
            return CaseInfo(id: prefix + (renamed[name] ?? name), requirements: unique(requirements + (cited[name] ?? [])), level: .must, summary: summary, timeoutMs: timeoutMs, judgesDecisions: true)
        }
        let isSenderWindow: Bool = { if case .threshold(_, _, _, true, _, _) = host.behaviour { return true } else { return false } }()
        var cases: [any DerivedActiveCase] = []
        let decision = host.decision
        switch host.behaviour {
        case .threshold(let quantity, _, _, let senderClock, let ignoreStale, _):
            cases.append(DerivedEdgeThresholdCase(info: info("EDGE-THRESHOLD", behaviour,
                "The threshold's edges in \(quantity)'s declared type, each from a fresh controller: one ulp below τ and at τ no \(decision); one ulp above τ and well above, one each, with the declared values (\(host.decisionValues.map(\.description).joined(separator: ", "))) when values are reported."),
                context: context))
            cases.append(DerivedEdgeWindowCase(info: info("EDGE-WINDOW", behaviour,
                senderClock ? "The window on the sender's clock, probed with stamps: a second trigger at R − 1 ms, at R/4, R/2 and 3R/4 makes no \(decision); one at R does; a suppressed trigger does not restart the window."
                            : "The window on the host's arrival clock: a second trigger at R − R/20 and at R/4, R/2 and 3R/4 makes no \(decision); one at R + R/20 does; a suppressed trigger does not restart the window (repeated up to 3 times when the machine sent late)."),
                context: context, senderClock: senderClock))
            if senderClock && ignoreStale {
                cases.append(DerivedStaleCase(info: info("STALE", behaviour,
                    "After a sample stamped s + 100 ms, triggers stamped s + 50 (out of order) and s + 100 (a duplicate) are ignored entirely: no \(decision), and one a window after s + 50 decides once."),
                    context: context))
            }
        case .apply:
            cases.append(DerivedApplyValuesCase(info: info("APPLY-VALUES", behaviour,
                "Samples with seeded values within the declared ranges, each from a fresh controller: each is reported once (\(decision)) with its values at the declared precision (\(host.decisionValues.map(\.description).joined(separator: ", ")))."),
                context: context))
        }
        // An apply host over datagrams keeps nothing per controller: nothing to isolate.
        if messages.threshold != nil || messages.isStream {
        cases.append(DerivedIsolationCase(info: info("ISOLATION", behaviour,
            "Four controllers triggering in turn inside one another's windows decide once each"
            + (messages.isStream ? "; a record cut by another controller's whole record is reassembled on its own stream." : ".")),
            context: context))
        }
        let tau = declared.defaultRule.threshold
        let invalid = messages.invalidMessages(tau: tau)
        let categories: [(DerivedMessages.Invalid.Category, String, [String])] = [
            (.range, "INVALID-RANGE", values), (.finite, "INVALID-FINITE", values), (.check, "INVALID-CHECK", layout),
            (.length, "INVALID-LENGTH", layout), (.type, "INVALID-TYPE", layout), (.members, "INVALID-MEMBERS", layout),
        ]
        for (category, name, requirements) in categories {
            let probes = invalid.filter { $0.category == category }
            guard !probes.isEmpty else { continue }
            cases.append(DerivedInvalidInputCase(info: info(name, requirements + behaviour,
                "Each of \(probes.count) invalid message(s) from its own controller, otherwise deciding: no \(decision); then a valid one from the same controller: exactly one, after it. "
                + probes.map(\.label).joined(separator: "; ") + "."),
                context: context, category: category, probes: probes, faults: faults(for: category, probes, declared)))
        }
        if messages.isStream {
            cases.append(DerivedStreamReadsCase(info: info("STREAM-READS", layout + behaviour,
                "Records across reads: several in one write, one split over two writes, one a byte at a time; each decided as a message."),
                context: context))
            cases.append(DerivedCutAtEndCase(info: info("CUT-AT-END", layout + behaviour,
                "A deciding record missing its last byte, then the end of the stream: no \(decision); a whole record before the end: one."),
                context: context))
        }
        if case .threshold = host.behaviour {
            cases.append(DerivedLoadCase(info: info("LOAD", behaviour,
                "20 controllers at once at the declared rate for 1.5 s, each with one deciding sample at a seeded moment: each decides exactly once."),
                context: context, controllersCount: 20, seconds: 1.5))
        }
        // On the sender's clock what the host owes depends only on what arrives, in order: the replay's impaired
        // schedule predicts it exactly, for each bundled network (arrival-clock latches depend on timing, so no).
        if isSenderWindow, !messages.isStream {
            let tauDefault = declared.defaultRule.threshold
            let requirements = behaviour + (host.requirement == nil ? ["PD-HOST-5", "PD-HOST-7"] : [])
            for network in ImpairedPathCase.bundled(declared, requirements: requirements) {
                let name = "IMPAIRED-\(network.network.uppercased())"
                cases.append(DerivedImpairedPathCase(inner: ImpairedPathCase(
                    network: network.network, impairments: network.impairmentsForDerivation, wireProtocol: declared,
                    requirements: unique(requirements + (cited[name] ?? [])), idPrefix: prefix, observedDecision: host.replyKind == nil ? host.decision : nil,
                    makeSample: { triggers, senderTimeMs in
                        messages.sample(senderTimeMs: senderTimeMs, quantity: triggers ? messages.deciding(tauDefault) : messages.quiet(tauDefault), salt: senderTimeMs)
                    })))
            }
        }
        if host.replyKind != nil {
            cases.append(DerivedReplyCase(info: info("REPLY", (host.replyRequirement.map { [$0] } ?? []) + behaviour,
                "Deciding messages from 10 fresh controllers, 25 ms apart: each gets exactly one \(declaration.kinds[host.replyKind!].name) that echoes its sender time, carries the declared field values and leaves within \(host.replyDeadlineMs.map { "\(format($0)) ms (deadline_ms)" } ?? "the reply deadline (--reply-deadline-ms)"); at most 2 later."),
                context: context))
        }
        if host.replyKind == nil {
            cases.append(ObservationTimingCase(info: info("OBS-TIMELY", behaviour,
                "Messages the host must decide on (\(decision)), one from each of 20 fresh controllers 25 ms apart: each decision is reported within the reply deadline (--reply-deadline-ms, 50 ms) of its message; at most 2 later.",
                timeoutMs: 3_000), decision: decision) { _, parameters in
                decidingSample(declared, declaration, rule: parameters.rule) ?? []
            })
        }
        return cases
    }

    /// The faults an invalid-input case is built to catch: the declaration without that check where
    /// the language can say so, else a host that decides on messages invalid for the probes' reasons.
    static func faults(for category: DerivedMessages.Invalid.Category, _ probes: [DerivedMessages.Invalid],
                       _ declared: DeclaredProtocol) -> [GeneratedFault] {
        // A probe that breaks its stream never reaches the host as a message: no reason of its to skip.
        let reasons = unique(probes.filter { !$0.breaksStream }.compactMap { declared.facts($0.bytes(1_000, 1)).error?.code.name })
        var faults = reasons.map { GeneratedFault.host("accept-invalid=\($0)") }
        switch category {
        case .range: faults.insert(.declaration(.rangesRemoved), at: 0)
        case .finite: faults.insert(.declaration(.valuesUnchecked), at: 0)
        case .check: faults.insert(.declaration(.checksRemoved), at: 0)
        case .members where probes.contains { $0.label.hasSuffix("given twice") }: faults.insert(.declaration(.repeatedMembersLast), at: 0)
        case .length:
            if case .json? = declared.sampleKind.map({ declared.declared.kinds[$0].encoding }) { faults.insert(.declaration(.maximumLengthRaised(64)), at: 0) }
        default: break
        }
        return faults
    }

    /// A sample the declared host must decide on from a fresh controller: any valid sample for
    /// an apply host; for a threshold, its quantity above the rule's threshold (inside the
    /// field's declared range), every other value 0, stamped now.
    /// Every motion value of the sample kind at a level above the rule's threshold (within each field's range).
    static func preflightSample(_ wireProtocol: any WireProtocol, _ declaration: ProtocolDeclaration, rule parameters: SuiteParameters,
                                senderTimeMs: UInt64) -> [UInt8] {
        let level = parameters.rule.threshold + 0.25
        var vectors: [VectorSlot: Vector3] = [:]
        for field in declaration.kinds.first(where: { $0.direction == .controllerToHost })?.fields ?? [] {
            guard case .motion(let slot, let axis)? = field.role else { continue }
            let v = field.range.map { Swift.min(level, ($0.upperBound + Swift.max($0.lowerBound, level)) / 2) } ?? level
            var vector = vectors[slot] ?? .zero
            switch axis {
            case 0: vector.x = v
            case 1: vector.y = v
            default: vector.z = v
            }
            vectors[slot] = vector
        }
        var reading = MotionReading(userAcceleration: vectors[.userAcceleration] ?? .zero, rotationRate: vectors[.rotationRate] ?? .zero,
                                    gravity: vectors[.gravity] ?? .zero, attitude: vectors[.attitude] ?? .zero)
        reading.own = vectors[.own]
        return wireProtocol.sample(reading, timeMs: senderTimeMs) ?? []
    }

    package static func decidingSample(_ wireProtocol: any WireProtocol, _ declaration: ProtocolDeclaration, rule: GestureRule) -> [UInt8]? {
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

extension Array {
    var nilIfEmpty: [Element]? { isEmpty ? nil : self }
}

extension ObservationTimingCase: DerivedActiveCase {
    package var faults: [GeneratedFault] { [.host("late")] }
}

extension DeclaredSuite {
    /// A built-in suite: the cases derived from the protocol's own declaration, the ones named in
    /// `leading` first, then the hand-written cases, then the other derived ones.
    static func composed(_ derived: [any DerivedActiveCase], leading: [String], handWritten: [any ActiveCase]) -> [any ActiveCase] {
        let first = leading.compactMap { id in derived.first { $0.info.id == id } }
        return first + handWritten + derived.filter { !leading.contains($0.info.id) }
    }
}

/// An impaired-path case over a declared protocol's own messages, with the faults it catches.
struct DerivedImpairedPathCase: DerivedActiveCase {
    let inner: ImpairedPathCase
    var info: CaseInfo { inner.info }
    /// No network claims the stale-judging fault: how many samples a network reorders, and whether one of them
    /// crosses the rule's threshold, depends on the protocol's rate and the seed (since crowded-event was rebuilt
    /// from cited figures its narrower bulk reorders too few). AC-DECL-STALE catches that fault by construction.
    var faults: [GeneratedFault] { [.host("shared-state")] }
    func run(_ p: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult { try inner.run(p, parameters) }
}
