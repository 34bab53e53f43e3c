import KinetraceTrace
import KinetraceWire

/// One-way latency in both directions from two recordings of one session: the
/// controller's (`simulate --trace`, `replay --record`) and the host's
/// (`host --trace`) or a capture beside the host. Each frame is found in both by
/// its bytes, so no address needs to match (a NAT may rewrite them); each ack by
/// the bytes of the frame it echoes. Meaningful when the two recorders read one
/// clock (one machine) or synchronised clocks.
public enum LatencyJoin {
    public static func join(controller: some TraceRecordSource, host: some TraceRecordSource,
                            options: LatencyOptions = .init()) throws(TraceError) -> LatencyAnalysis {
        let sent = try Side.read(controller)
        let received = try Side.read(host)
        var controllers: [Endpoint] = []
        var index: [Endpoint: Int] = [:]
        func slot(_ endpoint: Endpoint) -> Int {
            if let i = index[endpoint] { return i }
            index[endpoint] = controllers.count
            controllers.append(endpoint)
            return controllers.count - 1
        }
        var oneWay: [LatencySample] = [], ackOneWay: [LatencySample] = []
        var frameCounts: [Int] = [], ackCounts: [Int] = []
        var unmatched = 0
        for frame in sent.frames {
            let c = slot(frame.controller)
            if frameCounts.count <= c { frameCounts.append(0); ackCounts.append(0) }
            guard let arrivalNs = received.frameTimes[frame.payload] else { unmatched += 1; continue }
            frameCounts[c] += 1
            oneWay.append(LatencySample(controller: c, ordinal: frameCounts[c], timeNs: arrivalNs,
                                        ms: Double(arrivalNs - frame.timeNs) / 1e6))
        }
        // Acks in the controller's trace, in its order; the host's send is keyed by the echoed frame's bytes.
        for ack in sent.acks {
            guard let c = index[ack.controller], let sentNs = received.ackTimes[ack.framePayload] else { unmatched += 1; continue }
            ackCounts[c] += 1
            ackOneWay.append(LatencySample(controller: c, ordinal: ackCounts[c], timeNs: ack.timeNs,
                                           ms: Double(ack.timeNs - sentNs) / 1e6))
        }
        var measures: [LatencyAnalysis.MeasureResult] = []
        var unavailable: [LatencyAnalysis.Unavailable] = []
        for (measure, samples) in [(LatencyMeasure.joinedOneWay, oneWay), (.joinedAckOneWay, ackOneWay)] {
            if samples.isEmpty {
                unavailable.append(.init(measure: measure, reason: "no message appears in both traces"))
            } else {
                measures.append(.init(measure: measure, samples: samples, controllers: controllers.count,
                                      sigmas: options.sigmas, medians: nil, baseMs: 0))
            }
        }
        var header = received.header
        header.capturePoint = CapturePoint("joined")
        header.notes = "\(controller.source) (\(sent.header.capturePoint)) joined with \(host.source) (\(received.header.capturePoint))"
        return LatencyAnalysis(header: header, controllers: controllers, options: options, measures: measures,
                               unavailable: unavailable, invalidMessages: sent.invalid + received.invalid,
                               unpairedAcks: unmatched, unusableStamps: 0)
    }

    /// What one recording says about when each valid message was seen.
    struct Side {
        var header: TraceHeader
        /// Valid c2h frames in trace order: who sent them, when, their bytes.
        var frames: [(controller: Endpoint, timeNs: Int64, payload: Payload)] = []
        /// First sighting of each frame, by its bytes.
        var frameTimes: [Payload: Int64] = [:]
        /// Valid h2c acks in trace order, with the bytes of the frame each echoes.
        var acks: [(controller: Endpoint, timeNs: Int64, framePayload: Payload)] = []
        var ackTimes: [Payload: Int64] = [:]
        var invalid = 0

        static func read(_ reader: some TraceRecordSource) throws(TraceError) -> Side {
            var side = Side(header: reader.header)
            // Per controller: its frames' bytes by t_ms, to find what an ack echoes.
            var framesByStamp: [Endpoint: [UInt64: Payload]] = [:]
            let wireProtocol = reader.wireProtocol
            while let record = try reader.next() {
                guard case .message(let m) = record else { continue }
                let facts = m.facts(wireProtocol)
                guard facts.isValid, facts.direction == m.direction else {
                    side.invalid += 1
                    continue
                }
                switch m.direction {
                case .controllerToHost:
                    side.frames.append((m.source, m.timeNs, m.payload))
                    if side.frameTimes[m.payload] == nil { side.frameTimes[m.payload] = m.timeNs }
                    if let tMs = facts.senderTimeMs, framesByStamp[m.source]?[tMs] == nil {
                        framesByStamp[m.source, default: [:]][tMs] = m.payload
                    }
                case .hostToController:
                    guard let echo = facts.echoTimeMs, let framePayload = framesByStamp[m.destination]?[echo] else { continue }
                    side.acks.append((m.destination, m.timeNs, framePayload))
                    if side.ackTimes[framePayload] == nil { side.ackTimes[framePayload] = m.timeNs }
                }
            }
            return side
        }
    }
}
