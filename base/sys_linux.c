/* SPDX-License-Identifier: MIT */
/* Raw Linux system calls: return -errno on failure and leave errno as the interrupted code had it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

/* syscall(2) is a thin trap wrapper; it only reports through errno, which we save and restore so
 * a signal handler never changes the errno of the code it interrupted. */
static long sys6(long nr, long a, long b, long c, long d, long e, long f) {
    int saved = errno;
    long r = syscall(nr, a, b, c, d, e, f);
    if (r == -1) r = -(long)errno;
    errno = saved;
    return r;
}
#define SYS(nr, a, b, c, d, e, f) sys6((nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

long fl_sys_write(int fd, const void *buf, size_t len) { return SYS(SYS_write, fd, buf, len, 0, 0, 0); }
long fl_sys_read(int fd, void *buf, size_t len) { return SYS(SYS_read, fd, buf, len, 0, 0, 0); }
long fl_sys_pread(int fd, void *buf, size_t len, int64_t off) {
    return SYS(SYS_pread64, fd, buf, len, off, 0, 0);
}

long fl_sys_pwrite(int fd, const void *buf, size_t len, int64_t off) {
    return SYS(SYS_pwrite64, fd, buf, len, off, 0, 0);
}

long fl_sys_openat(int dirfd, const char *path, int flags, int mode) {
    return SYS(SYS_openat, dirfd, path, flags, mode, 0, 0);
}
long fl_sys_close(int fd) { return SYS(SYS_close, fd, 0, 0, 0, 0, 0); }
long fl_sys_mprotect(void *addr, size_t len, int prot) {
    return SYS(SYS_mprotect, addr, len, prot, 0, 0, 0);
}
/* (glibc's stack_t is the kernel's) */
long fl_sys_sigaltstack(const stack_t *ss, stack_t *old) { return SYS(SYS_sigaltstack, ss, old, 0, 0, 0, 0); }
/* (glibc's struct stat is the kernel's on x86_64 and arm64) */
long fl_sys_fstat(int fd, struct stat *st) { return SYS(SYS_fstat, fd, st, 0, 0, 0, 0); }
long fl_sys_renameat(int olddir, const char *oldp, int newdir, const char *newp) {
#ifdef SYS_renameat
    return SYS(SYS_renameat, olddir, oldp, newdir, newp, 0, 0);
#else /* arm64 has only renameat2 */
    return SYS(SYS_renameat2, olddir, oldp, newdir, newp, 0, 0);
#endif
}
long fl_sys_unlinkat(int dirfd, const char *path, int flags) {
    return SYS(SYS_unlinkat, dirfd, path, flags, 0, 0, 0);
}
long fl_sys_fsync(int fd) { return SYS(SYS_fsync, fd, 0, 0, 0, 0, 0); }
long fl_sys_getpid(void) { return SYS(SYS_getpid, 0, 0, 0, 0, 0, 0); }
long fl_sys_gettid(void) { return SYS(SYS_gettid, 0, 0, 0, 0, 0, 0); }
long fl_sys_tgkill(int tgid, int tid, int sig) { return SYS(SYS_tgkill, tgid, tid, sig, 0, 0, 0); }
long fl_sys_raise(int sig) { return fl_sys_tgkill((int)fl_sys_getpid(), (int)fl_sys_gettid(), sig); }

/* libc's clock_gettime, not the system call: POSIX lists it as async-signal-safe, and the vDSO
 * answers without entering the kernel (a system call costs ~1 us on this project's VMs, and a
 * capture asks the time twice for each thread it parks). */
long fl_sys_clock_gettime(int clk, uint64_t *ns) {
    struct timespec ts;
    int saved = errno;
    long r = clock_gettime((clockid_t)clk, &ts) == 0 ? 0 : -(long)errno;
    errno = saved;
    if (r == 0) *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return r;
}

long fl_sys_clock_gettime_syscall(int clk, uint64_t *ns) {
    struct timespec ts;
    long r = SYS(SYS_clock_gettime, clk, &ts, 0, 0, 0, 0);
    if (r == 0) *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return r;
}

long fl_sys_uname(struct utsname *u) { return SYS(SYS_uname, u, 0, 0, 0, 0, 0); }

size_t fl_page_size(void) {
    size_t p = (size_t)getauxval(AT_PAGESZ);
    return p ? p : 4096;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

void fl_sys_prefault(void *addr, size_t len) {
    if (SYS(SYS_madvise, addr, len, MADV_POPULATE_WRITE, 0, 0, 0) == 0) return;
    size_t page = fl_page_size();
    for (size_t off = 0; off < len; off += page) ((volatile char *)addr)[off] = 0;
}

extern char **environ;

const char *fl_env_get(const char *name) {
    size_t n = fl_strlen(name);
    for (char **e = environ; e && *e; e++)
        if ((*e)[0] == name[0] && fl_memcmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

long fl_sys_getrandom(void *buf, size_t len, unsigned flags) {
    return SYS(SYS_getrandom, buf, len, flags, 0, 0, 0);
}

long fl_sys_set_thread_name(const char *name) {
    return SYS(SYS_prctl, PR_SET_NAME, name, 0, 0, 0, 0);
}

long fl_sys_dupfd_cloexec(int fd, int min) { return SYS(SYS_fcntl, fd, F_DUPFD_CLOEXEC, min, 0, 0, 0); }
long fl_sys_seccomp_mode(void) { return SYS(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0, 0); }
long fl_sys_prctl_get_name(char name[16]) {
    name[0] = 0;
    long r = SYS(SYS_prctl, PR_GET_NAME, name, 0, 0, 0, 0);
    name[15] = 0;
    return r;
}

long fl_sys_process_vm_readv(int pid, void *dst, uint64_t src, size_t len) {
    struct iovec local = {dst, len};
    struct iovec remote = {(void *)(uintptr_t)src, len};
    return SYS(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
}

long fl_sys_pipe2(int fds[2], int flags) { return SYS(SYS_pipe2, fds, flags, 0, 0, 0, 0); }
long fl_sys_getdents64(int fd, void *buf, size_t len) { return SYS(SYS_getdents64, fd, buf, len, 0, 0, 0); }
long fl_sys_readlinkat(int dirfd, const char *path, char *buf, size_t len) {
    return SYS(SYS_readlinkat, dirfd, path, buf, len, 0, 0);
}
long fl_sys_getuid(void) { return SYS(SYS_getuid, 0, 0, 0, 0, 0, 0); }
int fl_sys_kill_timer(uint64_t ns) {
    struct sigevent sev;
    int id = -1;
    fl_memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGKILL;
    long r = SYS(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id, 0, 0, 0); /* (the kernel's timer_t: int) */
    if (r < 0) return (int)r;
    struct itimerspec its;
    fl_memset(&its, 0, sizeof its);
    its.it_value.tv_sec = (time_t)(ns / 1000000000u);
    its.it_value.tv_nsec = (long)(ns % 1000000000u);
    if ((r = SYS(SYS_timer_settime, id, 0, &its, 0, 0, 0)) < 0) {
        SYS(SYS_timer_delete, id, 0, 0, 0, 0, 0);
        return (int)r;
    }
    return id;
}
long fl_sys_timer_delete(int id) { return SYS(SYS_timer_delete, id, 0, 0, 0, 0, 0); }
long fl_sys_geteuid(void) { return SYS(SYS_geteuid, 0, 0, 0, 0, 0, 0); }
long fl_sys_mkdirat(int dirfd, const char *path, int mode) {
    return SYS(SYS_mkdirat, dirfd, path, mode, 0, 0, 0);
}
long fl_sys_rt_tgsigqueueinfo(int tgid, int tid, int sig, const void *info) {
    return SYS(SYS_rt_tgsigqueueinfo, tgid, tid, sig, info, 0, 0);
}

long fl_sys_futex_wait(volatile int *addr, int val, uint64_t timeout_ns) {
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    return SYS(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, 0, 0);
}

long fl_sys_futex_wake(volatile int *addr, int count) {
    return SYS(SYS_futex, addr, FUTEX_WAKE_PRIVATE, count, 0, 0, 0);
}

long fl_sys_nanosleep(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    return SYS(SYS_nanosleep, &ts, 0, 0, 0, 0, 0);
}

long fl_sys_mmap_anon(size_t len, void **out) {
    long r = SYS(SYS_mmap, 0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r < 0 && r > -4096) return r;
    *out = (void *)(uintptr_t)r;
    return 0;
}
