import Foundation
import KinetraceTestSupport
import Testing
@testable import KinetraceGestures
import KinetraceTrace

/// Detecting as the trace is read (`DetectedTrace.read`, what `gestures eval` does) finds
/// exactly what detecting over the samples held in memory (`GestureTrace.read`) finds: the
/// same samples chosen and left out as stale, the same detections, the same scores or the
/// same refusal, for every detector kind and sample source, on every bundled trace.
@Suite struct DetectedTraceTests {
    static let root = Fixture.packageRoot.appendingPathComponent("captures")

    static var traces: [(name: String, bytes: [UInt8])] {
        get throws {
            var files = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("gestures").path)
                .filter { $0.hasSuffix(".jsonl") }.sorted().map { "gestures/\($0)" }
            files += ["synthetic-session.jsonl", "keepcalm-session.jsonl", "attitude-session.jsonl", "loopback-session.jsonl"]
            var traces = try files.map { ($0, Array(try Data(contentsOf: root.appendingPathComponent($0)))) }
            // Stale frames: every fifth message sent again (same stamp) and every seventh followed by an older copy.
            let synthetic = try String(contentsOf: root.appendingPathComponent("synthetic-session.jsonl"), encoding: .utf8)
            var lines: [Substring] = []
            var previous: Substring?
            for (i, line) in synthetic.split(separator: "\n").enumerated() {
                lines.append(line)
                guard line.contains("\"kind\":\"msg\""), line.contains("\"dir\":\"c2h\"") else { continue }
                if i % 5 == 0 { lines.append(line) }
                if i % 7 == 0, let previous { lines.append(previous) }
                previous = line
            }
            traces.append(("synthetic with stale frames", Array((lines.joined(separator: "\n") + "\n").utf8)))
            return traces
        }
    }

    static func settings(_ kind: DetectorKind) throws -> [DetectorSettings] {
        let base = try kind.settings([:])
        // A detector without a threshold (host-model: the protocol's own rule) runs twice as it is.
        guard base.values["threshold"] != nil else { return [base, base] }
        return [0.5, 1, 1.5].map { factor in
            var s = base
            s.values["threshold"] = base["threshold"] * factor
            return s
        }
    }

    @Test(arguments: DetectorKind.allCases)
    func detectingWhileReadingIsDetectingOverTheSamples(_ kind: DetectorKind) throws {
        let settings = try Self.settings(kind)
        var compared = 0
        for (name, bytes) in try Self.traces {
            for source in SampleSource.allCases {
                // The budget at its default, run out part way (some controllers streamed, the rest held), and none.
                let budget = [DetectedTrace.defaultStreamingBudget, 2 * settings.count, 0][(compared + compared / 3) % 3]
                let streamed = try DetectedTrace.read(try TraceReader(bytes: bytes, name: name), source: source, settings: settings,
                                                      streamingBudget: budget)
                let held = DetectedTrace(try GestureTrace.read(try TraceReader(bytes: bytes, name: name), source: source), settings: settings)
                let context = "\(name), \(kind.rawValue), \(source.rawValue), streaming budget \(budget)"
                #expect(streamed.controllers == held.controllers, "\(context)")
                #expect(streamed.sampleKinds == held.sampleKinds, "\(context)")
                #expect(streamed.sampleCounts == held.sampleCounts, "\(context)")
                #expect(streamed.sampleContents == held.sampleContents, "\(context)")
                #expect(streamed.lacksGravity == held.lacksGravity, "\(context)")
                #expect(streamed.labels == held.labels, "\(context)")
                #expect(streamed.detections == held.detections, "\(context)")
                let window = MatchWindow()
                let a = Result { () throws(GestureError) in try GestureEvaluation.evaluate(streamed, window: window) }
                let b = Result { () throws(GestureError) in try GestureEvaluation.evaluate(held, window: window) }
                switch (a, b) {
                case (.success(let x), .success(let y)):
                    #expect(x.map(\.score) == y.map(\.score) && x.map(\.byGesture) == y.map(\.byGesture)
                            && x.map(\.detections) == y.map(\.detections), "\(context)")
                case (.failure(let x), .failure(let y)):
                    #expect(x == y, "\(context)")
                default:
                    Issue.record("\(context): one way scored, the other refused: \(a) / \(b)")
                }
                compared += 1
            }
        }
        #expect(compared >= 36, "every trace under every source")
    }

    /// The stale-frame trace really has stale frames, and both ways leave out the same ones.
    @Test func staleFramesAreLeftOut() throws {
        let traces = try Self.traces
        let (name, bytes) = try #require(traces.last)
        let plain = try #require(traces.first { $0.name == "synthetic-session.jsonl" })
        let settings = try Self.settings(.thresholdRefractory)
        // The altered trace has hundreds of frames more, every one of them stale.
        #expect(bytes.filter { $0 == 0x0A }.count > plain.bytes.filter { $0 == 0x0A }.count + 300)
        let withStale = try DetectedTrace.read(try TraceReader(bytes: bytes, name: name), source: .frames, settings: settings)
        let without = try DetectedTrace.read(try TraceReader(bytes: plain.bytes, name: plain.name), source: .frames, settings: settings)
        #expect(withStale.sampleCounts == without.sampleCounts, "every added frame was stale")
        #expect(withStale.detections == without.detections)
    }
}
