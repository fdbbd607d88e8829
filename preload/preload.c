/* SPDX-License-Identifier: MIT */
/* libfaultline-preload.so: fl_install from a constructor, configured by FAULTLINE_* variables. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
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

/* glibc's own sigaction, signal and ISO C signal, under names that interposing them here does not
 * take (exported from glibc for compatibility on every architecture it supports). */
extern int libc_sigaction(int, const struct sigaction *, struct sigaction *) __asm__("__sigaction");
extern sighandler_t libc_bsd_signal(int, sighandler_t) __asm__("bsd_signal");
extern sighandler_t libc_sysv_signal(int, sighandler_t) __asm__("sysv_signal");

/* The program's sigaction, signal and ISO C signal (a strict C program's `signal` is
 * __sysv_signal): SIG_DFL for a crash signal keeps faultline's action in place, with the default
 * after the report (fl_crash_app_sigaction); anything else goes to glibc unchanged. AS-SAFE. */
__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction *act,
                                                     struct sigaction *old) {
    if (!fl_crash_stands_in(sig)) return libc_sigaction(sig, act, old);
    return fl_crash_app_sigaction(sig, act, old);
}

/* signal() through fl_crash_app_sigaction, with the action glibc builds (`flags`). */
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
    return fl_crash_app_sigaction(sig, &act, &old) ? SIG_ERR : old.sa_handler;
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t fn) {
    if (!fl_crash_stands_in(sig)) return libc_bsd_signal(sig, fn);
    return set_handler(sig, fn, SA_RESTART);
}

__attribute__((visibility("default"))) sighandler_t __sysv_signal(int sig, sighandler_t fn) {
    if (!fl_crash_stands_in(sig)) return libc_sysv_signal(sig, fn);
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
