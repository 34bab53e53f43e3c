import KinetraceJSON
import KinetraceTrace
import KinetraceWire
import Logging

/// The reference host's decisions, free of I/O: what to make of one message
/// from one controller, by the protocol's host model, and the counters.
/// The UDP host and the stdio host share it, so both answer exactly alike.
package struct HostCore<Controller: Hashable> {
    package let wireProtocol: any WireProtocol
    package private(set) var statistics = HostStatistics()
    private var model: any HostModel
    private var table: ControllerTable<Controller>

    /// Idle timeout and controller cap defaults, from conntrack practice.
    package static var defaultMaximumControllers: Int { 65_536 }
    package static var defaultIdleTimeoutNs: Int64 { 120_000_000_000 }

    package init(wireProtocol: any WireProtocol, rule: GestureRule, maximumControllers: Int = defaultMaximumControllers,
                idleTimeoutNs: Int64? = defaultIdleTimeoutNs) {
        self.wireProtocol = wireProtocol
        model = wireProtocol.makeHostModel(rule: rule)
        table = ControllerTable(capacity: maximumControllers, idleNs: idleTimeoutNs)
    }

    /// Handles one message as received; returns what the host owes, if anything.
    package mutating func handle(_ bytes: UnsafeRawBufferPointer, from controller: Controller, receivedNs: Int64) -> HostDecision? {
        statistics.datagrams += 1
        let facts = wireProtocol.facts(bytes)
        let number = table.number(of: controller, nowNs: receivedNs) { forgotten, why in
            model.forget(forgotten)
            switch why {
            case .idle: statistics.forgottenIdle += 1
            case .overCapacity: statistics.forgottenOverCapacity += 1
            }
        }
        statistics.controllers = table.count
        switch model.accept(facts, from: number, receivedNs: receivedNs) {
        case .dropped(let reason):
            statistics.invalidByReason[reason, default: 0] += 1
            return nil
        case .stale:
            statistics.validFrames += 1
            statistics.staleFrames += 1
            return nil
        case .accepted:
            statistics.validFrames += 1
            return nil
        case .decided(let decision):
            statistics.validFrames += 1
            statistics.triggers += 1
            if decision.owesReply { statistics.repliesSent += 1 }
            return decision
        }
    }

    package mutating func handle(_ bytes: [UInt8], from controller: Controller, receivedNs: Int64) -> HostDecision? {
        bytes.withUnsafeBytes { handle($0, from: controller, receivedNs: receivedNs) }
    }
}

extension HostDecision {
    /// The decision as the host's trace records it: an `event` record named
    /// `decision`, with the controller, the decision's name, and its values
    /// and sample stamp when it has them (the same members as an observation).
    package func eventRecord(timeNs: Int64, controller: Endpoint) -> EventRecord {
        var data: [String: JSONValue] = ["controller": .string(controller.description), "decision": .string(name.description)]
        if !values.isEmpty { data["values"] = .array(values.map { .number($0) }) }
        if let sampleTimeMs { data["sender_time_ms"] = .integer(Int64(clamping: sampleTimeMs)) }
        return EventRecord(timeNs: timeNs, event: "decision", data: data)
    }
}

extension HostDecision {
    /// Logs the decision at info level (the host's `-v`), with its values when it has some.
    func log(to logger: Logger, controller: Endpoint) {
        var metadata: Logger.Metadata = ["controller": "\(controller)", "sender_time_ms": "\(sampleTimeMs.map(String.init) ?? "-")"]
        if !values.isEmpty { metadata["values"] = "\(values.map { "\($0)" }.joined(separator: " "))" }
        logger.info("\(name)", metadata: metadata)
    }
}
