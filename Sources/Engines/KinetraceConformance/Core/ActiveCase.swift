import KinetraceTransport

/// An active case: crafts traffic to a live host from fresh controllers and
/// judges what comes back.
package protocol ActiveCase: Sendable {
    var info: CaseInfo { get }
    func run(_ probe: LiveProbe, _ parameters: SuiteParameters) throws(SocketError) -> CaseResult
}
