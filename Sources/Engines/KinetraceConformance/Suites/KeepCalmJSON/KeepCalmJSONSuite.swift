import KinetraceWire

/// The KeepCalm suite (specs/keepcalm-json.md), composed from its case types
/// in report order. The host answers nothing on the wire, so the active cases
/// judge its jumps on the stdio adapter's observation channel.
extension KeepCalmJSON: ConformanceSuiteProviding {
    public static let conformanceSuite = ProtocolSuite(
        wireProtocol: KeepCalmJSON(),
        specVersion: "keepcalm-json 1.0",
        activeCases: [
            KeepCalmThresholdCase(), KeepCalmLatchCase(), KeepCalmControllersCase(), KeepCalmUnknownMembersCase(), KeepCalmValidFormsCase(),
            KeepCalmInvalidJSONCase(), KeepCalmSchemaCase(), KeepCalmValuesCase(), KeepCalmSizeCase(),
            ObservationTimingCase(info: CaseInfo(
                id: "AC-KC-OBS-TIMELY", requirements: ["KC-OBS-3"], level: .must,
                summary: "Spikes from 20 fresh controllers, 25 ms apart: each jump is reported within the reply deadline (--reply-deadline-ms, 50 ms) of its message; at most 2 later.",
                timeoutMs: 3_000, judgesDecisions: true), decision: "jump") { k, parameters in
                var messages = KeepCalmMessages(rule: parameters.rule, seed: 0x4B43_4F42 &+ UInt64(k))
                return messages.message(y: messages.spike(k))
            },
        ],
        passiveCases: [
            KeepCalmMessageCase(), KeepCalmValueCase(), KeepCalmUniqueIDCase(),
            CaptureRateCase(info: CaseInfo(id: "PC-KC-RATE-BAND", requirements: ["KC-RATE-1"], level: .must,
                                           summary: "The mean interval between one controller's messages (capture time) over any 10 s window is 100 ms ± 10 ms."),
                            tolerance: 0.1),
            CaptureRateCase(info: CaseInfo(id: "PC-KC-RATE-NOMINAL", requirements: ["KC-RATE-2"], level: .should,
                                           summary: "The mean interval between one controller's messages (capture time) over any 10 s window is 100 ms ± 2 ms (nominal 10 Hz)."),
                            tolerance: 0.02),
            KeepCalmGapCase(),
        ],
        judgesObservations: true,
        // A quiet message: a host with nothing to say stays silent, so only a refusal or an exec host's end tells.
        preflight: { _, parameters in
            KeepCalmMotion(id: MessageID(randomHigh: 0x4B43_5052_4546_4C49, randomLow: 0x4748_5400_0000_0001), x: 0, y: Double(TriggerLevel.below(parameters.rule)), z: 0).encoded()
        })
}
