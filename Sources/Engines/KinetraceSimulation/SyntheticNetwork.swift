import KinetraceTrace
import KinetraceWire

/// The network both synthesizers model: a one-way latency drawn per frame and
/// clamped, by default the source paper's lab figures (mean 70.4, sd 3.7, min
/// 52.2, max 82.2 ms), and fixed addresses for the host (at its protocol's
/// port) and controller i.
package struct SyntheticNetwork: Hashable, Sendable {
    package var latencyMeanMs = 70.4
    package var latencySdMs = 3.7
    package var latencyRangeMs: ClosedRange<Double> = 52.2...82.2
    package var hostAddress = "10.0.0.1"

    package init() {}

    /// A latency from `normal`, a draw with this mean and sd, clamped to the range.
    package func latencyMs(_ normal: (_ mean: Double, _ sd: Double) -> Double) -> Double {
        min(max(normal(latencyMeanMs, latencySdMs), latencyRangeMs.lowerBound), latencyRangeMs.upperBound)
    }

    package func host(port: UInt16) -> Endpoint { Endpoint(host: hostAddress, port: port) }

    /// Ports 50000 up hold 15536 controllers; each further block of them gets its own
    /// second address byte (10.1.0.x, 10.2.0.x, …), so the first block keeps its endpoints.
    package func controllerEndpoint(_ index: Int) -> Endpoint {
        let block = index / Self.controllersPerBlock, slot = index % Self.controllersPerBlock
        return Endpoint(host: "10.\(block).0.\(10 + slot % 240)", port: UInt16(50_000 + slot))
    }

    /// The ports from 50000 to 65535.
    static let controllersPerBlock = 65_536 - 50_000
}
