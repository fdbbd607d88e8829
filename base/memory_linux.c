/* SPDX-License-Identifier: MIT */
/* The safe reader for the live process: process_vm_readv on ourselves, or a pipe the kernel checks. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "base/base.h"

static fl_memory_method_t g_method FL_STARTUP_DATA;
static int g_pipe[2] = {-1, -1};
static volatile int g_pipe_busy; /* the pipe carries one read at a time */
static volatile int g_pid FL_STARTUP_DATA; /* ours; refreshed by fl_memory_refresh_pid after a fork */
static uint64_t g_pipe_ino; /* the pipe's inode: the program may close our ends and reuse them */

/* process_vm_readv copies with the kernel's fault handling: an unmapped or unreadable source
 * gives EFAULT or a short count, never a signal. */
static int vm_readv_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    (void)r;
    if (!len) return 0;
    uint64_t end;
    if (!fl_add_u64(addr, len, &end)) return FL_EFAULT;
    long n = fl_sys_process_vm_readv(g_pid, dst, addr, len);
    if (n == -ESRCH) {
        /* The pid names the thread-group leader, and once the main thread has exited
         * (pthread_exit in main) the kernel finds no memory through it: any live thread's id
         * names the same memory, and the reading thread is live. */
        g_pid = (int)fl_sys_gettid();
        n = fl_sys_process_vm_readv(g_pid, dst, addr, len);
    }
    return n == (long)len ? 0 : FL_EFAULT;
}

/* write() from an address the kernel validates (EFAULT instead of a signal), then read it back.
 * Works where process_vm_readv does not: qemu-user (which does not translate the remote iovec)
 * and seccomp policies that refuse the call. Chunks stay below PIPE_BUF so a write is atomic. */
static int pipe_read(const fl_reader_t *r, uint64_t addr, void *dst, size_t len) {
    (void)r;
    uint64_t end;
    if (!fl_add_u64(addr, len, &end)) return FL_EFAULT;
    unsigned spins = 0;
    while (__atomic_exchange_n(&g_pipe_busy, 1, __ATOMIC_ACQUIRE)) {
        if (++spins > 1000000) return FL_EFAULT; /* bounded: a holder that died must not hang us */
    }
    int ret = 0;
    char *out = dst;
    while (len) {
        size_t chunk = len > 4096 ? 4096 : len;
        long w = fl_sys_write(g_pipe[1], (const void *)(uintptr_t)addr, chunk);
        if (w != (long)chunk) {
            if (w > 0) { /* drain what went in so the pipe stays empty for the next read */
                char sink[4096];
                (void)fl_sys_read(g_pipe[0], sink, (size_t)w);
            }
            ret = FL_EFAULT;
            break;
        }
        long n = fl_sys_read(g_pipe[0], out, chunk);
        if (n != (long)chunk) {
            ret = FL_EFAULT;
            break;
        }
        out += chunk;
        addr += chunk;
        len -= chunk;
    }
    __atomic_store_n(&g_pipe_busy, 0, __ATOMIC_RELEASE);
    return ret;
}

static const fl_reader_t g_vm_reader = {.read = vm_readv_read};
static const fl_reader_t g_pipe_reader = {.read = pipe_read};

/* A method works if it reads back a value we know and refuses an address we know is unmapped. */
static bool probe(const fl_reader_t *r) {
    volatile uint64_t known = 0x6661756c746c696eull;
    uint64_t got = 0;
    if (fl_read(r, (uint64_t)(uintptr_t)&known, &got, sizeof got) != 0 || got != known) return false;
    return fl_read(r, 8, &got, sizeof got) != 0;
}

static int open_pipe(void) {
    if (g_pipe[0] >= 0) return 0;
    int fds[2];
    struct stat st;
    if (fl_sys_pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) return FL_EIO;
    fds[0] = fl_fd_above_std(fds[0]);
    fds[1] = fl_fd_above_std(fds[1]);
    if (fds[0] < 0 || fds[1] < 0) {
        if (fds[0] >= 0) fl_sys_close(fds[0]);
        if (fds[1] >= 0) fl_sys_close(fds[1]);
        return FL_EIO;
    }
    g_pipe_ino = fl_sys_fstat(fds[0], &st) == 0 ? (uint64_t)st.st_ino : 0;
    g_pipe[0] = fds[0];
    g_pipe[1] = fds[1];
    return 0;
}

static bool pipe_end_ours(int fd) {
    struct stat st;
    return fd >= 0 && fl_sys_fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
           (uint64_t)st.st_ino == g_pipe_ino;
}

/* Our pipe, or a new one. The program owns the descriptor table: ends it closed, or closed and
 * reused, are not ours to write memory into or to close. */
static bool pipe_ready(void) {
    if (g_pipe[0] >= 0 && pipe_end_ours(g_pipe[0]) && pipe_end_ours(g_pipe[1])) return true;
    g_pipe[0] = g_pipe[1] = -1;
    return open_pipe() == 0;
}

/* Whether a seccomp filter applies to the calling thread ("Seccomp:\t2" in its status): a
 * filter's verdict on a system call may be death by SIGSYS, and nothing can ask it first, so
 * the reader then keeps to write and read, which every policy leaves a process. At a capture,
 * from the status file (open and read, which any policy allows), not prctl. */
static char g_status[4096]; /* (static: the caller may be on a small signal stack) */
static bool seccomp_filtered(void) {
    long fd = fl_sys_openat(AT_FDCWD, "/proc/thread-self/status", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) fd = fl_sys_openat(AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return false;
    long n = fl_sys_read((int)fd, g_status, sizeof g_status - 1);
    fl_sys_close((int)fd);
    if (n <= 0) return false;
    g_status[n] = 0;
    for (const char *p = g_status; *p; p++)
        if ((p == g_status || p[-1] == '\n') && fl_memcmp(p, "Seccomp:\t", 9) == 0)
            return p[9] == '2';
    return false;
}

void fl_memory_refresh_pid(void) {
    static volatile int busy; /* one thread at a time changes the method and the pipe */
    g_pid = (int)fl_sys_getpid();
    if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) return;
    if (g_method == FL_MEMORY_PIPE)
        (void)pipe_ready();
    else if (g_method == FL_MEMORY_VM_READV && seccomp_filtered() && pipe_ready() &&
             probe(&g_pipe_reader))
        g_method = FL_MEMORY_PIPE; /* a filter installed since (a sandbox): its verdict may kill */
    __atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

int fl_memory_init(fl_memory_method_t force) {
    fl_memory_refresh_pid();
    /* (prctl here, not the status file: one system call at every start rather than ~30 us) */
    if (force == FL_MEMORY_VM_READV || (force == FL_MEMORY_NONE && fl_sys_seccomp_mode() != 2)) {
        if (probe(&g_vm_reader)) {
            g_method = FL_MEMORY_VM_READV;
            return 0;
        }
        if (force == FL_MEMORY_VM_READV) return FL_ENOSYS;
    }
    if (!pipe_ready()) return FL_EIO;
    if (!probe(&g_pipe_reader)) return FL_ENOSYS;
    g_method = FL_MEMORY_PIPE;
    return 0;
}

fl_memory_method_t fl_memory_method(void) { return g_method; }

const fl_reader_t *fl_memory_reader(void) {
    return g_method == FL_MEMORY_PIPE ? &g_pipe_reader : &g_vm_reader;
}
