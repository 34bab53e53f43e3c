/// The protocols compiled into this build: the one place that names them, so
/// the registry, the engines and the CLI stay free of any one protocol.
enum BuiltInProtocols {
    static let all: [any WireProtocol] = [MotionLinkV1(), KeepCalmJSON(), AttitudeStream()]
    /// The protocol of traffic that names none: the source paper's.
    static let `default`: any WireProtocol = MotionLinkV1()
}
