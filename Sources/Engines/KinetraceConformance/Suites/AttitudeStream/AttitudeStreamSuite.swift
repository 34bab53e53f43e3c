import KinetraceWire

/// The 3D mouse's suite (specs/attitude-stream.md), composed from its case
/// types in report order. The host answers nothing on the wire, so the active
/// cases judge the attitudes it applied on the stdio adapter's observation channel.
extension AttitudeStream: ConformanceSuiteProviding {
    package static let conformanceSuite = ProtocolSuite(
        wireProtocol: AttitudeStream(),
        specVersion: "attitude-stream 1.0",
        // Derived from the built-in declaration (AC-AS-INTERLEAVED keeps its ID), with hand-written cases where the
        // stream's edges go beyond it: float32 edge values, a write boundary at every offset, long coalesced runs,
        // the TCP connection's state, reading under load, and a flood of connections (last: its connections stay open).
        activeCases: DeclaredSuite.composed(
            AttitudeStream.builtInDeclaration.map { declaration in DeclaredSuite.derivedCases(
                declaration, prefix: "AC-AS-", renamed: ["ISOLATION": "INTERLEAVED"],
                cited: ["APPLY-VALUES": ["AS-VALUE-2", "AS-OBS-2"], "ISOLATION": ["AS-HOST-4"], "INVALID-RANGE": ["AS-HOST-2"],
                        "INVALID-FINITE": ["AS-HOST-2", "AS-VALUE-1"], "STREAM-READS": ["AS-FRAME-1"], "CUT-AT-END": ["AS-FRAME-1"],
                        "OBS-TIMELY": ["AS-OBS-3"]]) } ?? [],
            leading: [],
            handWritten: [AttitudeBitExactCase(), AttitudeSplitCase(), AttitudeCoalescedCase(), AttitudeBytewiseCase(),
                          AttitudeNonFiniteOpenCase(), AttitudeKeepsReadingCase()])
            + [AttitudeConnectionFloodCase()],
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
