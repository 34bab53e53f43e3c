import ArgumentParser
import KinetraceGestures

/// `kinetrace gestures`: gesture detectors against labelled traces.
struct Gestures: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluate gesture detectors against labelled traces, and gate threshold changes in CI.",
        discussion: """
            Detectors: the source paper's threshold rule, a threshold latched on arrival time, \
            a threshold with a refractory window on the sender's clock, the trace's own \
            protocol's host model, and the jump, duck and tilt detectors of Apple's WWDC 2017 \
            "Badger with Attitude" game. `kinetrace gestures list` shows each one's parameters.
            """,
        subcommands: [GesturesEval.self, GesturesList.self])
}

/// `kinetrace gestures list`: the detectors and their parameters.
struct GesturesList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the detectors, the gestures each reports, and their parameters with defaults.")

    @OptionGroup var summaryFormat: SummaryFormatOptions

    func run() {
        switch summaryFormat.format {
        case .text:
            for kind in DetectorKind.allCases {
                print("\(kind.rawValue)  (\(kind.gestures.joined(separator: ", ")))")
                print("  \(kind.summary)")
                for p in kind.parameters {
                    let value = p.text(p.defaultValue)
                    let unit = p.unit.isEmpty ? "" : " \(p.unit)"
                    let choices = p.choices.isEmpty ? "" : " (\(p.choices.joined(separator: "|")))"
                    print("  --param \(p.name)=\(value)\(unit)\(choices): \(p.summary)")
                }
            }
        case .json:
            print(GestureRendering.catalogue().jsonText)
        }
    }
}
