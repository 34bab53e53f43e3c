import KinetraceTrace
import KinetraceWire

/// The path read off two recordings of one session, the sender's (`replay --record`,
/// `simulate --trace`, a capture beside the phone) and the host's, joined by message bytes as
/// `latency --join` joins them: each sent message is found at the host or is lost, so the
/// delay is the true one-way delay (on synchronised recorders) and the loss is exact.
///
/// A message sent twice with the same bytes is matched in order: the host's nth sighting of
/// those bytes is the nth sending. A sighting beyond the sendings is a duplicate; bytes never
/// sent are counted as unmatched. Datagram protocols only: a byte stream loses nothing and
/// re-frames what it carries. Memory is the sent messages' bytes and two numbers per message.
package struct JoinedEvidence {
    package let wireProtocol: any WireProtocol
    private var numbering = ControllerNumbering<Endpoint>()
    package private(set) var controllers: [Endpoint] = []
    /// Per controller, in send order.
    private var sentNs: [[Int64]] = []
    private var arrivalNs: [[Int64?]] = []
    private var duplicates: [Int] = []
    private var reordered: [Int] = []
    private var highestArrived: [Int] = []
    /// Sendings of each payload not yet matched at the host, oldest first.
    private var pending: [Payload: [(controller: Int, message: Int)]] = [:]
    /// The controller that last sent each payload: who owns a copy the path made.
    private var owner: [Payload: Int] = [:]
    private var payloadBytes = 0
    package private(set) var sent = 0
    package private(set) var received = 0
    package private(set) var unmatched = 0
    package private(set) var invalidSent = 0
    package private(set) var invalidReceived = 0
    private var firstSentNs: Int64?
    private var lastSentNs: Int64?

    package init(wireProtocol: any WireProtocol) {
        self.wireProtocol = wireProtocol
    }

    /// A record of the sender's recording, in its order. Every sent record must come before the host's.
    package mutating func addSent(_ record: TraceRecord) {
        guard case .message(let message) = record, message.direction == .controllerToHost else { return }
        let facts = message.facts(wireProtocol)
        guard facts.isValid, facts.direction == .controllerToHost else { invalidSent += 1; return }
        let c = numbering.number(of: message.controller)
        if c == controllers.count {
            controllers.append(message.controller)
            sentNs.append([]); arrivalNs.append([]); duplicates.append(0); reordered.append(0); highestArrived.append(-1)
        }
        pending[message.payload, default: []].append((c, sentNs[c].count))
        owner[message.payload] = c
        sentNs[c].append(message.timeNs)
        arrivalNs[c].append(nil)
        payloadBytes += message.payload.count
        sent += 1
        if firstSentNs == nil { firstSentNs = message.timeNs }
        lastSentNs = max(lastSentNs ?? message.timeNs, message.timeNs)
    }

    /// A record of the host's recording, in its order.
    package mutating func addReceived(_ record: TraceRecord) {
        guard case .message(let message) = record, message.direction == .controllerToHost else { return }
        let facts = message.facts(wireProtocol)
        guard facts.isValid, facts.direction == .controllerToHost else { invalidReceived += 1; return }
        guard var queue = pending[message.payload], !queue.isEmpty else {
            if let c = owner[message.payload] {
                // Every sending of these bytes has arrived already: a copy the path made.
                duplicates[c] += 1
            } else {
                unmatched += 1
            }
            return
        }
        let (c, m) = queue.removeFirst()
        pending[message.payload] = queue.isEmpty ? nil : queue
        arrivalNs[c][m] = message.timeNs
        if m < highestArrived[c] { reordered[c] += 1 }
        highestArrived[c] = max(highestArrived[c], m)
        received += 1
    }

    /// Every controller's path: true delays, exact losses in send order.
    package var pathSet: PathSet {
        let period = wireProtocol.nominalRateHz > 0 ? 1000 / wireProtocol.nominalRateHz : 0
        var set = PathSet(evidence: .joined, protocolName: wireProtocol.id.name, nominalPeriodMs: period)
        set.controllers = controllers
        let origin = firstSentNs ?? 0
        for c in controllers.indices {
            var path = ControllerPath(controller: controllers[c])
            let first = sentNs[c].first ?? 0
            for (sendNs, arrival) in zip(sentNs[c], arrivalNs[c]) {
                let atS = Double(sendNs - origin) / 1e9
                path.lost.append(arrival == nil)
                path.lostTimesS.append(atS)
                guard let arrival else { continue }
                path.senderTimesS.append(Double(sendNs - first) / 1e9)
                path.rawDelaysMs.append(Double(arrival - sendNs) / 1e6)
                path.timesS.append(atS)
                path.received += 1
            }
            path.duplicates = duplicates[c]
            path.reordered = reordered[c]
            set.paths.append(path)
        }
        set.spanS = Double((lastSentNs ?? 0) - origin) / 1e9
        set.meanMessageBytes = sent == 0 ? 0 : Double(payloadBytes) / Double(sent)
        set.invalidMessages = invalidSent + invalidReceived
        set.unmatched = unmatched
        return set
    }
}

/// The path read off a host-side recording of messages that carry no sender clock: each
/// controller's arrivals against the protocol's nominal rate. The nth message of a run is
/// taken as sent at n periods after the run's first (n counts the gaps: a gap of k periods
/// is k − 1 losses), so its "delay" is its lateness against that schedule: the path's jitter
/// plus the sender's own, with the path's fixed delay not in it. What such a recording cannot
/// show: the one-way delay itself, the sender's jitter apart from the path's, duplicates and
/// reordering (nothing names a message), and losses in a gap shorter than 1.5 periods.
package struct ArrivalEvidence {
    package let wireProtocol: any WireProtocol
    package let nominalPeriodMs: Double
    private var numbering = ControllerNumbering<Endpoint>()
    package private(set) var controllers: [Endpoint] = []
    private var arrivalsNs: [[Int64]] = []
    private var payloadBytes = 0
    package private(set) var invalidMessages = 0
    private var firstNs: Int64?
    private var lastNs: Int64?

    /// Nil for a protocol without a nominal rate: there is no schedule to measure against.
    package init?(wireProtocol: any WireProtocol) {
        guard wireProtocol.nominalRateHz > 0, wireProtocol.nominalRateHz.isFinite else { return nil }
        self.wireProtocol = wireProtocol
        nominalPeriodMs = 1000 / wireProtocol.nominalRateHz
    }

    package mutating func add(_ record: TraceRecord) {
        guard case .message(let message) = record, message.direction == .controllerToHost else { return }
        let facts = message.facts(wireProtocol)
        guard facts.isValid, facts.direction == .controllerToHost else { invalidMessages += 1; return }
        let c = numbering.number(of: message.controller)
        if c == controllers.count {
            controllers.append(message.controller)
            arrivalsNs.append([])
        }
        arrivalsNs[c].append(message.timeNs)
        payloadBytes += message.payload.count
        if firstNs == nil { firstNs = message.timeNs }
        lastNs = max(lastNs ?? message.timeNs, message.timeNs)
    }

    package var messageCount: Int { arrivalsNs.reduce(0) { $0 + $1.count } }

    /// One path per run of each controller's arrivals (a pause starts a new run, whose
    /// schedule is unknown against the last).
    package var pathSet: PathSet {
        var set = PathSet(evidence: .arrivals, protocolName: wireProtocol.id.name, nominalPeriodMs: nominalPeriodMs)
        set.controllers = controllers
        set.stampsOnRecorderClock = false
        let origin = firstNs ?? 0
        for (c, arrivals) in arrivalsNs.enumerated() {
            let times = arrivals.sorted()
            var path = ControllerPath(controller: controllers[c])
            var runStart = 0, n = 0
            func close() {
                if path.received > 0 { set.paths.append(path) }
                path = ControllerPath(controller: controllers[c])
            }
            for (i, t) in times.enumerated() {
                let atS = Double(t - origin) / 1e9
                if i > 0 {
                    let gapMs = Double(t - times[i - 1]) / 1e6
                    let periods = (gapMs / nominalPeriodMs).rounded()
                    if periods > Double(PathSet.longGapPeriods) {
                        close()
                        path.pauses = 1
                        runStart = i
                        n = 0
                    } else {
                        let steps = max(1, Int(periods))
                        PathSet.addGap(gapMs, afterS: Double(times[i - 1] - origin) / 1e9, periodMs: nominalPeriodMs, to: &path)
                        n += steps
                    }
                }
                let scheduledMs = Double(n) * nominalPeriodMs
                path.senderTimesS.append(scheduledMs / 1000)
                path.rawDelaysMs.append(Double(t - times[runStart]) / 1e6 - scheduledMs)
                path.timesS.append(atS)
                path.lost.append(false)
                path.lostTimesS.append(atS)
                path.received += 1
            }
            close()
        }
        set.spanS = Double((lastNs ?? 0) - origin) / 1e9
        let count = messageCount
        set.meanMessageBytes = count == 0 ? 0 : Double(payloadBytes) / Double(count)
        set.invalidMessages = invalidMessages
        return set
    }
}
