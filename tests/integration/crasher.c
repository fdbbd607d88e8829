/* SPDX-License-Identifier: MIT */
/* A program that installs faultline and crashes in the way argv[1] names (see run_crash.py). */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crasher.h"
#include "faultline/faultline.h"

static volatile int *volatile g_null;
static volatile int g_zero;
static void *volatile g_sink;

NOINLINE static void null_c(void) { *g_null = 1; NOTAIL(); }
NOINLINE static void null_b(void) { null_c(); NOTAIL(); }
NOINLINE void null_a(void) { null_b(); NOTAIL(); }

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
    __asm__ volatile("movz x29, #0xf00d\n\tmovk x29, #0x0bad, lsl #16\n\tmov x9, #0\n\tstr wzr, [x9]"
                     ::: "x9", "memory");
#endif
}
NOINLINE static void badfp_b(void) { badfp_c(); NOTAIL(); }
NOINLINE static void badfp_a(void) { badfp_b(); NOTAIL(); }

/* The fault is on the first instruction of a new CFI row: rowedge_c pushes a word (0x1234, not
 * an address) and faults on the very next instruction, where the CFA is rsp+16 (rsp+8 one byte
 * before). An unwinder that applies only the rows starting before pc (right for a return
 * address, wrong for the exact pc of a fault) reads 0x1234 as the return address. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".type rowedge_c, @function\n"
        "rowedge_c:\n"
        ".cfi_startproc\n"
        "movl $0x1234, %eax\n"
        "pushq %rax\n"
        ".cfi_adjust_cfa_offset 8\n"
        "movl $0, 0\n"
        "popq %rax\n"
        ".cfi_adjust_cfa_offset -8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size rowedge_c, .-rowedge_c\n");
void rowedge_c(void);
#else
NOINLINE static void rowedge_c(void) { *g_null = 8; NOTAIL(); }
#endif
NOINLINE static void rowedge_b(void) { rowedge_c(); NOTAIL(); }
NOINLINE static void rowedge_a(void) { rowedge_b(); NOTAIL(); }

/* An application handler installed before faultline must still run after the report. */
static void app_handler(int sig, siginfo_t *info, void *uc) {
    (void)info, (void)uc;
    static const char msg[] = "app handler ran\n";
    write(1, msg, sizeof msg - 1);
    signal(sig, SIG_DFL); /* then die of the signal as the default would */
}
NOINLINE static void prev_a(void) { null_a(); NOTAIL(); }

/* A program's handler that recovers (siglongjmp) after faultline's capture: the process goes on,
 * and must outlive the crash deadline (CRASHER_DEADLINE_MS, short here) by far: exit 42. */
static sigjmp_buf g_recover_jmp;
static void recover_handler(int sig) {
    (void)sig;
    siglongjmp(g_recover_jmp, 1);
}
static void run_prev_recovers(const char *dir) {
    (void)dir;
    if (sigsetjmp(g_recover_jmp, 1) == 0) prev_a();
    struct timespec ts = {1, 500000000};
    nanosleep(&ts, NULL);
    puts("went on");
    exit(42);
}

/* The same with a plain (non-SA_SIGINFO) handler. */
static void plain_handler(int sig) {
    static const char msg[] = "plain handler ran\n";
    write(1, msg, sizeof msg - 1);
    signal(sig, SIG_DFL);
}

/* Defined only in crasher_nomalloc (interpose_malloc.c). */
extern volatile int fl_test_forbid_malloc __attribute__((weak));
extern volatile int fl_test_alloc_in_sigaction __attribute__((weak));
extern int __sigaction(int, const struct sigaction *, struct sigaction *);

/* Controls for crasher_nomalloc: each must end in exit 77. */
static void alloc_handler(int sig) {
    (void)sig;
    g_sink = malloc(16);
}
/* A handler on the alternate stack, installed past the interposed sigaction(): caught because
 * the thread runs on its alternate stack. */
NOINLINE static void control_malloc(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = alloc_handler;
    sa.sa_flags = SA_ONSTACK;
    __sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
}
/* faultline's own crash handler, on a thread without an alternate stack, is made to allocate
 * (in the sigaction() call that restores the previous actions): caught because the thread is
 * inside a handler installed with sigaction(). */
static void *noaltstack_entry(void *arg) {
    (void)arg;
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL); /* the one faultline's pthread_create gave it */
    thread_b();
    return NULL;
}
NOINLINE static void control_crash_handler(void) {
    if (&fl_test_alloc_in_sigaction) fl_test_alloc_in_sigaction = 1;
    pthread_t t;
    pthread_create(&t, NULL, noaltstack_entry, NULL);
    pthread_join(t, NULL);
}

/* An application handler installed after faultline that passes the signal on to the handler it
 * replaced the way Ruby does, as handler(sig): its siginfo and ucontext arguments are whatever
 * the registers held (here a fixed unreadable address). */
static struct sigaction g_saved_action;
NOINLINE static void oneargs_handler(int sig) {
    ((void (*)(int, siginfo_t *, void *))g_saved_action.sa_sigaction)(sig, (siginfo_t *)8,
                                                                      (void *)8);
    NOTAIL();
}
static void run_oneargs(const char *dir) {
    (void)dir;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = oneargs_handler;
    sigaction(SIGSEGV, &sa, &g_saved_action);
    null_a();
}

/* An application handler installed after faultline on an alternate stack of its own that, like
 * Python's faulthandler, puts the previous action (faultline's) back and raises the signal again
 * from inside itself (SA_NODEFER): faultline's handler then starts on that alternate stack, and
 * the walk must cross the signal frame back onto the main stack where the fault happened. */
static struct sigaction g_altstack_saved;
static char g_app_altstack[64 * 1024];
NOINLINE static void altstack_app_handler(int sig, siginfo_t *info, void *uc) {
    (void)info, (void)uc;
    sigaction(sig, &g_altstack_saved, NULL);
    raise(sig);
    NOTAIL();
}
static void run_altstack_reraise(const char *dir) {
    (void)dir;
    stack_t ss = {.ss_sp = g_app_altstack, .ss_size = sizeof g_app_altstack};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = altstack_app_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigaction(SIGSEGV, &sa, &g_altstack_saved);
    null_a();
}

static void run_null(const char *dir) { (void)dir; null_a(); }
static void run_abort(const char *dir) { (void)dir; abort_a(); }
static void run_trap(const char *dir) { (void)dir; trap_a(); }
static void run_divzero(const char *dir) { (void)dir; divzero_a(); }
static void run_sigbus(const char *dir) { (void)dir; sigbus_a(); }
static void run_fnptr(const char *dir) { (void)dir; fnptr_a(); }
/* Code a JIT compiler would write: an anonymous executable mapping, in no image and with no
 * unwind tables, whose frame keeps a frame record (V8's and the JVM interpreter's do). Its
 * return address is given to the report as the annotation jit_return, and its name, as a JIT
 * gives it to perf, in /tmp/perf-PID.map (annotation jit_name; the test removes the file). */
NOINLINE static void jit_c(void) { *g_null = 3; NOTAIL(); }
NOINLINE static void jit_b(void) {
    size_t size = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *code = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) exit(93);
    memcpy(code, jit_thunk, jit_thunk_len);
    __builtin___clear_cache((char *)code, (char *)code + jit_thunk_len);
    if (mprotect(code, size, PROT_READ | PROT_EXEC)) exit(94);
    char ret[32], map[64];
    snprintf(ret, sizeof ret, "0x%lx", (unsigned long)(uintptr_t)(code + jit_thunk_ret));
    fl_annotate("jit_return", ret);
    snprintf(map, sizeof map, "/tmp/perf-%ld.map", (long)getpid());
    FILE *f = fopen(map, "w");
    if (f) {
        /* (code moves: the newer line for an address wins) */
        fprintf(f, "%lx %x older name\n%lx %x JS:*jit_thunk /tmp/t.js:1:1\n",
                (unsigned long)(uintptr_t)code, jit_thunk_len, (unsigned long)(uintptr_t)code,
                jit_thunk_len);
        fclose(f);
        fl_annotate("jit_name", "JS:*jit_thunk /tmp/t.js:1:1");
    }
    ((void (*)(void (*)(void)))(uintptr_t)code)(jit_c);
    NOTAIL();
}
NOINLINE static void jit_a(void) { jit_b(); NOTAIL(); }

static void run_jit(const char *dir) { (void)dir; jit_a(); }

/* A vfork child (it shares the parent's memory until it execs or dies) crashes; then the
 * parent, which goes on with that memory, crashes too: each gets its report. */
NOINLINE static void vfork_child_fault(void) { *g_null = 4; NOTAIL(); }
static void run_vfork_child(const char *dir) {
    (void)dir;
    pid_t p = vfork();
    if (p == 0) {
        vfork_child_fault();
        _exit(0);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) exit(95);
    null_a();
}
static void run_thread(const char *dir) { (void)dir; thread_a(); }
static void run_omit_fp(const char *dir) { (void)dir; omit_a(0); }
static void run_badfp(const char *dir) { (void)dir; badfp_a(); }
static void run_prev(const char *dir) { (void)dir; prev_a(); }
static void run_rowedge(const char *dir) { (void)dir; rowedge_a(); }
static void run_control_malloc(const char *dir) { (void)dir; control_malloc(); }
static void run_control_handler(const char *dir) { (void)dir; control_crash_handler(); }

static const struct {
    const char *name;
    void (*run)(const char *dir);
} g_scenarios[] = {
    {"null_deref", run_null},          {"recrash", run_null},
    {"abort", run_abort},              {"recrash_abort", run_abort},
    {"trap", run_trap},                {"divzero", run_divzero},
    {"sigbus", run_sigbus},            {"null_fnptr", run_fnptr},
    {"thread", run_thread},            {"omit_fp", run_omit_fp},
    {"garbage_fp", run_badfp},         {"prev_handler", run_prev},
    {"prev_plain", run_prev},          {"prev_recovers", run_prev_recovers},          {"control_malloc", run_control_malloc},
    {"cfi_row_edge", run_rowedge},     {"jit", run_jit},
    {"vfork_child", run_vfork_child},     {"handler_bad_args", run_oneargs},
    {"altstack_reraise", run_altstack_reraise},
    {"control_crash_handler", run_control_handler},
    {"malloc_lock", scenario_malloc_lock},
    {"heap_invalid", scenario_heap_invalid},
    {"heap_double_free", scenario_heap_double_free},
    {"heap_bad_header", scenario_heap_bad_header},
    {"dlopen_busy", scenario_dlopen_busy},
    {"barrier", scenario_barrier},
    {"emfile", scenario_emfile},
    {"dir_removed", scenario_dir_removed},
    {"dir_readonly", scenario_dir_readonly},
    {"dir_full", scenario_dir_full},
    {"threads_1000", scenario_threads_1000},
    {"blocked_thread", scenario_blocked_thread},
    {"stuck_thread", scenario_stuck_thread},
    {"busy_threads", scenario_busy_threads},
};

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: crasher SCENARIO REPORT_DIR\n");
        return 2;
    }
    const char *s = argv[1];
    void (*run)(const char *) = NULL;
    for (size_t i = 0; i < sizeof g_scenarios / sizeof g_scenarios[0]; i++)
        if (!strcmp(s, g_scenarios[i].name)) run = g_scenarios[i].run;
    for (unsigned i = 0; i < crasher_arch_scenario_count; i++)
        if (!strcmp(s, crasher_arch_scenarios[i].name)) run = crasher_arch_scenarios[i].run;
    if (!run) {
        fprintf(stderr, "unknown scenario %s\n", s);
        return 2;
    }
    if (strcmp(s, "prev_handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = app_handler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
    }
    if (strcmp(s, "prev_plain") == 0) signal(SIGSEGV, plain_handler);
    if (strcmp(s, "prev_recovers") == 0) signal(SIGSEGV, recover_handler);
    fl_options o = {.report_dir = argv[2], .app_name = "crasher", .app_version = "1.2.3"};
    if (getenv("CRASHER_DEADLINE_MS")) o.crash_deadline_ms = (unsigned)atoi(getenv("CRASHER_DEADLINE_MS"));
    int e = fl_install(&o);
    if (e) {
        fprintf(stderr, "fl_install: %s\n", fl_strerror(e));
        return 3;
    }
    fl_annotate("scenario", s);
    if (&fl_test_forbid_malloc) fl_test_forbid_malloc = 1; /* from here on: the crash path */
    run(argv[2]);
    fprintf(stderr, "scenario %s returned without crashing\n", s);
    return 0;
}
