/* SPDX-License-Identifier: MIT */
/* Benchmarks: threads parked at the bottom of a deep recursion (see parked.h). */
#include "parked.h"

#include <dirent.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static volatile int g_ready;  /* workers that reached the bottom of their recursion */
static volatile int g_never;  /* futex word nobody ever changes */
static unsigned g_depth;

NOINLINE unsigned bench_parked_recurse(unsigned depth, void (*fn)(void *), void *arg) {
    if (depth <= 1) {
        fn(arg);
        return 0;
    }
    unsigned r = bench_parked_recurse(depth - 1, fn, arg);
    NOTAIL();
    return r + 1;
}

NOINLINE static void sleep_forever(void *arg) {
    (void)arg;
    __atomic_add_fetch(&g_ready, 1, __ATOMIC_SEQ_CST);
    for (;;) { /* a capture signal interrupts the wait; it goes back to sleep */
        syscall(SYS_futex, &g_never, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        NOTAIL();
    }
}

static void *worker(void *arg) {
    bench_parked_recurse(g_depth, sleep_forever, arg);
    return NULL;
}

/* Threads other than the caller that are asleep (state S); -1 if the list cannot be read. */
static int count_sleeping(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int self = (int)syscall(SYS_gettid), n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == self) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
        if (p && p[1] == ' ' && p[2] == 'S') n++;
    }
    closedir(d);
    return n;
}

unsigned bench_parked_count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (atoi(e->d_name) > 0) n++;
    closedir(d);
    return n;
}

int bench_parked_start(unsigned n, unsigned depth) {
    g_depth = depth;
    int before = __atomic_load_n(&g_ready, __ATOMIC_SEQ_CST);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PARKED_STACK_SIZE);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (unsigned i = 0; i < n; i++) {
        pthread_t t;
        int e = pthread_create(&t, &attr, worker, NULL);
        if (e) {
            fprintf(stderr, "bench: pthread_create #%u: %s\n", i, strerror(e));
            pthread_attr_destroy(&attr);
            return -1;
        }
    }
    pthread_attr_destroy(&attr);
    uint64_t deadline = bench_now_ns() + 10000000000ull;
    while (__atomic_load_n(&g_ready, __ATOMIC_SEQ_CST) - before < (int)n || count_sleeping() < (int)n) {
        if (bench_now_ns() > deadline) {
            fprintf(stderr, "bench: %u threads did not all fall asleep within 10 s\n", n);
            return -1;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}
