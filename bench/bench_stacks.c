/* SPDX-License-Identifier: MIT */
/* The in-app stack APIs (docs/stacks.md): fl_backtrace's cost per frame next to glibc's
 * backtrace(3) (libgcc's unwinder) in the same run; fl_thread_backtrace's cost per call next to
 * `eu-stack -1 -p TID` (one thread) and `eu-stack -p PID` run on this process; and how long the
 * target thread stands still, seen from the target: a thread busy at depth 64 reading
 * CLOCK_MONOTONIC in a loop records the longest gap between two reads while each call runs.
 * Usage: bench_stacks [CALLS] (default 2000). */
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "faultline/faultline.h"

#define MAXF 4096

/* ---- fl_backtrace at a given depth ---- */

static uintptr_t g_pcs[MAXF];
static void *g_gnu[MAXF];
static int g_mode; /* 0 fl_backtrace, 1 backtrace(3) */
static int g_iters;
static uint64_t g_times[4096];
static int g_frames;

NOINLINE static void measure_here(void) {
    for (int i = 0; i < g_iters; i++) {
        uint64_t t0 = bench_now_ns();
        g_frames = g_mode == 0 ? fl_backtrace(g_pcs, MAXF) : backtrace(g_gnu, MAXF);
        g_times[i] = bench_now_ns() - t0;
    }
}
NOINLINE static void recurse(int n) {
    if (n <= 0) measure_here();
    else recurse(n - 1);
    NOTAIL();
}

/* ns per call of fl_backtrace (mode 0) or backtrace(3) (mode 1) at `depth` frames of recursion:
 * the median, and the fastest (*best: the least disturbed by other processes); *frames the count
 * it returned. */
static uint64_t per_call(int mode, int depth, int iters, int *frames, uint64_t *best) {
    g_mode = mode;
    g_iters = iters;
    recurse(depth);
    *frames = g_frames;
    uint64_t m = bench_percentile(g_times, (size_t)iters, 50);
    *best = g_times[0]; /* sorted by bench_percentile */
    return m;
}

/* ---- fl_thread_backtrace on a busy thread at depth 64 ---- */

static atomic_int g_target_tid, g_stop, g_ready;
static atomic_int g_call = 0; /* the call now running (0: none yet) */
static uint64_t g_max_gap[4096];

/* Its longest gap between two clock reads, charged to the window (g_call) it sees after it. */
NOINLINE static void busy_loop(void) {
    uint64_t prev = bench_now_ns();
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        uint64_t t = bench_now_ns();
        int idx = atomic_load_explicit(&g_call, memory_order_relaxed);
        if (t - prev > g_max_gap[idx]) g_max_gap[idx] = t - prev;
        prev = t;
    }
}

/* The floor: the same windows with an empty signal handler instead of a walk. */
static void empty_handler(int sig) { (void)sig; }

/* One round of `calls` windows of 300 us: what = 0 none, 1 fl_thread_backtrace, 2 an empty
 * signal; the target's longest gap in each window into gaps[], the calls' times into per[]. */
static int g_errors;
static void windows(int what, int calls, int tid, uint64_t *gaps, uint64_t *per) {
    for (int i = 1; i <= calls; i++) g_max_gap[i] = 0;
    for (int i = 1; i <= calls; i++) {
        atomic_store(&g_call, i);
        uint64_t t0 = bench_now_ns();
        if (what == 1) {
            int r = fl_thread_backtrace(tid, g_pcs, MAXF);
            if (r < 0) g_errors++;
            else g_frames = r;
        } else if (what == 2) {
            syscall(SYS_tgkill, getpid(), tid, SIGUSR2);
        }
        if (per) per[i - 1] = bench_now_ns() - t0;
        usleep(300);
    }
    atomic_store(&g_call, 0);
    usleep(1000);
    for (int i = 1; i <= calls; i++) gaps[i - 1] = g_max_gap[i];
}

NOINLINE static void busy_recurse(int n) {
    if (n <= 0) busy_loop();
    else busy_recurse(n - 1);
    NOTAIL();
}
/* The target and the caller on different CPUs (when there are two), so that the caller's own
 * work (reading the maps and images before it asks) does not take the target's CPU and count as
 * a stop. */
static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

/* The target at a real-time priority where allowed (SCHED_FIFO 1): other processes then cannot
 * preempt it, so a gap in its loop is the stop itself, not a busy machine's scheduling (the
 * kernel's real-time throttling still takes 50 ms a second: the p99). */
static atomic_int g_rt;
static void *target(void *a) {
    (void)a;
    struct sched_param sp = {.sched_priority = 1};
    if (!getenv("BENCH_NO_RT") && pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
        atomic_store(&g_rt, 1);
    if (getenv("BENCH_PIN") && sysconf(_SC_NPROCESSORS_ONLN) > 1) pin(1);
    atomic_store(&g_target_tid, (int)syscall(SYS_gettid));
    atomic_store(&g_ready, 1);
    busy_recurse(60); /* + busy_loop, target, start_thread, clone3: depth 64 */
    return NULL;
}

/* Wall time of a command, median of `runs` (ms); -1 if it failed. */
static double command_ms(char *const argv[], int runs) {
    uint64_t t[16];
    if (runs > 16) runs = 16;
    for (int i = 0; i < runs; i++) {
        uint64_t t0 = bench_now_ns();
        pid_t p = fork();
        if (p == 0) {
            int null = open("/dev/null", 1);
            dup2(null, 1);
            dup2(null, 2);
            execvp(argv[0], argv);
            _exit(127);
        }
        int st;
        waitpid(p, &st, 0);
        t[i] = bench_now_ns() - t0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) return -1;
    }
    return (double)bench_percentile(t, (size_t)runs, 50) / 1e6;
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 2000;
    if (calls < 10 || calls > 4000) calls = 2000;
    char dir[512];
    if (!bench_mkdtemp(dir, sizeof dir, "stacks")) return 1;
    fl_options o = {.report_dir = dir};
    if (fl_install(&o) != 0) return 1;
    void *warm[4];
    backtrace(warm, 4);

    /* fl_backtrace */
    printf("fl_backtrace vs backtrace(3), median of %d calls, same process and run\n", calls);
    printf("| depth | fl frames | fl us/call (median) | fastest | glibc frames | glibc us/call (median) | fastest |\n");
    printf("|------:|----------:|-----------:|--------:|-------------:|--------------:|--------:|\n");
    static const int depths[] = {8, 64, 256, 2048};
    enum { ND = 4 };
    uint64_t fl_t[ND], gnu_t[ND], fl_b[ND], gnu_b[ND];
    int fl_n[ND], gnu_n[ND];
    for (int d = 0; d < ND; d++) {
        int it = depths[d] > 256 ? calls / 4 : calls;
        fl_t[d] = per_call(0, depths[d], it, &fl_n[d], &fl_b[d]);
        gnu_t[d] = per_call(1, depths[d], it, &gnu_n[d], &gnu_b[d]);
        printf("| %d | %d | %.1f | %.1f | %d | %.1f | %.1f |\n", depths[d], fl_n[d], fl_t[d] / 1e3,
               fl_b[d] / 1e3, gnu_n[d], gnu_t[d] / 1e3, gnu_b[d] / 1e3);
    }
    /* What each frame adds: the slope between depth 8 and 2048, from the fastest calls (the
     * medians carry the fixed cost's noise, tens of us on a busy machine). The rest is the fixed
     * cost: reading /proc/self/maps and the loader's image list. */
    double fl_slope = ((double)fl_b[ND - 1] - (double)fl_b[0]) / (fl_n[ND - 1] - fl_n[0]);
    double gnu_slope = ((double)gnu_b[ND - 1] - (double)gnu_b[0]) / (gnu_n[ND - 1] - gnu_n[0]);
    double fixed = (double)fl_b[0] - fl_slope * fl_n[0];
    printf("fl_backtrace: %.1f ns per added frame (backtrace(3) %.1f), fixed cost %.1f us a call "
           "(fastest calls; median at depth 64 %.1f us)\n", fl_slope, gnu_slope, fixed / 1e3,
           fl_t[1] / 1e3);
    char m[256];
    snprintf(m, sizeof m, "%.1f ns/frame added (backtrace(3) %.1f); %.1f us fixed a call; @64: %.1f us median",
             fl_slope, gnu_slope, fixed / 1e3, fl_t[1] / 1e3);
    bench_goal("fl_backtrace ns per frame", m, "(reported)", -1);

    /* fl_thread_backtrace */
    pthread_t th;
    if (getenv("BENCH_PIN") && sysconf(_SC_NPROCESSORS_ONLN) > 1) pin(0);
    pthread_create(&th, NULL, target, NULL);
    while (!atomic_load(&g_ready)) usleep(1000);
    usleep(100000);
    int tid = atomic_load(&g_target_tid);
    /* Windows of 300 us, each with one call at its start, or an empty signal, or nothing (the
     * target's own noise: preemption on a busy machine). The index changes only between
     * windows, so a gap is never charged to the wrong one. */
    static uint64_t per[4096], idle_gaps[4096], gaps[4096], sig_gaps[4096];
    if (calls > 4000) calls = 4000;
    signal(SIGUSR2, empty_handler);
    windows(0, calls, tid, idle_gaps, NULL);
    windows(2, calls, tid, sig_gaps, NULL);
    windows(1, calls, tid, gaps, per);
    int n = calls, errors = g_errors, frames = g_frames;
    uint64_t p50 = bench_percentile(per, (size_t)n, 50), p90 = bench_percentile(per, (size_t)n, 90);
    uint64_t g50 = bench_percentile(gaps, (size_t)n, 50), g90 = bench_percentile(gaps, (size_t)n, 90);
    uint64_t g99 = bench_percentile(gaps, (size_t)n, 99);
    uint64_t i50 = bench_percentile(idle_gaps, (size_t)n, 50), i90 = bench_percentile(idle_gaps, (size_t)n, 90);
    uint64_t s50 = bench_percentile(sig_gaps, (size_t)n, 50), s90 = bench_percentile(sig_gaps, (size_t)n, 90);
    printf("fl_thread_backtrace, busy thread, %d frames: %.1f us median a call (p90 %.1f), %d errors\n",
           frames, p50 / 1e3, p90 / 1e3, errors);
    printf("target %s\n", atomic_load(&g_rt) ? "at SCHED_FIFO 1 (not preempted by other processes)"
                                                  : "at normal priority (SCHED_FIFO refused)");
    printf("target stopped (its longest gap between two clock reads in a 300 us window): with "
           "one fl_thread_backtrace median %.1f us, p90 %.1f, p99 %.1f; with one empty signal "
           "handler median %.1f, p90 %.1f; with nothing median %.1f, p90 %.1f\n",
           g50 / 1e3, g90 / 1e3, g99 / 1e3, s50 / 1e3, s90 / 1e3, i50 / 1e3, i90 / 1e3);

    char pid_s[32], tid_s[32];
    snprintf(pid_s, sizeof pid_s, "%d", (int)getpid());
    snprintf(tid_s, sizeof tid_s, "%d", tid);
    char *one[] = {"eu-stack", "-1", "-p", tid_s, NULL};
    char *all[] = {"eu-stack", "-p", pid_s, NULL};
    double eu_one = command_ms(one, 9), eu_all = command_ms(all, 9);
    printf("eu-stack -1 -p TID (that thread only): %.1f ms median of 9; eu-stack -p PID (%s): %.1f ms\n",
           eu_one, "3 threads", eu_all);
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);

    snprintf(m, sizeof m, "%.1f us median (p90 %.1f), %d frames; eu-stack -1 -p TID %.1f ms: %.0fx",
             p50 / 1e3, p90 / 1e3, frames, eu_one, eu_one * 1e6 / (double)p50);
    bench_goal("fl_thread_backtrace vs eu-stack, one thread", m, ">= 100x faster",
               eu_one > 0 ? eu_one * 1e6 / (double)p50 >= 100 : -1);
    snprintf(m, sizeof m, "%.1f us median (p90 %.1f), %d frames; empty signal handler %.1f us "
             "(p90 %.1f); no signal %.1f (p90 %.1f)", g50 / 1e3, g90 / 1e3, frames, s50 / 1e3,
             s90 / 1e3, i50 / 1e3, i90 / 1e3);
    bench_goal(atomic_load(&g_rt) ? "target thread stopped, depth 64 (SCHED_FIFO target)"
                                  : "target thread stopped, depth 64 (normal priority)",
               m, "<= 50 us", g50 <= 50000);
    fl_uninstall();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
