/* SPDX-License-Identifier: MIT */
/* crash: threads created while faultline is installed get an alternate signal stack, freed when
 * they end (return, pthread_exit, cancellation); the application's own stacks are left alone.
 * Built against libfaultline.a, libfaultline.so and fully static (tests/crash/CMakeLists.txt). */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "faultline/faultline.h"
#include "test.h"

#define OUR_SIZE (64u * 1024u) /* FL_ALTSTACK_SIZE */

enum mode {
    RETURN,           /* returns a value */
    EXIT,             /* pthread_exit */
    CANCEL,           /* waits in pause() until cancelled */
    OWN,              /* installs its own stack, then returns */
    OWN_RESTORE,      /* installs its own stack, puts ours back, then returns */
    EXIT_ON_ALTSTACK, /* pthread_exit from a signal handler running on the alternate stack */
    INIT,             /* calls fl_thread_init */
    INIT_OVER_OWN,    /* installs a stack of own_size, then calls fl_thread_init */
};

typedef struct {
    enum mode mode;
    size_t own_size;
    stack_t entry;    /* the alternate stack when the thread started */
    stack_t last;     /* ... and just before it ended */
    char *own;        /* the stack the thread installed itself (OWN*, INIT_OVER_OWN) */
    int init_result;  /* fl_thread_init's result (INIT*) */
} probe_t;

static size_t page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Whether any byte of [addr, addr+len) is mapped: msync fails with ENOMEM on unmapped pages. */
static bool mapped(const void *addr, size_t len) {
    uintptr_t lo = (uintptr_t)addr & ~(uintptr_t)(page() - 1);
    for (uintptr_t p = lo; p < (uintptr_t)addr + len; p += page())
        if (msync((void *)p, page(), MS_ASYNC) == 0) return true;
    return false;
}

/* Our mapping: a guard page below the stack. */
static bool ours_mapped(const stack_t *ss) {
    return mapped((char *)ss->ss_sp - page(), page() + ss->ss_size);
}
static void unmap_ours(const stack_t *ss) {
    munmap((char *)ss->ss_sp - page(), page() + ss->ss_size);
}

static char *own_stack(size_t size) {
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static probe_t *g_exiting;
static void exit_on_altstack(int sig) {
    (void)sig;
    sigaltstack(NULL, &g_exiting->last); /* SS_ONSTACK */
    pthread_exit((void *)0x77);
}

static void *probe(void *arg) {
    probe_t *p = arg;
    sigaltstack(NULL, &p->entry);
    switch (p->mode) {
    case RETURN:
        break;
    case EXIT:
        sigaltstack(NULL, &p->last);
        pthread_exit((void *)0x5678);
    case CANCEL:
        for (;;) pause();
    case OWN:
    case OWN_RESTORE: {
        p->own = own_stack(OUR_SIZE);
        stack_t ss = {.ss_sp = p->own, .ss_size = OUR_SIZE}, old;
        sigaltstack(&ss, &old);
        p->init_result = fl_thread_init(); /* keeps the application's stack */
        if (p->mode == OWN_RESTORE) sigaltstack(&old, NULL);
        break;
    }
    case EXIT_ON_ALTSTACK: {
        struct sigaction sa = {.sa_handler = exit_on_altstack, .sa_flags = SA_ONSTACK};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
        g_exiting = p;
        raise(SIGUSR1);
        return NULL; /* not reached */
    }
    case INIT_OVER_OWN: {
        p->own = own_stack(p->own_size);
        stack_t ss = {.ss_sp = p->own, .ss_size = p->own_size};
        sigaltstack(&ss, NULL);
    } /* fall through */
    case INIT:
        p->init_result = fl_thread_init();
        break;
    }
    sigaltstack(NULL, &p->last);
    return (void *)0x1234;
}

/* Runs one probe thread to its end; returns its pthread_join value. */
static void *run(probe_t *p) {
    pthread_t t;
    void *ret = NULL;
    int e = pthread_create(&t, NULL, probe, p);
    CHECK(e == 0);
    if (e) return NULL;
    if (p->mode == CANCEL) CHECK(pthread_cancel(t) == 0);
    CHECK(pthread_join(t, &ret) == 0);
    return ret;
}

static bool has_ours(const stack_t *ss) {
    return !(ss->ss_flags & SS_DISABLE) && ss->ss_size >= OUR_SIZE;
}

/* The address space in use: the sum of /proc/self/maps (the kernel's VmSize, and under qemu-user
 * the guest's mappings, where VmSize would count the emulator's own). */
static long vm_size_kb(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long long lo, hi, total = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%llx-%llx", &lo, &hi) == 2) total += hi - lo;
    if (f) fclose(f);
    return f ? (long)(total / 1024) : -1;
}

/* Batches of `per` threads at once, each created and joined: what a thread pool does. */
static void threads_in_batches(int batches, int per) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024); /* all fit in libc's stack cache */
    for (int b = 0; b < batches; b++) {
        pthread_t t[16];
        probe_t p[16];
        for (int i = 0; i < per; i++) {
            p[i] = (probe_t){.mode = RETURN};
            CHECK(pthread_create(&t[i], &a, probe, &p[i]) == 0);
        }
        for (int i = 0; i < per; i++) {
            pthread_join(t[i], NULL);
            CHECK(has_ours(&p[i].entry));
        }
    }
    pthread_attr_destroy(&a);
}

int main(void) {
    mallopt(M_ARENA_MAX, 1);
    char dir[] = "/tmp/fl-altstack-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    fl_options o = {.report_dir = dir, .app_name = "test_altstack"};

    /* Not installed: pthread_create is libc's, no stack. */
    probe_t p = {.mode = RETURN};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(p.entry.ss_flags & SS_DISABLE);

    CHECK(fl_install(&o) == 0);

    /* A plain thread: our stack, and it is gone once the thread has ended. */
    p = (probe_t){.mode = RETURN};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(has_ours(&p.entry));
    CHECK(p.entry.ss_size == OUR_SIZE);
    CHECK(!ours_mapped(&p.entry));

    p = (probe_t){.mode = EXIT};
    CHECK(run(&p) == (void *)0x5678);
    CHECK(has_ours(&p.entry) && !ours_mapped(&p.entry));

    p = (probe_t){.mode = CANCEL};
    CHECK(run(&p) == PTHREAD_CANCELED);
    CHECK(has_ours(&p.entry) && !ours_mapped(&p.entry));

    /* The thread puts its own stack in place: it stays (fl_thread_init keeps it too); ours is
     * left mapped, since the thread could still put it back. */
    p = (probe_t){.mode = OWN};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(has_ours(&p.entry));
    CHECK(p.init_result == 0 && p.last.ss_sp == p.own && p.last.ss_size == OUR_SIZE);
    CHECK(ours_mapped(&p.entry) && mapped(p.own, OUR_SIZE));
    unmap_ours(&p.entry);
    munmap(p.own, OUR_SIZE);

    /* ... and once it has put ours back, ours is freed at the end. */
    p = (probe_t){.mode = OWN_RESTORE};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(p.last.ss_sp == p.entry.ss_sp && !ours_mapped(&p.entry));
    munmap(p.own, OUR_SIZE);

    /* pthread_exit from a handler running on our stack: glibc unwinds back to the thread's own
     * stack before the key destructors run, so the stack is free to go. */
    p = (probe_t){.mode = EXIT_ON_ALTSTACK};
    CHECK(run(&p) == (void *)0x77);
    CHECK(has_ours(&p.entry) && (p.last.ss_flags & SS_ONSTACK));
    CHECK(!ours_mapped(&p.entry));

    /* pthread_create's own errors come back unchanged (no stack can be mapped this large). Not
     * under qemu-user: it tracks every guest page it maps, and a 64 TiB mapping exhausts the
     * host's memory before it fails. */
    if (!fl_test_emulated()) {
        pthread_attr_t huge;
        pthread_attr_init(&huge);
        CHECK(pthread_attr_setstacksize(&huge, (size_t)1 << 46) == 0);
        pthread_t t;
        p = (probe_t){.mode = RETURN};
        CHECK(pthread_create(&t, &huge, probe, &p) == EAGAIN);
        pthread_attr_destroy(&huge);
    }

    /* 200 threads leave no mapping behind (after a warm-up: libc caches thread stacks; with one
     * malloc arena, threads do not add arenas of 64 MiB as they overlap more). */
    threads_in_batches(2, 10);
    long before = vm_size_kb();
    threads_in_batches(20, 10);
    long after = vm_size_kb();
    CHECK(before > 0 && after == before);
    if (after != before) fprintf(stderr, "VmSize %ld kB -> %ld kB\n", before, after);

    fl_uninstall();

    /* Uninstalled: new threads get nothing... */
    p = (probe_t){.mode = RETURN};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(p.entry.ss_flags & SS_DISABLE);

    /* ... unless they ask, and what fl_thread_init gives is freed at the end too. */
    p = (probe_t){.mode = INIT};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(p.init_result == 0 && has_ours(&p.last) && p.last.ss_size == OUR_SIZE);
    CHECK(!ours_mapped(&p.last));

    /* fl_thread_init over an application's stack: one as large as ours is kept, a smaller one is
     * replaced (the handler needs more; docs/async-safety.md) and stays the application's. */
    p = (probe_t){.mode = INIT_OVER_OWN, .own_size = 128 * 1024};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(p.init_result == 0 && p.last.ss_sp == p.own);
    CHECK(mapped(p.own, p.own_size));
    munmap(p.own, p.own_size);
    p = (probe_t){.mode = INIT_OVER_OWN, .own_size = 16 * 1024};
    CHECK(run(&p) == (void *)0x1234);
    CHECK(p.init_result == 0 && p.last.ss_sp != p.own && p.last.ss_size == OUR_SIZE);
    CHECK(!ours_mapped(&p.last) && mapped(p.own, p.own_size));
    munmap(p.own, p.own_size);
    TEST_END();
}
