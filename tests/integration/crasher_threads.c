/* SPDX-License-Identifier: MIT */
/* Crasher scenarios with other threads that make all-thread capture hard: a thousand of them,
 * one blocking every signal, one stuck in an uninterruptible system call, four spinning. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "crasher.h"

static volatile int g_ready;

/* ---- threads_1000: a thousand threads parked in nanosleep ---- */
NOINLINE static void parked_worker(int i) {
    (void)i;
    __atomic_add_fetch(&g_ready, 1, __ATOMIC_SEQ_CST);
    crasher_park();
    NOTAIL();
}

void scenario_threads_1000(const char *dir) {
    (void)dir;
    int n = 1000;
    for (int i = 0; i < n; i++) crasher_start_thread(parked_worker, "worker", i, 256 * 1024);
    crasher_wait_count(&g_ready, n);
    crasher_sleep_ms(20); /* the last ones reach nanosleep */
    null_a();
    NOTAIL();
}

/* ---- blocked_thread: one thread blocks every signal ---- */
NOINLINE static void blocked_worker(int i) {
    (void)i;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    __atomic_add_fetch(&g_ready, 1, __ATOMIC_SEQ_CST);
    crasher_park();
    NOTAIL();
}

void scenario_blocked_thread(const char *dir) {
    (void)dir;
    crasher_start_thread(blocked_worker, "blocker", -1, 0);
    crasher_wait_count(&g_ready, 1);
    null_a();
    NOTAIL();
}

/* ---- stuck_thread: one thread in vfork() while its child sleeps 3 s ---- */
/* The parent of vfork waits in the kernel, killable but not interruptible (state D): a signal
 * sent to it is handled only after the child exits. */
static volatile int g_stuck_tid;
NOINLINE static void stuck_worker(int i) {
    (void)i;
    g_stuck_tid = gettid();
    pid_t child = vfork();
    if (child == 0) {
        /* Dies with the crasher (PR_SET_PDEATHSIG follows the thread that forked), and holds none
         * of the test's pipes meanwhile. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(0);
        close(1);
        close(2);
        struct timespec ts = {3, 0};
        nanosleep(&ts, NULL);
        _exit(0);
    }
    crasher_park();
    NOTAIL();
}

/* The state letter of /proc/self/task/<tid>/stat ("tid (comm) S ..."), or '?'. */
static char task_state(int tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return '?';
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return '?';
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

void scenario_stuck_thread(const char *dir) {
    (void)dir;
    crasher_start_thread(stuck_worker, "stuck", -1, 0);
    char state = '?';
    for (int i = 0; i < 2000 && state != 'D'; i++) {
        crasher_sleep_ms(1);
        if (g_stuck_tid) state = task_state(g_stuck_tid);
    }
    printf("stuck thread state %c\n", state);
    fflush(stdout);
    if (state != 'D') {
        fprintf(stderr, "the thread in vfork() never reached state D (uninterruptible)\n");
        exit(9);
    }
    null_a();
    NOTAIL();
}

/* ---- busy_threads: four threads spinning on the CPU ---- */
static volatile unsigned long g_spins[4];
NOINLINE static void spin_worker(int i) {
    __atomic_add_fetch(&g_ready, 1, __ATOMIC_SEQ_CST);
    for (;;) g_spins[i]++;
}

void scenario_busy_threads(const char *dir) {
    (void)dir;
    for (int i = 0; i < 4; i++) crasher_start_thread(spin_worker, "spinner", i, 0);
    crasher_wait_count(&g_ready, 4);
    crasher_sleep_ms(20);
    null_a();
    NOTAIL();
}
