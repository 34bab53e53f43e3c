import KinetraceWire

/// The MotionLink v1 suite (specs/motionlink-v1.md), composed from its case
/// types in report order.
extension MotionLinkV1: ConformanceSuiteProviding {
    package static let conformanceSuite = ProtocolSuite(
        wireProtocol: MotionLinkV1(),
        specVersion: "motionlink-v1 1.0",
        activeCases: [
            ThresholdCase(), RefractoryCase(), StaleCase(), DuplicateCase(), InvalidInputCase(), AckFormatCase(), IsolationCase(),
            NoUnsolicitedCase(), AckTimingCase.must, AckTimingCase.should, AckTimingCase.load, StaleResyncCase(), StateBoundCase(),
        ] + ImpairedPathCase.bundled(MotionLinkV1(), requirements: ["ML-GESTURE-2", "ML-GESTURE-3", "ML-GESTURE-4", "ML-ACK-RULE-1"]),
        passiveCases: [
            FrameLayoutCase(), MonotonicTimestampCase(), RateBandCase.must, RateBandCase.should, GapCase(),
            AckLayoutCase(), AckValuesCase(), AckRuleCase(), AckDestinationCase(), AckDeadlineCase.must, AckDeadlineCase.should,
        ],
        // A trigger: a conforming host answers it with an ack.
        preflight: { tMs, parameters in MotionFrame(tMs: tMs, ay: TriggerLevel.above(parameters.rule)).encoded() })
}
