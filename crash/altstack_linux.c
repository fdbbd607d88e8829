/* SPDX-License-Identifier: MIT */
/* A pthread_create that gives every new thread an alternate signal stack (altstack.c's). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <threads.h>
#include <unistd.h>

#include "crash/crash.h"

typedef int (*fl_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static fl_pthread_create_fn g_next_create;
static pthread_once_t g_resolve_once = PTHREAD_ONCE_INIT;
static int g_auto FL_STARTUP_DATA; /* new threads get a stack while set (fl_install .. fl_uninstall) */

/* Fully static executables: dlsym(RTLD_NEXT) finds nothing there, so libc's own entry point is
 * called directly. The reference to thrd_create makes a static link pull in libc.a's
 * pthread_create.o (thrd_create.o calls into it), which defines __pthread_create_2_1 and only a
 * weak pthread_create, so ours still wins. In a dynamic link thrd_create comes from libc.so
 * and __pthread_create_2_1 (not exported there) stays NULL. */
extern int __pthread_create_2_1(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
    __attribute__((weak));
__attribute__((used)) static int (*const g_pull_static_pthread_create)(thrd_t *, thrd_start_t,
                                                                       void *) = thrd_create;

static void resolve_next(void) {
    g_next_create = (fl_pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (!g_next_create) g_next_create = __pthread_create_2_1;
}

void fl_crash_altstacks_auto(bool on) { __atomic_store_n(&g_auto, on, __ATOMIC_SEQ_CST); }

typedef struct {
    void *(*start)(void *);
    void *arg;
} fl_thread_start_t;

/* The threads started here that run: a slot each holding the thread's id, 0 when free. A slot
 * left by a thread that ended without its cleanup (a raw exit system call) names a thread that
 * is gone: signalling it fails, or (the id reused) finds no thread of this process. */
#define STARTED_MAX 4096u
static int g_started[STARTED_MAX];

/* (not inlined: the trampoline's cleanup handler is a setjmp) */
__attribute__((noinline)) static int *started_add(int tid) {
    for (unsigned i = 0; i < STARTED_MAX; i++) {
        int *slot = &g_started[((unsigned)tid + i) % STARTED_MAX], free_slot = 0;
        if (__atomic_compare_exchange_n(slot, &free_slot, tid, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return slot;
    }
    return NULL; /* (more threads than slots: the list says fewer) */
}

static void started_remove(void *slot) {
    if (slot) __atomic_store_n((int *)slot, 0, __ATOMIC_SEQ_CST);
}

unsigned fl_crash_started_threads(int *out, unsigned max) {
    unsigned n = 0;
    for (unsigned i = 0; i < STARTED_MAX && n < max; i++) {
        int tid = __atomic_load_n(&g_started[i], __ATOMIC_SEQ_CST);
        if (tid > 0) out[n++] = tid;
    }
    return n;
}

static void *fl_thread_trampoline(void *p) {
    fl_thread_start_t s = *(fl_thread_start_t *)p;
    free(p);
    /* A new thread has no alternate stack (clone clears it); failing to give one only means a
     * stack overflow there goes unreported, so the thread runs regardless. */
    if (__atomic_load_n(&g_auto, __ATOMIC_SEQ_CST)) fl_crash_altstack_give(true);
    void *r;
    /* (a cleanup handler: pthread_exit and cancellation end the thread too) */
    pthread_cleanup_push(started_remove, started_add((int)fl_sys_gettid()));
    r = s.start(s.arg);
    pthread_cleanup_pop(1);
    return r;
}

/* Interposes libc's pthread_create (exported from libfaultline.so; see docs/async-safety.md,
 * "Alternate signal stacks", for which callers it covers). While faultline is installed the new
 * thread starts on fl_thread_trampoline; the result is libc's, or EAGAIN when libc's cannot be
 * found or the start record cannot be allocated. NOT AS-SAFE. */
__attribute__((visibility("default"))) int pthread_create(pthread_t *restrict thread,
                                                          const pthread_attr_t *restrict attr,
                                                          void *(*start)(void *),
                                                          void *restrict arg) {
    pthread_once(&g_resolve_once, resolve_next);
    if (!g_next_create) return EAGAIN;
    if (!__atomic_load_n(&g_auto, __ATOMIC_SEQ_CST) || !fl_crash_altstack_keyed())
        return g_next_create(thread, attr, start, arg);
    fl_thread_start_t *s = malloc(sizeof *s);
    if (!s) return EAGAIN;
    s->start = start;
    s->arg = arg;
    int e = g_next_create(thread, attr, fl_thread_trampoline, s);
    if (e) free(s);
    return e;
}
