/* SPDX-License-Identifier: MIT */
/* Alternate signal stacks: fl_thread_init, and a pthread_create that gives every new thread one. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <threads.h>
#include <unistd.h>

#include "crash/crash.h"

typedef int (*fl_pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static fl_pthread_create_fn g_next_create;
static pthread_once_t g_resolve_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static bool g_key_ok;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static int g_auto; /* new threads get a stack while set (fl_install .. fl_uninstall) */

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

static size_t guard_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Touches the stack's top page, where the kernel writes the signal frame at the first signal:
 * a page fault inside signal delivery is slow (12 us a thread on the project's VM: a capture of
 * 256 threads took 7.7 ms to stop them all instead of 4.6), and every thread takes the capture
 * signal at a crash. One page of memory a thread. */
static void touch_top(char *stack) { *(volatile char *)(stack + FL_ALTSTACK_SIZE - 1) = 0; }

/* The key's destructor, on the exiting thread (after pthread_exit, cancellation or a return).
 * Releases our stack only while it is still the thread's alternate stack and the thread is not
 * running on it: an application that replaced it may put it back later, and a thread can exit
 * from a signal handler that runs on it. In those cases the mapping is left behind. */
static void release(void *base) {
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & (SS_DISABLE | SS_ONSTACK)) ||
        cur.ss_sp != (char *)base + guard_size() || cur.ss_size != FL_ALTSTACK_SIZE)
        return;
    stack_t off = {.ss_flags = SS_DISABLE};
    if (sigaltstack(&off, NULL) == 0) munmap(base, guard_size() + FL_ALTSTACK_SIZE);
}

static void create_key(void) { g_key_ok = pthread_key_create(&g_key, release) == 0; }

/* Gives the calling thread our alternate stack: the one it had before (kept in the key when
 * the application replaced it), or a new mapping with a guard page below it. */
static int give_stack(void) {
    pthread_once(&g_key_once, create_key);
    size_t guard = guard_size();
    char *base = g_key_ok ? pthread_getspecific(g_key) : NULL;
    bool fresh = !base;
    if (fresh) {
        base = mmap(NULL, guard + FL_ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) return FL_ENOMEM;
        mprotect(base, guard, PROT_NONE); /* an overflow of the handler itself faults */
        touch_top(base + guard);
        /* Without a key (all taken) the stack is never freed, as before threads got one each. */
        if (g_key_ok && pthread_setspecific(g_key, base) != 0) {
            munmap(base, guard + FL_ALTSTACK_SIZE);
            return FL_ENOMEM;
        }
    }
    stack_t ss = {.ss_sp = base + guard, .ss_size = FL_ALTSTACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        if (fresh) {
            if (g_key_ok) pthread_setspecific(g_key, NULL);
            munmap(base, guard + FL_ALTSTACK_SIZE);
        }
        return FL_EIO;
    }
    return 0;
}

void *fl_crash_altstack_map(void) {
    size_t guard = guard_size();
    char *base = mmap(NULL, guard + FL_ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    mprotect(base, guard, PROT_NONE);
    touch_top(base + guard);
    return base + guard;
}

void fl_crash_altstack_unmap(void *stack) {
    munmap((char *)stack - guard_size(), guard_size() + FL_ALTSTACK_SIZE);
}

int fl_thread_init(void) {
    stack_t old;
    if (sigaltstack(NULL, &old) != 0) return FL_EIO;
    /* An application's own alternate stack of our size or more stays; a smaller one is replaced
     * (the handler needs about 11 KiB, glibc's SIGSTKSZ is 8: docs/async-safety.md). */
    if (!(old.ss_flags & SS_DISABLE) && old.ss_size >= FL_ALTSTACK_SIZE) return 0;
    if (old.ss_flags & SS_ONSTACK) return FL_EBUSY;
    return give_stack();
}

void fl_crash_altstacks_prepare(void) {
    pthread_once(&g_resolve_once, resolve_next);
    pthread_once(&g_key_once, create_key);
}

void fl_crash_altstacks_auto(bool on) { __atomic_store_n(&g_auto, on, __ATOMIC_SEQ_CST); }

typedef struct {
    void *(*start)(void *);
    void *arg;
} fl_thread_start_t;

static void *fl_thread_trampoline(void *p) {
    fl_thread_start_t s = *(fl_thread_start_t *)p;
    free(p);
    /* A new thread has no alternate stack (clone clears it); failing to give one only means a
     * stack overflow there goes unreported, so the thread runs regardless. */
    if (__atomic_load_n(&g_auto, __ATOMIC_SEQ_CST)) give_stack();
    return s.start(s.arg);
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
    if (!__atomic_load_n(&g_auto, __ATOMIC_SEQ_CST) || !g_key_ok)
        return g_next_create(thread, attr, start, arg);
    fl_thread_start_t *s = malloc(sizeof *s);
    if (!s) return EAGAIN;
    s->start = start;
    s->arg = arg;
    int e = g_next_create(thread, attr, fl_thread_trampoline, s);
    if (e) free(s);
    return e;
}
