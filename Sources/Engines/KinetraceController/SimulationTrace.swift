import KinetraceSupport
import KinetraceTrace
import KinetraceWire

/// A simulator's recording: the trace writer, when one was asked for, and
/// the first write error, which stops the recording but not the run (it is
/// reported at the end). The simulators' send and receive threads both
/// record, so it is used under the simulator's lock.
struct SimulationTrace {
    private var writer: (any TraceSink)?
    private var failure: TraceError?
    private var lastFlushNs = SystemClock.monotonicNs()
    /// How long recorded bytes may wait in memory: a killed simulator leaves at most this much unwritten.
    static let flushIntervalNs: Int64 = 500_000_000

    init() {}

    /// Opens the trace for a simulator of `configuration`, when it names one; `target` says where to, for the header's notes.
    init(_ configuration: ControllerSimulator.Configuration, rateHz: Double, target: String) throws(TraceError) {
        guard let path = configuration.tracePath else { return }
        let c = configuration
        writer = try TraceOutput.create(path: path, header: TraceHeader(
            created: RFC3339.string(fromNanoseconds: SystemClock.realtimeNs()), tool: "kinetrace simulate",
            wireProtocol: c.wireProtocol, capturePoint: .controller, clock: .realtime,
            notes: "\(c.controllers) controller(s) at \(rateHz) Hz to \(target), seed \(c.seed)",
            extra: ["seed": .integer(Int64(bitPattern: c.seed))]))
    }

    mutating func write(_ record: TraceRecord) {
        guard let writer, failure == nil else { return }
        do throws(TraceError) { try writer.write(record) } catch { failure = error }
    }

    /// Flushes when the interval has passed since the last flush (the receive loop calls it every poll).
    mutating func flushIfDue(nowNs: Int64 = SystemClock.monotonicNs()) {
        guard nowNs - lastFlushNs > Self.flushIntervalNs else { return }
        lastFlushNs = nowNs
        flush()
    }

    mutating func flush() {
        guard let writer, failure == nil else { return }
        do throws(TraceError) { try writer.flush() } catch { failure = error }
    }

    /// Closes the file; throws the first error the recording met.
    mutating func close() throws(TraceError) {
        try writer?.close()
        writer = nil
        if let failure { throw failure }
    }
}
