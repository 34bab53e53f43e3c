import KinetraceWire

/// The reference host's decisions, free of I/O: what to make of one message
/// from one controller, by the protocol's host model, and the counters.
/// The UDP host and the stdio host share it, so both answer exactly alike.
public struct HostCore<Controller: Hashable> {
    public let wireProtocol: any WireProtocol.Type
    public private(set) var statistics = HostStatistics()
    private var model: any HostModel
    private var numbering = ControllerNumbering<Controller>()

    public init(wireProtocol: any WireProtocol.Type, rule: GestureRule) {
        self.wireProtocol = wireProtocol
        model = wireProtocol.makeHostModel(rule: rule)
    }

    /// Handles one message as received; returns what the host owes, if anything.
    public mutating func handle(_ bytes: UnsafeRawBufferPointer, from controller: Controller, receivedNs: Int64) -> HostDecision? {
        statistics.datagrams += 1
        defer { statistics.controllers = model.controllerCount }
        let facts = wireProtocol.facts(bytes)
        switch model.accept(facts, from: numbering.number(of: controller), receivedNs: receivedNs) {
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
            if decision.owesReply { statistics.acksSent += 1 }
            return decision
        }
    }

    public mutating func handle(_ bytes: [UInt8], from controller: Controller, receivedNs: Int64) -> HostDecision? {
        bytes.withUnsafeBytes { handle($0, from: controller, receivedNs: receivedNs) }
    }
}
