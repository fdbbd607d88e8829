/* SPDX-License-Identifier: MIT */
/* A program that installs faultline and crashes in the way argv[1] names (see run_crash.py). */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crasher.h"
#include "faultline/faultline.h"

static volatile int *volatile g_null;
static volatile int g_zero;
static void *volatile g_sink;

NOINLINE static void null_c(void) { *g_null = 1; NOTAIL(); }
NOINLINE static void null_b(void) { null_c(); NOTAIL(); }
NOINLINE static void null_a(void) { null_b(); NOTAIL(); }

NOINLINE static void abort_b(void) { abort(); }
NOINLINE static void abort_a(void) { abort_b(); NOTAIL(); }

NOINLINE static void trap_b(void) { __builtin_trap(); }
NOINLINE static void trap_a(void) { trap_b(); NOTAIL(); }

NOINLINE static int divzero_b(int x) { return x / g_zero; }
NOINLINE static void divzero_a(void) { printf("%d\n", divzero_b(7)); NOTAIL(); }

NOINLINE static void sigbus_b(volatile char *p) { p[100] = 1; NOTAIL(); }
NOINLINE static void sigbus_a(void) {
    char path[] = "/tmp/faultline-sigbus-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 4096) != 0) exit(90);
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) exit(91);
    unlink(path);
    if (ftruncate(fd, 0) != 0) exit(92); /* the mapping now lies past the end of the file */
    sigbus_b(p);
    NOTAIL();
}

typedef void (*fn_t)(void);
static volatile fn_t g_null_fn;
NOINLINE static void fnptr_b(void) { g_null_fn(); NOTAIL(); }
NOINLINE static void fnptr_a(void) { fnptr_b(); NOTAIL(); }

NOINLINE static void thread_c(void) { *g_null = 2; NOTAIL(); }
NOINLINE static void thread_b(void) { thread_c(); NOTAIL(); }
NOINLINE static void *thread_entry(void *arg) { (void)arg; thread_b(); NOTAIL(); return NULL; }
NOINLINE static void thread_a(void) {
    pthread_t t;
    pthread_create(&t, NULL, thread_entry, NULL);
    pthread_join(t, NULL);
}

/* The frame-pointer register holds garbage when the fault happens. */
NOINLINE static void badfp_c(void) {
#if defined(__x86_64__)
    __asm__ volatile("movabs $0x00007fff0badf00d, %%rbp\n\tmovl $0, 0" ::: "memory");
#elif defined(__aarch64__)
    __asm__ volatile("movz x29, #0xf00d\n\tmovk x29, #0x0bad, lsl #16\n\tstr wzr, [xzr]" ::: "memory");
#endif
}
NOINLINE static void badfp_b(void) { badfp_c(); NOTAIL(); }
NOINLINE static void badfp_a(void) { badfp_b(); NOTAIL(); }

/* An application handler installed before faultline must still run after the report. */
static void app_handler(int sig, siginfo_t *info, void *uc) {
    (void)info, (void)uc;
    static const char msg[] = "app handler ran\n";
    write(1, msg, sizeof msg - 1);
    signal(sig, SIG_DFL); /* then die of the signal as the default would */
}
NOINLINE static void prev_a(void) { null_a(); NOTAIL(); }

/* The same with a plain (non-SA_SIGINFO) handler. */
static void plain_handler(int sig) {
    static const char msg[] = "plain handler ran\n";
    write(1, msg, sizeof msg - 1);
    signal(sig, SIG_DFL);
}

/* Defined only in crasher_nomalloc (interpose_malloc.c). */
extern volatile int fl_test_forbid_malloc __attribute__((weak));

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: crasher SCENARIO REPORT_DIR\n");
        return 2;
    }
    const char *s = argv[1];
    if (strcmp(s, "prev_handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = app_handler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
    }
    if (strcmp(s, "prev_plain") == 0) signal(SIGSEGV, plain_handler);
    fl_options o = {.report_dir = argv[2], .app_name = "crasher", .app_version = "1.2.3"};
    int e = fl_install(&o);
    if (e) {
        fprintf(stderr, "fl_install: %s\n", fl_strerror(e));
        return 3;
    }
    fl_annotate("scenario", s);
    if (&fl_test_forbid_malloc) fl_test_forbid_malloc = 1; /* from here on: the crash path */
    if (!strcmp(s, "null_deref") || !strcmp(s, "recrash")) null_a();
    else if (!strcmp(s, "abort")) abort_a();
    else if (!strcmp(s, "trap")) trap_a();
    else if (!strcmp(s, "divzero")) divzero_a();
    else if (!strcmp(s, "sigbus")) sigbus_a();
    else if (!strcmp(s, "null_fnptr")) fnptr_a();
    else if (!strcmp(s, "thread")) thread_a();
    else if (!strcmp(s, "omit_fp")) omit_a(0);
    else if (!strcmp(s, "garbage_fp")) badfp_a();
    else if (!strcmp(s, "prev_handler") || !strcmp(s, "prev_plain")) prev_a();
    else if (!strcmp(s, "recrash_abort")) abort_a();
    else if (!strcmp(s, "control_malloc")) g_sink = malloc(16); /* the interposer must catch this */
    else {
        fprintf(stderr, "unknown scenario %s\n", s);
        return 2;
    }
    return 0;
}
