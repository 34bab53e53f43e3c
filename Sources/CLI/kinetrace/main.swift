import KinetraceCLI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

TerminationSignals.install()
CommandCapabilities.install()
Kinetrace.main()
// main() returns only when the command succeeded; what it printed must have reached standard output.
exit(standardOutputStatus())
