#include "kinetrace_system.h"

#if defined(__linux__)
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int kinetrace_set_timer_slack(unsigned long nanoseconds) {
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0);
}

int kinetrace_clear_capabilities(void) {
    struct __user_cap_header_struct header;
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(&header, 0, sizeof header);
    memset(data, 0, sizeof data);
    header.version = _LINUX_CAPABILITY_VERSION_3;
    header.pid = 0;
    return (int)syscall(SYS_capset, &header, data);
}
#else
int kinetrace_set_timer_slack(unsigned long nanoseconds) {
    (void)nanoseconds;
    return -1;
}

int kinetrace_clear_capabilities(void) {
    return -1;
}
#endif
