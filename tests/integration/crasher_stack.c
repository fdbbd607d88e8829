/* SPDX-License-Identifier: MIT */
/* A program that installs faultline and overflows a stack in the way argv[1] names (run_crash.py). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "crasher.h"
#include "faultline/faultline.h"

static volatile int g_forever = 1; /* keeps the compiler from proving the recursion endless */

/* One frame per call, never merged into a loop: a volatile array lives in each frame and is read
 * after the call returns. */
NOINLINE static unsigned overflow_recurse(unsigned depth) {
    volatile char pad[64];
    pad[depth % sizeof pad] = (char)depth;
    unsigned r = g_forever ? overflow_recurse(depth + 1) : depth;
    NOTAIL();
    return r + (unsigned)pad[depth % sizeof pad];
}

/* overflow_main: the main thread's stack, bounded to 8 MiB where the limit is higher. */
static void overflow_main(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (8u << 20))) {
        rl.rlim_cur = 8u << 20;
        setrlimit(RLIMIT_STACK, &rl);
    }
    overflow_recurse(0);
}

/* overflow_thread: a thread that never calls faultline; only the interposed pthread_create can
 * have given it an alternate stack. */
static void *overflow_entry(void *arg) {
    (void)arg;
    overflow_recurse(0);
    return NULL;
}

/* overflow_own_altstack: the thread installs its own alternate stack (filled with a pattern,
 * with a guard page below it) before it overflows. The application's handler, installed before
 * faultline, runs after faultline's on the same stack: it says whether that stack is the
 * application's and how deep faultline's handler went into it. */
#define PATTERN 0xa5a5a5a5a5a5a5a5ull
static uint64_t *g_own;
static size_t g_own_size;

static void put_num(char **p, uint64_t v) {
    char d[24];
    int n = 0;
    do d[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (n) *(*p)++ = d[--n];
}
static void put_str(char **p, const char *s) {
    while (*s) *(*p)++ = *s++;
}

static void app_handler(int sig, siginfo_t *info, void *uc) {
    (void)info, (void)uc;
    char here;
    uintptr_t lo = (uintptr_t)g_own, hi = lo + g_own_size;
    size_t words = g_own_size / 8, i = 0;
    while (i < words && g_own[i] == PATTERN) i++;
    char msg[160], *p = msg;
    put_str(&p, (uintptr_t)&here >= lo && (uintptr_t)&here < hi
                    ? "handler ran on the application's alternate stack; "
                    : "handler ran on another stack; ");
    put_str(&p, "deepest use ");
    put_num(&p, (uint64_t)(g_own_size - i * 8));
    put_str(&p, " of ");
    put_num(&p, (uint64_t)g_own_size);
    put_str(&p, " bytes\n");
    write(1, msg, (size_t)(p - msg));
    signal(sig, SIG_DFL); /* the fault repeats and ends the process */
}

static void *own_altstack_entry(void *arg) {
    (void)arg;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const char *kb = getenv("CRASHER_ALTSTACK_KB"); /* for measuring; the test uses 64 */
    g_own_size = (kb ? (size_t)atoi(kb) : 64) * 1024;
    char *mem = mmap(NULL, page + g_own_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) exit(3);
    mprotect(mem, page, PROT_NONE);
    g_own = (uint64_t *)(mem + page);
    for (size_t i = 0; i < g_own_size / 8; i++) g_own[i] = PATTERN;
    stack_t ss = {.ss_sp = g_own, .ss_size = g_own_size}, old;
    if (sigaltstack(&ss, &old) != 0) exit(3);
    printf("faultline's stack %p (%s) replaced by the application's %p\n", old.ss_sp,
           old.ss_flags & SS_DISABLE ? "none" : "present", (void *)g_own);
    fflush(stdout);
    overflow_recurse(0);
    return NULL;
}

/* overflow_preexisting: a thread started BEFORE fl_install (so not through faultline's
 * pthread_create) overflows once faultline is installed: fl_install must have offered it a
 * stack. */
static volatile int g_go;
static void *preexisting_entry(void *arg) {
    (void)arg;
    while (!g_go) usleep(1000);
    overflow_recurse(0);
    return NULL;
}

static void run_thread(void *(*fn)(void *)) {
    pthread_t t;
    if (pthread_create(&t, NULL, fn, NULL) != 0) exit(4);
    pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s overflow_main|overflow_thread|overflow_own_altstack|overflow_preexisting REPORT_DIR\n", argv[0]);
        return 2;
    }
    const char *s = argv[1];
    if (!strcmp(s, "overflow_own_altstack")) {
        struct sigaction sa = {.sa_sigaction = app_handler, .sa_flags = SA_SIGINFO | SA_ONSTACK};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
    }
    pthread_t early;
    if (!strcmp(s, "overflow_preexisting") && pthread_create(&early, NULL, preexisting_entry, NULL) != 0)
        return 4;
    fl_options o = {.report_dir = argv[2], .app_name = "crasher_stack"};
    int e = fl_install(&o);
    if (e) {
        fprintf(stderr, "fl_install: %s\n", fl_strerror(e));
        return 1;
    }
    fl_annotate("scenario", s);
    if (!strcmp(s, "overflow_main")) overflow_main();
    else if (!strcmp(s, "overflow_thread")) run_thread(overflow_entry);
    else if (!strcmp(s, "overflow_own_altstack")) run_thread(own_altstack_entry);
    else if (!strcmp(s, "overflow_preexisting")) {
        g_go = 1;
        pthread_join(early, NULL);
    } else {
        fprintf(stderr, "unknown scenario %s\n", s);
        return 2;
    }
    return 0;
}
