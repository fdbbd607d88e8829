/* SPDX-License-Identifier: MIT */
/* Alternate signal stacks: fl_thread_init and the stacks themselves (every platform). */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "crash/crash.h"

static pthread_key_t g_key FL_STARTUP_DATA;
static bool g_key_ok FL_STARTUP_DATA;
static pthread_once_t g_key_once FL_STARTUP_DATA = PTHREAD_ONCE_INIT;

static size_t guard_size(void) { return fl_page_size(); }

/* `populate` makes the stack's top page resident, where the kernel writes the signal frame at
 * the first signal: a page fault inside signal delivery is slow (12 us a thread on the project's
 * VM: a capture of 256 threads took 7.7 ms to stop them all instead of 4.6), and every thread
 * takes the capture signal at a crash. One page of memory a thread. */
static char *map_stack(bool populate) {
    size_t guard = guard_size();
    char *base = mmap(NULL, guard + FL_ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return NULL;
    mprotect(base, guard, PROT_NONE); /* an overflow of the handler itself faults */
    if (populate) fl_sys_prefault(base + FL_ALTSTACK_SIZE, guard); /* top page (guard = a page) */
    return base;
}

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

bool fl_crash_altstack_keyed(void) {
    pthread_once(&g_key_once, create_key);
    return g_key_ok;
}

int fl_crash_altstack_give(bool populate) {
    bool keyed = fl_crash_altstack_keyed();
    size_t guard = guard_size();
    char *base = keyed ? pthread_getspecific(g_key) : NULL;
    bool fresh = !base;
    if (fresh) {
        if (!(base = map_stack(populate))) return FL_ENOMEM;
        /* Without a key (all taken) the stack is never freed, as before threads got one each. */
        if (keyed && pthread_setspecific(g_key, base) != 0) {
            munmap(base, guard + FL_ALTSTACK_SIZE);
            return FL_ENOMEM;
        }
    }
    stack_t ss = {.ss_sp = base + guard, .ss_size = FL_ALTSTACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        if (fresh) {
            if (keyed) pthread_setspecific(g_key, NULL);
            munmap(base, guard + FL_ALTSTACK_SIZE);
        }
        return FL_EIO;
    }
    return 0;
}

void *fl_crash_altstack_map(void) {
    char *base = map_stack(true);
    return base ? base + guard_size() : NULL;
}

void fl_crash_altstack_unmap(void *stack) {
    munmap((char *)stack - guard_size(), guard_size() + FL_ALTSTACK_SIZE);
}

int fl_thread_init(void) { return fl_crash_thread_init(true); }

int fl_crash_thread_init(bool populate) {
    stack_t old;
    if (sigaltstack(NULL, &old) != 0) return FL_EIO;
    /* An application's own alternate stack of our size or more stays; a smaller one is replaced
     * (the handler needs about 11 KiB, glibc's SIGSTKSZ is 8: docs/async-safety.md). */
    if (!(old.ss_flags & SS_DISABLE) && old.ss_size >= FL_ALTSTACK_SIZE) return 0;
    if (old.ss_flags & SS_ONSTACK) return FL_EBUSY;
    return fl_crash_altstack_give(populate);
}
