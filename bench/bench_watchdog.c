/* SPDX-License-Identifier: MIT */
/* The watchdog's costs: fl_heartbeat per call against an empty loop iteration, and the watchdog
 * thread's CPU time while nothing hangs against bare threads making the same timed wakeups.
 * Usage: bench_watchdog [SECONDS (60)] [THRESHOLD_MS (2000, the default)] */
#include <linux/futex.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"
#include "faultline/faultline.h"

int fl_crash_watchdog_tid(void); /* crash/crash.h: the watchdog thread's tid */

#define CALLS 200000000ull

static NOINLINE uint64_t empty_loop(uint64_t n) {
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) NOTAIL();
    return bench_now_ns() - t0;
}

static NOINLINE uint64_t beat_loop(uint64_t n) {
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        fl_heartbeat();
        NOTAIL();
    }
    return bench_now_ns() - t0;
}

/* A thread's CPU time in ns: the first field of /proc/self/task/TID/schedstat. */
static uint64_t thread_cpu_ns(int tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    FILE *f = fopen(path, "r");
    unsigned long long ns = 0;
    if (!f || fscanf(f, "%llu", &ns) != 1) ns = 0;
    if (f) fclose(f);
    return ns;
}

/* The references: threads that only wake every check_ms and do nothing else, one sleeping as
 * the watchdog does (a futex wait with a timeout), one in poll on a pipe (the watchdog's wait
 * before 2026-11-26). */
static volatile int g_ref_stop;
static unsigned g_check_ms;
struct ref {
    pthread_t thread;
    volatile int tid;
    bool poll;
};
static void *reference(void *arg) {
    struct ref *r = arg;
    r->tid = (int)syscall(SYS_gettid);
    int fds[2];
    if (r->poll && pipe(fds) != 0) return NULL;
    struct pollfd p = {.fd = r->poll ? fds[0] : -1, .events = POLLIN};
    struct timespec ts = {g_check_ms / 1000, (long)(g_check_ms % 1000) * 1000000L};
    static int word;
    while (!g_ref_stop) {
        if (r->poll)
            poll(&p, 1, (int)g_check_ms);
        else
            syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
    return NULL;
}

int main(int argc, char **argv) {
    unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 60;
    unsigned threshold = argc > 2 ? (unsigned)atoi(argv[2]) : FL_WATCHDOG_DEFAULT_THRESHOLD_MS;
    g_check_ms = threshold; /* the default check_ms */

    /* 1. fl_heartbeat: the best of 5 runs each. */
    uint64_t e = UINT64_MAX, b = UINT64_MAX;
    for (int r = 0; r < 5; r++) {
        uint64_t x = empty_loop(CALLS), y = beat_loop(CALLS);
        if (x < e) e = x;
        if (y < b) b = y;
    }
    double e_ns = (double)e / CALLS, b_ns = (double)b / CALLS, added = b_ns - e_ns;
    printf("fl_heartbeat: %.3f ns per loop iteration with it, %.3f ns without: %.3f ns per call "
           "(%.1fx the empty iteration)\n", b_ns, e_ns, added, b_ns / e_ns);
    char m[96];
    snprintf(m, sizeof m, "%.2f ns per call", added < 0 ? 0 : added);
    bench_goal("fl_heartbeat", m, "<= 5 ns", added <= 5.0);

    /* 2. The watchdog while nothing hangs: the loop beats every 50 ms. */
    char dir[256];
    if (!bench_mkdtemp(dir, sizeof dir, "watchdog")) return 1;
    fl_options o = {.report_dir = dir};
    fl_watchdog_options w = {.threshold_ms = threshold};
    if (fl_install(&o) != 0 || fl_watchdog_start(&w) != 0) {
        fprintf(stderr, "install or watchdog start failed\n");
        return 1;
    }
    struct ref refs[2] = {{.poll = false}, {.poll = true}};
    for (int i = 0; i < 2; i++) pthread_create(&refs[i].thread, NULL, reference, &refs[i]);
    while (!fl_crash_watchdog_tid() || !refs[0].tid || !refs[1].tid) usleep(1000);
    int wd = fl_crash_watchdog_tid();
    uint64_t w0 = thread_cpu_ns(wd), r0 = thread_cpu_ns(refs[0].tid), p0 = thread_cpu_ns(refs[1].tid);
    uint64_t t0 = bench_now_ns();
    while (bench_now_ns() - t0 < seconds * 1000000000ull) {
        fl_heartbeat();
        usleep(50000);
    }
    uint64_t w1 = thread_cpu_ns(wd), r1 = thread_cpu_ns(refs[0].tid), p1 = thread_cpu_ns(refs[1].tid);
    uint64_t t1 = bench_now_ns();
    fl_watchdog_stop(); /* first: joining the references takes up to check_ms without beats */
    g_ref_stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(refs[i].thread, NULL);
    fl_uninstall();
    double hours = (double)(t1 - t0) / 3.6e12, wakes = (double)(t1 - t0) / (g_check_ms * 1e6);
    double wd_ms_h = (double)(w1 - w0) / 1e6 / hours, ref_ms_h = (double)(r1 - r0) / 1e6 / hours;
    double poll_ms_h = (double)(p1 - p0) / 1e6 / hours;
    printf("watchdog (threshold %u ms, a check every %u ms) over %.1f s: %.3f ms CPU = %.1f ms per "
           "hour, %.1f us per wakeup; bare threads with the same wakeups: futex wait %.1f ms per "
           "hour (%.2fx), poll on a pipe %.1f ms per hour (%.2fx)\n", threshold, g_check_ms,
           (t1 - t0) / 1e9, (w1 - w0) / 1e6, wd_ms_h, (w1 - w0) / 1e3 / wakes, ref_ms_h,
           ref_ms_h > 0 ? wd_ms_h / ref_ms_h : 0, poll_ms_h, poll_ms_h > 0 ? wd_ms_h / poll_ms_h : 0);
    snprintf(m, sizeof m, "%.1f ms per hour", wd_ms_h);
    bench_goal("watchdog CPU when nothing hangs", m, "<= 100 ms per hour", wd_ms_h <= 100.0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
