/* SPDX-License-Identifier: MIT */
/* test_stacks_eustack.py's child: threads that sit in nanosleep, pthread_cond_wait, a mutex, read,
 * a busy loop, and one that blocks every signal; it walks each with fl_thread_backtrace, prints
 * the pcs ("stack NAME TID RC PC..."), then waits on stdin while eu-stack reads the same threads. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "faultline/faultline.h"

#define NOINLINE __attribute__((noinline))
#define NOTAIL() __asm__ volatile("" ::: "memory")

static atomic_int g_ready;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER, g_held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_pipe[2];
static atomic_long g_spins;

enum { SLEEPER, CONDWAIT, MUTEX, READER, SPINNER, BLOCKER, N };
static const char *const g_names[N] = {"sleeper", "condwait", "mutex", "reader", "spinner", "blocker"};
static atomic_int g_tids[N];

NOINLINE void sleep_inner(void) {
    for (;;) {
        struct timespec ts = {100, 0};
        nanosleep(&ts, NULL);
    }
}
NOINLINE void cond_inner(void) {
    pthread_mutex_lock(&g_mu);
    for (;;) pthread_cond_wait(&g_cv, &g_mu);
}
NOINLINE void mutex_inner(void) {
    pthread_mutex_lock(&g_held); /* main holds it for ever */
    NOTAIL();
}
NOINLINE void read_inner(void) {
    char c;
    while (read(g_pipe[0], &c, 1) >= 0) {
    }
    NOTAIL();
}
NOINLINE void spin_inner(void) {
    for (;;) atomic_fetch_add(&g_spins, 1);
}
NOINLINE void block_inner(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    sleep_inner();
}

NOINLINE void *worker(void *a) {
    int k = (int)(intptr_t)a;
    atomic_store(&g_tids[k], (int)syscall(SYS_gettid));
    atomic_fetch_add(&g_ready, 1);
    switch (k) {
    case SLEEPER: sleep_inner(); break;
    case CONDWAIT: cond_inner(); break;
    case MUTEX: mutex_inner(); break;
    case READER: read_inner(); break;
    case SPINNER: spin_inner(); break;
    default: block_inner(); break;
    }
    NOTAIL();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fl_options o = {.report_dir = argv[1]};
    if (fl_install(&o) != 0 || pipe(g_pipe) != 0) return 1;
    pthread_mutex_lock(&g_held);
    pthread_t th;
    for (int k = 0; k < N; k++) pthread_create(&th, NULL, worker, (void *)(intptr_t)k);
    for (int i = 0; i < 5000 && atomic_load(&g_ready) < N; i++) usleep(1000);
    /* Every blocking thread asleep in its call (state S in /proc), however busy the machine. */
    for (int k = 0; k < N; k++) {
        if (k == SPINNER) continue;
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", atomic_load(&g_tids[k]));
        for (int i = 0; i < 5000; i++) {
            FILE *f = fopen(path, "r");
            size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            if (f) fclose(f);
            buf[n] = 0;
            const char *p = strrchr(buf, ')');
            if (p && p[1] == ' ' && p[2] == 'S') break;
            usleep(1000);
        }
    }
    usleep(50000); /* and past the instructions that lead into it */
    for (int k = 0; k < N; k++) {
        uintptr_t pcs[128];
        int n = fl_thread_backtrace(atomic_load(&g_tids[k]), pcs, 128);
        printf("stack %s %d %d", g_names[k], atomic_load(&g_tids[k]), n);
        for (int i = 0; i < n; i++) printf(" %#lx", (unsigned long)pcs[i]);
        printf("\n");
    }
    printf("spin_inner %#lx\nready\n", (unsigned long)(uintptr_t)&spin_inner);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    _exit(0);
}
