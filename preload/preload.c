/* SPDX-License-Identifier: MIT */
/* libfaultline-preload.so: fl_install from a constructor, configured by FAULTLINE_* variables. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"
#include "crash/crash.h"
#include "faultline/faultline.h"

#define LIB_NAME "libfaultline-preload.so"

static void say(const char *what, const char *detail) {
    char msg[512];
    fl_strbuf_t sb;
    fl_strbuf_init(&sb, msg, sizeof msg);
    fl_strbuf_puts(&sb, "preload: ");
    fl_strbuf_puts(&sb, what);
    fl_strbuf_puts(&sb, detail);
    fl_log_stderr(msg);
}

/* A whole decimal number in [0, max], or false. */
static bool parse_uint(const char *s, unsigned max, unsigned *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || errno || v > max || s[0] == '-') return false;
    *out = (unsigned)v;
    return true;
}

/* FAULTLINE_INHERIT=0: takes this library out of LD_PRELOAD, so that the programs this one
 * executes start without it (entries are separated by colons or spaces, as ld.so reads them). */
static void drop_from_ld_preload(void) {
    const char *v = fl_env_get("LD_PRELOAD");
    if (!v) return;
    size_t len = strlen(v);
    char *out = malloc(len + 1);
    if (!out) return;
    size_t o = 0;
    for (const char *s = v; *s;) {
        size_t n = strcspn(s, ": ");
        const char *base = s;
        for (size_t i = 0; i < n; i++)
            if (s[i] == '/') base = s + i + 1;
        size_t bn = n - (size_t)(base - s);
        bool ours = bn == strlen(LIB_NAME) && strncmp(base, LIB_NAME, bn) == 0;
        if (n && !ours) {
            if (o) out[o++] = ':';
            memcpy(out + o, s, n);
            o += n;
        }
        s += n + (s[n] != 0);
    }
    out[o] = 0;
    if (o) setenv("LD_PRELOAD", out, 1);
    else unsetenv("LD_PRELOAD");
    free(out);
}

/* glibc's own sigaction, under a name that interposing it here does not take (exported from
 * glibc for compatibility on every architecture it supports). */
extern int libc_sigaction(int, const struct sigaction *, struct sigaction *) __asm__("__sigaction");

/* The program's sigaction (and, through it, its signal, ISO C signal and sigset): SIG_DFL for a
 * crash signal keeps faultline's action in place, with the default after the report
 * (fl_crash_app_sigaction); faultline's capture signal keeps its responder, the program's action
 * kept behind it (fl_threads_app_sigaction); anything else goes to glibc unchanged. AS-SAFE. */
__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
                                                     struct sigaction *old) {
    if (fl_threads_stands_in(sig)) return fl_threads_app_sigaction(act, old);
    if (!fl_crash_stands_in(sig)) return libc_sigaction(sig, act, old);
    return fl_crash_app_sigaction(sig, act, old);
}

/* The program's signal masks and waits. The kernel answers a fault whose signal is blocked by
 * resetting the action to the default and killing the process, so no handler runs: the common
 * server idiom of blocking every signal in every thread (sigfillset, then sigwait in one
 * thread) lost every report. And a thread waiting in sigwait for every signal takes
 * faultline's capture request (a real-time signal sent to each thread) as its own: the program
 * then acts on a signal it never got (one here exited, mid-capture, with status 0). So the
 * crash signals the kernel raises on a fault (SEGV, BUS, ILL, FPE, TRAP, SYS) that faultline
 * catches, and its capture signal, are taken out of every set the program blocks or waits for
 * (a waiting thread takes even a signal it does not block: under qemu-user, the emulator's own
 * SIGSEGV that ends a crashed guest went to the guest's sigwait, and the process hung). A
 * fault's signal cannot be deferred anyway; only one another process sends is no longer held
 * for sigwait. (SIGABRT stays the program's: abort unblocks it itself.) glibc's own rules are
 * kept: its internal signals (SIGCANCEL, SIGSETXID: 32, 33) are never blocked nor waited for,
 * and a wait reports SI_TKILL as SI_USER. The system calls themselves, as glibc makes them.
 * AS-SAFE. */
static const sigset_t *without_ours(const sigset_t *set, sigset_t *own) {
    int capture = fl_threads_signal();
    if (!set) return set;
    *own = *set;
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++)
        if (fl_crash_signals[i] != SIGABRT && fl_crash_catches(fl_crash_signals[i]))
            sigdelset(own, fl_crash_signals[i]);
    sigdelset(own, 32);
    sigdelset(own, 33);
    if (capture > 0) sigdelset(own, capture);
    return own;
}

static int mask(int how, const sigset_t *set, sigset_t *old) {
    sigset_t own;
    if (how == SIG_BLOCK || how == SIG_SETMASK) set = without_ours(set, &own);
    long r = syscall(SYS_rt_sigprocmask, how, set, old, _NSIG / 8);
    return r == 0 ? 0 : errno;
}

__attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t *set,
                                                           sigset_t *old) {
    int saved = errno, e = mask(how, set, old);
    errno = saved;
    return e;
}

__attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    int e = mask(how, set, old);
    if (e) errno = e;
    return e ? -1 : 0;
}

/* System V's sigset (vim's way to set its handlers: its fatal-signal handler puts SIG_DFL back
 * with it and sends itself the signal, which got no report while sigset went to glibc, whose
 * sigset calls its own sigaction, not this library's). glibc's semantics, through this
 * library's sigaction and mask: disp SIG_HOLD blocks sig (not a fault's: mask above) and
 * returns the action; any other sets it with an empty mask and no flags and unblocks sig; the
 * result is SIG_HOLD if sig was blocked, else the previous action. NOT AS-SAFE (as glibc's). */
__attribute__((visibility("default"))) sighandler_t sigset(int sig, sighandler_t disp) {
    struct sigaction act, old;
    sigset_t set, was;
    if (disp == SIG_ERR || sig < 1 || sig >= _NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    sigemptyset(&set);
    sigaddset(&set, sig);
    if (disp == SIG_HOLD) {
        if (sigprocmask(SIG_BLOCK, &set, &was) != 0) return SIG_ERR;
        if (sigismember(&was, sig)) return SIG_HOLD;
        return sigaction(sig, NULL, &old) != 0 ? SIG_ERR : old.sa_handler;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = disp;
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old) != 0 || sigprocmask(SIG_UNBLOCK, &set, &was) != 0)
        return SIG_ERR;
    return sigismember(&was, sig) ? SIG_HOLD : old.sa_handler;
}

/* rt_sigtimedwait without faultline's signals in the set; restarted after EINTR only by
 * sigwait, as glibc does. */
static int wait_for(const sigset_t *set, siginfo_t *info, const struct timespec *timeout) {
    sigset_t own;
    int r = (int)syscall(SYS_rt_sigtimedwait, without_ours(set, &own), info, timeout, _NSIG / 8);
    if (r > 0 && info && info->si_code == SI_TKILL) info->si_code = SI_USER;
    return r;
}

__attribute__((visibility("default"))) int sigtimedwait(const sigset_t *set, siginfo_t *info,
                                                        const struct timespec *timeout) {
    return wait_for(set, info, timeout);
}

__attribute__((visibility("default"))) int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
    return wait_for(set, info, NULL);
}

__attribute__((visibility("default"))) int sigwait(const sigset_t *set, int *sig) {
    int saved = errno, r;
    do r = wait_for(set, NULL, NULL);
    while (r < 0 && errno == EINTR);
    int e = r < 0 ? errno : 0;
    if (r >= 0) *sig = r;
    errno = saved;
    return e;
}

/* BSD's and System V's signal() through this library's sigaction, with the action glibc builds
 * (`flags`), under each name glibc exports them by: signal and bsd_signal; ISO C's signal in a
 * strict C program, __sysv_signal, and sysv_signal. */
static sighandler_t set_handler(int sig, sighandler_t fn, int flags) {
    struct sigaction act, old;
    if (fn == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = fn;
    sigemptyset(&act.sa_mask);
    if (!(flags & SA_NODEFER)) sigaddset(&act.sa_mask, sig);
    act.sa_flags = flags;
    return sigaction(sig, &act, &old) ? SIG_ERR : old.sa_handler;
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t fn) {
    return set_handler(sig, fn, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t fn) {
    return set_handler(sig, fn, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t __sysv_signal(int sig, sighandler_t fn) {
    return set_handler(sig, fn, SA_RESETHAND | SA_NODEFER);
}

__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig, sighandler_t fn) {
    return set_handler(sig, fn, SA_RESETHAND | SA_NODEFER);
}

__attribute__((constructor)) static void preload_init(void) {
    /* setuid/setgid and other secure-execution programs: nothing (ld.so already ignores
     * LD_PRELOAD entries with a slash there, and unprivileged libraries from elsewhere). */
    if (getauxval(AT_SECURE)) return;
    fl_crash_use_sigaction(libc_sigaction);
    const char *v = fl_env_get("FAULTLINE_INHERIT");
    if (v && strcmp(v, "0") == 0) drop_from_ld_preload();
    else if (v && strcmp(v, "1") != 0) say("FAULTLINE_INHERIT is 0 or 1, not ", v);
    else fl_env_runtimes_prepare(); /* (for the ASan and Go programs this one executes: base.h) */

    char dir[1024];
    fl_options o = {0};
    o.report_dir = fl_env_get("FAULTLINE_REPORT_DIR");
    if (!o.report_dir || !*o.report_dir) o.report_dir = fl_report_dir_default(dir, sizeof dir);
    o.app_name = fl_env_get("FAULTLINE_APP_NAME");
    if (!o.app_name || !*o.app_name) o.app_name = program_invocation_short_name;
    o.app_version = fl_env_get("FAULTLINE_APP_VERSION");
    if ((v = fl_env_get("FAULTLINE_SIGNALS")) && *v && !fl_crash_signals_parse(v, &o.signals)) {
        say("not installed: FAULTLINE_SIGNALS lists signals other than SEGV, BUS, ILL, FPE, "
            "ABRT, TRAP, SYS: ", v);
        return;
    }
    if ((v = fl_env_get("FAULTLINE_MAX_FRAMES")) && *v &&
        !parse_uint(v, FL_MAX_FRAMES_LIMIT, &o.max_frames)) {
        say("not installed: FAULTLINE_MAX_FRAMES is a number up to 4096, not ", v);
        return;
    }
    if ((v = fl_env_get("FAULTLINE_MAX_THREADS")) && *v &&
        !parse_uint(v, FL_MAX_THREADS_LIMIT, &o.max_threads)) {
        say("not installed: FAULTLINE_MAX_THREADS is a number up to 4096, not ", v);
        return;
    }
    if ((v = fl_env_get("FAULTLINE_CRASHED_STACK_BYTES")) && *v) {
        if (!parse_uint(v, FL_STACK_BYTES_LIMIT, &o.crashed_stack_bytes)) {
            say("not installed: FAULTLINE_CRASHED_STACK_BYTES is a number up to 65536, not ", v);
            return;
        }
        if (!o.crashed_stack_bytes) o.crashed_stack_bytes = FL_STACK_BYTES_NONE; /* "0": none */
    }
    if ((v = fl_env_get("FAULTLINE_STACK_BYTES")) && *v &&
        !parse_uint(v, FL_STACK_BYTES_LIMIT, &o.stack_bytes)) {
        say("not installed: FAULTLINE_STACK_BYTES is a number up to 65536, not ", v);
        return;
    }
    if ((v = fl_env_get("FAULTLINE_CRASH_DEADLINE_MS")) && *v &&
        !parse_uint(v, 86400000, &o.crash_deadline_ms)) {
        say("not installed: FAULTLINE_CRASH_DEADLINE_MS is a number up to 86400000, not ", v);
        return;
    }
    if ((v = fl_env_get("FAULTLINE_MAX_REPORTS")) && *v &&
        !parse_uint(v, 1000000, &o.max_pending_reports)) {
        say("not installed: FAULTLINE_MAX_REPORTS is a number up to 1000000, not ", v);
        return;
    }
    if (!o.report_dir) {
        say("not installed: ", "no report directory (set FAULTLINE_REPORT_DIR)");
        return;
    }
    /* Without the run marker: a program built without faultline never calls fl_last_run, and
     * the marker would cost every process start (and every child, FAULTLINE_INHERIT) a file and
     * about 40 system calls (docs/preload.md). */
    errno = 0;
    int e = fl_crash_install(&o);
    if (e) {
        char why[1100];
        fl_strbuf_t sb;
        fl_strbuf_init(&sb, why, sizeof why);
        /* FL_EIO: errno is the install's failed call's */
        const char *text = e == FL_EIO ? fl_errno_text(errno) : NULL;
        fl_strbuf_puts(&sb, text ? text : fl_strerror(e));
        fl_strbuf_puts(&sb, " (report directory ");
        fl_strbuf_puts(&sb, o.report_dir);
        fl_strbuf_puts(&sb, ")");
        say("not installed: ", why);
    }
}
