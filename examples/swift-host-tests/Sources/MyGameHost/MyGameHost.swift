import Foundation
import KinetraceHost
import KinetraceWire

/// The game's MotionLink v1 host: takes a controller's datagrams and returns what to send
/// back (an ack per jump). A real game keeps its own logic here; this one delegates to
/// Kinetrace's reference host logic so the example passes, and `acksEverything` plants a bug
/// to show the suite catching it.
public final class MyGameHost: @unchecked Sendable {  // the test harness calls it from one thread
    private var logic: ReferenceHostLogic
    private let acksEverything: Bool
    private let started = Date()

    public init(acksEverything: Bool = false) throws {
        logic = try ReferenceHostLogic(.motionLinkV1, maximumControllers: 256)
        self.acksEverything = acksEverything
    }

    /// The replies owed for one datagram from `controller` ("address:port").
    public func receive(_ datagram: [UInt8], from controller: String) -> [[UInt8]] {
        let nowNs = Int64(Date().timeIntervalSince(started) * 1e9)
        let replies = logic.receive(datagram, from: controller, receivedNs: nowNs)
        if !replies.isEmpty { return replies }
        if acksEverything, let frame = try? datagram.withUnsafeBytes({ (raw) throws(WireError) in try MotionFrame.decode(raw) }) {
            return [HapticAck(echoTMs: frame.tMs).encoded()]
        }
        return []
    }
}
