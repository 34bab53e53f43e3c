import KinetraceTrace
import KinetraceWire

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
    package private(set) var controllers: [Endpoint] = []
    private var index: [Endpoint: Int] = [:]
    /// Per controller, in arrival order.
    package private(set) var stampsMs: [[UInt64]] = []
    package private(set) var arrivalsNs: [[Int64]] = []
    package private(set) var invalidMessages = 0
    package private(set) var firstArrivalNs: Int64?
    package private(set) var lastArrivalNs: Int64?

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
        let c: Int
        if let known = index[message.controller] {
            c = known
        } else {
            c = controllers.count
            index[message.controller] = c
            controllers.append(message.controller)
            stampsMs.append([])
            arrivalsNs.append([])
        }
        stampsMs[c].append(stamp)
        arrivalsNs[c].append(message.timeNs)
        if firstArrivalNs == nil { firstArrivalNs = message.timeNs }
        lastArrivalNs = max(lastArrivalNs ?? message.timeNs, message.timeNs)
    }

    package var sampleCount: Int { stampsMs.reduce(0) { $0 + $1.count } }

    /// One controller's path, read off its samples.
    package struct ControllerPath: Sendable {
        /// Sender time (s since the controller's first stamp) and capture − sender time (ms), first sighting of each stamp.
        package var senderTimesS: [Double] = []
        package var rawDelaysMs: [Double] = []
        /// In sender order: false for a message that arrived, true for one missing at the nominal rate.
        package var lost: [Bool] = []
        package var duplicates = 0
        package var reordered = 0
        /// Distinct stamps that arrived.
        package var received = 0
        /// Gaps longer than `longGapPeriods` periods: a pause of the sender or of the recording, not loss.
        package var pauses = 0
    }

    /// A gap of more than this many periods is taken as a pause, not a run of losses: a
    /// Wi-Fi outage of 5 s at 10 Hz is 50 losses, a phone put down for a minute is not 600.
    package static let longGapPeriods = 50

    package func path(of c: Int) -> ControllerPath {
        var path = ControllerPath()
        let stamps = stampsMs[c], arrivals = arrivalsNs[c]
        guard let firstStamp = stamps.min() else { return path }
        var seen = Set<UInt64>()
        var highest: UInt64?
        for (stamp, arrival) in zip(stamps, arrivals) {
            guard seen.insert(stamp).inserted else { path.duplicates += 1; continue }
            if let highest, stamp < highest { path.reordered += 1 }
            highest = max(highest ?? stamp, stamp)
            path.senderTimesS.append(Double(stamp - firstStamp) / 1000)
            path.rawDelaysMs.append(Double(arrival) / 1e6 - Double(stamp))
        }
        path.received = seen.count
        // Losses: in sender order, each gap between consecutive stamps is round(gap / period) − 1 missing messages.
        let sorted = seen.sorted()
        for (i, stamp) in sorted.enumerated() {
            if i > 0 {
                let periods = Int((Double(stamp - sorted[i - 1]) / nominalPeriodMs).rounded())
                if periods > Self.longGapPeriods {
                    path.pauses += 1
                } else if periods > 1 {
                    path.lost.append(contentsOf: repeatElement(true, count: periods - 1))
                }
            }
            path.lost.append(false)
        }
        return path
    }
}
