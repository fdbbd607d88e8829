/* SPDX-License-Identifier: MIT */
/* crash: all-thread capture, driven through fl_snapshot in this process: every thread listed with
 * its state, parked threads' frames (checked with dladdr), limits, late answers, snapshots from a
 * signal handler and from several threads at once. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "faultline.pb-c.h"
#include "faultline/faultline.h"
#include "test.h"

#define NOINLINE __attribute__((noinline))
#define NOTAIL() __asm__ volatile("" ::: "memory")

static char g_dir[256];
/* Threads the process has besides the main one before the test starts any: an emulator's own
 * (qemu-user's RCU thread), which every capture also lists. */
static unsigned g_foreign;
static atomic_int g_stop;
static atomic_long g_spins;
static atomic_int g_ready;

/* ---- Workers, each in named functions the report must show ---- */

NOINLINE void spin_inner(void) {
    while (!atomic_load(&g_stop)) atomic_fetch_add(&g_spins, 1);
    NOTAIL();
}
NOINLINE void *spin_worker(void *a) {
    (void)a;
    pthread_setname_np(pthread_self(), "spinner");
    atomic_fetch_add(&g_ready, 1);
    spin_inner();
    NOTAIL();
    return NULL;
}

NOINLINE void sleep_inner(void) {
    while (!atomic_load(&g_stop)) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    NOTAIL();
}
NOINLINE void *sleep_worker(void *a) {
    char name[16];
    snprintf(name, sizeof name, "sleeper-%d", (int)(long)a);
    pthread_setname_np(pthread_self(), name);
    atomic_fetch_add(&g_ready, 1);
    sleep_inner();
    NOTAIL();
    return NULL;
}

static atomic_int g_unblock;
NOINLINE void *blocker_worker(void *a) {
    (void)a;
    pthread_setname_np(pthread_self(), "blocker");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_unblock) && !atomic_load(&g_stop)) usleep(1000);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL); /* a pending capture request arrives now, late */
    atomic_fetch_add(&g_ready, 1);
    sleep_inner();
    return NULL;
}

/* Uninterruptible for a while: vfork's parent does not run signal handlers until the child
 * exits or execs. */
static atomic_int g_vfork_started;
NOINLINE void *stuck_worker(void *a) {
    int ms = (int)(long)a;
    pthread_setname_np(pthread_self(), "stuck");
    atomic_store(&g_vfork_started, 1);
    pid_t p = vfork();
    if (p == 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        syscall(SYS_nanosleep, &ts, NULL);
        _exit(0);
    }
    if (p > 0) waitpid(p, NULL, 0);
    atomic_fetch_add(&g_ready, 1);
    sleep_inner();
    return NULL;
}

static void wait_ready(int n) {
    for (int i = 0; i < 5000 && atomic_load(&g_ready) < n; i++) usleep(1000);
}

/* ---- Reading the newest report ---- */

static Faultline__Report *newest_report(void) {
    char **paths;
    size_t n;
    if (fl_list_reports(g_dir, &paths, &n) != 0 || n == 0) return NULL;
    Faultline__Report *r = NULL;
    bool trunc = false;
    if (fl_report_read_file(paths[n - 1], &r, &trunc) != 0 || trunc) r = NULL;
    fl_free_report_list(paths, n);
    return r;
}

static void clear_reports(void) {
    char **paths;
    size_t n;
    if (fl_list_reports(g_dir, &paths, &n) != 0) return;
    for (size_t i = 0; i < n; i++) unlink(paths[i]);
    fl_free_report_list(paths, n);
}

static const Faultline__Thread *by_name(const Faultline__Report *r, const char *name) {
    for (size_t i = 0; i < r->n_threads; i++)
        if (r->threads[i]->name && strcmp(r->threads[i]->name, name) == 0) return r->threads[i];
    return NULL;
}

/* True when the thread's frames contain the named functions in this order (dladdr oracle). */
static bool frames_have(const Faultline__Thread *t, const char *const *want, size_t n) {
    size_t k = 0;
    for (size_t i = 0; t && i < t->n_frames && k < n; i++) {
        Dl_info info;
        uintptr_t pc = (uintptr_t)t->frames[i]->pc - (i ? 1 : 0);
        if (dladdr((void *)pc, &info) && info.dli_sname && strcmp(info.dli_sname, want[k]) == 0) k++;
    }
    return k == n;
}

static size_t count_state(const Faultline__Report *r, Faultline__Thread__State s) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_threads; i++) n += r->threads[i]->state == s;
    return n;
}

NOINLINE int snapshot_caller(const char *reason) {
    int e = fl_snapshot(reason);
    NOTAIL();
    return e;
}

/* ---- Tests ---- */

static void test_all_threads(void) {
    enum { SLEEPERS = 20 };
    pthread_t th[SLEEPERS + 2];
    atomic_store(&g_ready, 0);
    for (long i = 0; i < SLEEPERS; i++) pthread_create(&th[i], NULL, sleep_worker, (void *)i);
    pthread_create(&th[SLEEPERS], NULL, spin_worker, NULL);
    pthread_create(&th[SLEEPERS + 1], NULL, blocker_worker, NULL);
    wait_ready(SLEEPERS + 2);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(snapshot_caller("watchdog: main loop stalled") == 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("snapshot of %d threads: %.1f ms\n", SLEEPERS + 3, ms);
    /* A blocked thread is recognised, not waited for until the 1 s deadline. */
    CHECK(ms < 900);

    Faultline__Report *r = newest_report();
    CHECK(r != NULL);
    if (r) {
        CHECK(r->header && r->header->kind == FAULTLINE__HEADER__KIND__KIND_SNAPSHOT);
        CHECK(r->header && strcmp(r->header->reason, "watchdog: main loop stalled") == 0);
        CHECK(r->signal == NULL);
        CHECK(r->complete);
        CHECK_EQ_U64(r->threads_total, SLEEPERS + 3 + g_foreign);
        CHECK_EQ_U64(r->n_threads, SLEEPERS + 3 + g_foreign);
        /* The calling thread first, not marked crashed, its frames from fl_snapshot's caller. */
        CHECK(r->n_threads && r->threads[0]->tid == (int)syscall(SYS_gettid));
        CHECK(r->n_threads && !r->threads[0]->crashed);
        static const char *const self_want[] = {"snapshot_caller", "main"};
        CHECK(r->n_threads && frames_have(r->threads[0], self_want, 2));
        for (size_t i = 0; i < r->n_threads; i++) CHECK(!r->threads[i]->crashed);

        const Faultline__Thread *sp = by_name(r, "spinner");
        CHECK(sp && sp->state == FAULTLINE__THREAD__STATE__STATE_CAPTURED);
        static const char *const spin_want[] = {"spin_inner", "spin_worker"};
        CHECK(frames_have(sp, spin_want, 2));
        CHECK(sp && sp->n_registers >= 17);

        const Faultline__Thread *sl = by_name(r, "sleeper-7");
        CHECK(sl && sl->state == FAULTLINE__THREAD__STATE__STATE_CAPTURED);
        static const char *const sleep_want[] = {"sleep_inner", "sleep_worker"};
        CHECK(frames_have(sl, sleep_want, 2));
        CHECK_EQ_U64(count_state(r, FAULTLINE__THREAD__STATE__STATE_CAPTURED), SLEEPERS + 2);

        const Faultline__Thread *bl = by_name(r, "blocker");
        CHECK(bl && bl->state == FAULTLINE__THREAD__STATE__STATE_BLOCKED);
        /* Its stack, when it sat in a system call throughout the walk (usleep: most of the time),
         * read from there: frame 0 from /proc/self/task/TID/syscall, then its callers. */
        static const char *const blocker_want[] = {"blocker_worker"};
        CHECK(bl && bl->tid > 0 && bl->n_registers == 0 &&
              (bl->n_frames == 0 ||
               (bl->frames[0]->method == FAULTLINE__FRAME__METHOD__METHOD_SYSCALL &&
                frames_have(bl, blocker_want, 1))));
        fl_report_free(r);
    }

    /* The process goes on: the spinner spins again. */
    long before = atomic_load(&g_spins);
    usleep(20000);
    CHECK(atomic_load(&g_spins) > before);

    /* The blocker unblocks: the old request is delivered late and must do nothing harmful. */
    atomic_store(&g_ready, 0);
    atomic_store(&g_unblock, 1);
    wait_ready(1);
    usleep(20000);
    clear_reports();
    CHECK(snapshot_caller("second") == 0);
    r = newest_report();
    CHECK(r && by_name(r, "blocker") &&
          by_name(r, "blocker")->state == FAULTLINE__THREAD__STATE__STATE_CAPTURED);
    if (r) fl_report_free(r);

    atomic_store(&g_stop, 1);
    for (int i = 0; i < SLEEPERS + 2; i++) pthread_join(th[i], NULL);
    atomic_store(&g_stop, 0);
    atomic_store(&g_unblock, 0);
}

/* A thread that cannot answer within the deadline is listed as timed out, the capture ends at
 * the deadline, and its late answer does not disturb the process. */
static void test_timeout(void) {
    clear_reports();
    pthread_t th;
    atomic_store(&g_ready, 0);
    atomic_store(&g_vfork_started, 0);
    pthread_create(&th, NULL, stuck_worker, (void *)1500L);
    while (!atomic_load(&g_vfork_started)) usleep(1000);
    usleep(100000); /* inside vfork by now */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(fl_snapshot("stuck") == 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("snapshot with a stuck thread (deadline 300 ms): %.1f ms\n", ms);
    CHECK(ms >= 250 && ms < 1400); /* waited for the deadline, not for the thread */
    Faultline__Report *r = newest_report();
    const Faultline__Thread *st = r ? by_name(r, "stuck") : NULL;
    CHECK(st && st->state == FAULTLINE__THREAD__STATE__STATE_TIMEOUT);
    if (r) fl_report_free(r);
    wait_ready(1); /* the vfork child exited: the late request is delivered now */
    usleep(20000);
    atomic_store(&g_stop, 1);
    pthread_join(th, NULL);
    atomic_store(&g_stop, 0);
}

static void test_exited(void) {
    /* Threads that exit while a capture runs are listed as exited or captured, never hang it. */
    clear_reports();
    enum { N = 50 };
    pthread_t th[N];
    for (long i = 0; i < N; i++) pthread_create(&th[i], NULL, sleep_worker, (void *)i);
    atomic_store(&g_stop, 1); /* they are all leaving */
    CHECK(fl_snapshot("exiting") == 0);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    atomic_store(&g_stop, 0);
    Faultline__Report *r = newest_report();
    CHECK(r && r->complete);
    if (r) fl_report_free(r);
}

static atomic_int g_handler_result = 1;
static void usr1(int sig) {
    (void)sig;
    atomic_store(&g_handler_result, fl_snapshot("from a signal handler"));
}

static void test_from_signal_handler(void) {
    clear_reports();
    signal(SIGUSR1, usr1);
    raise(SIGUSR1);
    CHECK(atomic_load(&g_handler_result) == 0);
    Faultline__Report *r = newest_report();
    CHECK(r && strcmp(r->header->reason, "from a signal handler") == 0);
    if (r) fl_report_free(r);
    signal(SIGUSR1, SIG_DFL);
}

static atomic_int g_ok, g_busy, g_other;
static void *snapper(void *a) {
    (void)a;
    for (int i = 0; i < 25; i++) {
        int e = fl_snapshot("concurrent");
        atomic_fetch_add(e == 0 ? &g_ok : e == FL_EBUSY ? &g_busy : &g_other, 1);
    }
    return NULL;
}

static void test_concurrent(void) {
    clear_reports();
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, snapper, NULL);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    printf("concurrent snapshots: %d written, %d busy\n", atomic_load(&g_ok), atomic_load(&g_busy));
    CHECK(atomic_load(&g_other) == 0);
    CHECK(atomic_load(&g_ok) >= 1 && atomic_load(&g_ok) + atomic_load(&g_busy) == 100);
    char **paths;
    size_t n = 0;
    CHECK(fl_list_reports(g_dir, &paths, &n) == 0 && n == (size_t)atomic_load(&g_ok));
    for (size_t i = 0; i < n; i++) {
        Faultline__Report *r = NULL;
        bool trunc = true;
        CHECK(fl_report_read_file(paths[i], &r, &trunc) == 0 && !trunc && r->complete);
        if (r) fl_report_free(r);
    }
    if (n) fl_free_report_list(paths, n);
}

static void test_max_threads(void) {
    fl_uninstall();
    fl_options o = {.report_dir = g_dir, .max_threads = 5};
    CHECK(fl_install(&o) == 0);
    clear_reports();
    enum { N = 12 };
    pthread_t th[N];
    atomic_store(&g_ready, 0);
    for (long i = 0; i < N; i++) pthread_create(&th[i], NULL, sleep_worker, (void *)i);
    wait_ready(N);
    CHECK(fl_snapshot("limits") == 0);
    Faultline__Report *r = newest_report();
    CHECK(r && r->n_threads == 5 && r->threads_total == N + 1 + g_foreign);
    bool noted = false;
    for (size_t i = 0; r && i < r->n_notes; i++) noted |= strstr(r->notes[i]->text, "max_threads") != NULL;
    CHECK(noted);
    if (r) fl_report_free(r);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    atomic_store(&g_stop, 0);
}

/* Threads that run before fl_install are offered an alternate stack through the capture signal;
 * one that blocks every signal cannot take it. */
static atomic_int g_checked, g_has_stack[2];
static void *early_worker(void *a) {
    int blocks = (int)(long)a;
    if (blocks) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, NULL);
    }
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_stop)) usleep(1000);
    stack_t ss;
    sigaltstack(NULL, &ss);
    atomic_store(&g_has_stack[blocks], !(ss.ss_flags & SS_DISABLE) && ss.ss_size >= 64 * 1024);
    atomic_fetch_add(&g_checked, 1);
    return NULL;
}

static unsigned count_threads(void) {
    unsigned n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

int main(void) {
    char tmp[] = "/tmp/fl-threads-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(g_dir, sizeof g_dir, "%s/reports", tmp);
    g_foreign = count_threads() - 1;
    CHECK(fl_snapshot("not installed") == FL_ESTATE);
    pthread_t early[2];
    atomic_store(&g_ready, 0);
    for (long i = 0; i < 2; i++) pthread_create(&early[i], NULL, early_worker, (void *)i);
    wait_ready(2);
    fl_options o = {.report_dir = g_dir, .thread_timeout_ms = 300};
    CHECK(fl_install(&o) == 0);
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(early[i], NULL);
    atomic_store(&g_stop, 0);
    CHECK(atomic_load(&g_checked) == 2);
    CHECK(atomic_load(&g_has_stack[0]) == 1); /* offered at install, kept after the handler */
    CHECK(atomic_load(&g_has_stack[1]) == 0); /* blocks the signal: no stack, install not stuck */

    test_all_threads();
    if (fl_test_emulated()) /* qemu-user runs vfork as fork: no thread is ever stuck in it */
        printf("test_timeout: skipped under %s\n", FL_TEST_EMULATOR);
    else
        test_timeout();
    test_exited();
    test_from_signal_handler();
    test_concurrent();
    test_max_threads();

    fl_uninstall();
    clear_reports();
    TEST_END();
}
