/* SPDX-License-Identifier: MIT */
/* frames: the frame-pointer walker on synthetic stacks, and the full walker on live signal
 * contexts checked against dladdr names (an independent oracle). */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/elf.h"
#include "frames/frames.h"
#include "test.h"

#define NOINLINE __attribute__((noinline))
#define NOTAIL() __asm__ volatile("" ::: "memory")

/* ---- synthetic stacks: a buffer reader at a fake address, one fake image with text ---- */

#define STACK_BASE 0x7000000ull
#define TEXT_LO 0x400000ull
#define TEXT_HI 0x500000ull
static uint64_t g_stack[512];
static fl_image_list_t g_images;
static fl_reader_t g_reader;

static uint64_t at(unsigned i) { return STACK_BASE + 8ull * i; }
/* A frame record at slot i: [fp] = next fp, [fp+8] = return address. */
static void record(unsigned i, uint64_t next_fp, uint64_t ret) {
    g_stack[i] = next_fp;
    g_stack[i + 1] = ret;
}

static void synth_setup(void) {
    memset(g_stack, 0, sizeof g_stack);
    fl_reader_init_buffer(&g_reader, g_stack, sizeof g_stack, STACK_BASE);
    g_images.count = 1;
    g_images.image[0] = (fl_image_t){.start = TEXT_LO, .end = TEXT_HI, .text_start = TEXT_LO, .text_end = TEXT_HI};
}

static unsigned synth_walk(uint64_t pc, uint64_t sp, uint64_t fp, fl_frame_t *out, unsigned max,
                           fl_walk_result_t *res) {
    fl_walk_env_t env = {.mem = &g_reader, .images = &g_images, .stack_lo = STACK_BASE,
                         .stack_hi = STACK_BASE + sizeof g_stack, .use_cfi = false};
    fl_regs_t r;
    memset(&r, 0, sizeof r);
    /* architecture-neutral seeding: find pc/sp/fp slots by name */
    for (unsigned i = 0; i < fl_regs_count(); i++) {
        const char *n = fl_regs_name(i);
        if (!strcmp(n, "rip") || !strcmp(n, "pc")) r.r[i] = pc;
        if (!strcmp(n, "rsp") || !strcmp(n, "sp")) r.r[i] = sp;
        if (!strcmp(n, "rbp") || !strcmp(n, "fp")) r.r[i] = fp;
    }
    fl_frames_walk_fp(&env, &r, out, max, res);
    return res->count;
}

static void test_synthetic(void) {
    fl_frame_t f[64];
    fl_walk_result_t res;

    synth_setup(); /* a good chain of 4 records ending in fp 0 */
    record(10, at(20), TEXT_LO + 0x10);
    record(20, at(30), TEXT_LO + 0x20);
    record(30, at(40), TEXT_LO + 0x30);
    record(40, 0, TEXT_LO + 0x40);
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(10), f, 64, &res) == 5);
    CHECK_EQ_U64(f[0].pc, TEXT_LO + 1);
    CHECK(f[0].method == FL_FRAME_CONTEXT && f[1].method == FL_FRAME_FP);
    CHECK_EQ_U64(f[1].pc, TEXT_LO + 0x10);
    CHECK_EQ_U64(f[1].sp, at(12));
    CHECK_EQ_U64(f[4].pc, TEXT_LO + 0x40);
    CHECK(!res.truncated);

    /* max frames: truncated and said so */
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(10), f, 3, &res) == 3 && res.truncated);

    synth_setup(); /* a loop: the second record points back to the first */
    record(10, at(20), TEXT_LO + 0x10);
    record(20, at(10), TEXT_LO + 0x20);
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(10), f, 64, &res) == 3);

    synth_setup(); /* a self loop */
    record(10, at(10), TEXT_LO + 0x10);
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(10), f, 64, &res) == 2);

    synth_setup(); /* non-monotonic: the next record lies below the current one */
    record(20, at(10), TEXT_LO + 0x10);
    record(10, at(30), TEXT_LO + 0x20);
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(20), f, 64, &res) == 2);

    synth_setup(); /* unaligned frame pointer */
    record(10, at(20), TEXT_LO + 0x10);
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(10) + 3, f, 64, &res) == 1);

    synth_setup(); /* frame pointer outside the stack (unmapped for the reader) */
    CHECK(synth_walk(TEXT_LO + 1, at(2), 0x10, f, 64, &res) == 1);
    CHECK(synth_walk(TEXT_LO + 1, at(2), STACK_BASE + sizeof g_stack + 64, f, 64, &res) == 1);

    synth_setup(); /* record at the very top of the readable stack: the read of [fp+8] fails */
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(511), f, 64, &res) == 1);

    synth_setup(); /* return address outside any executable image */
    record(10, at(20), 0x12345);
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(10), f, 64, &res) == 1);

    synth_setup(); /* frame pointer below sp */
    record(10, at(20), TEXT_LO + 0x10);
    CHECK(synth_walk(TEXT_LO + 1, at(12), at(10), f, 64, &res) == 1);

    /* Return addresses alternating between two images (the walker remembers one text range),
     * then one in neither: the walk stops there. */
    synth_setup();
    g_images.count = 2;
    g_images.image[1] = (fl_image_t){.start = TEXT_HI, .end = TEXT_HI + 0x1000,
                                     .text_start = TEXT_HI, .text_end = TEXT_HI + 0x1000};
    record(10, at(20), TEXT_HI + 0x10);
    record(20, at(30), TEXT_LO + 0x20);
    record(30, at(40), TEXT_HI + 0x30);
    record(40, at(50), TEXT_LO + 0x40);
    record(50, at(60), TEXT_HI + 0x1000);
    CHECK(synth_walk(TEXT_LO + 1, at(2), at(10), f, 64, &res) == 5);
    CHECK_EQ_U64(f[1].pc, TEXT_HI + 0x10);
    CHECK_EQ_U64(f[2].pc, TEXT_LO + 0x20);
    CHECK_EQ_U64(f[3].pc, TEXT_HI + 0x30);
    CHECK_EQ_U64(f[4].pc, TEXT_LO + 0x40);

    /* A range reader (as the crash path uses: the stack mapping read directly) that covers only
     * the lower part of the stack: the records above it come through its fallback. */
    synth_setup();
    record(10, at(20), TEXT_LO + 0x10);
    record(20, at(300), TEXT_LO + 0x20);
    record(300, at(400), TEXT_LO + 0x30);
    record(400, 0, TEXT_LO + 0x40);
    fl_reader_t whole = g_reader;
    fl_reader_init_range(&g_reader, (uint64_t)(uintptr_t)g_stack, (uint64_t)(uintptr_t)&g_stack[64],
                         &whole);
    /* The range reader answers live addresses; give it the buffer's own addresses. */
    fl_walk_env_t env = {.mem = &g_reader, .images = &g_images,
                         .stack_lo = (uint64_t)(uintptr_t)g_stack,
                         .stack_hi = (uint64_t)(uintptr_t)&g_stack[512], .use_cfi = false};
    whole.origin = (uint64_t)(uintptr_t)g_stack;
    for (unsigned i = 0; i < 512; i++) /* the chain's pointers, rebased onto the live buffer */
        if (g_stack[i] >= STACK_BASE && g_stack[i] < STACK_BASE + sizeof g_stack)
            g_stack[i] = g_stack[i] - STACK_BASE + (uint64_t)(uintptr_t)g_stack;
    fl_regs_t r;
    memset(&r, 0, sizeof r);
    for (unsigned i = 0; i < fl_regs_count(); i++) {
        const char *n = fl_regs_name(i);
        if (!strcmp(n, "rip") || !strcmp(n, "pc")) r.r[i] = TEXT_LO + 1;
        if (!strcmp(n, "rsp") || !strcmp(n, "sp")) r.r[i] = (uint64_t)(uintptr_t)&g_stack[2];
        if (!strcmp(n, "rbp") || !strcmp(n, "fp")) r.r[i] = (uint64_t)(uintptr_t)&g_stack[10];
    }
    fl_frames_walk_fp(&env, &r, f, 64, &res);
    CHECK_EQ_U64(res.count, 5);
    CHECK_EQ_U64(f[3].pc, TEXT_LO + 0x30);
    CHECK_EQ_U64(f[4].sp, (uint64_t)(uintptr_t)&g_stack[402]);
    CHECK_STREQ(res.stop_reason, "end of stack");
    synth_setup();
}

/* The full walker at the very bottom of a full stack (a stack overflow), frame 0 a call through
 * a NULL pointer: sp is the stack's lowest address, and the caller found from the function's entry
 * (arm64: lr, sharing frame 0's sp; x86_64: the return address at [sp]) must be accepted, then
 * the frame-pointer chain above it. (The caller's sp equal to the stack's lowest address was once
 * taken as outside the stack: on arm64 the walk then lost the lr frame, and every CFI step of a
 * real overflow whose last frame sat at the page boundary.) */
static void test_stack_bottom(void) {
    fl_frame_t f[16];
    fl_walk_result_t res;
    synth_setup();
    bool arm64 = false;
    for (unsigned i = 0; i < fl_regs_count(); i++) arm64 |= !strcmp(fl_regs_name(i), "lr");
    fl_regs_t r;
    memset(&r, 0, sizeof r);
    /* x86_64's entry step: the return address on top; its record is then one slot higher */
    unsigned rec = arm64 ? 0 : 2;
    if (!arm64) g_stack[0] = TEXT_LO + 0x10;
    record(rec, at(20), TEXT_LO + 0x20);
    record(20, 0, TEXT_LO + 0x30);
    for (unsigned i = 0; i < fl_regs_count(); i++) {
        const char *n = fl_regs_name(i);
        if (!strcmp(n, "rsp") || !strcmp(n, "sp")) r.r[i] = at(0);
        if (!strcmp(n, "rbp") || !strcmp(n, "fp")) r.r[i] = at(rec);
        if (!strcmp(n, "lr")) r.r[i] = TEXT_LO + 0x10;
    }
    fl_walk_env_t env = {.mem = &g_reader, .images = &g_images, .stack_lo = STACK_BASE,
                         .stack_hi = STACK_BASE + sizeof g_stack, .use_cfi = true};
    fl_frames_walk(&env, &r, f, 16, &res);
    CHECK_EQ_U64(res.count, 4);
    CHECK_EQ_U64(f[0].pc, 0);
    CHECK_EQ_U64(f[1].pc, TEXT_LO + 0x10);
    CHECK_EQ_U64(f[1].sp, arm64 ? at(0) : at(1));
    CHECK(f[1].method == (arm64 ? FL_FRAME_LR : FL_FRAME_SCAN));
    CHECK_EQ_U64(f[2].pc, TEXT_LO + 0x20);
    CHECK_EQ_U64(f[3].pc, TEXT_LO + 0x30);
    synth_setup();
}

/* ---- live: walk a real signal context, compare names with dladdr ---- */

static fl_image_list_t g_live_images;
static fl_frame_t g_live[64];
static fl_walk_result_t g_live_res;
static bool g_live_cfi;

static void on_signal(int sig, void (*fn)(int, siginfo_t *, void *)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO;
    sigaction(sig, &sa, NULL);
}

static void on_usr1(int sig, siginfo_t *info, void *uc) {
    (void)sig, (void)info;
    fl_regs_t r;
    fl_regs_from_ucontext(&r, uc);
    fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_live_images, .use_cfi = g_live_cfi};
    fl_frames_walk(&env, &r, g_live, 64, &g_live_res);
}

static const char *name_of(uint64_t pc, bool return_address) {
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)(return_address ? pc - 1 : pc), &info) || !info.dli_sname) return "?";
    return info.dli_sname;
}

/* True when names[] appear in order among the walked frames. */
static bool frames_have(const char *const *names, unsigned n) {
    unsigned k = 0;
    for (unsigned i = 0; i < g_live_res.count && k < n; i++)
        if (strcmp(name_of(g_live[i].pc, i > 0), names[k]) == 0) k++;
    if (k != n) {
        fprintf(stderr, "walk:");
        for (unsigned i = 0; i < g_live_res.count; i++) fprintf(stderr, " %s", name_of(g_live[i].pc, i > 0));
        fprintf(stderr, " (%s)\n", g_live_res.stop_reason);
    }
    return k == n;
}

void nofp_mid(void);
NOINLINE void fp_leaf(void) { raise(SIGUSR1); NOTAIL(); }
NOINLINE void fp_mid(void) { fp_leaf(); NOTAIL(); }
NOINLINE void fp_top(void) { fp_mid(); NOTAIL(); }
NOINLINE void nofp_top(void) { nofp_mid(); NOTAIL(); }

static void test_live(void) {
    CHECK(fl_memory_init(FL_MEMORY_NONE) == 0);
    CHECK(fl_elf_images_prepare() == 0);
    CHECK(fl_elf_images_collect(fl_memory_reader(), &g_live_images) == 0);
    on_signal(SIGUSR1, on_usr1);

    /* Frame-pointer code: both walkers see the whole chain. */
    static const char *const fp_chain[] = {"fp_leaf", "fp_mid", "fp_top", "main"};
    g_live_cfi = true;
    fp_top();
    CHECK(frames_have(fp_chain, 4));
    CHECK(g_live[0].method == FL_FRAME_CONTEXT);

    /* Code without frame records: CFI gives the whole chain. */
    static const char *const nofp_chain[] = {"nofp_leaf", "nofp_mid", "nofp_top", "main"};
    nofp_top();
    CHECK(frames_have(nofp_chain, 4));
    bool any_cfi = false;
    for (unsigned i = 0; i < g_live_res.count; i++) any_cfi |= g_live[i].method == FL_FRAME_CFI;
    CHECK(any_cfi);
}

/* ---- a frame record on another stack (docs/unwinding.md, step 3b) ---- */

static fl_maps_t g_maps;
static char g_maps_scratch[1 << 16];
static fl_image_list_t g_no_cfi; /* the live images without their unwind tables (as Go's code) */

/* A real return address: it follows a call instruction in this program's text. */
NOINLINE static uint64_t return_address(void) {
    uint64_t r = (uint64_t)(uintptr_t)__builtin_return_address(0);
    NOTAIL();
    return r;
}

/* Frame 0 a call through NULL on stack A, whose fp names a chain of `n` records on stack B (a
 * mapping of its own, with PROT_NONE pages around), the last with return address `last`; B's
 * protection `prot`; code without unwind tables (g_no_cfi). The frames walked. */
static unsigned switch_walk(unsigned n, uint64_t ret, uint64_t last, int prot, fl_frame_t *f,
                            fl_walk_result_t *res) {
    size_t page = 4096, span = 16 * page;
    char *m = mmap(NULL, 5 * span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 0;
    uint64_t *a = (uint64_t *)(m + span), *b = (uint64_t *)(m + 3 * span);
    mprotect(a, span, PROT_READ | PROT_WRITE);
    mprotect(b, span, PROT_READ | PROT_WRITE);
    memset(a, 0, span);
    memset(b, 0, span);
    uint64_t base = (uint64_t)(uintptr_t)b;
    for (unsigned k = 0; k < n; k++) { /* records at b[32], b[64], ...: each next one higher */
        b[32 * (k + 1)] = k + 1 < n ? base + 8ull * 32 * (k + 2) : 0;
        b[32 * (k + 1) + 1] = k + 1 < n ? ret : last;
    }
    if (mprotect(b, span, prot) != 0) { /* (PROT_EXEC on data may be refused: no such case) */
        munmap(m, 5 * span);
        return UINT32_MAX;
    }
    fl_maps_read(&g_maps, g_maps_scratch, sizeof g_maps_scratch);
    fl_regs_t r;
    memset(&r, 0, sizeof r);
    for (unsigned i = 0; i < fl_regs_count(); i++) { /* pc 0; lr 0 and [sp] 0: no entry step */
        const char *nm = fl_regs_name(i);
        if (!strcmp(nm, "rsp") || !strcmp(nm, "sp")) r.r[i] = (uint64_t)(uintptr_t)&a[64];
        if (!strcmp(nm, "rbp") || !strcmp(nm, "fp")) r.r[i] = base + 8ull * 32;
    }
    fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_no_cfi,
                         .stack_lo = (uint64_t)(uintptr_t)a, .stack_hi = (uint64_t)(uintptr_t)a + span,
                         .use_cfi = true, .maps = &g_maps};
    fl_frames_walk(&env, &r, f, 16, res);
    munmap(m, 5 * span);
    return res->count;
}

static void test_stack_switch(void) {
    fl_frame_t f[16];
    fl_walk_result_t res;
    uint64_t ret = return_address();
    g_no_cfi = g_live_images;
    for (unsigned i = 0; i < g_no_cfi.count; i++) {
        g_no_cfi.image[i].eh_frame_hdr = g_no_cfi.image[i].eh_frame_hdr_size = 0;
        g_no_cfi.image[i].eh_frame = g_no_cfi.image[i].eh_frame_size = 0;
    }
    /* Three records chain on B: followed there, and on to the end of B's chain. */
    CHECK_EQ_U64(switch_walk(3, ret, ret, PROT_READ | PROT_WRITE, f, &res), 4);
    CHECK(f[1].method == FL_FRAME_FP && f[1].pc == ret && f[3].pc == ret);
    CHECK(f[2].sp > f[1].sp && f[3].sp > f[2].sp);
    /* A longer chain: the same, to its end. */
    CHECK_EQ_U64(switch_walk(6, ret, ret, PROT_READ | PROT_WRITE, f, &res), 7);
    /* Two records only, the third's return address follows no call: not followed. */
    CHECK_EQ_U64(switch_walk(3, ret, ret + 1, PROT_READ | PROT_WRITE, f, &res), 1);
    /* B not writable, or executable (code, not a stack): not followed. */
    CHECK_EQ_U64(switch_walk(3, ret, ret, PROT_READ, f, &res), 1);
    unsigned x = switch_walk(3, ret, ret, PROT_READ | PROT_WRITE | PROT_EXEC, f, &res);
    CHECK(x == 1 || x == UINT32_MAX);
}

/* ---- a frame a signal interrupted, in code without unwind tables (docs/unwinding.md) ---- */

/* A leaf without unwind tables (no CFI directives: no FDE) that sends a signal with its own
 * system call: the signal is delivered as the call returns, so the interrupted pc lies in the
 * leaf, which has pushed nothing (x86_64: its return address is at [sp]; arm64: in lr). */
void nocfi_leaf_kill(long pid, long sig);
#if defined(__x86_64__)
__asm__(".text\n.globl nocfi_leaf_kill\n.type nocfi_leaf_kill,@function\nnocfi_leaf_kill:\n"
        "  mov $62, %eax\n  syscall\n  ret\n.size nocfi_leaf_kill,.-nocfi_leaf_kill\n");
#elif defined(__aarch64__)
__asm__(".text\n.globl nocfi_leaf_kill\n.type nocfi_leaf_kill,%function\nnocfi_leaf_kill:\n"
        "  mov x8, #129\n  svc #0\n  ret\n.size nocfi_leaf_kill,.-nocfi_leaf_kill\n");
#endif

static void on_usr2(int sig, siginfo_t *info, void *uc) {
    (void)sig, (void)info, (void)uc;
    fl_regs_t r;
    fl_regs_get_current(&r); /* the walk starts in the handler and crosses the signal frame */
    fl_walk_env_t env = {.mem = fl_memory_reader(), .images = &g_live_images, .use_cfi = true};
    fl_frames_walk(&env, &r, g_live, 64, &g_live_res);
}

NOINLINE void interrupted_caller(void) { nocfi_leaf_kill(getpid(), SIGUSR2); NOTAIL(); }
NOINLINE void interrupted_top(void) { interrupted_caller(); NOTAIL(); }

/* The walk from inside a handler: past the signal frame, the interrupted leaf (an exact pc, as
 * frame 0's) must be followed by its caller, as frame 0 would be, not by the caller's caller that
 * the frame record at fp names. */
static void test_interrupted_leaf(void) {
    on_signal(SIGUSR2, on_usr2);
    memset(&g_live_res, 0, sizeof g_live_res);
    interrupted_top();
    static const char *const chain[] = {"nocfi_leaf_kill", "interrupted_caller", "interrupted_top",
                                        "main"};
    CHECK(frames_have(chain, 4));
    unsigned k = 0; /* the caller right after the leaf */
    while (k < g_live_res.count && strcmp(name_of(g_live[k].pc, k > 0), "nocfi_leaf_kill")) k++;
    CHECK(k + 1 < g_live_res.count);
    if (k + 1 < g_live_res.count) CHECK_STREQ(name_of(g_live[k + 1].pc, true), "interrupted_caller");
}

int main(void) {
    test_synthetic();
    test_stack_bottom();
    test_live();
    test_stack_switch();
    test_interrupted_leaf();
    TEST_END();
}
