/* SPDX-License-Identifier: MIT */
/* Interposes the heap for crasher_nomalloc: a heap call made on the crash path ends the process
 * with exit status 77 instead of the expected signal, failing the test.
 *
 * The crash path is what runs inside faultline's signal handlers: the crash handler, and (with
 * all-thread capture) the handler every other thread runs to be captured. Once armed
 * (fl_test_forbid_malloc = 1, right after fl_install), malloc, calloc, realloc and free fail
 * when the calling thread
 *  1. is inside a signal handler installed with sigaction(): this file also interposes
 *     sigaction() and installs every handler wrapped in one that counts, per thread, how many
 *     handlers the thread is running (a __thread counter of the executable: static TLS, nothing
 *     is allocated on first use); or
 *  2. is running on its alternate signal stack (sigaltstack(NULL, &ss), SS_ONSTACK: a system
 *     call, no allocation), which also catches a handler installed without sigaction().
 * Every other heap call is legitimate, even while a crash is being captured: a thread looping
 * malloc/free (crash_malloc_lock), dlopen (crash_dlopen_busy), or the crashing call to free()
 * itself (crash_heap_*) must not fail the test.
 *
 * Why both rules, and not "the crashing thread after the crash began": a thread without an
 * alternate stack (one that disabled it, or was created before fl_install or without faultline's
 * pthread_create) runs its handlers on its normal stack, where only rule 1 sees them; a
 * crashing-thread rule would miss the capture handler the other threads run, and a crash raised
 * inside free() (heap corruption) cannot mark "the crash began" before the heap call it happens
 * in. Rule 2 keeps the proof if faultline ever installs a handler by a raw system call.
 * crash_no_malloc_control proves rule 2 fires, crash_no_malloc_control_handler proves rule 1 fires
 * inside faultline's own crash handler, on a thread without an alternate stack. */
#include <signal.h>
#include <stddef.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern int __sigaction(int, const struct sigaction *, struct sigaction *);

volatile int fl_test_forbid_malloc;
/* Control hook: sigaction() called from inside a handler allocates (faultline's crash handler
 * calls sigaction to restore the previous actions), so the interposer must fire. */
volatile int fl_test_alloc_in_sigaction;

static __thread int t_handlers; /* handlers this thread is running */
static struct sigaction g_wanted[NSIG]; /* what the program installed, per signal */
static void *volatile g_sink;

static int in_signal_handler(void) {
    if (t_handlers > 0) return 1;
    stack_t ss;
    return sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
}

static void forbidden(const char *what) {
    if (!fl_test_forbid_malloc || !in_signal_handler()) return;
    static const char msg[] = "FORBIDDEN heap call in a signal handler (the crash path): ";
    write(2, msg, sizeof msg - 1);
    size_t n = 0;
    while (what[n]) n++;
    write(2, what, n);
    write(2, "\n", 1);
    _exit(77);
}

void *malloc(size_t n) { forbidden("malloc"); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { forbidden("calloc"); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { forbidden("realloc"); return __libc_realloc(p, n); }
void free(void *p) { forbidden("free"); __libc_free(p); }

static void counting_handler(int sig, siginfo_t *info, void *uc) {
    t_handlers++;
    struct sigaction a = g_wanted[sig];
    if (a.sa_flags & SA_SIGINFO) a.sa_sigaction(sig, info, uc);
    else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) a.sa_handler(sig);
    t_handlers--; /* not reached when the handler siglongjmps out: the count only errs high */
}

static int is_function(const struct sigaction *a) {
    return (a->sa_flags & SA_SIGINFO) || (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

/* Installs a wrapped handler; reports the program's own action back, so code comparing the
 * current action with its handler (fl_uninstall) sees no difference. */
int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (fl_test_alloc_in_sigaction && t_handlers > 0) g_sink = malloc(16);
    if (sig <= 0 || sig >= NSIG) return __sigaction(sig, act, old);
    struct sigaction before = g_wanted[sig], wrapped;
    if (act && is_function(act)) {
        g_wanted[sig] = *act;
        wrapped = *act;
        wrapped.sa_sigaction = counting_handler;
        wrapped.sa_flags |= SA_SIGINFO;
        act = &wrapped;
    }
    int r = __sigaction(sig, act, old);
    if (r != 0) g_wanted[sig] = before;
    else if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == counting_handler) *old = before;
    return r;
}
