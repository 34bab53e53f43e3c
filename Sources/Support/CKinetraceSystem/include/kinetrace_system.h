#ifndef KINETRACE_SYSTEM_H
#define KINETRACE_SYSTEM_H

/// Sets the calling thread's timer slack in nanoseconds (Linux prctl
/// PR_SET_TIMERSLACK, which Swift cannot call: prctl is variadic).
/// Returns 0 on success, -1 where unsupported or refused.
int kinetrace_set_timer_slack(unsigned long nanoseconds);

/// Clears the calling thread's effective, permitted and inheritable
/// capability sets (Linux capset, which Swift cannot reach through Glibc).
/// Returns 0 on success, -1 where unsupported or refused.
int kinetrace_clear_capabilities(void);

#endif
