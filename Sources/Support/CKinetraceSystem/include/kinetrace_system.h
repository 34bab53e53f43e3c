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

/// A readiness set: descriptors, each with a tag, of which a wait returns
/// only the ready ones (Linux epoll; poll's cost grows with every descriptor
/// watched, which thousands of controller sockets make the bottleneck).
/// Returns the set's descriptor, or -1 where unsupported (callers poll).
int kinetrace_readiness_create(void);

/// Watches `fd` for input, reported with `tag`. Returns 0, or -1 with errno.
int kinetrace_readiness_add(int set, int fd, unsigned int tag);

/// Waits up to `timeout_ms` for input on the set; writes up to `capacity`
/// ready tags. Returns how many, 0 on timeout, or -1 with errno (EINTR too).
/* Stops watching fd; 0, or -1 with errno. */
int kinetrace_readiness_remove(int set, int fd);
int kinetrace_readiness_wait(int set, unsigned int *tags, int capacity, int timeout_ms);

/// Asks the kernel to stamp each datagram `fd` receives with its arrival time
/// (Linux SO_TIMESTAMPNS, CLOCK_REALTIME). Returns 0, or -1 where unsupported.
int kinetrace_enable_receive_timestamps(int fd);

/// Receives one datagram without waiting; `*arrival_ns` is its kernel arrival
/// stamp (CLOCK_REALTIME ns), or -1 when it carried none. Returns its length,
/// or -1 with errno (EAGAIN: nothing waiting).
long kinetrace_receive_stamped(int fd, void *buffer, unsigned long capacity, long long *arrival_ns);

/// The kernel's view of its clock discipline (Linux adjtimex, read only):
/// whether NTP or PTP synchronises CLOCK_REALTIME, the offset it last
/// corrected, and its error bounds, all in nanoseconds. Returns 0, or -1
/// where unsupported.
int kinetrace_clock_discipline(int *synchronized, long long *offset_ns, long long *max_error_ns, long long *estimated_error_ns);

#endif
