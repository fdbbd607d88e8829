/* SPDX-License-Identifier: MIT */
/* The crash signals' handler and fl_snapshot: one report per process, then the signal goes on. */
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/config.h"
#include "crash/crash.h"

/* Darwin also catches these as Mach exceptions; the signals stay for what Mach does not deliver
 * to a handler in the process (abort(), raise()/kill(), faults another handler turned into a
 * signal). */
const int fl_crash_signals[FL_CRASH_SIGNAL_COUNT] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                                     SIGABRT, SIGTRAP, SIGSYS};
static struct sigaction g_previous[FL_CRASH_SIGNAL_COUNT];
static uint64_t g_caught; /* the signals whose action is ours (and g_previous[i] theirs) */
static volatile int g_actions_restored;
static uint64_t g_standin; /* caught signals the application has since set to SIG_DFL: our
                              action stayed, and the default, not g_previous[i], follows it */
static fl_sigaction_fn g_sigaction; /* NULL: libc's sigaction */

void fl_crash_use_sigaction(fl_sigaction_fn fn) { g_sigaction = fn; }

/* Every action faultline itself sets goes here, past an interposed sigaction: dying of a signal
 * needs the real SIG_DFL, which fl_crash_app_sigaction would turn into our handler. */
int fl_crash_set_action(int sig, const struct sigaction *act, struct sigaction *old) {
    return g_sigaction ? g_sigaction(sig, act, old) : sigaction(sig, act, old);
}

/* sig's index in fl_crash_signals (and g_previous), or -1. */
static int signal_index(int sig) {
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++)
        if (fl_crash_signals[i] == sig) return i;
    return -1;
}

static bool standin(int sig) { return __atomic_load_n(&g_standin, __ATOMIC_SEQ_CST) >> sig & 1; }

enum { IDLE = 0, CAPTURING = 1, DONE = 2, SNAPSHOT = 3 };
static volatile int g_state;       /* futex word: IDLE -> CAPTURING -> DONE once per process;
                                      IDLE -> SNAPSHOT -> IDLE for each in-line snapshot */
static volatile int g_owner_tid;   /* the thread that captures on its own stack */
static volatile int g_owner_sig;   /* the signal it is capturing (0 for a snapshot) */
static volatile int g_owner_depth; /* handler entries on the owner thread (recrash detection) */

/* The crash capture's own stack, for when the signal came on a stack that may be too small: a
 * program may have replaced faultline's alternate stack with a small one of its own (SIGSTKSZ,
 * 8 KiB), a handler that ran first may have used much of it, or the thread may have none and
 * little room left. Its lowest page becomes a guard at the crash (one mprotect then, none at
 * every start): overflowing it is a recrash, not silent damage. */
#define CRASH_STACK_GUARD 16384u /* room for the guard page (Darwin arm64's are 16 KiB) */
#define CRASH_STACK_ROOM (32u * 1024u) /* the capture needs ~12 KiB (docs/async-safety.md) */
static uint8_t g_crash_stack[CRASH_STACK_GUARD + FL_ALTSTACK_SIZE]
    __attribute__((aligned(CRASH_STACK_GUARD)));

static void capture_fn(void *req) { (void)fl_crash_capture(req); }

/* On an alternate stack with room enough below (faultline's, the usual case) the capture runs
 * where it is: a debugger then sees one stack (gdb stops at a switch to a lower one, which is
 * what the real-program tests compare with). Anywhere else it moves to the crash stack. */
static void capture_inline(fl_capture_request_t *req) {
    stack_t cur;
    uintptr_t here = (uintptr_t)&cur;
    if (fl_sys_sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_ONSTACK) &&
        here > (uintptr_t)cur.ss_sp && here - (uintptr_t)cur.ss_sp >= CRASH_STACK_ROOM) {
        (void)fl_crash_capture(req);
        return;
    }
    size_t page = fl_page_size();
    if (page <= CRASH_STACK_GUARD)
        fl_sys_mprotect(g_crash_stack + CRASH_STACK_GUARD - page, page, PROT_NONE);
    fl_call_on_stack(capture_fn, req, g_crash_stack + sizeof g_crash_stack);
}

static void set_default(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    fl_crash_set_action(sig, &sa, NULL);
}

/* What follows our action for fl_crash_signals[i]. sigaction is async-signal-safe. */
static void restore(int i) {
    if (standin(fl_crash_signals[i])) set_default(fl_crash_signals[i]);
    else fl_crash_set_action(fl_crash_signals[i], &g_previous[i], NULL);
}

void fl_crash_restore_signal_actions(void) {
    if (__atomic_exchange_n(&g_actions_restored, 1, __ATOMIC_SEQ_CST)) return;
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++)
        if (g_caught >> fl_crash_signals[i] & 1) restore(i);
}

static void unblock_and_raise(int sig) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    fl_sys_raise(sig);
}

/* Last resort, from anywhere in the handler: die of `sig` now. */
static void die_of(int sig) {
    set_default(sig);
    unblock_and_raise(sig);
    /* Not reached: every crash signal's default action ends the process. Never loop regardless. */
    fl_sys_raise(SIGKILL);
}

/* Darwin's si_code does not tell a fault from a sent signal, so returning to let a fault repeat
 * could lose a sent one: the previous action is called instead (a core dump then shows this
 * frame, and its handler runs with our signal mask). */
void fl_crash_pass_on(int sig, siginfo_t *info, void *uc, bool done, bool code_tells_origin) {
    if (code_tells_origin) {
        if (!done) set_default(sig);
        bool refaults = info->si_code > 0 &&
                        (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
        if (!refaults) unblock_and_raise(sig);
        return;
    }
    int i = signal_index(sig);
    const struct sigaction *prev = i >= 0 ? &g_previous[i] : NULL;
    if (!prev || prev->sa_handler == SIG_DFL || standin(sig))
        die_of(sig);
    else if (prev->sa_handler == SIG_IGN)
        return;
    else if (prev->sa_flags & SA_SIGINFO)
        prev->sa_sigaction(sig, info, uc);
    else
        prev->sa_handler(sig);
}

static uint64_t now_ns(void) {
    uint64_t ns = 0;
    fl_sys_clock_gettime(CLOCK_MONOTONIC, &ns);
    return ns;
}

/* Waits (bounded) while the state is `busy`; returns the state seen last. */
static int wait_while(int busy, uint64_t limit_ns) {
    uint64_t start = now_ns();
    while (__atomic_load_n(&g_state, __ATOMIC_SEQ_CST) == busy && now_ns() - start < limit_ns)
        fl_sys_futex_wait(&g_state, busy, 100000000ull);
    return __atomic_load_n(&g_state, __ATOMIC_SEQ_CST);
}

enum { CLAIMED = -1, RECRASH = -2 };
/* IDLE -> CAPTURING: CLAIMED; RECRASH when thread `tid` owns the capture already; else the
 * state that stood in the way. A snapshot on another thread is waited for (bounded). */
static int claim(int tid) {
    int expected = IDLE;
    for (int tries = 0; !__atomic_compare_exchange_n(&g_state, &expected, CAPTURING, false,
                                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); tries++) {
        if (tid && __atomic_load_n(&g_owner_tid, __ATOMIC_SEQ_CST) == tid) return RECRASH;
        if (expected != SNAPSHOT || tries >= 3) return expected;
        wait_while(SNAPSHOT, FL_CRASH_WAIT_NS);
        expected = IDLE;
    }
    return CLAIMED;
}

bool fl_crash_claim_once(void) { return claim(0) == CLAIMED; }

bool fl_crash_claimed(void) { return __atomic_load_n(&g_state, __ATOMIC_SEQ_CST) != IDLE; }

void fl_crash_finish(void) {
    __atomic_store_n(&g_state, DONE, __ATOMIC_SEQ_CST);
    fl_sys_futex_wake(&g_state, 1 << 30);
}

/* Whether the arguments a handler got can be read: a handler that saved ours may call it as
 * handler(sig) with whatever its other registers held (Ruby does), and reading such a pointer
 * would fault with the signal blocked in that handler, killing the process without a report. */
static bool readable(const fl_reader_t *mem, const void *p, size_t len) {
    /* A byte of each 4 KiB page it spans (pages are at least that large): arm64's ucontext_t is
     * 4.5 KiB, not worth a copy on the alternate stack. */
    uint64_t at = (uint64_t)(uintptr_t)p, end = at + len;
    uint8_t b;
    if (end < at) return false;
    for (; at < end; at = (at | 4095u) + 1)
        if (fl_read(mem, at, &b, 1)) return false;
    return fl_read(mem, end - 1, &b, 1) == 0;
}

static bool args_readable(const siginfo_t *info, const void *ucontext) {
    const fl_reader_t *mem = fl_memory_reader();
    return info && ucontext && mem && readable(mem, info, sizeof(siginfo_t)) &&
           readable(mem, ucontext, sizeof(ucontext_t));
}

/* Whether the kernel would have dropped sig without our action: a namespace's init (pid 1: a
 * container's program started without an init) is never sent a signal whose action is the
 * default (SIGNAL_UNKILLABLE; kernel faults still reach it). Delivered only because our action
 * is in place, such a signal from another process must change nothing: a capture would report
 * a crash that did not happen and spend the process's one report on it, and the program goes
 * on. (Sent by the process itself, as abort() does, it is its own end: reported.) */
static bool dropped_for_init(int sig, const siginfo_t *info) {
    if (info->si_code > 0 || info->si_pid == 1 || fl_sys_getpid() != 1) return false;
    int i = signal_index(sig);
    return i < 0 || g_previous[i].sa_handler == SIG_DFL || standin(sig);
}

static void handler(int sig, siginfo_t *info, void *ucontext) {
    /* A fault inside a guarded region of our own capture (LLVM libunwind reading a bad pointer):
     * resume the capture at the guard. Returns only when no guard is armed on this thread. */
    fl_guard_recover();

    /* Unreadable arguments: a siginfo that says only the signal (sent, so that passing it on
     * re-raises it and the process dies of it), and this thread's registers from here. The
     * reader first: the process may be a fork, or the program may have taken its pipe. */
    fl_memory_refresh_pid();
    siginfo_t own;
    const char *note = NULL;
    if (!args_readable(info, ucontext)) {
        fl_memset(&own, 0, sizeof own);
        own.si_signo = sig;
        own.si_code = SI_USER;
        info = &own;
        ucontext = NULL;
        note = "the crash handler was called without a readable siginfo and ucontext (another "
               "handler passed the signal on with other arguments): the crashed thread's registers "
               "and first frames are the handler's own";
    } else if (dropped_for_init(sig, info)) {
        return;
    }

    int tid = (int)fl_sys_gettid();
    int seen = claim(tid);
    if (seen == RECRASH) {
        /* Our own capture (or snapshot) faulted outside a guard. Keep what was written, and die
         * of the signal the application crashed with. */
        if (__atomic_add_fetch(&g_owner_depth, 1, __ATOMIC_SEQ_CST) == 2) {
            fl_log_stderr("crash handler faulted; the report may be incomplete");
            fl_crash_abandon();
        }
        die_of(g_owner_sig ? g_owner_sig : sig);
        return;
    }
    if (seen != CLAIMED) {
        /* Another thread (or Darwin's exception server) is capturing a crash: leave our
         * registers for its report, wait for it (bounded), then go on. */
        if (seen == CAPTURING && ucontext) fl_crash_publish_waiter(sig, ucontext);
        /* Our action still in place once DONE was seen (an application's sigaction raced with
         * the restore, fl_crash_app_sigaction): only the default ends it without a loop. */
        bool done = seen == CAPTURING && wait_while(CAPTURING, FL_CRASH_WAIT_NS) == DONE;
        fl_crash_pass_on(sig, info, ucontext, done, FL_SIGINFO_TELLS_ORIGIN);
        return;
    }
    g_owner_tid = tid;
    g_owner_sig = sig;
    g_owner_depth = 1;

    fl_regs_t regs;
    if (ucontext) {
        fl_regs_from_ucontext(&regs, ucontext);
    } else {
        fl_memset(&regs, 0, sizeof regs);
        fl_regs_get_current(&regs); /* this frame stays live while the capture walks it */
    }
    fl_capture_request_t req = {.kind = 1, .sig = sig, .info = info, .regs = &regs,
                                .thread = fl_crash_os_self(), .note = note};
    /* A child that may share this memory with the process that installed (a vfork or
     * posix_spawn child that crashed before its exec): the parent goes on with it, and must
     * still get its own report later. So what a crash changes (the descriptors and the
     * directory the configuration names, one report per process, the actions restored) is put
     * back before the child dies of the signal (the child's actions and descriptors are its
     * own copies). Harmless in a fork child, whose memory is its own. */
    static fl_crash_config_t parent;
    bool child = fl_sys_getpid() != fl_crash_config.pid;
    if (child) fl_memcpy(&parent, &fl_crash_config, sizeof parent);
    /* Without a capture server (Linux; a Darwin fork child) the capture runs here. A server
     * restores the actions and sets DONE itself; doing it again is harmless, and needed when it
     * did not take the request or did not answer in time. */
    if (fl_crash_os_submit(&req) == FL_ENOSYS) {
        /* A capture blocked in the kernel (a report directory on a file system that stopped
         * answering) must not keep the process from dying: a deadline, disarmed before the
         * signal is passed on (a handler of the program's may let it go on). */
        fl_crash_os_deadline(fl_crash_config.crash_deadline_ns);
        capture_inline(&req);
        fl_crash_os_deadline(0);
    }

    fl_crash_restore_signal_actions();
    fl_crash_finish();
    if (child) {
        fl_memcpy(&fl_crash_config, &parent, sizeof parent);
        __atomic_store_n(&g_actions_restored, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_owner_tid, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
        fl_sys_futex_wake(&g_state, 1 << 30);
    }
    fl_crash_pass_on(sig, info, ucontext, true, FL_SIGINFO_TELLS_ORIGIN);
}

__attribute__((noinline)) int fl_snapshot(const char *reason) {
    if (fl_crash_config.dirfd < 0) return FL_ESTATE;
    fl_regs_t regs;
    fl_memset(&regs, 0, sizeof regs);
    fl_regs_get_current(&regs); /* this frame stays live while the capture walks it */
    fl_capture_request_t req = {.kind = 2, .regs = &regs, .reason = reason ? reason : "",
                                .thread = fl_crash_os_self()};
    int e = fl_crash_os_submit(&req);
    if (e != FL_ENOSYS) return e;
    if (!fl_crash_inline_begin()) return FL_EBUSY;
    e = fl_crash_capture(&req);
    fl_crash_inline_end();
    return e;
}

bool fl_crash_inline_begin(void) {
    int expected = IDLE;
    if (!__atomic_compare_exchange_n(&g_state, &expected, SNAPSHOT, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return false;
    g_owner_sig = 0;
    g_owner_depth = 1;
    __atomic_store_n(&g_owner_tid, (int)fl_sys_gettid(), __ATOMIC_SEQ_CST);
    return true;
}

void fl_crash_inline_end(void) {
    __atomic_store_n(&g_owner_tid, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
    fl_sys_futex_wake(&g_state, 1 << 30);
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
    __atomic_store_n(&g_caught, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_standin, 0, __ATOMIC_SEQ_CST);
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) {
        int sig = fl_crash_signals[i];
        if (!(fl_crash_config.signals >> sig & 1)) continue;
        if (fl_crash_set_action(sig, &sa, &g_previous[i]) != 0) {
            uint64_t caught = __atomic_exchange_n(&g_caught, 0, __ATOMIC_SEQ_CST);
            while (i--)
                if (caught >> fl_crash_signals[i] & 1) restore(i);
            return FL_EIO;
        }
        __atomic_or_fetch(&g_caught, 1ull << sig, __ATOMIC_SEQ_CST);
    }
    __atomic_store_n(&g_actions_restored, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
    return 0;
}

void fl_crash_handlers_uninstall(void) {
    uint64_t caught = __atomic_exchange_n(&g_caught, 0, __ATOMIC_SEQ_CST);
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) {
        struct sigaction cur;
        /* Only undo our own action: one the application installed after us stays. */
        if ((caught >> fl_crash_signals[i] & 1) &&
            fl_crash_set_action(fl_crash_signals[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == handler)
            restore(i);
    }
    __atomic_store_n(&g_actions_restored, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_state, IDLE, __ATOMIC_SEQ_CST);
}

bool fl_crash_catches(int sig) {
    return sig > 0 && sig < 64 && (__atomic_load_n(&g_caught, __ATOMIC_SEQ_CST) >> sig & 1);
}

bool fl_crash_stands_in(int sig) {
    return sig > 0 && sig < 64 && (__atomic_load_n(&g_caught, __ATOMIC_SEQ_CST) >> sig & 1) &&
           __atomic_load_n(&g_state, __ATOMIC_SEQ_CST) == IDLE &&
           !__atomic_load_n(&g_actions_restored, __ATOMIC_SEQ_CST);
}

/* SA_RESETHAND (System V's one-shot handlers; ISO C's signal in glibc): the kernel puts the
 * real SIG_DFL back when it delivers the signal, past this library, so a handler that then
 * raises the signal again ended the process with no report. Such an action of the program's is
 * installed as reset_trampoline (the program's flags but SA_RESETHAND), which does what the
 * reset does, with SIG_DFL read as "report, then the default", and calls the program's
 * handler. Asked, the action reads as the program set it. */
static struct sigaction g_oneshot[FL_CRASH_SIGNAL_COUNT];

static void reset_trampoline(int sig, siginfo_t *info, void *uc) {
    int i = signal_index(sig);
    if (i < 0) return;
    struct sigaction a = g_oneshot[i], dfl;
    fl_memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    if (fl_crash_app_sigaction(sig, &dfl, NULL) != 0) fl_crash_set_action(sig, &dfl, NULL);
    if (a.sa_flags & SA_SIGINFO) a.sa_sigaction(sig, info, uc);
    else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) a.sa_handler(sig);
}

int fl_crash_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (!fl_crash_stands_in(sig)) return fl_crash_set_action(sig, act, old);
    int i = signal_index(sig);
    struct sigaction oneshot = i >= 0 ? g_oneshot[i] : (struct sigaction){0}, t;
    if (act && (act->sa_flags & SA_RESETHAND) && act->sa_handler != SIG_DFL &&
        act->sa_handler != SIG_IGN && i >= 0) {
        t = *act;
        t.sa_flags = (act->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
        t.sa_sigaction = reset_trampoline;
        g_oneshot[i] = *act; /* (before the action: the trampoline may run at once) */
        act = &t;
    }
    uint64_t bit = 1ull << sig;
    bool was = standin(sig);
    int r;
    if (act && act->sa_handler == SIG_DFL) {
        /* The bit before the action: a crash in between finds the default to follow ours. */
        struct sigaction sa;
        fl_crash_sigaction_init(&sa, handler, SA_NODEFER);
        __atomic_or_fetch(&g_standin, bit, __ATOMIC_SEQ_CST);
        r = fl_crash_set_action(sig, &sa, old);
        if (r != 0 && !was) __atomic_and_fetch(&g_standin, ~bit, __ATOMIC_SEQ_CST);
    } else {
        /* The bit after: until their action is in, ours is, and the default still follows. */
        r = fl_crash_set_action(sig, act, old);
        if (r == 0 && act) __atomic_and_fetch(&g_standin, ~bit, __ATOMIC_SEQ_CST);
        if (r != 0 && act == &t) g_oneshot[i] = oneshot;
    }
    /* Asked while our action is in place, the program sees the default when that is what we
     * replaced: what it would see without faultline. A runtime that chains to the action it
     * found before its own (the JVM, Mono) would otherwise call ours first and never reach its
     * own crash handling (the JVM's hs_err file was lost); told the default, it handles its
     * crash itself and ends it with abort() or SIG_DFL, which still reach us. An action of the
     * program's from before faultline is not hidden: through ours, the program reaches both. */
    bool ours = r == 0 && old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == handler;
    if (ours && i >= 0 && g_previous[i].sa_handler != SIG_DFL) ours = false;
    if (r == 0 && old && (was || ours)) {
        memset(old, 0, sizeof *old);
        old->sa_handler = SIG_DFL;
        sigemptyset(&old->sa_mask);
    } else if (r == 0 && old && i >= 0 && (old->sa_flags & SA_SIGINFO) &&
               old->sa_sigaction == reset_trampoline) {
        *old = oneshot; /* (a one-shot action reads as the program set it) */
    }
    return r;
}
