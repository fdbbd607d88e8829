/* SPDX-License-Identifier: MIT */
/* Crasher scenarios for the worst moments to crash in: heap lock held, heap corrupt, loader busy,
 * many threads crashing at once, no descriptors left, report directory gone, read-only or full. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "crasher.h"
#include "faultline/faultline.h"

static volatile int *volatile g_null;
static void *volatile g_sink;

void crasher_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static volatile int g_unpark; /* never set: keeps GCC from finding crasher_park noreturn */
NOINLINE void crasher_park(void) {
    while (!g_unpark) crasher_sleep_ms(100000);
}

struct start {
    void (*fn)(int);
    const char *name;
    int i;
};
static void *thread_start(void *arg) {
    struct start st = *(struct start *)arg;
    free(arg);
    if (st.name) {
        char name[16];
        if (st.i < 0) snprintf(name, sizeof name, "%s", st.name);
        else snprintf(name, sizeof name, "%s-%d", st.name, st.i);
        pthread_setname_np(pthread_self(), name);
    }
    st.fn(st.i);
    NOTAIL();
    return NULL;
}

void crasher_start_thread(void (*fn)(int), const char *name, int i, size_t stack_size) {
    struct start *st = malloc(sizeof *st);
    if (!st) exit(4);
    *st = (struct start){fn, name, i};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (stack_size) pthread_attr_setstacksize(&attr, stack_size);
    pthread_t t;
    int e = pthread_create(&t, &attr, thread_start, st);
    pthread_attr_destroy(&attr);
    if (e) {
        fprintf(stderr, "pthread_create: %s\n", strerror(e));
        exit(4);
    }
}

void crasher_wait_count(volatile int *counter, int n) {
    for (int i = 0; __atomic_load_n(counter, __ATOMIC_SEQ_CST) < n; i++) {
        if (i == 20000) {
            fprintf(stderr, "only %d of %d threads became ready\n", *counter, n);
            exit(5);
        }
        crasher_sleep_ms(1);
    }
}

int crasher_env_int(const char *name, int def) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

/* ---- malloc_lock: another thread holds the heap lock much of the time ---- */
static volatile int g_malloc_loops;
NOINLINE static void malloc_loop(int i) {
    (void)i;
    unsigned r = 1;
    for (;;) {
        r = r * 1103515245u + 12345u;
        /* Above the tcache limit (1032 bytes) and below the mmap threshold (128 KiB): every call
         * takes the arena lock. */
        void *p = malloc(2048 + (r >> 16) % 60000);
        g_sink = p;
        free(p);
        if (g_malloc_loops < 1000000) __atomic_add_fetch(&g_malloc_loops, 1, __ATOMIC_RELAXED);
    }
}

void scenario_malloc_lock(const char *dir) {
    (void)dir;
    /* One arena for every thread: the lock the looping thread holds is the one a heap call on
     * the crashing thread would need (otherwise the new thread gets an arena of its own). */
    mallopt(M_ARENA_MAX, 1);
    crasher_start_thread(malloc_loop, "mallocer", -1, 0);
    crasher_wait_count(&g_malloc_loops, 1000);
    crasher_sleep_ms(50);
    null_a();
    NOTAIL();
}

/* ---- heap corruption detected by glibc: abort() from inside free() ---- */
enum { HEAP_INVALID, HEAP_DOUBLE_FREE, HEAP_BAD_HEADER };
static char *volatile g_block;
static volatile size_t g_eight = 8;
NOINLINE static void corrupt_b(int how) {
    char *p = g_block;
    if (how == HEAP_INVALID) {
        free(p + g_eight); /* a pointer into the middle of a block: "free(): invalid pointer" */
    } else if (how == HEAP_DOUBLE_FREE) {
        free(p);
        free(g_block); /* "free(): double free detected in tcache 2" */
    } else {
        memset(p - g_eight, 'A', 8); /* an underflow smashes the chunk's size field */
        free(p);                     /* "double free or corruption (out)" */
    }
    NOTAIL();
}
NOINLINE static void corrupt_a(int how) { corrupt_b(how); NOTAIL(); }
static void idle(int i) {
    (void)i;
    crasher_park();
    NOTAIL();
}
static void heap_corrupt(int how) {
    /* With a second thread, glibc takes the arena lock in free(), and for the smashed header it
     * is still held when glibc aborts: a heap call in the crash handler would then deadlock. */
    crasher_start_thread(idle, NULL, -1, 64 * 1024);
    g_block = malloc(64);
    memset(g_block, 0, 64);
    corrupt_a(how);
}
void scenario_heap_invalid(const char *dir) { (void)dir; heap_corrupt(HEAP_INVALID); }
void scenario_heap_double_free(const char *dir) { (void)dir; heap_corrupt(HEAP_DOUBLE_FREE); }
void scenario_heap_bad_header(const char *dir) { (void)dir; heap_corrupt(HEAP_BAD_HEADER); }

/* ---- dlopen_busy: another thread loads and unloads a library in a loop ---- */
static volatile int g_dlopens;
static const char *g_plugin;
NOINLINE static void dlopen_loop(int i) {
    (void)i;
    for (;;) {
        void *h = dlopen(g_plugin, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            _exit(6);
        }
        dlclose(h);
        if (g_dlopens < 1000000) __atomic_add_fetch(&g_dlopens, 1, __ATOMIC_RELAXED);
    }
}

void scenario_dlopen_busy(const char *dir) {
    (void)dir;
    g_plugin = getenv("FL_TEST_PLUGIN");
    if (!g_plugin) {
        fprintf(stderr, "FL_TEST_PLUGIN (path of libflplugin.so) is not set\n");
        exit(2);
    }
    crasher_start_thread(dlopen_loop, "dlopener", -1, 0);
    crasher_wait_count(&g_dlopens, 1);
    crasher_sleep_ms(50);
    null_a();
    NOTAIL();
}

/* ---- barrier: several threads crash at the same moment while 100 others sleep ---- */
static pthread_barrier_t g_race;
static volatile int g_sleepers;
NOINLINE static void sleeper(int i) {
    (void)i;
    __atomic_add_fetch(&g_sleepers, 1, __ATOMIC_SEQ_CST);
    crasher_park();
    NOTAIL();
}
NOINLINE static void race_b(void) { *g_null = 6; NOTAIL(); }
NOINLINE static void race_a(void) { race_b(); NOTAIL(); }
NOINLINE static void race_entry(int i) {
    (void)i;
    pthread_barrier_wait(&g_race);
    race_a();
    NOTAIL();
}

void scenario_barrier(const char *dir) {
    (void)dir;
    int racers = crasher_env_int("FL_RACE_THREADS", 2), sleepers = 100;
    for (int i = 0; i < sleepers; i++) crasher_start_thread(sleeper, "sleeper", i, 64 * 1024);
    crasher_wait_count(&g_sleepers, sleepers);
    pthread_barrier_init(&g_race, NULL, (unsigned)racers);
    for (int i = 0; i < racers; i++) crasher_start_thread(race_entry, "racer", i, 0);
    crasher_park();
}

/* ---- emfile: no descriptor left when the crash comes ---- */
void scenario_emfile(const char *dir) {
    (void)dir;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 64;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        perror("setrlimit");
        exit(7);
    }
    int n = 0;
    while (open("/dev/null", O_RDONLY) >= 0) n++;
    if (errno != EMFILE) {
        perror("open /dev/null");
        exit(7);
    }
    printf("opened %d descriptors until EMFILE\n", n);
    fflush(stdout);
    null_a();
    NOTAIL();
}

/* ---- the report directory goes away, turns read-only, or fills up after fl_install ---- */
void scenario_dir_removed(const char *dir) {
    /* As `rm -rf` would: its files first (faultline's run marker is one, docs/hangs.md). */
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' || (e->d_name[1] && (e->d_name[1] != '.' || e->d_name[2])))
            unlinkat(dirfd(d), e->d_name, 0);
    if (d) closedir(d);
    if (rmdir(dir) != 0) {
        perror("rmdir");
        exit(8);
    }
    null_a();
    NOTAIL();
}

void scenario_dir_readonly(const char *dir) {
    /* dir must be a mount point (run_crash.py --report-dir-setup tmpfs-readonly) */
    if (mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) {
        perror("remount read-only");
        exit(8);
    }
    null_a();
    NOTAIL();
}

void scenario_dir_full(const char *dir) {
    (void)dir;
    /* Make the report longer than the one page left on the file system (run_crash.py
     * --report-dir-setup tmpfs-full): the end of the report cannot be written. */
    char key[32], value[FL_MAX_ANNOTATION_BYTES];
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = 0;
    for (int i = 0; i < 24; i++) {
        snprintf(key, sizeof key, "padding-%02d", i);
        fl_annotate(key, value);
    }
    null_a();
    NOTAIL();
}
