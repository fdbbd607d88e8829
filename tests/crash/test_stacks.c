/* SPDX-License-Identifier: MIT */
/* crash: the in-app stack APIs in this process: fl_backtrace (against glibc's backtrace(), whose
 * unwinder is libgcc's, also from a signal handler on the alternate stack), fl_thread_backtrace
 * on threads in nanosleep, a condition variable, a mutex, read and a busy loop (dladdr names;
 * tests/crash/test_stacks_eustack.py checks the same frame by frame against eu-stack), its errors,
 * its serialisation with fl_snapshot, and fl_symbolize_local against nm (a local symbol of this
 * program, and a stripped library that only has .dynsym) and dladdr (image base). */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
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

#include "faultline/faultline.h"
#include "test.h"

#define NOINLINE __attribute__((noinline))
#define NOTAIL() __asm__ volatile("" ::: "memory")

static char g_dir[256];
static atomic_int g_stop, g_ready;
static atomic_long g_spins;

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* The function a pc lies in, by dladdr (exported: ENABLE_EXPORTS). Return addresses are looked
 * up one byte back (a call at a function's end returns past it). */
static const char *fn_name(uintptr_t pc, int is_return) {
    Dl_info info;
    if (dladdr((void *)(pc - (is_return ? 1 : 0)), &info) && info.dli_sname) return info.dli_sname;
    return "?";
}

/* Whether names appear in pcs in this order (not necessarily adjacent); if not, what was
 * found, unless g_quiet. */
static bool g_quiet;
static bool has_in_order(const uintptr_t *pcs, int n, const char *const *want, int nwant,
                         bool first_exact) {
    int k = 0;
    for (int i = 0; i < n && k < nwant; i++)
        if (strcmp(fn_name(pcs[i], !(first_exact && i == 0)), want[k]) == 0) k++;
    if (k < nwant && !g_quiet) {
        fprintf(stderr, "  wanted %s (%d of %d found) in:\n", want[k], k, nwant);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "    #%d 0x%" PRIxPTR " %s\n", i, pcs[i],
                    fn_name(pcs[i], !(first_exact && i == 0)));
    }
    return k == nwant;
}

/* ---- fl_backtrace against backtrace(3) ---- */

#define MAXF 64
static uintptr_t g_fl[MAXF];
static void *g_gnu[MAXF];
static int g_nfl, g_ngnu;

/* Both walks from the same function: their first entries differ (two call sites), every caller
 * after that must be the same return address. */
NOINLINE void bt_leaf(void) {
    g_nfl = fl_backtrace(g_fl, MAXF);
    g_ngnu = backtrace(g_gnu, MAXF);
    NOTAIL();
}
NOINLINE void bt_mid(void) {
    bt_leaf();
    NOTAIL();
}
NOINLINE void bt_top(void) {
    bt_mid();
    NOTAIL();
}

NOINLINE void check_same_callers(const char *what) {
    CHECK(g_nfl > 3);
    CHECK(g_ngnu > 3);
    int n = g_nfl < g_ngnu ? g_nfl : g_ngnu;
    int same = 0;
    for (int i = 1; i < n && g_fl[i] == (uintptr_t)g_gnu[i]; i++) same++;
    /* glibc's backtrace stops where libgcc's unwinder does (it may list one more or one fewer
     * outermost frame than ours: _start has no caller in either). */
    if (same < n - 2 || fn_name(g_fl[0], 1) != fn_name((uintptr_t)g_gnu[0], 1)) {
        fprintf(stderr, "%s: fl_backtrace and backtrace(3) differ after %d callers:\n", what, same);
        for (int i = 0; i < (g_nfl > g_ngnu ? g_nfl : g_ngnu); i++)
            fprintf(stderr, "  #%d fl 0x%" PRIxPTR " %-24s gnu %p %s\n", i, i < g_nfl ? g_fl[i] : 0,
                    i < g_nfl ? fn_name(g_fl[i], 1) : "", i < g_ngnu ? g_gnu[i] : NULL,
                    i < g_ngnu ? fn_name((uintptr_t)g_gnu[i], 1) : "");
    }
    CHECK(same >= n - 2);
    CHECK_STREQ(fn_name(g_fl[0], 1), fn_name((uintptr_t)g_gnu[0], 1));
}

NOINLINE void test_backtrace(void) {
    void *warm[4];
    backtrace(warm, 4); /* glibc loads libgcc_s at its first call */
    bt_top();
    check_same_callers("plain call");
    static const char *const want[] = {"bt_leaf", "bt_mid", "bt_top", "test_backtrace", "main"};
    CHECK(has_in_order(g_fl, g_nfl, want, 5, false));

    /* Limits. */
    uintptr_t one[2] = {0, 0x55};
    CHECK(fl_backtrace(one, 1) == 1);
    CHECK(one[1] == 0x55); /* nothing written past max */
    CHECK_STREQ(fn_name(one[0], 1), "test_backtrace");
    CHECK(fl_backtrace(NULL, 0) == 0);
    CHECK(fl_backtrace(NULL, 4) == FL_EINVAL);
}

/* From a signal handler: the handler runs on faultline's alternate stack (fl_install gave this
 * thread one; SA_ONSTACK), and the walk must cross the signal frame back onto the thread's stack,
 * as libgcc's does. */
static volatile sig_atomic_t g_in_handler;
NOINLINE void on_usr1(int sig) {
    (void)sig;
    stack_t ss;
    g_in_handler = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) ? 2 : 1;
    bt_leaf();
}
NOINLINE void interrupted_here(void) {
    raise(SIGUSR1);
    NOTAIL();
}
NOINLINE void interrupted_caller(void) {
    interrupted_here();
    NOTAIL();
}

NOINLINE void test_backtrace_in_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    interrupted_caller();
    CHECK(g_in_handler == 2);
    check_same_callers("signal handler");
    static const char *const want[] = {"bt_leaf", "on_usr1", "interrupted_here",
                                       "interrupted_caller", "test_backtrace_in_handler", "main"};
    CHECK(has_in_order(g_fl, g_nfl, want, 6, false));
    signal(SIGUSR1, SIG_DFL);
}

/* A deep stack: the innermost frames, max of them. */
NOINLINE int recurse(int n, uintptr_t *pcs, size_t max) {
    int r = n == 0 ? fl_backtrace(pcs, max) : recurse(n - 1, pcs, max);
    NOTAIL();
    return r;
}

NOINLINE void test_deep(void) {
    static uintptr_t pcs[FL_MAX_FRAMES_LIMIT];
    int n = recurse(2000, pcs, FL_MAX_FRAMES_LIMIT);
    CHECK(n > 2000 && n < 2100);
    int r = 0;
    for (int i = 0; i < n; i++) r += strcmp(fn_name(pcs[i], 1), "recurse") == 0;
    if (r != 2001) fprintf(stderr, "deep: %d frames, %d in recurse\n", n, r);
    CHECK(r == 2001);
    n = recurse(2000, pcs, 100);
    CHECK(n == 100);
    for (int i = 0; i < n; i++) CHECK_STREQ(fn_name(pcs[i], 1), "recurse");
}

/* ---- fl_thread_backtrace ---- */

NOINLINE void sleep_inner(void) {
    while (!atomic_load(&g_stop)) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    NOTAIL();
}
NOINLINE void *sleep_worker(void *a) {
    (void)a;
    atomic_fetch_add(&g_ready, 1);
    sleep_inner();
    NOTAIL();
    return NULL;
}

NOINLINE void spin_inner(void) {
    while (!atomic_load(&g_stop)) atomic_fetch_add(&g_spins, 1);
    NOTAIL();
}
NOINLINE void *spin_worker(void *a) {
    (void)a;
    atomic_fetch_add(&g_ready, 1);
    spin_inner();
    NOTAIL();
    return NULL;
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
NOINLINE void cond_inner(void) {
    pthread_mutex_lock(&g_mu);
    while (!atomic_load(&g_stop)) pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    NOTAIL();
}
NOINLINE void *cond_worker(void *a) {
    (void)a;
    atomic_fetch_add(&g_ready, 1);
    cond_inner();
    NOTAIL();
    return NULL;
}

static int g_pipe[2];
static atomic_long g_read_bytes;
NOINLINE void read_inner(void) {
    char c;
    while (read(g_pipe[0], &c, 1) == 1 && c != 'q') atomic_fetch_add(&g_read_bytes, 1);
    NOTAIL();
}
NOINLINE void *read_worker(void *a) {
    (void)a;
    atomic_fetch_add(&g_ready, 1);
    read_inner();
    NOTAIL();
    return NULL;
}

NOINLINE void *blocker_worker(void *a) {
    (void)a;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    atomic_fetch_add(&g_ready, 1);
    sleep_inner();
    return NULL;
}

static atomic_int g_tids[8];
static void *with_tid(void *(*fn)(void *), int slot) {
    atomic_store(&g_tids[slot], gettid_());
    return fn(NULL);
}
static void *t_sleep(void *a) { (void)a; return with_tid(sleep_worker, 0); }
static void *t_spin(void *a) { (void)a; return with_tid(spin_worker, 1); }
static void *t_cond(void *a) { (void)a; return with_tid(cond_worker, 2); }
static void *t_read(void *a) { (void)a; return with_tid(read_worker, 3); }
static void *t_block(void *a) { (void)a; return with_tid(blocker_worker, 4); }
static void *t_exit(void *a) { (void)a; atomic_store(&g_tids[5], gettid_()); return NULL; }

static int thread_bt(int slot, uintptr_t *pcs, size_t max) {
    return fl_thread_backtrace(atomic_load(&g_tids[slot]), pcs, max);
}

/* One of the workers, by name, with frame 0 exact (where the signal found it). A worker that
 * announced itself may not have reached its call yet on a loaded machine (qemu under a parallel
 * suite): asked again for up to 5 s before the check fails. */
static void check_worker(int slot, const char *inner, const char *worker) {
    uintptr_t pcs[MAXF];
    const char *const want[] = {inner, worker};
    int n = 0;
    g_quiet = true;
    for (int i = 0; i < 250; i++) {
        n = thread_bt(slot, pcs, MAXF);
        if (n > 2 && has_in_order(pcs, n, want, 2, true)) break;
        usleep(20000);
    }
    g_quiet = false;
    if (n < 0) fprintf(stderr, "%s: %s\n", worker, fl_strerror(n));
    CHECK(n > 2);
    CHECK(has_in_order(pcs, n > 0 ? n : 0, want, 2, true));
}

static atomic_int g_snap_ok, g_snap_busy;
static void *snapshot_loop(void *a) {
    int *bad = a;
    for (int i = 0; i < 20; i++) {
        int e = fl_snapshot("stacks test");
        if (e == 0) atomic_fetch_add(&g_snap_ok, 1);
        else if (e == FL_EBUSY) atomic_fetch_add(&g_snap_busy, 1);
        else {
            (*bad)++;
            fprintf(stderr, "snapshot %d: %s\n", i, fl_strerror(e)); /* (to tell a slow machine) */
        }
        usleep(1000);
    }
    return NULL;
}

NOINLINE void test_threads(void) {
    CHECK(pipe(g_pipe) == 0);
    pthread_t th[6];
    void *(*fns[5])(void *) = {t_sleep, t_spin, t_cond, t_read, t_block};
    for (int i = 0; i < 5; i++) pthread_create(&th[i], NULL, fns[i], NULL);
    for (int i = 0; i < 5000 && atomic_load(&g_ready) < 5; i++) usleep(1000);
    usleep(20000); /* into their calls */

    check_worker(0, "sleep_inner", "sleep_worker");
    check_worker(2, "cond_inner", "cond_worker");
    check_worker(3, "read_inner", "read_worker");
    long before = atomic_load(&g_spins);
    check_worker(1, "spin_inner", "spin_worker");
    /* The spinner went on. */
    for (int i = 0; i < 1000 && atomic_load(&g_spins) == before; i++) usleep(1000);
    CHECK(atomic_load(&g_spins) > before);
    /* read was restarted (SA_RESTART) and still gets its bytes. */
    CHECK(write(g_pipe[1], "ab", 2) == 2);
    for (int i = 0; i < 1000 && atomic_load(&g_read_bytes) < 2; i++) usleep(1000);
    CHECK(atomic_load(&g_read_bytes) == 2);

    /* The mutex: a thread blocked in pthread_mutex_lock (a futex wait). */
    pthread_mutex_lock(&g_mu);
    pthread_t mt;
    atomic_int before_ready = atomic_load(&g_ready);
    (void)before_ready;
    pthread_create(&mt, NULL, t_cond, NULL); /* cond_inner starts with pthread_mutex_lock */
    for (int i = 0; i < 5000 && atomic_load(&g_ready) < 6; i++) usleep(1000);
    usleep(50000);
    uintptr_t pcs[MAXF];
    int n = thread_bt(2, pcs, MAXF);
    static const char *const mwant[] = {"cond_inner", "cond_worker"};
    CHECK(n > 2 && has_in_order(pcs, n, mwant, 2, true));
    pthread_mutex_unlock(&g_mu);

    /* Errors. */
    CHECK_EQ_U64(thread_bt(4, pcs, MAXF), FL_EBLOCKED);
    pthread_create(&th[5], NULL, t_exit, NULL);
    pthread_join(th[5], NULL);
    CHECK_EQ_U64(thread_bt(5, pcs, MAXF), FL_ENOTHREAD);
    CHECK_EQ_U64(fl_thread_backtrace(0, pcs, MAXF), FL_EINVAL);
    CHECK_EQ_U64(fl_thread_backtrace(-5, pcs, MAXF), FL_EINVAL);
    CHECK_EQ_U64(fl_thread_backtrace(atomic_load(&g_tids[0]), NULL, 3), FL_EINVAL);
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    /* A thread of another process (its main thread's tid is its pid). */
    CHECK_EQ_U64(fl_thread_backtrace(child, pcs, MAXF), FL_ENOTHREAD);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* Ourselves: what fl_backtrace gives. */
    n = fl_thread_backtrace(gettid_(), pcs, MAXF);
    CHECK(n > 1);
    CHECK_STREQ(fn_name(pcs[0], 1), "test_threads");
    /* max 0: the thread is still asked (and found). */
    CHECK(thread_bt(0, pcs, 0) == 0);
    CHECK(thread_bt(0, pcs, 1) == 1);
    CHECK(pcs[0] != 0);

    /* The application takes the capture signal (the one real-time signal with a handler of
     * faultline's): FL_ENOSIGNAL, and again a walk once the action is put back. */
    for (int sig = SIGRTMAX; sig >= SIGRTMIN; sig--) {
        struct sigaction cur, mine;
        if (sigaction(sig, NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO)) continue;
        memset(&mine, 0, sizeof mine);
        mine.sa_handler = SIG_IGN;
        sigaction(sig, &mine, NULL);
        CHECK_EQ_U64(thread_bt(0, pcs, MAXF), FL_ENOSIGNAL);
        sigaction(sig, &cur, NULL);
        CHECK(thread_bt(0, pcs, MAXF) > 2);
        break;
    }

    /* With snapshots on another thread: each call either runs or says FL_EBUSY. */
    int bad = 0, busy = 0, ok = 0;
    pthread_t snap;
    pthread_create(&snap, NULL, snapshot_loop, &bad);
    for (int i = 0; i < 200; i++) {
        int e = thread_bt(0, pcs, MAXF);
        if (e == FL_EBUSY) busy++;
        else if (e > 2) ok++;
        else {
            bad++;
            fprintf(stderr, "walk %d: %s\n", i, e < 0 ? fl_strerror(e) : "2 frames or fewer");
        }
        usleep(100);
    }
    pthread_join(snap, NULL);
    printf("with snapshots running: %d walks, %d busy; snapshots: %d written, %d busy\n", ok, busy,
           atomic_load(&g_snap_ok), atomic_load(&g_snap_busy));
    CHECK(fl_snapshot("stacks test, alone") == 0); /* neither left the state held */
    CHECK(bad == 0);
    CHECK(thread_bt(0, pcs, MAXF) > 2); /* and once the snapshots are over, it walks */

    atomic_store(&g_stop, 1);
    pthread_cond_broadcast(&g_cv);
    CHECK(write(g_pipe[1], "q", 1) == 1);
    for (int i = 0; i < 5; i++) pthread_join(th[i], NULL);
    pthread_join(mt, NULL);
}

/* ---- fl_symbolize_local ---- */

/* Local (static) symbols: dladdr does not see them, .symtab does. */
static NOINLINE int local_function(int x) {
    __asm__ volatile("" ::: "memory");
    return x * 3 + 1;
}
int (*volatile g_local)(int) = local_function;

/* nm's address of `name` (type letter in types) in path, or 0. */
static uint64_t nm_address(const char *path, const char *opts, const char *name, const char *types) {
    char host[1024], cmd[2300], line[1024];
    snprintf(cmd, sizeof cmd, "nm %s '%s' 2>/dev/null", opts, fl_test_host_path(path, host, sizeof host));
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    uint64_t found = 0;
    while (fgets(line, sizeof line, p)) {
        unsigned long long a;
        char t, n[512];
        if (sscanf(line, "%llx %c %511s", &a, &t, n) == 3 && strchr(types, t) &&
            strcmp(n, name) == 0)
            found = a;
    }
    pclose(p);
    return found;
}

NOINLINE void test_symbolize(const char *self_path, const char *stripped_lib) {
    fl_symbol_info info;
    uintptr_t pc = (uintptr_t)g_local + 1; /* (the function is a few bytes long) */
    CHECK(fl_symbolize_local(pc, &info) == 0);
    CHECK_STREQ(info.symbol, "local_function");
    CHECK(info.source == FL_SYMBOL_SYMTAB);
    CHECK(info.offset == 1);
    CHECK(info.symbol_addr == (uintptr_t)g_local);
    /* nm: the file address of the local symbol (type t). */
    uint64_t nm_addr = nm_address(self_path, "", "local_function", "t");
    CHECK(nm_addr != 0);
    CHECK_EQ_U64(info.symbol_addr - info.image_slide, nm_addr);
    Dl_info dl;
    CHECK(dladdr((void *)pc, &dl) != 0);
    CHECK(dl.dli_sname == NULL || strcmp(dl.dli_sname, "local_function") != 0); /* dladdr cannot */
    CHECK_EQ_U64(info.image_base, (uintptr_t)dl.dli_fbase);
    char real[1024];
    CHECK(realpath(self_path, real) != NULL);
    CHECK_STREQ(info.image_path, real);

    /* An exported function of libc: .dynsym or .symtab, whichever the file has; dladdr agrees
     * on the name's address. */
    pc = (uintptr_t)&getpid + 1;
    CHECK(fl_symbolize_local(pc, &info) == 0);
    CHECK(dladdr((void *)pc, &dl) != 0);
    CHECK_EQ_U64(info.image_base, (uintptr_t)dl.dli_fbase);
    CHECK_EQ_U64(info.symbol_addr, (uintptr_t)dl.dli_saddr);
    CHECK(info.source == FL_SYMBOL_SYMTAB || info.source == FL_SYMBOL_DYNSYM);

    /* The stripped library: only .dynsym, so its static function takes the name of the exported
     * symbol before it (as nm -D and nm on the unstripped copy tell). */
    void *h = dlopen(stripped_lib, RTLD_NOW);
    CHECK(h != NULL);
    if (h) {
        int (*exported)(int) = (int (*)(int))dlsym(h, "stacks_lib_exported");
        int (*(*get_hidden)(void))(int) = (int (*(*)(void))(int))dlsym(h, "stacks_lib_hidden_address");
        CHECK(exported && get_hidden);
        if (exported && get_hidden) {
            CHECK(fl_symbolize_local((uintptr_t)exported + 2, &info) == 0);
            CHECK_STREQ(info.symbol, "stacks_lib_exported");
            CHECK(info.source == FL_SYMBOL_DYNSYM);
            CHECK(info.offset == 2);
            CHECK_EQ_U64((uintptr_t)exported - info.image_slide,
                         nm_address(stripped_lib, "-D", "stacks_lib_exported", "T"));
            CHECK(nm_address(stripped_lib, "", "stacks_lib_exported", "T") == 0); /* no .symtab */
            uintptr_t hidden = (uintptr_t)get_hidden();
            CHECK(fl_symbolize_local(hidden, &info) == 0);
            CHECK(strcmp(info.symbol, "stacks_lib_static") != 0);
            CHECK(info.source == FL_SYMBOL_DYNSYM || info.symbol[0] == 0);
        }
        /* fl_backtrace through the library, loaded after fl_install: its frame, then ours. */
        void (*call)(void (*)(void)) = (void (*)(void (*)(void)))dlsym(h, "stacks_lib_call");
        CHECK(call != NULL);
        if (call) {
            g_nfl = 0;
            call(bt_leaf);
            Dl_info li;
            bool in_lib = g_nfl > 2 && dladdr((void *)(g_fl[1] - 1), &li) && li.dli_fbase &&
                          dladdr((void *)call, &dl) && li.dli_fbase == dl.dli_fbase;
            CHECK(in_lib);
            CHECK(g_nfl > 2 && strcmp(fn_name(g_fl[2], 1), "test_symbolize") == 0);
            check_same_callers("through a library loaded after fl_install");
        }
        dlclose(h);
    }

    /* No image there. */
    CHECK_EQ_U64(fl_symbolize_local(16, &info), FL_ENOTFOUND);
    CHECK_EQ_U64(fl_symbolize_local(16, NULL), FL_EINVAL);
}

/* FL_ETIMEDOUT: in a child with a 200 ms deadline, a thread that cannot take signals for 2 s
 * (vfork's parent runs no handler until its child exits). */
static atomic_int g_stuck_tid;
static void *stuck_worker(void *a) {
    (void)a;
    atomic_store(&g_stuck_tid, gettid_());
    pid_t p = vfork();
    if (p == 0) {
        struct timespec ts = {2, 0};
        syscall(SYS_nanosleep, &ts, NULL);
        _exit(0);
    }
    if (p > 0) waitpid(p, NULL, 0);
    return NULL;
}

NOINLINE void test_timeout(void) {
    if (fl_test_emulated()) return; /* qemu-user runs vfork as fork: no thread is stuck in it */
    pid_t child = fork();
    if (child == 0) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/timeout", g_dir);
        fl_options o = {.report_dir = dir, .thread_timeout_ms = 200};
        if (fl_install(&o) != 0) _exit(10);
        pthread_t t;
        pthread_create(&t, NULL, stuck_worker, NULL);
        while (!atomic_load(&g_stuck_tid)) usleep(1000);
        usleep(200000); /* inside vfork */
        uintptr_t pcs[8];
        int e = fl_thread_backtrace(atomic_load(&g_stuck_tid), pcs, 8);
        _exit(e == FL_ETIMEDOUT ? 0 : 20 + (e < 0 ? -e : 0));
    }
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fprintf(stderr, "timeout child: status %#x\n", st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_stacks STRIPPED_LIB\n");
        return 2;
    }
    /* Before fl_install. */
    uintptr_t pcs[4];
    fl_symbol_info info;
    CHECK_EQ_U64(fl_backtrace(pcs, 4), FL_ESTATE);
    CHECK_EQ_U64(fl_thread_backtrace(gettid_(), pcs, 4), FL_ESTATE);
    CHECK_EQ_U64(fl_symbolize_local((uintptr_t)&main, &info), FL_ESTATE);
    CHECK(strcmp(fl_strerror(FL_EBLOCKED), fl_strerror(FL_ENOTHREAD)) != 0);
    CHECK(strcmp(fl_strerror(FL_ETIMEDOUT), "unknown error") != 0);
    CHECK(strcmp(fl_strerror(FL_ENOSIGNAL), "unknown error") != 0);

    snprintf(g_dir, sizeof g_dir, "/tmp/fl-test-stacks-%d", (int)getpid());
    fl_options o = {.report_dir = g_dir, .thread_timeout_ms = 5000};
    CHECK(fl_install(&o) == 0);
    test_backtrace();
    test_backtrace_in_handler();
    test_deep();
    test_threads();
    fl_uninstall(); /* the child installs its own */
    test_timeout();
    CHECK(fl_install(&o) == 0);
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0);
    self[len > 0 ? len : 0] = 0;
    test_symbolize(self, argv[1]);
    fl_uninstall();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    CHECK(system(cmd) == 0);
    TEST_END();
}
