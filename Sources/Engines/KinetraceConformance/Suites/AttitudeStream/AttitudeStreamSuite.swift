import KinetraceWire

/// The 3D mouse's suite (specs/attitude-stream.md), composed from its case
/// types in report order. The host answers nothing on the wire, so the active
/// cases judge the attitudes it applied on the stdio adapter's observation channel.
extension AttitudeStream: ConformanceSuiteProviding {
    public static let conformanceSuite = ProtocolSuite(
        wireProtocol: AttitudeStream(),
        specVersion: "attitude-stream 1.0",
        activeCases: [
            AttitudeBitExactCase(), AttitudeSplitCase(), AttitudeCoalescedCase(), AttitudeBytewiseCase(), AttitudeInterleavedCase(),
            AttitudeInvalidCase(),
            AttitudeNonFiniteOpenCase(), AttitudeKeepsReadingCase(),
            ObservationTimingCase(info: CaseInfo(
                id: "AC-AS-OBS-TIMELY", requirements: ["AS-OBS-3"], level: .must,
                summary: "One record each from 20 fresh controllers, 25 ms apart: each applied attitude is reported within the reply deadline (--reply-deadline-ms, 50 ms) of its record; at most 2 later.",
                timeoutMs: 3_000, judgesDecisions: true), decision: "attitude") { k, _ in
                var records = AttitudeRecords(seed: 0x4153_4F42 &+ UInt64(k))
                return records.next().encoded()
            },
            // Last: its idle connections stay open until the run ends.
            AttitudeConnectionFloodCase(),
        ],
        passiveCases: [
            AttitudeValueCase(), AttitudeStreamLengthCase(), AttitudeStreamGapCase(),
            CaptureRateCase(info: CaseInfo(id: "PC-AS-RATE-BAND", requirements: ["AS-RATE-1"], level: .must,
                                           summary: "The mean interval between one controller's records (capture time) over any 10 s window is 16.67 ms ± 10 % (60 Hz)."),
                            tolerance: 0.1),
            CaptureRateCase(info: CaseInfo(id: "PC-AS-RATE-NOMINAL", requirements: ["AS-RATE-2"], level: .should,
                                           summary: "The mean interval between one controller's records (capture time) over any 10 s window is 16.67 ms ± 2 % (nominal 60 Hz)."),
                            tolerance: 0.02),
        ],
        judgesObservations: true,
        // One level record: a conforming host applies it and says nothing on the wire.
        preflight: { _, _ in AttitudeRecord(roll: 0, pitch: 0, yaw: 0).encoded() })
}
