/* SPDX-License-Identifier: MIT */
/* fl_thread_init on Darwin: an alternate signal stack for the calling thread. */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crash/crash.h"

/* On Darwin a stack overflow is reported through the exception server, which runs on its own
 * thread: the overflowed thread needs no stack of its own for that. An alternate stack matters
 * only when the exception ports are not ours (refused at install, or taken since) and the signal
 * handler must run on the overflowed thread. So there is no pthread_create interposition here
 * (Linux's altstack_linux.c): threads get one by calling fl_thread_init. The per-thread part
 * follows altstack_linux.c's (same sizes, guard page, key destructor). */
static pthread_key_t g_key;
static bool g_key_ok;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static size_t guard_size(void) { return (size_t)getpagesize(); }

/* The key's destructor, on the exiting thread: frees our stack only while it is still the
 * thread's alternate stack and the thread is not running on it. */
static void release(void *base) {
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & (SS_DISABLE | SS_ONSTACK)) ||
        cur.ss_sp != (char *)base + guard_size() || cur.ss_size != FL_ALTSTACK_SIZE)
        return;
    stack_t off = {.ss_flags = SS_DISABLE};
    if (sigaltstack(&off, NULL) == 0) munmap(base, guard_size() + FL_ALTSTACK_SIZE);
}

static void create_key(void) { g_key_ok = pthread_key_create(&g_key, release) == 0; }

int fl_thread_init(void) {
    stack_t old;
    if (sigaltstack(NULL, &old) != 0) return FL_EIO;
    if (!(old.ss_flags & SS_DISABLE) && old.ss_size >= FL_ALTSTACK_SIZE) return 0;
    if (old.ss_flags & SS_ONSTACK) return FL_EBUSY;
    pthread_once(&g_key_once, create_key);
    size_t guard = guard_size();
    char *base = g_key_ok ? pthread_getspecific(g_key) : NULL;
    bool fresh = !base;
    if (fresh) {
        base = mmap(NULL, guard + FL_ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON,
                    -1, 0);
        if (base == MAP_FAILED) return FL_ENOMEM;
        mprotect(base, guard, PROT_NONE); /* an overflow of the handler itself faults */
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
