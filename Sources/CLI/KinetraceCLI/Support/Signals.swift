import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `handler` once on the first SIGINT or SIGTERM, on a dispatch queue
/// (not in signal context). Keep the returned sources alive.
func onTermination(_ handler: @escaping @Sendable (Int32) -> Void) -> [DispatchSourceSignal] {
    [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)  // let the dispatch source see it instead of the default action
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { handler(number) }
        source.resume()
        return source
    }
}

/// Prints a line and flushes, so a parent reading our stdout through a pipe sees it at once.
func printNow(_ line: String) {
    print(line)
    fflush(nil)  // flushes every stream; `stdout` itself is not concurrency-safe to name
}
