import KinetraceCLI

Kinetrace.main()
