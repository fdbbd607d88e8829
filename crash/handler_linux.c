/* SPDX-License-Identifier: MIT */
/* The fatal-signal handler: one capture per process, then the previous action or death by the
 * original signal. */
#include <signal.h>
#include <string.h>

#include "crash/crash.h"

const int fl_crash_signals[FL_CRASH_SIGNAL_COUNT] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                                     SIGABRT, SIGTRAP, SIGSYS};
static struct sigaction g_previous[FL_CRASH_SIGNAL_COUNT];

enum { IDLE = 0, CAPTURING = 1, DONE = 2, SNAPSHOT = 3 };
static volatile int g_state;       /* futex word: IDLE -> CAPTURING -> DONE once per process;
                                      IDLE -> SNAPSHOT -> IDLE for each snapshot */
static volatile int g_owner_tid;   /* the thread that captures */
static volatile int g_owner_sig;   /* the signal it is capturing (0 for a snapshot) */
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

/* Waits (bounded) while the state is `busy`; returns the state seen last. */
static int wait_while(int busy, uint64_t limit_ns) {
    uint64_t waited = 0;
    while (__atomic_load_n(&g_state, __ATOMIC_SEQ_CST) == busy && waited < limit_ns) {
        fl_sys_futex_wait(&g_state, busy, 100000000ull);
        waited += 100000000ull;
    }
    return __atomic_load_n(&g_state, __ATOMIC_SEQ_CST);
}

static void handler(int sig, siginfo_t *info, void *ucontext) {
    /* A fault inside a guarded region of our own capture (LLVM libunwind reading a bad pointer):
     * resume the capture at the guard. Returns only when no guard is armed on this thread. */
    fl_guard_recover();

    int tid = (int)fl_sys_gettid();
    int expected = IDLE;
    /* A snapshot in progress on another thread finishes first (bounded), then we capture. */
    for (int tries = 0; !__atomic_compare_exchange_n(&g_state, &expected, CAPTURING, false,
                                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); tries++) {
        if (__atomic_load_n(&g_owner_tid, __ATOMIC_SEQ_CST) == tid) {
            /* Recrash: our own capture (or snapshot) faulted outside a guard. Keep what was
             * written, and die of the signal the application crashed with. */
            if (__atomic_add_fetch(&g_owner_depth, 1, __ATOMIC_SEQ_CST) == 2) {
                fl_log_stderr("crash handler faulted; the report may be incomplete");
                fl_crash_abandon();
            }
            die_of(g_owner_sig ? g_owner_sig : sig);
            return;
        }
        if (expected == SNAPSHOT && tries < 3) {
            wait_while(SNAPSHOT, FL_CRASH_WAIT_NS);
            expected = IDLE;
            continue;
        }
        /* Another thread is capturing a crash: leave our registers for its report, wait for it
         * (bounded), then die normally. */
        if (expected == CAPTURING) fl_crash_publish_waiter(sig, ucontext);
        if (wait_while(CAPTURING, FL_CRASH_WAIT_NS) != DONE) set_default(sig);
        redeliver(sig, info);
        return;
    }
    g_owner_tid = tid;
    g_owner_sig = sig;
    g_owner_depth = 1;

    fl_regs_t regs;
    fl_regs_from_ucontext(&regs, ucontext);
    fl_capture_request_t req = {.kind = 1, .sig = sig, .info = info, .regs = &regs};
    fl_crash_capture(&req);

    restore_previous_actions();
    __atomic_store_n(&g_state, DONE, __ATOMIC_SEQ_CST);
    fl_sys_futex_wake(&g_state, 1 << 30);
    redeliver(sig, info);
}

__attribute__((noinline)) int fl_snapshot(const char *reason) {
    if (fl_crash_config.dirfd < 0) return FL_ESTATE;
    int expected = IDLE;
    if (!__atomic_compare_exchange_n(&g_state, &expected, SNAPSHOT, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return FL_EBUSY;
    g_owner_sig = 0;
    g_owner_depth = 1;
    __atomic_store_n(&g_owner_tid, (int)fl_sys_gettid(), __ATOMIC_SEQ_CST);
    fl_regs_t regs;
    fl_memset(&regs, 0, sizeof regs);
    fl_regs_get_current(&regs); /* this frame stays live while the capture walks it */
    fl_capture_request_t req = {.kind = 2, .regs = &regs, .reason = reason ? reason : ""};
    int e = fl_crash_capture(&req);
    __atomic_store_n(&g_owner_tid, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
    fl_sys_futex_wake(&g_state, 1 << 30);
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
     * again (to recover at a guard, or to die of the original signal) instead of being forced
     * fatal by the kernel as a blocked synchronous signal. Other signals wait until we are done. */
    fl_crash_sigaction_init(&sa, handler, SA_NODEFER);
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
