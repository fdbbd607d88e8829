/* SPDX-License-Identifier: MIT */
/* Darwin system calls through libSystem's wrappers: -errno on failure, errno left as it was. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h> /* renameat; nothing else of stdio is used */
#include <stdlib.h>  /* getenv */
#include <mach/vm_page_size.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

#pragma GCC poison malloc calloc realloc free

/* Darwin's system call numbers and calling convention are private to libSystem (they have
 * changed between releases), so unlike sys_linux.c this goes through the libc wrappers. Every one
 * used here is a thin trap wrapper, on POSIX's list of async-signal-safe functions or (getentropy,
 * pthread_threadid_np for the caller) as safe in libSystem's implementation. They report through
 * errno, which is saved and restored so a signal handler never changes the interrupted code's. */
#define SYSCALL(expr)                              \
    do {                                           \
        int saved_ = errno;                        \
        long r_ = (long)(expr);                    \
        if (r_ == -1) r_ = -(long)errno;           \
        errno = saved_;                            \
        return r_;                                 \
    } while (0)

long fl_sys_write(int fd, const void *buf, size_t len) { SYSCALL(write(fd, buf, len)); }
long fl_sys_read(int fd, void *buf, size_t len) { SYSCALL(read(fd, buf, len)); }
long fl_sys_pread(int fd, void *buf, size_t len, int64_t off) {
    SYSCALL(pread(fd, buf, len, (off_t)off));
}
long fl_sys_pwrite(int fd, const void *buf, size_t len, int64_t off) {
    SYSCALL(pwrite(fd, buf, len, (off_t)off));
}
long fl_sys_openat(int dirfd, const char *path, int flags, int mode) {
    SYSCALL(openat(dirfd, path, flags, mode));
}
long fl_sys_close(int fd) { SYSCALL(close(fd)); }
long fl_sys_fstat(int fd, struct stat *st) { SYSCALL(fstat(fd, st)); }
long fl_sys_dupfd_cloexec(int fd, int min) { SYSCALL(fcntl(fd, F_DUPFD_CLOEXEC, min)); }
long fl_sys_mprotect(void *addr, size_t len, int prot) { SYSCALL(mprotect(addr, len, prot)); }
long fl_sys_sigaltstack(const stack_t *ss, stack_t *old) { SYSCALL(sigaltstack(ss, old)); }
long fl_sys_renameat(int olddir, const char *oldp, int newdir, const char *newp) {
    SYSCALL(renameat(olddir, oldp, newdir, newp));
}
long fl_sys_unlinkat(int dirfd, const char *path, int flags) { SYSCALL(unlinkat(dirfd, path, flags)); }
long fl_sys_mkdirat(int dirfd, const char *path, int mode) {
    SYSCALL(mkdirat(dirfd, path, (mode_t)mode));
}
long fl_sys_geteuid(void) { SYSCALL(geteuid()); }
long fl_sys_fsync(int fd) { SYSCALL(fsync(fd)); }
long fl_sys_getpid(void) { SYSCALL(getpid()); }

/* For the calling thread, pthread_threadid_np reads the id cached in its pthread_t (no lock). */
long fl_sys_gettid(void) {
    uint64_t id = 0;
    if (pthread_threadid_np(NULL, &id) != 0) return -ESRCH;
    return (long)(uint32_t)id;
}

long fl_sys_clock_gettime(int clk, uint64_t *ns) {
    struct timespec ts;
    int saved = errno;
    long r = clock_gettime((clockid_t)clk, &ts) == 0 ? 0 : -(long)errno;
    errno = saved;
    if (r == 0) *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return r;
}

long fl_sys_clock_gettime_syscall(int clk, uint64_t *ns) { return fl_sys_clock_gettime(clk, ns); }

long fl_sys_uname(struct utsname *u) {
    int saved = errno;
    long r = uname(u) == 0 ? 0 : -(long)errno;
    errno = saved;
    return r;
}

size_t fl_page_size(void) { return vm_page_size; }

void fl_sys_prefault(void *addr, size_t len) {
    size_t page = fl_page_size();
    for (size_t off = 0; off < len; off += page) ((volatile char *)addr)[off] = 0;
}

const char *fl_env_get(const char *name) { return getenv(name); }

long fl_sys_getrandom(void *buf, size_t len, unsigned flags) {
    (void)flags;
    if (len > 256) len = 256; /* getentropy's limit */
    int saved = errno;
    long r = getentropy(buf, len) == 0 ? (long)len : -(long)errno;
    errno = saved;
    return r;
}

long fl_sys_nanosleep(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    SYSCALL(nanosleep(&ts, NULL));
}

long fl_sys_raise(int sig) { return -(long)pthread_kill(pthread_self(), sig); }

/* Darwin's futex: the ulock calls of libsystem_kernel (xnu bsd/sys/ulock.h). They are not in the
 * SDK's headers, but every macOS since 10.12 exports them and libc++'s std::atomic::wait is built
 * on them. UL_COMPARE_AND_WAIT is process-private; ULF_NO_ERRNO returns -errno and leaves errno
 * alone; the timeout is in microseconds, 0 meaning none. Compiled only: nothing here runs it. */
extern int __ulock_wait(uint32_t operation, void *addr, uint64_t value, uint32_t timeout_us);
extern int __ulock_wake(uint32_t operation, void *addr, uint64_t wake_value);
#define FL_UL_COMPARE_AND_WAIT 1u
#define FL_ULF_WAKE_ALL 0x00000100u
#define FL_ULF_NO_ERRNO 0x01000000u

long fl_sys_futex_wait(volatile int *addr, int val, uint64_t timeout_ns) {
    uint64_t us = timeout_ns / 1000u;
    if (us == 0) us = 1;
    if (us > UINT32_MAX) us = UINT32_MAX;
    int r = __ulock_wait(FL_UL_COMPARE_AND_WAIT | FL_ULF_NO_ERRNO, (void *)addr, (uint32_t)val,
                         (uint32_t)us);
    return r < 0 ? r : 0;
}
long fl_sys_futex_wake(volatile int *addr, int count) {
    uint32_t op = FL_UL_COMPARE_AND_WAIT | FL_ULF_NO_ERRNO | (count > 1 ? FL_ULF_WAKE_ALL : 0u);
    int r = __ulock_wake(op, (void *)addr, 0);
    return r == -ENOENT ? 0 : r; /* ENOENT: nobody was waiting */
}

/* Darwin names only the calling thread. */
long fl_sys_set_thread_name(const char *name) {
    return -(long)pthread_setname_np(name);
}
