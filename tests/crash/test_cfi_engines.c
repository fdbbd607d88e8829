/* SPDX-License-Identifier: MIT */
/* crash: the CFI engines compared on live threads. Threads parked in many places (libc calls,
 * code without frame pointers, a signal handler, a busy loop) are stopped as a capture stops
 * them; each is walked with faultline's evaluator (cache cold, then warm; without the cache) and
 * with LLVM libunwind as the engine, and every walk must give the same frames. The same from a
 * signal handler's own registers, across the signal trampoline. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crash/crash.h"
#include "test.h"

#define NOINLINE __attribute__((noinline))
#define NOTAIL() __asm__ volatile("" ::: "memory")
#define MAXF 256u

/* In test_cfi_engines_omitfp.c (built without frame pointers): recurse n deep, then call fn. */
void omitfp_recurse(int n, void (*fn)(void));

static atomic_int g_stop, g_ready;
static int g_pipe[2];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;

static void park_sleep(void) {
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_stop)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}
static void park_read(void) {
    atomic_fetch_add(&g_ready, 1);
    char c;
    while (!atomic_load(&g_stop) && read(g_pipe[0], &c, 1) == 1) {
    }
}
static void park_cond(void) {
    pthread_mutex_lock(&g_mu);
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_stop)) pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
}
NOINLINE static void spin_leaf(void) {
    atomic_fetch_add(&g_ready, 1);
    while (!atomic_load(&g_stop)) {
    }
    NOTAIL();
}
static void on_usr2(int sig) { /* parked inside a handler: the walk crosses __restore_rt */
    (void)sig;
    park_sleep();
}
static void park_in_handler(void) { raise(SIGUSR2); }

typedef struct job {
    void (*fn)(void);
    int depth;
} job_t;

static void *worker(void *arg) {
    job_t *j = arg;
    omitfp_recurse(j->depth, j->fn);
    return NULL;
}

static fl_thread_list_t g_list;
static fl_maps_t g_maps;
static char g_scratch[64 * 1024];
static fl_image_list_t g_images;
static fl_frame_t g_frames[4][MAXF];
static unsigned long g_walks, g_frames_total, g_trampolines;
static unsigned g_last_count; /* frames in compare()'s last walk (g_frames[0]) */

static unsigned walk(const fl_regs_t *regs, int mode, fl_frame_t *out, fl_walk_result_t *res) {
    fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_images, .use_cfi = true};
    fl_reader_t stack;
    const fl_map_t *m = fl_maps_find(&g_maps, fl_regs_sp(regs));
    if (m && (m->perms & FL_MAP_R)) {
        env.stack_lo = m->start;
        env.stack_hi = m->end;
        fl_reader_init_range(&stack, m->start, m->end, fl_memory_reader());
        env.mem = &stack;
    }
    CHECK(fl_frames_cfi_mode(mode) == 0);
    fl_frames_walk(&env, regs, out, MAXF, res);
    fl_frames_cfi_mode(FL_CFI_MODE_CACHED);
    return res->count;
}

/* The walks of one register set in every engine must agree frame for frame. */
static void compare(const char *what, const fl_regs_t *regs, unsigned min_frames) {
    static const int modes[4] = {FL_CFI_MODE_CACHED, FL_CFI_MODE_CACHED, FL_CFI_MODE_UNCACHED,
                                 FL_CFI_MODE_LLVM};
    static const char *const names[4] = {"cached (cold)", "cached (warm)", "uncached", "llvm"};
    fl_walk_result_t res[4];
    unsigned n[4];
    for (unsigned k = 0; k < 4; k++) {
        if (k == 0) fl_frames_cfi_cache_flush();
        n[k] = walk(regs, modes[k], g_frames[k], &res[k]);
    }
    g_walks++;
    g_frames_total += n[0];
    g_last_count = n[0];
    CHECK(n[0] >= min_frames);
    if (n[0] < min_frames) {
        fprintf(stderr, "%s: %u frames (%s):\n", what, n[0], res[0].stop_reason);
        for (unsigned i = 0; i < n[0]; i++) {
            Dl_info d;
            bool named = dladdr((void *)(uintptr_t)(g_frames[0][i].pc - (i > 0)), &d) && d.dli_sname;
            fprintf(stderr, "  %2u %#llx %s method %u\n", i, (unsigned long long)g_frames[0][i].pc,
                    named ? d.dli_sname : "?", g_frames[0][i].method);
        }
    }
    /* qemu-user puts its signal trampoline outside every image: faultline's walker recognises
     * the code there, LLVM libunwind's check (which probes the page with a system call qemu does
     * not emulate that way) does not. LLVM is compared up to such a frame. */
    unsigned outside = n[0];
    for (unsigned i = 1; i < n[0] && outside == n[0]; i++)
        if (!fl_images_find(&g_images, g_frames[0][i].pc)) outside = i;
    if (outside < n[0]) g_trampolines++;
    for (unsigned k = 1; k < 4; k++) {
        unsigned upto = k == 3 ? outside : n[0];
        bool same = (n[k] == n[0] || (k == 3 && n[k] >= upto)) &&
                    (upto < n[0] || !strcmp(res[k].stop_reason, res[0].stop_reason));
        for (unsigned i = 0; same && i < upto; i++)
            same = g_frames[k][i].pc == g_frames[0][i].pc && g_frames[k][i].sp == g_frames[0][i].sp &&
                   g_frames[k][i].method == g_frames[0][i].method;
        CHECK(same);
        if (!same) {
            fprintf(stderr, "%s: %s differs from %s:\n", what, names[k], names[0]);
            for (unsigned i = 0; i < n[0] || i < n[k]; i++)
                fprintf(stderr, "  %2u %#18llx %#14llx %u | %#18llx %#14llx %u\n", i,
                        i < n[0] ? (unsigned long long)g_frames[0][i].pc : 0ull,
                        i < n[0] ? (unsigned long long)g_frames[0][i].sp : 0ull,
                        i < n[0] ? g_frames[0][i].method : 0,
                        i < n[k] ? (unsigned long long)g_frames[k][i].pc : 0ull,
                        i < n[k] ? (unsigned long long)g_frames[k][i].sp : 0ull,
                        i < n[k] ? g_frames[k][i].method : 0);
            fprintf(stderr, "  stop: %s | %s\n", res[0].stop_reason, res[k].stop_reason);
        }
    }
}

/* ---- a signal handler's own registers: the walk goes through the signal trampoline ---- */
static fl_regs_t g_handler_regs, g_handler_ctx;
static void on_usr1(int sig, siginfo_t *info, void *uc) {
    (void)sig, (void)info;
    fl_regs_from_ucontext(&g_handler_ctx, uc);
    fl_regs_get_current(&g_handler_regs);
    /* through the trampoline, raise and the 12 frames below it, to main */
    compare("SIGUSR1 handler, its own registers", &g_handler_regs, 16);
    compare("SIGUSR1 handler, the interrupted context", &g_handler_ctx, 14);
}
static void raise_usr1(void) { raise(SIGUSR1); }

int main(void) {
    char tmp[] = "/tmp/fl-cfi-engines-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/reports", tmp);
    fl_options o = {.report_dir = dir, .thread_timeout_ms = 2000};
    CHECK(fl_install(&o) == 0);
    CHECK(pipe(g_pipe) == 0);
    signal(SIGUSR2, on_usr2);

    static const job_t jobs[] = {{park_sleep, 1},  {park_sleep, 40},       {park_read, 3},
                                 {park_cond, 7},   {spin_leaf, 2},         {park_in_handler, 5},
                                 {park_sleep, 90}, {park_in_handler, 33},  {park_cond, 64}};
    enum { N = sizeof jobs / sizeof jobs[0] };
    pthread_t th[N];
    for (unsigned i = 0; i < N; i++) pthread_create(&th[i], NULL, worker, (void *)&jobs[i]);
    while (atomic_load(&g_ready) < (int)N) usleep(1000);
    usleep(20000); /* into their system calls */

    CHECK(fl_threads_suspend(&g_list, 64, 2000000000ull, NULL) == 0);
    CHECK(fl_maps_read(&g_maps, g_scratch, sizeof g_scratch) == 0);
    CHECK(fl_elf_images_collect(fl_memory_reader(), &g_images) == 0);
    fl_images_map_tables(&g_images, &g_maps);
    unsigned captured = 0;
    for (unsigned i = 1; i < g_list.count; i++) {
        if (g_list.t[i].state != FL_THREAD_CAPTURED) continue;
        char what[64];
        snprintf(what, sizeof what, "thread %d", g_list.t[i].tid);
        compare(what, &g_list.t[i].regs, 4);
        captured++;
    }
    fl_threads_release(&g_list);
    CHECK(captured >= N);

    /* A snapshot's way: each thread walks its own stack in the request's handler and goes on.
     * Its frames must be those of the engines above for the registers it reported (the threads
     * wait in loops that leave their callers' frames as they were). */
    static fl_selfwalk_t sw = {.images = &g_images, .maps = &g_maps, .max_frames = MAXF};
    CHECK(fl_threads_suspend(&g_list, 64, 2000000000ull, &sw) == 0);
    fl_threads_release(&g_list); /* (any that could not walk themselves) */
    unsigned self = 0;
    for (unsigned i = 1; i < g_list.count; i++) {
        const fl_thread_t *t = &g_list.t[i];
        if (t->state != FL_THREAD_CAPTURED) continue;
        /* process_vm_readv is what makes a walk safe while the other threads run */
        CHECK(t->walked || fl_memory_method() != FL_MEMORY_VM_READV);
        if (!t->walked) continue;
        char what[64];
        snprintf(what, sizeof what, "thread %d, walked by itself", t->tid);
        compare(what, &t->regs, 4);
        bool same = t->frame_count == g_last_count;
        for (unsigned k = 0; same && k < t->frame_count; k++)
            same = t->frames[k].pc == g_frames[0][k].pc && t->frames[k].sp == g_frames[0][k].sp;
        CHECK(same);
        if (!same) fprintf(stderr, "%s: %u frames, the engines %u\n", what, t->frame_count, g_last_count);
        self++;
    }
    printf("%u threads walked themselves\n", self);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    omitfp_recurse(12, raise_usr1);

    atomic_store(&g_stop, 1);
    pthread_mutex_lock(&g_mu);
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    close(g_pipe[1]);
    for (unsigned i = 0; i < N; i++) pthread_join(th[i], NULL);
    fl_cfi_stats_t st;
    fl_frames_cfi_stats(&st);
    printf("%lu walks of %lu frames each compared in 4 engines (%lu through a trampoline outside "
           "the images, compared with LLVM up to it); CFI steps %llu (cache hits %llu, "
           "rows computed %llu), declined %llu, LLVM steps %llu, table errors %llu\n", g_walks,
           g_walks ? g_frames_total / g_walks : 0, g_trampolines, (unsigned long long)st.steps,
           (unsigned long long)st.hits, (unsigned long long)st.misses,
           (unsigned long long)st.declined, (unsigned long long)st.fallback,
           (unsigned long long)st.errors);
    CHECK(st.errors == 0);
    fl_uninstall();
    TEST_END();
}
