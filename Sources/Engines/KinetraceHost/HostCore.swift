import KinetraceWire

/// The reference host's decisions, free of I/O: what to make of one
/// datagram from one controller, and the counters. The UDP host and the
/// stdio host share it, so both answer exactly alike.
public struct HostCore<Controller: Hashable> {
    public private(set) var statistics = HostStatistics()
    private var tracker: GestureTracker<Controller>
    private let intensity: Float32
    private let sharpness: Float32

    public init(rule: GestureRule, intensity: Float32 = 1, sharpness: Float32 = 1) {
        tracker = GestureTracker(rule: rule)
        self.intensity = intensity
        self.sharpness = sharpness
    }

    /// Handles one decoded datagram; returns the ack it owes, if any.
    public mutating func handle(_ result: Result<MotionLinkV1.Message, WireError>, from controller: Controller) -> HapticAck? {
        statistics.datagrams += 1
        defer { statistics.controllers = tracker.controllerCount }
        switch result {
        case .success(.frame(let frame)):
            statistics.validFrames += 1
            switch tracker.accept(frame, from: controller) {
            case .stale:
                statistics.staleFrames += 1
                return nil
            case .accepted:
                return nil
            case .trigger:
                statistics.triggers += 1
                statistics.acksSent += 1
                return HapticAck(echoTMs: frame.tMs, intensity: intensity, sharpness: sharpness)
            }
        case .success(.ack):
            statistics.invalidByReason["wrong_direction", default: 0] += 1  // ML-VALID-3
            return nil
        case .failure(let error):
            statistics.invalidByReason[error.code.name, default: 0] += 1
            return nil
        }
    }
}
