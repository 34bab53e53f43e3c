import ArgumentParser
import KinetraceHost
import KinetraceSupport
import KinetraceTrace

/// What `host` and `phone` share as they start serving connections.
enum ServingStartup {
    /// Descriptors a server needs besides its connections: standard streams, the listener, the trace, the event loop's.
    static let descriptorsBesideConnections = 64

    /// Raises the open-file limit as far as the hard limit allows and returns how many connections fit
    /// under it, at most `wanted` and at least 1. Each connection is a descriptor: past the limit, accept
    /// fails and every new client waits, so a smaller limit is a warning at start, not a stall later.
    static func connectionsWithinDescriptorLimit(_ wanted: Int) -> (allowed: Int, descriptors: Int) {
        let descriptors = DescriptorLimit.raiseToHardLimit()
        let room = descriptors - descriptorsBesideConnections
        return (Swift.max(1, Swift.min(wanted, room)), descriptors)
    }

    /// Runs `start` (a server's constructor), turning its failure into one line and the exit status
    /// every serving command uses: a trace's own, 64 for a configuration the host refuses, 69 when
    /// it cannot `action` `endpoint` ("cannot listen on 127.0.0.1:9000: …").
    static func starting<Server>(_ action: String, _ endpoint: Endpoint, _ start: () throws -> Server) throws -> Server {
        do {
            return try start()
        } catch let error as TraceError {
            printError(error.description)
            throw ExitStatus.forTraceError(error)
        } catch let error as HostError {
            printError(error.description)
            throw ExitCode.validationFailure
        } catch {
            printError("cannot \(action) \(endpoint): \(error)")
            throw ExitStatus.unavailable
        }
    }
}
