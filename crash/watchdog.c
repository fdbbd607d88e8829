/* SPDX-License-Identifier: MIT */
/* The main-loop watchdog: a sleeping thread that reports a hang when the heartbeats stop. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "crash/crash.h"

/* Set to 1 by every fl_heartbeat, taken back to 0 by each check: one plain store for the loop,
 * an exchange once per check for the watchdog (docs/hangs.md). */
static volatile int g_beat;
static volatile int g_exiting;
static volatile int g_watchdog_tid;

static struct {
    bool running;
    pthread_t thread;
    /* The stop request: set to 1 and woken, it ends the wait at once. A futex wait (not poll on
     * a pipe) because its wakes cost the least CPU (BENCHMARKS.md, issue 16), and it needs no
     * file descriptors in the application. */
    volatile int stop;
    int monitored_tid;
    unsigned threshold_ms;
    uint64_t threshold_ns, check_ns, slack_ns, confirm_ns;
} g_wd;

/* The hang in progress and its report: static, because the capture may run on Darwin's capture
 * server, which writes id and name after a requester that stopped waiting has gone on. */
static fl_report_hang_t g_hang;
static uint8_t g_hang_id[16];
static char g_hang_name[FL_REPORT_NAME_MAX];

void fl_heartbeat(void) { __atomic_store_n(&g_beat, 1, __ATOMIC_RELAXED); }

void fl_crash_watchdog_exiting(void) { __atomic_store_n(&g_exiting, 1, __ATOMIC_SEQ_CST); }

int fl_crash_watchdog_tid(void) { return __atomic_load_n(&g_watchdog_tid, __ATOMIC_SEQ_CST); }

static uint64_t mono_ns(void) {
    uint64_t ns = 0;
    fl_sys_clock_gettime(CLOCK_MONOTONIC, &ns);
    return ns;
}

static uint64_t real_ns(void) {
    uint64_t ns = 0;
    fl_sys_clock_gettime(CLOCK_REALTIME, &ns);
    return ns;
}

/* A hang report is an in-line capture as fl_snapshot's is (crash/handler.c): the platform's
 * capture server when it has one (Darwin), else on this thread under the in-line state. */
static int snapshot(fl_capture_request_t *req) {
    int e = fl_crash_os_submit(req);
    if (e != FL_ENOSYS) return e;
    if (!fl_crash_inline_begin()) return FL_EBUSY;
    e = fl_crash_capture(req);
    fl_crash_inline_end();
    return e;
}

/* The capture runs from here so that this frame, holding the registers, stays live while the
 * capture walks the watchdog thread itself (as fl_snapshot does). */
static __attribute__((noinline)) int capture_hang(void) {
    fl_regs_t regs;
    fl_memset(&regs, 0, sizeof regs);
    fl_regs_get_current(&regs);
    fl_capture_request_t req = {.kind = 3, .regs = &regs, .reason = "hang",
                                .thread = fl_crash_os_self(), .hang = &g_hang,
                                .id_out = g_hang_id, .name_out = g_hang_name};
    return snapshot(&req);
}

/* Sleeps at most ns; true when asked to stop. */
static bool sleep_or_stop(uint64_t ns) {
    if (!__atomic_load_n(&g_wd.stop, __ATOMIC_SEQ_CST)) fl_sys_futex_wait(&g_wd.stop, 0, ns);
    return __atomic_load_n(&g_wd.stop, __ATOMIC_SEQ_CST) != 0;
}

static void *watchdog_main(void *arg) {
    (void)arg;
    /* Only the crash signals and the capture signal reach this thread: the application's own
     * handlers (SIGINT, SIGCHLD, timers) keep running on its threads. */
    sigset_t set;
    sigfillset(&set);
    for (int i = 0; i < FL_CRASH_SIGNAL_COUNT; i++) sigdelset(&set, fl_crash_signals[i]);
    if (fl_crash_os_capture_signal()) sigdelset(&set, fl_crash_os_capture_signal());
    pthread_sigmask(SIG_SETMASK, &set, NULL);
    fl_sys_set_thread_name("fl-watchdog"); /* so that reports show whose thread it is */
    __atomic_store_n(&g_watchdog_tid, (int)fl_sys_gettid(), __ATOMIC_SEQ_CST);

    uint64_t prev = mono_ns(), stuck = 0;
    unsigned reports = 0;
    bool hung = false;
    while (!sleep_or_stop(g_wd.check_ns)) {
        uint64_t now = mono_ns(), dt = now - prev;
        prev = now;
        /* A late wake (the process was stopped, the machine suspended or overloaded) counts for
         * nothing: time nobody could beat in must not make a hang. */
        uint64_t counted = dt > g_wd.check_ns + g_wd.slack_ns ? 0 : dt;
        bool beat = __atomic_exchange_n(&g_beat, 0, __ATOMIC_RELAXED) != 0;
        if (beat) {
            if (hung) {
                /* Stuck for at least the time up to the previous check. */
                g_hang.duration_ns = stuck;
                g_hang.recovered = true;
                /* The whole record again: protobuf merges a repeated message field, but
                 * protobuf-c 1.4 replaces it, so each record must stand alone. */
                if (g_hang_name[0]) {
                    const char *reopened = NULL;
                    fl_report_append_hang(fl_crash_dirfd(&reopened), g_hang_name, &g_hang);
                }
                fl_run_marker_set_hang(&fl_crash_config.marker, false, g_hang.sequence, g_hang_id,
                                       g_hang.started_unix_ns, stuck);
                hung = false;
            }
            stuck = 0;
            continue;
        }
        stuck += counted;
        if (hung) {
            fl_run_marker_set_hang(&fl_crash_config.marker, true, g_hang.sequence, g_hang_id,
                                   g_hang.started_unix_ns, stuck);
            continue;
        }
        if (stuck < g_wd.threshold_ns || __atomic_load_n(&g_exiting, __ATOMIC_SEQ_CST) ||
            reports >= FL_WATCHDOG_MAX_REPORTS)
            continue;
        /* Confirm with one short look: a process stopped (SIGSTOP) for about one interval right
         * after a check, and continued just before this wake, looks stuck for that interval;
         * its loop beats again within moments of running. */
        if (sleep_or_stop(g_wd.confirm_ns)) break;
        now = mono_ns();
        dt = now - prev;
        prev = now;
        if (__atomic_exchange_n(&g_beat, 0, __ATOMIC_RELAXED)) {
            stuck = 0;
            continue;
        }
        if (dt <= g_wd.confirm_ns + g_wd.slack_ns) stuck += dt;
        g_hang = (fl_report_hang_t){.monitored_tid = g_wd.monitored_tid,
                                    .started_unix_ns = real_ns() - stuck, .duration_ns = stuck,
                                    .threshold_ms = g_wd.threshold_ms,
                                    .check_interval_ns = g_wd.check_ns, .sequence = reports + 1};
        fl_memset(g_hang_id, 0, sizeof g_hang_id);
        g_hang_name[0] = 0;
        int e = capture_hang();
        if (e == FL_EBUSY) continue; /* a crash or a snapshot is being captured: next check */
        reports++;
        hung = true;
        fl_run_marker_set_hang(&fl_crash_config.marker, true, g_hang.sequence, g_hang_id,
                               g_hang.started_unix_ns, stuck);
        /* The capture's own time is not the loop's to account for. */
        prev = mono_ns();
    }
    __atomic_store_n(&g_watchdog_tid, 0, __ATOMIC_SEQ_CST);
    return NULL;
}

int fl_watchdog_start(const fl_watchdog_options *opts) {
    if (fl_crash_config.dirfd < 0) return FL_ESTATE;
    if (g_wd.running) return FL_EBUSY;
    unsigned threshold = opts && opts->threshold_ms ? opts->threshold_ms : FL_WATCHDOG_DEFAULT_THRESHOLD_MS;
    unsigned check = opts && opts->check_ms ? opts->check_ms : threshold;
    if (check < 25) check = 25;
    if (threshold < FL_WATCHDOG_MIN_THRESHOLD_MS || check > threshold) return FL_EINVAL;
    g_wd.threshold_ms = threshold;
    g_wd.threshold_ns = threshold * 1000000ull;
    g_wd.check_ns = check * 1000000ull;
    /* Late by more than a quarter of an interval and 50 ms of scheduling noise: see
     * watchdog_main. The confirming look: a tenth of an interval, 10 to 100 ms. */
    g_wd.slack_ns = g_wd.check_ns / 4 + 50000000ull;
    g_wd.confirm_ns = g_wd.check_ns / 10;
    if (g_wd.confirm_ns < 10000000ull) g_wd.confirm_ns = 10000000ull;
    if (g_wd.confirm_ns > 100000000ull) g_wd.confirm_ns = 100000000ull;
    g_wd.monitored_tid = (int)fl_sys_gettid();
    __atomic_store_n(&g_exiting, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_beat, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_wd.stop, 0, __ATOMIC_SEQ_CST);
    /* The thread starts with every signal blocked, so none reaches it before it sets its mask. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(&g_wd.thread, NULL, watchdog_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) return FL_EIO;
    g_wd.running = true;
    return 0;
}

void fl_crash_watchdog_forget(void) {
    if (!g_wd.running) return;
    g_wd.running = false;
    __atomic_store_n(&g_watchdog_tid, 0, __ATOMIC_SEQ_CST);
}

void fl_watchdog_stop(void) {
    if (!g_wd.running) return;
    __atomic_store_n(&g_wd.stop, 1, __ATOMIC_SEQ_CST);
    fl_sys_futex_wake(&g_wd.stop, 1);
    pthread_join(g_wd.thread, NULL);
    g_wd.running = false;
}
