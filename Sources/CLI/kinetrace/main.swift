import KinetraceCLI

TerminationSignals.install()
Kinetrace.main()
