import KinetraceTrace
import KinetraceWire

/// One-way latency in both directions from two recordings of one session: the
/// controller's (`simulate --trace`, `replay --record`) and the host's
/// (`host --trace`) or a capture beside the host. Each frame is found in both by
/// its bytes, so no address needs to match (a NAT may rewrite them); each reply by
/// the bytes of the frame it echoes. Meaningful when the two recorders read one
/// clock (one machine) or synchronised clocks.
///
/// A byte-stream protocol's records need not be unique (a phone held still
/// sends the same attitude again and again), so they are matched by position
/// instead: the nth record of a connection in one trace is the nth of the same
/// connection in the other. Connections pair by their controller's address,
/// or, when the addresses differ (a NAT), by order of appearance if both traces
/// hold the same number; the report says which, and what could not be paired.
package enum LatencyJoin {
    package static func join(controller: some TraceRecordSource, host: some TraceRecordSource,
                            options: LatencyOptions = .init()) throws(TraceError) -> LatencyAnalysis {
        let sent = try Side.read(controller)
        let received = try Side.read(host)
        if controller.wireProtocol.transport == .byteStream {
            return joinByPosition(sent, received, controllerSource: controller.source, hostSource: host.source, options: options)
        }
        var controllers: [Endpoint] = []
        var index: [Endpoint: Int] = [:]
        func slot(_ endpoint: Endpoint) -> Int {
            if let i = index[endpoint] { return i }
            index[endpoint] = controllers.count
            controllers.append(endpoint)
            return controllers.count - 1
        }
        var oneWay: [LatencySample] = [], replyOneWay: [LatencySample] = []
        var frameCounts: [Int] = [], replyCounts: [Int] = []
        var unmatched = 0
        for frame in sent.frames {
            let c = slot(frame.controller)
            if frameCounts.count <= c { frameCounts.append(0); replyCounts.append(0) }
            guard let arrivalNs = received.frameTimes[frame.payload] else { unmatched += 1; continue }
            frameCounts[c] += 1
            oneWay.append(LatencySample(controller: c, ordinal: frameCounts[c], timeNs: arrivalNs,
                                        ms: Double(arrivalNs - frame.timeNs) / 1e6))
        }
        // Replies in the controller's trace, in its order; the host's send is keyed by the echoed frame's bytes.
        for reply in sent.replies {
            guard let c = index[reply.controller], let sentNs = received.replyTimes[reply.framePayload] else { unmatched += 1; continue }
            replyCounts[c] += 1
            replyOneWay.append(LatencySample(controller: c, ordinal: replyCounts[c], timeNs: reply.timeNs,
                                           ms: Double(reply.timeNs - sentNs) / 1e6))
        }
        var measures: [LatencyAnalysis.MeasureResult] = []
        var unavailable: [LatencyAnalysis.Unavailable] = []
        let hasReplies = ProtocolTraits.hasReplies(controller.wireProtocol)
        for (measure, samples) in [(LatencyMeasure.joinedOneWay, oneWay), (.joinedReplyOneWay, replyOneWay)] {
            if samples.isEmpty {
                let reason = measure == .joinedReplyOneWay && !hasReplies
                    ? "no replies: \(controller.wireProtocol.id) hosts answer nothing" : "no message appears in both traces"
                unavailable.append(.init(measure: measure, reason: reason))
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
                               unpairedReplies: unmatched, unusableStamps: 0)
    }

    /// Byte streams: the nth record of a connection in the controller's trace against the nth of the same connection in the host's.
    static func joinByPosition(_ sent: Side, _ received: Side, controllerSource: String, hostSource: String,
                               options: LatencyOptions) -> LatencyAnalysis {
        var notes: [String] = []
        let sentConnections = sent.connectionOrder, receivedConnections = received.connectionOrder
        var pairs: [(Endpoint, Endpoint)] = []
        let common = sentConnections.filter { received.records[$0] != nil }
        if !common.isEmpty {
            pairs = common.map { ($0, $0) }
            notes.append("records matched by position in each connection, connections paired by the controller's address")
            let unpaired = sentConnections.count - common.count + receivedConnections.count - common.count
            if unpaired > 0 {
                notes.append("ambiguous: \(unpaired) connection(s) appear in one trace only and were left out")
            }
        } else if sentConnections.count == receivedConnections.count {
            pairs = Array(zip(sentConnections, receivedConnections))
            notes.append("records matched by position in each connection; no address is in both traces, so connections were paired in order of appearance"
                         + (pairs.count > 1 ? " (ambiguous: check they opened in the same order)" : ""))
        } else {
            notes.append("ambiguous: no address is in both traces and they hold \(sentConnections.count) and \(receivedConnections.count) connections; nothing matched")
        }
        var oneWay: [LatencySample] = []
        var unmatched = 0, differing = 0
        for (c, (sender, receiver)) in pairs.enumerated() {
            let mine = sent.records[sender] ?? [], theirs = received.records[receiver] ?? []
            for (n, record) in mine.enumerated() {
                guard n < theirs.count else { unmatched += 1; continue }
                guard theirs[n].payload == record.payload else { differing += 1; continue }
                oneWay.append(LatencySample(controller: c, ordinal: n + 1, timeNs: theirs[n].timeNs,
                                            ms: Double(theirs[n].timeNs - record.timeNs) / 1e6))
            }
            unmatched += max(0, theirs.count - mine.count)
        }
        if differing > 0 {
            notes.append("ambiguous: \(differing) record(s) differ at the same position in the two traces (bytes lost or reordered before a recorder); left out")
        }
        var measures: [LatencyAnalysis.MeasureResult] = []
        var unavailable: [LatencyAnalysis.Unavailable] = []
        if oneWay.isEmpty {
            unavailable.append(.init(measure: .joinedOneWay, reason: "no record could be matched by position"))
        } else {
            measures.append(.init(measure: .joinedOneWay, samples: oneWay, controllers: pairs.count, sigmas: options.sigmas,
                                  medians: nil, baseMs: 0))
        }
        unavailable.append(.init(measure: .joinedReplyOneWay, reason: "no replies: byte-stream hosts here answer nothing"))
        var header = received.header
        header.capturePoint = CapturePoint("joined")
        header.notes = "\(controllerSource) (\(sent.header.capturePoint)) joined with \(hostSource) (\(received.header.capturePoint)) by position"
        var analysis = LatencyAnalysis(header: header, controllers: pairs.map(\.0), options: options, measures: measures,
                                       unavailable: unavailable, invalidMessages: sent.invalid + received.invalid,
                                       unpairedReplies: unmatched, unusableStamps: 0)
        analysis.notes = notes
        return analysis
    }

    /// What one recording says about when each valid message was seen.
    struct Side {
        var header: TraceHeader
        /// Valid c2h frames in trace order: who sent them, when, their bytes.
        var frames: [(controller: Endpoint, timeNs: Int64, payload: Payload)] = []
        /// First sighting of each frame, by its bytes.
        var frameTimes: [Payload: Int64] = [:]
        /// Valid h2c replies in trace order, with the bytes of the frame each echoes.
        var replies: [(controller: Endpoint, timeNs: Int64, framePayload: Payload)] = []
        var replyTimes: [Payload: Int64] = [:]
        var invalid = 0
        /// Every c2h record of each connection in stream order, invalid ones included (they hold a position).
        var records: [Endpoint: [(timeNs: Int64, payload: Payload)]] = [:]
        var connectionOrder: [Endpoint] = []

        static func read(_ reader: some TraceRecordSource) throws(TraceError) -> Side {
            var side = Side(header: reader.header)
            // Per controller: its samples' bytes by sender time, to find what a reply echoes.
            var framesByStamp: [Endpoint: [UInt64: Payload]] = [:]
            let wireProtocol = reader.wireProtocol
            let byStream = wireProtocol.transport == .byteStream
            while let record = try reader.next() {
                guard case .message(let m) = record else { continue }
                if byStream && m.direction == .controllerToHost {
                    if side.records[m.source] == nil { side.connectionOrder.append(m.source) }
                    side.records[m.source, default: []].append((m.timeNs, m.payload))
                }
                let facts = m.facts(wireProtocol)
                guard facts.isValid, facts.direction == m.direction else {
                    side.invalid += 1
                    continue
                }
                switch m.direction {
                case .controllerToHost:
                    side.frames.append((m.source, m.timeNs, m.payload))
                    if side.frameTimes[m.payload] == nil { side.frameTimes[m.payload] = m.timeNs }
                    if let senderTimeMs = facts.senderTimeMs, framesByStamp[m.source]?[senderTimeMs] == nil {
                        framesByStamp[m.source, default: [:]][senderTimeMs] = m.payload
                    }
                case .hostToController:
                    guard let echo = facts.echoTimeMs, let framePayload = framesByStamp[m.destination]?[echo] else { continue }
                    side.replies.append((m.destination, m.timeNs, framePayload))
                    if side.replyTimes[framePayload] == nil { side.replyTimes[framePayload] = m.timeNs }
                }
            }
            return side
        }
    }
}
