#include "kinetrace_system.h"

#if defined(__linux__)
#include <sys/prctl.h>

int kinetrace_set_timer_slack(unsigned long nanoseconds) {
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0);
}
#else
int kinetrace_set_timer_slack(unsigned long nanoseconds) {
    (void)nanoseconds;
    return -1;
}
#endif
