/* SPDX-License-Identifier: MIT */
/* The fatal-signal handler: one capture per process, then the previous action or death by the
 * original signal. */
#include <signal.h>
#include <string.h>

#include "crash/crash.h"

const int fl_crash_signals[FL_CRASH_SIGNAL_COUNT] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                                     SIGABRT, SIGTRAP, SIGSYS};
static struct sigaction g_previous[FL_CRASH_SIGNAL_COUNT];

enum { IDLE = 0, CAPTURING = 1, DONE = 2 };
static volatile int g_state;       /* futex word: IDLE -> CAPTURING -> DONE, once per process */
static volatile int g_owner_tid;   /* the thread that captures */
static volatile int g_owner_sig;   /* the signal it is capturing */
static volatile int g_owner_depth; /* handler entries on the owner thread (recrash detection) */

/* sigaction is async-signal-safe. */
static void restore_previous_actions(void) {
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) sigaction(fl_crash_signals[i], &g_previous[i], NULL);
}

static void set_default(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* Hands the signal on to whatever action is now installed. A fault the kernel raised repeats when
 * the handler returns (the faulting instruction runs again), which keeps the core dump's registers
 * exact; anything else (abort, raise, kill, int3, seccomp) is sent again to this thread. */
static void redeliver(int sig, const siginfo_t *info) {
    bool refaults = info->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
    if (!refaults) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        fl_sys_tgkill((int)fl_sys_getpid(), (int)fl_sys_gettid(), sig);
    }
}

/* Last resort, from anywhere in the handler: die of `sig` now. */
static void die_of(int sig) {
    set_default(sig);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    fl_sys_tgkill((int)fl_sys_getpid(), (int)fl_sys_gettid(), sig);
    /* Not reached: every crash signal's default action ends the process. Never loop regardless. */
    fl_sys_tgkill((int)fl_sys_getpid(), (int)fl_sys_gettid(), SIGKILL);
}

static void handler(int sig, siginfo_t *info, void *ucontext) {
    /* A fault inside a guarded region of our own capture (LLVM libunwind reading a bad pointer):
     * resume the capture at the guard. Returns only when no guard is armed on this thread. */
    fl_guard_recover();

    int tid = (int)fl_sys_gettid();
    int expected = IDLE;
    if (!__atomic_compare_exchange_n(&g_state, &expected, CAPTURING, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST)) {
        if (__atomic_load_n(&g_owner_tid, __ATOMIC_SEQ_CST) == tid) {
            /* Recrash: our own capture faulted outside a guard. Keep what was written, and die
             * of the signal the application crashed with. */
            if (__atomic_add_fetch(&g_owner_depth, 1, __ATOMIC_SEQ_CST) == 2) {
                fl_log_stderr("crash handler faulted; the report may be incomplete");
                fl_crash_abandon();
            }
            die_of(g_owner_sig);
            return;
        }
        /* Another thread is capturing: wait for it (bounded), then die normally. */
        uint64_t waited = 0;
        while (__atomic_load_n(&g_state, __ATOMIC_SEQ_CST) == CAPTURING && waited < FL_CRASH_WAIT_NS) {
            fl_sys_futex_wait(&g_state, CAPTURING, 100000000ull);
            waited += 100000000ull;
        }
        if (__atomic_load_n(&g_state, __ATOMIC_SEQ_CST) != DONE) set_default(sig);
        redeliver(sig, info);
        return;
    }
    g_owner_tid = tid;
    g_owner_sig = sig;
    g_owner_depth = 1;

    fl_crash_capture(sig, info, ucontext);

    restore_previous_actions();
    __atomic_store_n(&g_state, DONE, __ATOMIC_SEQ_CST);
    fl_sys_futex_wake(&g_state, 1 << 30);
    redeliver(sig, info);
}

int fl_crash_handlers_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    /* SA_NODEFER and the crash signals left unblocked: a fault inside the handler must reach it
     * again (to recover at a guard, or to die of the original signal) instead of being forced
     * fatal by the kernel as a blocked synchronous signal. Other signals wait until we are done. */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigfillset(&sa.sa_mask);
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) sigdelset(&sa.sa_mask, fl_crash_signals[i]);
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) {
        if (sigaction(fl_crash_signals[i], &sa, &g_previous[i]) != 0) {
            while (i--) sigaction(fl_crash_signals[i], &g_previous[i], NULL);
            return FL_EIO;
        }
    }
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
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
}
