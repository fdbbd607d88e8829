/* SPDX-License-Identifier: MIT */
/* Darwin's exception messages, thread states and signal hand-on, run on Linux with Apple's layouts. */
/* The instances come from tests/darwin/apple_layouts.c, compiled by zig with Apple's headers for
 * x86_64-macos and aarch64-macos (argv[1]/<arch>/<name>.bin). Also: the siginfo decoding of both
 * platforms, and fl_crash_pass_on as Darwin uses it (the previous action called directly). */
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash/crash.h"
#include "frames/regs_mach.h"
#include "test.h"
#include "tests/darwin/apple_layouts.h"

static const char *g_dir;

/* Reads <dir>/<arch>/<name>.bin into buf; its size (0 if missing, which fails the test). */
static size_t load(const char *arch, const char *name, void *buf, size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s.bin", g_dir, arch, name);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap, f) : 0;
    if (f) fclose(f);
    if (!n) fprintf(stderr, "missing %s\n", path);
    CHECK(n > 0);
    return n;
}

static uint64_t packed(const char *name) {
    uint64_t v = 0;
    for (; *name; name++) v = v << 8 | (uint8_t)*name;
    return v;
}

/* Decodes an instance (len: its own size, or less) and returns the decoder's result. */
static int decode(const char *arch, const char *name, size_t len, fl_mach_exc_t *x) {
    uint8_t buf[256];
    size_t n = load(arch, name, buf, sizeof buf);
    CHECK_EQ_U64(n, sizeof(fl_mach_exc_request_t));
    return fl_mach_exc_decode(buf, len ? len : n, x);
}

static int signal_of(const char *arch, const char *name, int regs_arch, fl_report_signal_t *s) {
    fl_mach_exc_t x;
    memset(s, 0, sizeof *s);
    if (decode(arch, name, 0, &x) != 0) return -1;
    return fl_crash_exception_signal(&x.e, regs_arch, 42, s) ? s->number : 0;
}

static void test_messages(const char *arch) {
    fl_mach_exc_t x;
    CHECK(decode(arch, "exc_ok", 0, &x) == 0);
    CHECK_EQ_U64(x.thread, FIX_THREAD_PORT);
    CHECK_EQ_U64(x.task, FIX_TASK_PORT);
    CHECK_EQ_U64(x.head.remote_port, FIX_REPLY_PORT);
    CHECK_EQ_U64(x.head.local_port, FIX_LOCAL_PORT);
    CHECK_EQ_U64(x.e.type, 1);
    CHECK_EQ_U64(x.e.code_count, 2);
    CHECK_EQ_U64(x.e.codes[0], 1);
    CHECK_EQ_U64(x.e.codes[1], FIX_FAULT_ADDR);
    CHECK(x.crash);

    /* The reply, byte for byte as MIG's __Reply__mach_exception_raise_t with KERN_FAILURE. */
    fl_mach_exc_reply_t r;
    uint8_t want[64];
    fl_mach_exc_reply_init(&r, &x.head, 5 /* KERN_FAILURE */);
    CHECK_EQ_U64(load(arch, "exc_reply", want, sizeof want), sizeof r);
    CHECK(memcmp(&r, want, sizeof r) == 0);

    /* The report's Signal for each exception (xnu's ux_exception mapping). */
    fl_report_signal_t s;
    CHECK_EQ_U64(signal_of(arch, "exc_ok", FL_REGS_ARCH_ARM64, &s), SIGSEGV);
    CHECK(s.has_address && s.address == FIX_FAULT_ADDR && s.crashed_tid == 42);
    CHECK_EQ_U64(signal_of(arch, "exc_prot", FL_REGS_ARCH_ARM64, &s), SIGBUS);
    CHECK(s.has_address && s.address == FIX_FAULT_ADDR);
    CHECK_EQ_U64(signal_of(arch, "exc_gpflt", FL_REGS_ARCH_X86_64, &s), SIGSEGV);
    CHECK_EQ_U64(signal_of(arch, "exc_gpflt", FL_REGS_ARCH_ARM64, &s), SIGBUS);
    CHECK_EQ_U64(signal_of(arch, "exc_ill", FL_REGS_ARCH_ARM64, &s), SIGILL);
    CHECK(!s.has_address);
    CHECK_EQ_U64(signal_of(arch, "exc_fpe", FL_REGS_ARCH_ARM64, &s), SIGFPE);
    CHECK_EQ_U64(signal_of(arch, "exc_brk", FL_REGS_ARCH_ARM64, &s), SIGTRAP);
    CHECK_EQ_U64(signal_of(arch, "exc_abort", FL_REGS_ARCH_ARM64, &s), SIGABRT);
    CHECK_EQ_U64(signal_of(arch, "exc_guard", FL_REGS_ARCH_ARM64, &s), 0); /* ends with SIGKILL */
    CHECK(decode(arch, "exc_soft", 0, &x) == 0 && !x.crash); /* a traced process's signal */
    CHECK(decode(arch, "exc_guard", 0, &x) == 0 && x.crash && x.e.type == FL_EXC_GUARD);

    /* Hostile and malformed messages. */
    const size_t codes = offsetof(fl_mach_exc_request_t, code);
    CHECK(decode(arch, "exc_ool", 0, &x) == FL_EBADDATA);    /* an out-of-line descriptor */
    CHECK(decode(arch, "exc_simple", 0, &x) == FL_EBADDATA); /* not MACH_MSGH_BITS_COMPLEX */
    CHECK(decode(arch, "exc_3codes", 0, &x) == FL_EBADDATA); /* codeCnt > EXCEPTION_CODE_MAX */
    CHECK(decode(arch, "exc_ok", codes + 15, &x) == FL_EBADDATA); /* truncated codes */
    CHECK(decode(arch, "exc_ok", codes - 1, &x) == FL_EBADDATA);
    CHECK(decode(arch, "exc_ok", 0 + 1, &x) == FL_EBADDATA);
    CHECK(decode(arch, "exc_1code", codes + 8, &x) == 0 && x.e.code_count == 1 && x.e.codes[0] == 1);
    CHECK(decode(arch, "exc_1code", codes + 7, &x) == FL_EBADDATA);
    uint8_t buf[256];
    size_t n = load(arch, "exc_ok", buf, sizeof buf);
    buf[offsetof(fl_mach_msg_header_t, id)] ^= 1; /* another MIG routine */
    CHECK(fl_mach_exc_decode(buf, n, &x) == FL_EBADDATA && x.e.type == 0);
    n = load(arch, "exc_ok", buf, sizeof buf);
    buf[offsetof(fl_mach_exc_request_t, descriptor_count)] = 3;
    CHECK(fl_mach_exc_decode(buf, n, &x) == FL_EBADDATA);
}

static void test_thread_states(void) {
    uint8_t ss[512], es[64];
    fl_regs_t r;
    /* x86_64: every register by its name in faultline's order. */
    CHECK_EQ_U64(load("x86_64", "x86ss", ss, sizeof ss), sizeof(fl_mach_x86_thread_state64_t));
    CHECK_EQ_U64(load("x86_64", "x86es", es, sizeof es), sizeof(fl_mach_x86_exception_state64_t));
    fl_mach_x86_thread_state64_t s86;
    fl_mach_x86_exception_state64_t e86;
    memcpy(&s86, ss, sizeof s86);
    memcpy(&e86, es, sizeof e86);
    fl_regs_from_mach_x86_64(&r, &s86, &e86);
    for (unsigned i = 0; i < FL_REGS_X86_64_COUNT; i++) {
        const char *name = fl_regs_arch_name(FL_REGS_ARCH_X86_64, i);
        uint64_t want = !strcmp(name, "err")      ? FIX_X86_ERR
                        : !strcmp(name, "trapno") ? FIX_X86_TRAPNO
                        : !strcmp(name, "cr2")    ? FIX_X86_CR2
                                                  : packed(name);
        if (r.r[i] != want) fprintf(stderr, "x86_64 %s\n", name);
        CHECK_EQ_U64(r.r[i], want);
    }
    fl_regs_from_mach_x86_64(&r, &s86, NULL); /* no exception state */
    CHECK(r.r[16] == packed("rip") && r.r[21] == 0 && r.r[23] == 0);

    /* arm64. */
    CHECK_EQ_U64(load("aarch64", "armss", ss, sizeof ss), sizeof(fl_mach_arm_thread_state64_t));
    fl_mach_arm_thread_state64_t sarm;
    memcpy(&sarm, ss, sizeof sarm);
    fl_regs_from_mach_arm64(&r, &sarm);
    for (unsigned i = 0; i < FL_REGS_ARM64_COUNT; i++) {
        const char *name = fl_regs_arch_name(FL_REGS_ARCH_ARM64, i);
        uint64_t want = name[0] == 'x'             ? 0xa000u + (uint64_t)atoi(name + 1)
                        : !strcmp(name, "pstate") ? packed("cpsr")
                                                  : packed(name);
        if (r.r[i] != want) fprintf(stderr, "arm64 %s\n", name);
        CHECK_EQ_U64(r.r[i], want);
    }
}

static void test_siginfo(void) {
    fl_report_signal_t s;
    /* Linux: si_code tells a fault (address, no sender) from a sent signal (sender, no address). */
    fl_crash_signal_from_siginfo(&s, SIGSEGV, 1, 99, 0x10, 7, true);
    CHECK(s.number == SIGSEGV && s.code == 1 && s.has_address && s.address == 0x10 &&
          s.sender_pid == 0 && s.crashed_tid == 7);
    fl_crash_signal_from_siginfo(&s, SIGSEGV, 0, 99, 0x10, 7, true);
    CHECK(!s.has_address && s.sender_pid == 99);
    fl_crash_signal_from_siginfo(&s, SIGABRT, -6, 99, 0x10, 7, true);
    CHECK(!s.has_address && s.sender_pid == 99);
    /* Darwin: both kept, the address for the five signals that have one. */
    fl_crash_signal_from_siginfo(&s, SIGBUS, 0x10001 /* SI_USER */, 99, 0x10, 7, false);
    CHECK(s.has_address && s.address == 0x10 && s.sender_pid == 99);
    fl_crash_signal_from_siginfo(&s, SIGABRT, 0x10001, 99, 0x10, 7, false);
    CHECK(!s.has_address && s.sender_pid == 99);
}

static volatile sig_atomic_t g_called;
static siginfo_t *volatile g_info;
static void previous_action(int sig, siginfo_t *info, void *uc) {
    (void)uc;
    g_called = sig;
    g_info = info;
}

/* Darwin's hand-on: the action in place before fl_install is called directly. */
static void test_pass_on(void) {
    char dir[] = "/tmp/fl_test_mach_exc_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = previous_action;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGTRAP, &sa, NULL);
        sa.sa_handler = SIG_IGN;
        sa.sa_flags = 0;
        sigaction(SIGBUS, &sa, NULL);
        fl_options o = {.report_dir = dir};
        if (fl_install(&o) != 0) _exit(10);
        siginfo_t info = {.si_signo = SIGTRAP};
        fl_crash_pass_on(SIGTRAP, &info, NULL, true, false);
        if (g_called != SIGTRAP || g_info != &info) _exit(11);
        g_called = 0;
        fl_crash_pass_on(SIGBUS, &info, NULL, true, false); /* SIG_IGN: returns */
        if (g_called) _exit(12);
        fl_crash_pass_on(SIGILL, &info, NULL, true, false); /* SIG_DFL: dies of it */
        _exit(13);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFSIGNALED(status)) fprintf(stderr, "pass_on child: exit %d\n", WEXITSTATUS(status));
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGILL);
    rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_mach_exc LAYOUTS_DIR\n");
        return 2;
    }
    g_dir = argv[1];
    test_messages("x86_64");
    test_messages("aarch64");
    test_thread_states();
    test_siginfo();
    test_pass_on();
    TEST_END();
}
