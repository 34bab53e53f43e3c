import KinetraceWire

/// The KeepCalm suite (specs/keepcalm-json.md), composed from its case types
/// in report order. The host answers nothing on the wire, so the active cases
/// judge its jumps on the stdio adapter's observation channel.
extension KeepCalmJSON: ConformanceSuiteProviding {
    package static let conformanceSuite = ProtocolSuite(
        wireProtocol: KeepCalmJSON(),
        specVersion: "keepcalm-json 1.0",
        // Derived from the built-in declaration, keeping the IDs these cases always had; hand-written where JSON text
        // forms (escapes, UTF-8, nesting, member order), string-named non-finite values and sizes go beyond it.
        activeCases: DeclaredSuite.composed(
            KeepCalmJSON.builtInDeclaration.map { declaration in DeclaredSuite.derivedCases(
                declaration, prefix: "AC-KC-",
                renamed: ["EDGE-THRESHOLD": "THRESHOLD", "EDGE-WINDOW": "LATCH", "ISOLATION": "CONTROLLERS"],
                cited: ["EDGE-THRESHOLD": ["KC-MSG-2", "KC-OBS-2"], "EDGE-WINDOW": ["KC-HOST-2"], "ISOLATION": ["KC-HOST-2", "KC-HOST-4"],
                        "INVALID-RANGE": ["KC-HOST-3"], "INVALID-LENGTH": ["KC-SIZE-1", "KC-HOST-3"], "INVALID-TYPE": ["KC-HOST-3"],
                        "INVALID-MEMBERS": ["KC-MSG-3", "KC-HOST-3"], "OBS-TIMELY": ["KC-OBS-3"]]) } ?? [],
            leading: ["AC-KC-THRESHOLD", "AC-KC-LATCH", "AC-KC-CONTROLLERS"],
            handWritten: [KeepCalmUnknownMembersCase(), KeepCalmValidFormsCase(), KeepCalmInvalidJSONCase(), KeepCalmSchemaCase(),
                          KeepCalmValuesCase(), KeepCalmSizeCase()]),
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
        // A spike on every axis from a fresh controller: a host reporting its jump shows that its observation channel works (silence
        // in a later case is then the host's); one with nothing to say stays silent, and only a refusal or an exec host's end tells.
        preflight: { _, parameters in
            KeepCalmMotion(id: MessageID(randomHigh: 0x4B43_5052_4546_4C49, randomLow: 0x4748_5400_0000_0001),
                          x: Double(TriggerLevel.above(parameters.rule)), y: Double(TriggerLevel.above(parameters.rule)), z: Double(TriggerLevel.above(parameters.rule))).encoded()
        })
}
