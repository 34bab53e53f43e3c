#include "kinetrace_system.h"

#if defined(__linux__)
#include <linux/capability.h>
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timex.h>
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

int kinetrace_readiness_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int kinetrace_readiness_add(int set, int fd, unsigned int tag) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = EPOLLIN;
    event.data.u32 = tag;
    return epoll_ctl(set, EPOLL_CTL_ADD, fd, &event);
}

int kinetrace_readiness_remove(int set, int fd) {
    struct epoll_event event;  /* ignored, but kernels before 2.6.9 required it */
    memset(&event, 0, sizeof event);
    return epoll_ctl(set, EPOLL_CTL_DEL, fd, &event);
}

int kinetrace_readiness_wait(int set, unsigned int *tags, int capacity, int timeout_ms) {
    enum { batch = 256 };
    struct epoll_event events[batch];
    if (capacity <= 0) { errno = EINVAL; return -1; }
    int count = epoll_wait(set, events, capacity < batch ? capacity : batch, timeout_ms);
    for (int i = 0; i < count; i++) tags[i] = events[i].data.u32;
    return count;
}

int kinetrace_enable_receive_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

long kinetrace_receive_stamped(int fd, void *buffer, unsigned long capacity, long long *arrival_ns) {
    struct iovec vector = { .iov_base = buffer, .iov_len = capacity };
    union { char bytes[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } control;
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    *arrival_ns = -1;
    ssize_t n = recvmsg(fd, &message, MSG_DONTWAIT);
    if (n < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
            *arrival_ns = (long long)stamp.tv_sec * 1000000000LL + stamp.tv_nsec;
        }
    }
    return (long)n;
}
int kinetrace_clock_discipline(int *synchronized, long long *offset_ns, long long *max_error_ns, long long *estimated_error_ns) {
    struct timex t;
    memset(&t, 0, sizeof t);  /* modes 0: read only, no privilege needed */
    int state = adjtimex(&t);
    if (state == -1) return -1;
    *synchronized = (state != TIME_ERROR && !(t.status & STA_UNSYNC)) ? 1 : 0;
    /* offset is in µs unless STA_NANO; the error bounds are always µs */
    *offset_ns = (t.status & STA_NANO) ? (long long)t.offset : (long long)t.offset * 1000LL;
    *max_error_ns = (long long)t.maxerror * 1000LL;
    *estimated_error_ns = (long long)t.esterror * 1000LL;
    return 0;
}
#else
#include <errno.h>
#include <sys/socket.h>

int kinetrace_enable_receive_timestamps(int fd) {
    (void)fd;
    errno = ENOSYS;
    return -1;
}

long kinetrace_receive_stamped(int fd, void *buffer, unsigned long capacity, long long *arrival_ns) {
    *arrival_ns = -1;
    return (long)recv(fd, buffer, capacity, MSG_DONTWAIT);
}

int kinetrace_readiness_create(void) {
    errno = ENOSYS;
    return -1;
}

int kinetrace_readiness_add(int set, int fd, unsigned int tag) {
    (void)set; (void)fd; (void)tag;
    errno = ENOSYS;
    return -1;
}

int kinetrace_readiness_remove(int set, int fd) {
    (void)set; (void)fd;
    errno = ENOSYS;
    return -1;
}

int kinetrace_readiness_wait(int set, unsigned int *tags, int capacity, int timeout_ms) {
    (void)set; (void)tags; (void)capacity; (void)timeout_ms;
    errno = ENOSYS;
    return -1;
}

int kinetrace_set_timer_slack(unsigned long nanoseconds) {
    (void)nanoseconds;
    return -1;
}

int kinetrace_clear_capabilities(void) {
    return -1;
}
int kinetrace_clock_discipline(int *synchronized, long long *offset_ns, long long *max_error_ns, long long *estimated_error_ns) {
    (void)synchronized; (void)offset_ns; (void)max_error_ns; (void)estimated_error_ns;
    return -1;
}
#endif
