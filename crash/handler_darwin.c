/* SPDX-License-Identifier: MIT */
/* Darwin's crash signals, the one-report state shared with the exception server, fl_snapshot. */
#include <mach/mach.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "crash/crash.h"

/* Signals stay installed beside the exception server for what Mach does not deliver to a handler
 * in the process: abort() and raise()/kill() (signals, never exceptions; EXC_CRASH comes only once
 * the process is dying and cannot be served from inside it), and faults whose exception another
 * handler took first and then turned into a signal. */
const int fl_crash_signals[FL_CRASH_SIGNAL_COUNT] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                                     SIGABRT, SIGTRAP, SIGSYS};
static struct sigaction g_previous[FL_CRASH_SIGNAL_COUNT];
static volatile int g_actions_restored;

/* One crash report per process, whichever path (exception server or signal) sees the crash
 * first: IDLE -> CAPTURING -> DONE. SNAPSHOT only while a thread captures a snapshot itself (when
 * the server cannot be reached: a fork child). */
enum { IDLE = 0, CAPTURING = 1, DONE = 2, SNAPSHOT = 3 };
static volatile int g_state;
static volatile int g_inline_tid; /* a thread capturing on its own stack, for recrash detection */
static volatile int g_inline_sig;

static uint64_t now_ns(void) {
    uint64_t ns = 0;
    fl_sys_clock_gettime(CLOCK_MONOTONIC, &ns);
    return ns;
}

/* Polls (1 ms) while the state is `busy`, at most limit_ns; returns the state seen last. There is
 * no futex on Darwin that libSystem exports as API, and this wait is rare and bounded. */
static int wait_while(int busy, uint64_t limit_ns) {
    uint64_t start = now_ns();
    while (__atomic_load_n(&g_state, __ATOMIC_SEQ_CST) == busy && now_ns() - start < limit_ns)
        fl_sys_nanosleep(1000000);
    return __atomic_load_n(&g_state, __ATOMIC_SEQ_CST);
}

bool fl_crash_claim_once(void) {
    for (int tries = 0; tries < 3; tries++) {
        int expected = IDLE;
        if (__atomic_compare_exchange_n(&g_state, &expected, CAPTURING, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return true;
        if (expected != SNAPSHOT) return false;
        wait_while(SNAPSHOT, FL_CRASH_WAIT_NS);
    }
    return false;
}

bool fl_crash_claimed(void) { return __atomic_load_n(&g_state, __ATOMIC_SEQ_CST) != IDLE; }

void fl_crash_finish(void) { __atomic_store_n(&g_state, DONE, __ATOMIC_SEQ_CST); }

/* sigaction is async-signal-safe. */
void fl_crash_restore_signal_actions(void) {
    if (__atomic_exchange_n(&g_actions_restored, 1, __ATOMIC_SEQ_CST)) return;
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++)
        sigaction(fl_crash_signals[i], &g_previous[i], NULL);
}

static uint32_t self_thread(void) { return pthread_mach_thread_np(pthread_self()); }

/* Last resort, from anywhere in the handler: die of `sig` now. */
static void die_of(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    pthread_kill(pthread_self(), sig);
    /* Not reached: every crash signal's default action ends the process. Never loop regardless. */
    pthread_kill(pthread_self(), SIGKILL);
}

/* Hands the signal to the action that was in place before fl_install, by calling it: the kernel's
 * si_code does not tell a fault from a signal sent with kill() reliably on Darwin, so returning to
 * let a fault repeat (as Linux does) could lose a sent signal. A handler is called with the
 * original siginfo and context; the default action is taken by re-raising the signal on this
 * thread (a core dump then shows this frame, not the fault's). */
static void pass_on(int sig, siginfo_t *info, void *uc) {
    const struct sigaction *prev = NULL;
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++)
        if (fl_crash_signals[i] == sig) prev = &g_previous[i];
    if (!prev || prev->sa_handler == SIG_DFL) {
        die_of(sig);
        return;
    }
    if (prev->sa_handler == SIG_IGN) return;
    if (prev->sa_flags & SA_SIGINFO)
        prev->sa_sigaction(sig, info, uc);
    else
        prev->sa_handler(sig);
}

static void handler(int sig, siginfo_t *info, void *uc) {
    int tid = (int)fl_sys_gettid();
    if (__atomic_load_n(&g_inline_tid, __ATOMIC_SEQ_CST) == tid) {
        /* Recrash: our own in-line capture faulted. Keep what was written, and die of the signal
         * the application crashed with (or of this one, for a snapshot). */
        fl_log_stderr("crash handler faulted; the report may be incomplete");
        fl_crash_abandon();
        die_of(g_inline_sig ? g_inline_sig : sig);
        return;
    }
    if (!fl_crash_claim_once()) {
        /* Captured, or being captured (by the exception server, or by another thread): let it
         * finish (bounded; the server suspends this thread meanwhile), then go on. */
        wait_while(CAPTURING, FL_CRASH_WAIT_NS);
        pass_on(sig, info, uc);
        return;
    }
    fl_regs_t regs;
    fl_regs_from_ucontext(&regs, uc);
    fl_capture_request_t req = {.kind = 1, .sig = sig, .info = info, .regs = &regs,
                                .thread = self_thread()};
    if (fl_mach_server_submit(&req) == FL_ENOSYS) {
        /* No server to capture for us (a fork child, or it failed to start): capture here. */
        __atomic_store_n(&g_inline_sig, sig, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_inline_tid, tid, __ATOMIC_SEQ_CST);
        fl_crash_capture(&req);
        __atomic_store_n(&g_inline_tid, 0, __ATOMIC_SEQ_CST);
    }
    /* The server has restored the signal actions and set DONE; both are idempotent and needed
     * here when it did not take the request or did not answer in time (it may still be
     * writing, which only cuts the report short). */
    fl_crash_restore_signal_actions();
    fl_crash_finish();
    pass_on(sig, info, uc);
}

__attribute__((noinline)) int fl_snapshot(const char *reason) {
    if (fl_crash_config.dirfd < 0) return FL_ESTATE;
    if (fl_crash_claimed()) return FL_EBUSY;
    fl_regs_t regs;
    fl_memset(&regs, 0, sizeof regs);
    fl_regs_get_current(&regs); /* this frame stays live while the capture walks it */
    fl_capture_request_t req = {.kind = 2, .regs = &regs, .reason = reason ? reason : "",
                                .thread = self_thread()};
    int e = fl_mach_server_submit(&req);
    if (e != FL_ENOSYS) return e;
    int expected = IDLE;
    if (!__atomic_compare_exchange_n(&g_state, &expected, SNAPSHOT, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return FL_EBUSY;
    __atomic_store_n(&g_inline_sig, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_inline_tid, (int)fl_sys_gettid(), __ATOMIC_SEQ_CST);
    e = fl_crash_capture(&req);
    __atomic_store_n(&g_inline_tid, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
    return e;
}

void fl_crash_sigaction_init(struct sigaction *sa, void (*fn)(int, siginfo_t *, void *), int flags) {
    memset(sa, 0, sizeof *sa);
    sa->sa_sigaction = fn;
    sa->sa_flags = SA_SIGINFO | SA_ONSTACK | flags;
    sigfillset(&sa->sa_mask);
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) sigdelset(&sa->sa_mask, fl_crash_signals[i]);
}

int fl_crash_handlers_install(void) {
    struct sigaction sa;
    /* SA_NODEFER and the crash signals left unblocked: a fault inside the handler must reach it
     * again (to die of the original signal) instead of being fatal as a blocked fault. */
    fl_crash_sigaction_init(&sa, handler, SA_NODEFER);
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) {
        if (sigaction(fl_crash_signals[i], &sa, &g_previous[i]) != 0) {
            while (i--) sigaction(fl_crash_signals[i], &g_previous[i], NULL);
            return FL_EIO;
        }
    }
    __atomic_store_n(&g_actions_restored, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
    return 0;
}

void fl_crash_handlers_uninstall(void) {
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) {
        struct sigaction cur;
        /* Only undo our own action: one the application installed after us stays. */
        if (sigaction(fl_crash_signals[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == handler)
            sigaction(fl_crash_signals[i], &g_previous[i], NULL);
    }
    __atomic_store_n(&g_actions_restored, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
}
