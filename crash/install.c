/* SPDX-License-Identifier: MIT */
/* fl_install / fl_uninstall: everything the crash path needs, prepared up front. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crash/crash.h"

fl_crash_config_t fl_crash_config = {.dirfd = -1, .reserve_fd = {-1, -1}, .marker = {.fd = -1}};
int fl_crash_test_fault_stage, fl_crash_test_hang_stage;
static bool g_installed;

static int prepare_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) { /* only then create it (and its parents) */
        int err = 0, e = fl_make_dirs(dir, 0700, &err);
        if (e) {
            errno = err; /* (for the caller's message) */
            return e;
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    fd = fl_fd_above_std(fd);
    if (fd < 0) return FL_EIO;
    struct stat st;
    if (faccessat(fd, ".", W_OK | X_OK, 0) != 0 || fstat(fd, &st) != 0) {
        close(fd);
        return FL_EIO;
    }
    fl_crash_config.dirfd = fd;
    fl_crash_config.dir_dev = (uint64_t)st.st_dev;
    fl_crash_config.dir_ino = (uint64_t)st.st_ino;
    fl_crash_config.dir_uid = (uint32_t)st.st_uid;
    /* Absolute path for the message the crash path prints. */
    if (dir[0] == '/' || !getcwd(fl_crash_config.report_dir, sizeof fl_crash_config.report_dir)) {
        fl_strlcpy(fl_crash_config.report_dir, dir, sizeof fl_crash_config.report_dir);
    } else {
        fl_strbuf_t sb = {fl_crash_config.report_dir, sizeof fl_crash_config.report_dir,
                          fl_strlen(fl_crash_config.report_dir)};
        fl_strbuf_puts(&sb, "/");
        fl_strbuf_puts(&sb, dir);
    }
    return 0;
}

static void close_fds(void) {
    fl_crash_config_t *c = &fl_crash_config;
    for (int i = 0; i < FL_RESERVE_FDS; i++) {
        if (fl_crash_is_report_dir(c->reserve_fd[i])) close(c->reserve_fd[i]);
        c->reserve_fd[i] = -1;
    }
    if (fl_crash_is_report_dir(c->dirfd)) close(c->dirfd);
    c->dirfd = -1;
}

/* The run marker (docs/hangs.md): exit and return from main end the run cleanly (a crash in an
 * exit handler that runs after this one still marks it crashed: crashed is never undone). */
static void mark_clean_at_exit(void) {
    fl_crash_watchdog_exiting();
    fl_run_marker_set_state(&fl_crash_config.marker, FL_RUN_STATE_CLEAN, NULL);
}

/* A fork child is not the run its parent marked: it drops its copy of the descriptor, so that
 * the parent's lock (the open file description's) goes when the parent ends. */
static void forget_marker_in_child(void) {
    fl_run_marker_close(&fl_crash_config.marker);
    fl_crash_watchdog_forget(); /* the watchdog thread stayed in the parent */
}

bool fl_crash_signals_parse(const char *s, uint64_t *mask) {
    *mask = 0;
    while (*s) {
        size_t n = strcspn(s, ", ");
        if (n) {
            char *end;
            long num = strtol(s, &end, 10);
            int sig = 0;
            for (unsigned i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) {
                int c = fl_crash_signals[i];
                const char *name = fl_signal_name(c); /* "SIGSEGV" */
                size_t len = strlen(name);
                if ((end == s + n && num == c) || (n == len && strncmp(s, name, n) == 0) ||
                    (n == len - 3 && strncmp(s, name + 3, n) == 0))
                    sig = c;
            }
            if (!sig) return false;
            *mask |= 1ull << sig;
        }
        s += n + (s[n] != 0);
    }
    return true;
}

int fl_crash_install(const fl_options *opts) {
    if (g_installed) return FL_EBUSY;
    if (!opts || !opts->report_dir || !*opts->report_dir) return FL_EINVAL;
    if (opts->max_frames > FL_MAX_FRAMES_LIMIT || opts->max_threads > FL_MAX_THREADS_LIMIT)
        return FL_EINVAL;
    uint64_t all = 0;
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) all |= 1ull << fl_crash_signals[i];
    if (opts->signals & ~all) return FL_EINVAL;
    unsigned crashed_stack = opts->crashed_stack_bytes == FL_STACK_BYTES_NONE ? 0
                             : opts->crashed_stack_bytes ? opts->crashed_stack_bytes
                                                         : FL_DEFAULT_CRASHED_STACK_BYTES;
    unsigned stack_total = opts->stack_bytes_total ? opts->stack_bytes_total : FL_DEFAULT_STACK_BYTES_TOTAL;
    if (crashed_stack > FL_STACK_BYTES_LIMIT || opts->stack_bytes > FL_STACK_BYTES_LIMIT ||
        stack_total > FL_STACK_BYTES_TOTAL_LIMIT)
        return FL_EINVAL;
    fl_crash_config_t *c = &fl_crash_config;
    c->signals = opts->signals ? opts->signals : all;
    int e = prepare_dir(opts->report_dir);
    if (e) return e;
    c->max_threads = opts->max_threads ? opts->max_threads : FL_DEFAULT_MAX_THREADS;
    c->max_frames = opts->max_frames ? opts->max_frames : FL_DEFAULT_MAX_FRAMES;
    c->crashed_stack_bytes = crashed_stack;
    c->stack_bytes = opts->stack_bytes;
    c->stack_bytes_total = stack_total;
    c->max_pending_reports = opts->max_pending_reports ? opts->max_pending_reports
                                                       : FL_DEFAULT_MAX_PENDING_REPORTS;
    c->crash_deadline_ns = (opts->crash_deadline_ms ? opts->crash_deadline_ms
                                                    : FL_DEFAULT_CRASH_DEADLINE_MS) * 1000000ull;
    c->thread_timeout_ns = opts->thread_timeout_ms ? opts->thread_timeout_ms * 1000000ull
                                                   : FL_DEFAULT_THREAD_TIMEOUT_NS;
    fl_strlcpy(c->app_name, opts->app_name ? opts->app_name : "", sizeof c->app_name);
    fl_strlcpy(c->app_version, opts->app_version ? opts->app_version : "", sizeof c->app_version);
    fl_sys_clock_gettime_syscall(CLOCK_REALTIME, &c->install_time_ns);
    c->pid = fl_sys_getpid();
    const char *stage = fl_env_get("FAULTLINE_TEST_FAULT_AFTER");
    fl_crash_test_fault_stage = stage ? atoi(stage) : 0;
    stage = fl_env_get("FAULTLINE_TEST_HANG_AFTER");
    fl_crash_test_hang_stage = stage ? atoi(stage) : 0;
    /* FAULTLINE_CFI=llvm (LLVM libunwind as the CFI engine, Linux) or uncached (no row cache):
     * to compare engines (docs/unwinding.md); otherwise faultline's evaluator and its cache. */
    const char *cfi = fl_env_get("FAULTLINE_CFI");
    fl_frames_cfi_mode(cfi && !strcmp(cfi, "llvm")       ? FL_CFI_MODE_LLVM
                       : cfi && !strcmp(cfi, "uncached") ? FL_CFI_MODE_UNCACHED
                                                         : FL_CFI_MODE_CACHED);

    /* Copies of the directory's descriptor: any descriptor holds a slot, and a dup walks no path. */
    for (int i = 0; i < FL_RESERVE_FDS; i++) c->reserve_fd[i] = fcntl(c->dirfd, F_DUPFD_CLOEXEC, 3);
    if ((e = fl_crash_platform_install()) != 0) {
        close_fds();
        return e;
    }
    fl_crash_terminate_install();
    g_installed = true;
    return 0;
}

int fl_install(const fl_options *opts) {
    int e = fl_crash_install(opts);
    if (e) return e;
    /* Without a marker the run's end is not known at the next start; crash reports still are. */
    static bool hooks; /* once per process (fl_install is not thread-safe anyway: no futex) */
    if (!hooks) {
        hooks = true;
        atexit(mark_clean_at_exit);
        pthread_atfork(NULL, NULL, forget_marker_in_child);
    }
    fl_run_marker_create(fl_crash_config.dirfd, fl_crash_config.install_time_ns,
                         &fl_crash_config.marker);
    return 0;
}

void fl_uninstall(void) {
    if (!g_installed) return;
    fl_watchdog_stop();
    fl_run_marker_set_state(&fl_crash_config.marker, FL_RUN_STATE_CLEAN, NULL);
    fl_run_marker_close(&fl_crash_config.marker);
    fl_crash_terminate_uninstall();
    fl_crash_platform_uninstall();
    close_fds();
    g_installed = false;
}
