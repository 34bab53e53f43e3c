import KinetraceTrace
import KinetraceWire

/// One controller's path, read off a recording: each message's delay and when it was seen,
/// and in send order which messages were lost.
package struct ControllerPath: Sendable {
    package var controller: Endpoint
    /// Sender time (s since the controller's first message) and measured one-way delay (ms,
    /// up to the clocks' offset), first sighting of each message.
    package var senderTimesS: [Double] = []
    package var rawDelaysMs: [Double] = []
    /// When each delay was seen, s on the recording's timeline (shared by all controllers).
    package var timesS: [Double] = []
    /// In send order: false for a message that arrived, true for one lost.
    package var lost: [Bool] = []
    /// When each entry of `lost` was due, s on the recording's timeline.
    package var lostTimesS: [Double] = []
    package var duplicates = 0
    package var reordered = 0
    /// Distinct messages that arrived.
    package var received = 0
    /// Gaps taken as pauses of the sender, not loss.
    package var pauses = 0

    package init(controller: Endpoint) { self.controller = controller }
}

/// Every controller's path in one recording (or a joined pair), however it was read: what
/// `NetworkFitter` fits.
package struct PathSet: Sendable {
    /// How the delays and losses were read.
    package enum Evidence: String, Sendable {
        /// A host-side recording of samples stamped by the sender: delay up to the clocks'
        /// offset, loss from stamps missing at the nominal rate.
        case senderClock = "sender-clock"
        /// The sender's and the host's recordings of one session, joined by message bytes:
        /// true one-way delay (on synchronised recorders) and exact loss.
        case joined
        /// A host-side recording of unstamped messages: arrival against the nominal rate,
        /// loss from gaps; the path's delay itself is not in it.
        case arrivals
    }

    package var evidence: Evidence
    package var protocolName: String
    package var controllers: [Endpoint] = []
    package var paths: [ControllerPath] = []
    /// True when the sender times are on the recording's clock, false when known not to be,
    /// nil to judge from the delays.
    package var stampsOnRecorderClock: Bool?
    /// From the first message seen to the last, s.
    package var spanS: Double = 0
    /// Mean payload of the messages, bytes: what a rate limit serialises.
    package var meanMessageBytes: Double = 0
    package var nominalPeriodMs: Double
    package var invalidMessages = 0
    /// Joined recordings: the host's valid messages that no sent message matched.
    package var unmatched = 0

    package init(evidence: Evidence, protocolName: String, nominalPeriodMs: Double) {
        self.evidence = evidence
        self.protocolName = protocolName
        self.nominalPeriodMs = nominalPeriodMs
    }

    package var received: Int { paths.reduce(0) { $0 + $1.received } }

    /// A gap of more than this many periods is taken as a pause, not a run of losses: a
    /// Wi-Fi outage of 5 s at 10 Hz is 50 losses, a phone put down for a minute is not 600.
    package static let longGapPeriods = 50

    /// Appends to `path.lost` the messages missing in a gap of `gapMs` after the one seen at
    /// `afterS`: round(gap / period) − 1 of them, or a pause past `longGapPeriods`.
    static func addGap(_ gapMs: Double, afterS: Double, periodMs: Double, to path: inout ControllerPath) {
        let periods = (gapMs / periodMs).rounded()
        if periods > Double(longGapPeriods) {
            path.pauses += 1
        } else if periods > 1 {
            for k in 1..<Int(periods) {
                path.lost.append(true)
                path.lostTimesS.append(afterS + Double(k) * periodMs / 1000)
            }
        }
    }
}

/// What one host-side recording shows of the path its controllers' messages took: per
/// controller, each valid sample's sender stamp and capture time in arrival order. From it come
/// one-way delays (up to the clocks' offset), losses (stamps missing at the nominal rate),
/// duplicates (a stamp seen again) and reordering (a stamp below one already seen).
///
/// Needs a protocol whose samples carry the sender's clock; memory is two numbers per sample.
package struct PathEvidence {
    package let header: TraceHeader
    package let wireProtocol: any WireProtocol
    /// The sender's interval between samples at the protocol's nominal rate.
    package let nominalPeriodMs: Double
    private var numbering = ControllerNumbering<Endpoint>()
    package private(set) var controllers: [Endpoint] = []
    /// Per controller, in arrival order.
    package private(set) var stampsMs: [[UInt64]] = []
    package private(set) var arrivalsNs: [[Int64]] = []
    package private(set) var invalidMessages = 0
    package private(set) var firstArrivalNs: Int64?
    package private(set) var lastArrivalNs: Int64?
    private var payloadBytes = 0

    /// Nil for a protocol whose samples carry no sender clock: its path cannot be measured this way.
    package init?(header: TraceHeader, wireProtocol: any WireProtocol) {
        guard ProtocolTraits.hasSenderClock(wireProtocol), wireProtocol.nominalRateHz > 0 else { return nil }
        self.header = header
        self.wireProtocol = wireProtocol
        nominalPeriodMs = 1000 / wireProtocol.nominalRateHz
    }

    package mutating func add(_ record: TraceRecord) {
        guard case .message(let message) = record, message.direction == .controllerToHost else { return }
        let facts = message.facts(wireProtocol)
        guard facts.isValid, facts.direction == .controllerToHost, let stamp = facts.senderTimeMs,
              stamp <= UInt64(Int64.max / 1_000_000) else {
            invalidMessages += 1
            return
        }
        let c = numbering.number(of: message.controller)
        if c == controllers.count {
            controllers.append(message.controller)
            stampsMs.append([])
            arrivalsNs.append([])
        }
        stampsMs[c].append(stamp)
        arrivalsNs[c].append(message.timeNs)
        payloadBytes += message.payload.count
        if firstArrivalNs == nil { firstArrivalNs = message.timeNs }
        lastArrivalNs = max(lastArrivalNs ?? message.timeNs, message.timeNs)
    }

    package var sampleCount: Int { stampsMs.reduce(0) { $0 + $1.count } }

    package static var longGapPeriods: Int { PathSet.longGapPeriods }

    package func path(of c: Int) -> ControllerPath {
        var path = ControllerPath(controller: controllers[c])
        let stamps = stampsMs[c], arrivals = arrivalsNs[c]
        guard let firstStamp = stamps.min(), let origin = firstArrivalNs else { return path }
        var firstSeen: [UInt64: Double] = [:]
        var highest: UInt64?
        for (stamp, arrival) in zip(stamps, arrivals) {
            let atS = Double(arrival - origin) / 1e9
            guard firstSeen[stamp] == nil else { path.duplicates += 1; continue }
            firstSeen[stamp] = atS
            if let highest, stamp < highest { path.reordered += 1 }
            highest = max(highest ?? stamp, stamp)
            path.senderTimesS.append(Double(stamp - firstStamp) / 1000)
            path.rawDelaysMs.append(Double(arrival) / 1e6 - Double(stamp))
            path.timesS.append(atS)
        }
        path.received = firstSeen.count
        // Losses: in sender order, each gap between consecutive stamps is round(gap / period) − 1 missing messages.
        let sorted = firstSeen.keys.sorted()
        for (i, stamp) in sorted.enumerated() {
            if i > 0 {
                PathSet.addGap(Double(stamp - sorted[i - 1]), afterS: firstSeen[sorted[i - 1]] ?? 0, periodMs: nominalPeriodMs, to: &path)
            }
            path.lost.append(false)
            path.lostTimesS.append(firstSeen[stamp] ?? 0)
        }
        return path
    }

    /// Every controller's path.
    package var pathSet: PathSet {
        var set = PathSet(evidence: .senderClock, protocolName: wireProtocol.id.name, nominalPeriodMs: nominalPeriodMs)
        set.controllers = controllers
        set.paths = controllers.indices.map { path(of: $0) }
        set.stampsOnRecorderClock = header.replay.map(\.stampsOnRecorderClock)
        set.spanS = Double((lastArrivalNs ?? 0) - (firstArrivalNs ?? 0)) / 1e9
        let count = sampleCount
        set.meanMessageBytes = count == 0 ? 0 : Double(payloadBytes) / Double(count)
        set.invalidMessages = invalidMessages
        return set
    }
}
