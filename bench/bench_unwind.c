/* SPDX-License-Identifier: MIT */
/* bench_unwind: in-process stack walking cost (ns/frame, ns/trace) at depths 16, 64 and 256 for
 * faultline's walkers (CFI warm and cold, and with LLVM libunwind as its CFI engine), the
 * privatised LLVM libunwind's own step loop, nongnu libunwind's cached unw_backtrace and its
 * unw_step loop (libunwind.so.8, loaded at run time), and glibc backtrace(). */
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "bench.h"
#include "elf/elf.h"
#include "frames/cfi_linux.h" /* fl_lu_unw_* and the loader shim's image list */

#define MAXF 1024u

static unsigned g_rounds = 101, g_walks = 100;

/* Shared by every method: the images, the stack bounds, the context walks start from. */
static fl_image_list_t g_images;
static fl_maps_t g_maps;
static char g_maps_scratch[64 * 1024];
static uint64_t g_stack_lo, g_stack_hi;
static fl_reader_t g_stack_reader; /* a buffer reader over the stack mapping: no syscalls */
static ucontext_t g_uc;
static fl_regs_t g_regs;

static fl_frame_t g_out[MAXF];
static void *g_bt[MAXF];
static fl_walk_result_t g_res;

static fl_walk_env_t env_of(const fl_reader_t *mem, bool cfi) {
    return (fl_walk_env_t){.mem = mem, .images = &g_images, .stack_lo = g_stack_lo,
                           .stack_hi = g_stack_hi, .use_cfi = cfi};
}

/* ---- the methods: each walks once and returns the frames it found ---- */

NOINLINE static unsigned m_fp_live(void) {
    fl_walk_env_t env = env_of(fl_memory_reader(), false);
    fl_frames_walk_fp(&env, &g_regs, g_out, MAXF, &g_res);
    return g_res.count;
}

NOINLINE static unsigned m_fp_buffer(void) {
    fl_walk_env_t env = env_of(&g_stack_reader, false);
    fl_frames_walk_fp(&env, &g_regs, g_out, MAXF, &g_res);
    return g_res.count;
}

NOINLINE static unsigned m_cfi(void) {
    fl_walk_env_t env = env_of(&g_stack_reader, true); /* as capture_linux.c sets it up */
    fl_frames_walk(&env, &g_regs, g_out, MAXF, &g_res);
    return g_res.count;
}

/* The same walk with another CFI mode (read when a walk begins). */
static unsigned walk_mode(int mode) {
    fl_frames_cfi_mode(mode);
    unsigned n = m_cfi();
    fl_frames_cfi_mode(FL_CFI_MODE_CACHED);
    return n;
}
/* Cold: every frame's row computed from the tables (no cache at all). */
NOINLINE static unsigned m_cfi_cold(void) { return walk_mode(FL_CFI_MODE_UNCACHED); }
/* The cache emptied before each walk: only the first visit of each pc computes its row. */
NOINLINE static unsigned m_cfi_first(void) {
    fl_frames_cfi_cache_flush();
    return m_cfi();
}
/* The walker with LLVM libunwind as its CFI engine (how faultline walked before its own). */
NOINLINE static unsigned m_cfi_llvm(void) { return walk_mode(FL_CFI_MODE_LLVM); }

/* nongnu libunwind (Debian's libunwind8), loaded at run time: its unw_backtrace keeps a cache of
 * frame rules by ip; its unw_step loop does not use it. */
static int (*g_ng_backtrace)(void **, int);
static int (*g_ng_getcontext)(void *);
static int (*g_ng_init_local)(void *, void *);
static int (*g_ng_step)(void *);
static int (*g_ng_get_reg)(void *, int, uint64_t *);

NOINLINE static unsigned m_nongnu_backtrace(void) {
    return g_ng_backtrace ? (unsigned)g_ng_backtrace(g_bt, (int)MAXF) : 0;
}

NOINLINE static unsigned m_nongnu_step(void) {
    static ucontext_t ctx; /* nongnu's x86_64 unw_context_t is a ucontext_t */
    static uint64_t cursor[512]; /* UNW_TDEP_CURSOR_LEN is 127 words on x86_64 */
    unsigned n = 0;
    if (!g_ng_getcontext || g_ng_getcontext(&ctx) || g_ng_init_local(cursor, &ctx)) return 0;
    do {
        uint64_t ip = 0;
        g_ng_get_reg(cursor, -1 /* UNW_REG_IP */, &ip);
        g_out[n++].pc = ip;
    } while (n < MAXF && g_ng_step(cursor) > 0);
    return n;
}

static const char *nongnu_load(void) {
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) return dlerror();
#if defined(__x86_64__)
#define NG(name) "_ULx86_64_" name
#else
#define NG(name) "_ULaarch64_" name
#endif
    *(void **)&g_ng_backtrace = dlsym(h, "unw_backtrace");
    *(void **)&g_ng_init_local = dlsym(h, NG("init_local"));
    *(void **)&g_ng_step = dlsym(h, NG("step"));
    *(void **)&g_ng_get_reg = dlsym(h, NG("get_reg"));
    *(void **)&g_ng_getcontext = dlsym(h, "_Ux86_64_getcontext");
    if (!g_ng_init_local || !g_ng_step || !g_ng_get_reg || !g_ng_getcontext) g_ng_getcontext = 0;
    return g_ng_backtrace ? NULL : "no unw_backtrace in libunwind.so.8";
}

/* A floor for frame-pointer walking: direct loads with only the monotonic and bounds checks
 * (what the research notes call "bounded, monotonic"; unsafe on a corrupt stack). */
NOINLINE static unsigned m_fp_raw(void) {
    uint64_t fp = fl_regs_fp(&g_regs), lo = fl_regs_sp(&g_regs);
    unsigned n = 0;
    g_out[n++].pc = fl_regs_pc(&g_regs);
    while (n < MAXF && fp >= lo && fp + 16 <= g_stack_hi && !(fp & 7)) {
        const uint64_t *rec = (const uint64_t *)(uintptr_t)fp;
        if (!rec[1]) break;
        g_out[n++].pc = rec[1];
        lo = fp + 16;
        fp = rec[0];
    }
    return n;
}

NOINLINE static unsigned m_libunwind(void) {
    unw_context_t ctx;
    unw_cursor_t cur;
    unsigned n = 0;
    /* Its loader shim answers from our image list (as during a crash-path CFI step). */
    fl_unwind_shims_set_images(&g_images);
    fl_lu_unw_getcontext(&ctx);
    if (fl_lu_unw_init_local(&cur, &ctx) != UNW_ESUCCESS) return 0;
    do {
        unw_word_t ip;
        fl_lu_unw_get_reg(&cur, UNW_REG_IP, &ip);
        g_out[n++].pc = ip;
    } while (n < MAXF && fl_lu_unw_step(&cur) > 0);
    return n;
}

/* The crash path's walker told to stop two frames before the end: no search for a caller of
 * the outermost frame (_start), which is otherwise a scan of up to 512 stack slots. */
static unsigned g_cfi_full;
NOINLINE static unsigned m_cfi_short(void) {
    fl_walk_env_t env = env_of(&g_stack_reader, true);
    fl_frames_walk(&env, &g_regs, g_out, g_cfi_full > 3 ? g_cfi_full - 2 : 1, &g_res);
    return g_res.count;
}

NOINLINE static unsigned m_backtrace(void) { return (unsigned)backtrace(g_bt, (int)MAXF); }

typedef struct method {
    const char *name;
    unsigned (*fn)(void);
} method_t;

static const method_t g_methods[] = {
    {"fl_frames_walk_fp (FP, live safe reader)", m_fp_live},
    {"fl_frames_walk_fp (FP, stack buffer reader)", m_fp_buffer},
    {"fl_frames_walk (CFI-first, crash path reads)", m_cfi},
    {"  same, stopped 2 frames short of the end", m_cfi_short},
    {"  CFI cold: no cache, every row computed", m_cfi_cold},
    {"  CFI cache emptied before each walk", m_cfi_first},
    {"  CFI engine: LLVM libunwind (before)", m_cfi_llvm},
    {"LLVM libunwind init_local+step loop", m_libunwind},
    {"nongnu libunwind unw_backtrace (cached)", m_nongnu_backtrace},
    {"nongnu libunwind init_local+step loop", m_nongnu_step},
    {"glibc backtrace()", m_backtrace},
    {"reference: raw FP loop, direct loads", m_fp_raw},
};
#define NMETHODS (sizeof g_methods / sizeof g_methods[0])

typedef struct result {
    unsigned frames;
    double ns_trace, ns_trace_min, ns_frame;
} result_t;

/* Median over g_rounds rounds of the mean time of the walks in a round: g_walks walks, fewer
 * for slow methods (a round then lasts about 200 us; at least one walk). */
NOINLINE static result_t measure(unsigned (*fn)(void)) {
    static uint64_t t[10001];
    result_t r = {.frames = fn()};
    uint64_t t0 = bench_now_ns();
    fn();
    uint64_t one = bench_now_ns() - t0;
    unsigned walks = one ? (unsigned)(200000 / one) : g_walks;
    if (walks > g_walks) walks = g_walks;
    if (walks < 1) walks = 1;
    for (unsigned i = 0; i < g_rounds; i++) {
        t0 = bench_now_ns();
        for (unsigned k = 0; k < walks; k++) fn();
        t[i] = bench_now_ns() - t0;
    }
    r.ns_trace = (double)bench_percentile(t, g_rounds, 50) / walks;
    r.ns_trace_min = (double)t[0] / walks;
    r.ns_frame = r.frames ? r.ns_trace / r.frames : 0;
    return r;
}

static result_t g_results[3][NMETHODS];
static unsigned g_depth_index;
static char g_fp_stop[128], g_cfi_stop[128];

/* At the bottom of the recursion: capture this frame's context (as a crash handler would get it
 * from the kernel) and run every method from here. */
NOINLINE static unsigned bottom(void) {
    getcontext(&g_uc);
    fl_regs_from_ucontext(&g_regs, &g_uc);
    g_cfi_full = m_cfi();
    for (unsigned m = 0; m < NMETHODS; m++) g_results[g_depth_index][m] = measure(g_methods[m].fn);
    m_fp_live();
    snprintf(g_fp_stop, sizeof g_fp_stop, "%s", g_res.stop_reason);
    m_cfi();
    snprintf(g_cfi_stop, sizeof g_cfi_stop, "%s", g_res.stop_reason);
    NOTAIL();
    return 0;
}

/* The same two faultline walkers from a SIGUSR1 handler's ucontext: the context then lies in
 * glibc's raise (built without frame pointers), as for abort() or a fault inside libc. */
static result_t g_sig[2];
static void on_usr1(int sig, siginfo_t *info, void *uc) {
    (void)sig, (void)info;
    fl_regs_from_ucontext(&g_regs, uc);
    g_sig[0] = measure(m_fp_live);
    g_sig[1] = measure(m_cfi);
}
NOINLINE static unsigned bottom_signal(void) {
    raise(SIGUSR1);
    NOTAIL();
    return 0;
}

/* `bench_unwind profile M N [DEPTH]`: method M alone, N walks at DEPTH (64) (for perf record). */
static unsigned g_profile_method, g_profile_walks, g_profile_depth;
NOINLINE static unsigned bottom_profile(void) {
    getcontext(&g_uc);
    fl_regs_from_ucontext(&g_regs, &g_uc);
    g_cfi_full = m_cfi();
    for (unsigned i = 0; i < g_profile_walks; i++) g_methods[g_profile_method].fn();
    NOTAIL();
    return 0;
}

static unsigned (*g_bottom)(void) = bottom;

/* depth frames of recurse() above the bottom; no inlining, no tail calls. */
NOINLINE static unsigned recurse(unsigned n) {
    if (n <= 1) return g_bottom();
    unsigned r = recurse(n - 1);
    NOTAIL();
    return r + 1;
}

int main(int argc, char **argv) {
    if (argc > 3 && !strcmp(argv[1], "profile")) {
        g_profile_method = (unsigned)atoi(argv[2]);
        g_profile_walks = (unsigned)atoi(argv[3]);
        g_profile_depth = argc > 4 ? (unsigned)atoi(argv[4]) : 64;
        if (g_profile_method >= NMETHODS) return 2;
        g_bottom = bottom_profile;
    } else if (argc > 1) {
        g_rounds = (unsigned)atoi(argv[1]);
    }
    if (argc > 2 && g_bottom != bottom_profile) g_walks = (unsigned)atoi(argv[2]);
    if (g_rounds < 1 || g_rounds > 10001) g_rounds = 101;
    if (g_walks < 1) g_walks = 100;

    if (fl_memory_init(FL_MEMORY_NONE) || fl_elf_images_prepare() ||
        fl_elf_images_collect(fl_memory_reader(), &g_images)) {
        fprintf(stderr, "bench_unwind: set-up failed\n");
        return 1;
    }
    /* The stack mapping, found as the crash path finds it. */
    uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    const fl_map_t *sm = fl_maps_read(&g_maps, g_maps_scratch, sizeof g_maps_scratch) == 0
                             ? fl_maps_find(&g_maps, sp) : NULL;
    if (!sm) {
        fprintf(stderr, "bench_unwind: stack mapping not found\n");
        return 1;
    }
    fl_images_map_tables(&g_images, &g_maps); /* as the crash path does */
    g_stack_lo = sm->start;
    g_stack_hi = sm->end;
    fl_reader_init_buffer(&g_stack_reader, (const void *)(uintptr_t)g_stack_lo,
                          g_stack_hi - g_stack_lo, g_stack_lo);
    /* The raw libunwind loop goes through the loader shim, like the crash path's CFI steps. */
    fl_unwind_shims_set_images(&g_images);
    backtrace(g_bt, 4); /* glibc loads libgcc_s on first use */
    const char *ng_err = nongnu_load();

    if (g_bottom == bottom_profile) {
        recurse(g_profile_depth);
        printf("%s: %u walks of %u frames\n", g_methods[g_profile_method].name, g_profile_walks,
               g_cfi_full);
        return 0;
    }
    static const unsigned depths[3] = {16, 64, 256};
    for (g_depth_index = 0; g_depth_index < 3; g_depth_index++) recurse(depths[g_depth_index]);

    printf("## bench_unwind (median of %u rounds of up to %u walks, ~200 us per round; context "
           "from getcontext at the bottom of a noinline recursion)\n\n", g_rounds, g_walks);
    printf("memory reader: %s; images: %u\n\n",
           fl_memory_method() == FL_MEMORY_VM_READV ? "process_vm_readv" : "pipe", g_images.count);
    printf("| %-44s | depth | frames | ns/trace | min ns/trace | ns/frame |\n", "method");
    printf("|----------------------------------------------|-------|--------|----------|--------------|----------|\n");
    bool disagree = false;
    for (unsigned d = 0; d < 3; d++) {
        for (unsigned m = 0; m < NMETHODS; m++) {
            result_t *r = &g_results[d][m];
            printf("| %-44s | %5u | %6u | %8.0f | %12.0f | %8.2f |\n", g_methods[m].name, depths[d],
                   r->frames, r->ns_trace, r->ns_trace_min, r->ns_frame);
            int diff = (int)r->frames - (int)g_results[d][2].frames;
            if (g_methods[m].fn != m_cfi_short && r->frames && (diff > 4 || diff < -4)) disagree = true;
        }
    }
    /* What one safe read costs here: the live reader's syscalls set the FP walker's pace. */
    uint64_t word, cal[101];
    for (unsigned i = 0; i < 101; i++) {
        uint64_t t0 = bench_now_ns();
        for (unsigned k = 0; k < 100; k++) fl_read_u64(fl_memory_reader(), (uint64_t)(uintptr_t)&g_depth_index, &word);
        cal[i] = bench_now_ns() - t0;
    }
    double ns_read = bench_percentile(cal, 101, 50) / 100.0;
    for (unsigned i = 0; i < 101; i++) {
        uint64_t t0 = bench_now_ns();
        for (unsigned k = 0; k < 100; k++) getppid();
        cal[i] = bench_now_ns() - t0;
    }
    double ns_sys = bench_percentile(cal, 101, 50) / 100.0;
    printf("\ncalibration: one fl_read_u64 through the live reader %.0f ns; one getppid() syscall "
           "%.0f ns\n", ns_read, ns_sys);
    printf("stop reasons at depth 256: fl_frames_walk_fp: %s; fl_frames_walk: %s\n", g_fp_stop,
           g_cfi_stop);
    if (ng_err) printf("nongnu libunwind not measured: %s\n", ng_err);
    fl_cfi_stats_t st;
    fl_frames_cfi_stats(&st);
    printf("CFI counts over all the walks above: %llu steps by faultline's evaluator (%llu rows "
           "from the cache, %llu computed), %llu declined to LLVM libunwind, %llu LLVM libunwind "
           "steps in all, %llu table errors; cache hit rate in the cached modes: see below\n",
           (unsigned long long)st.steps, (unsigned long long)st.hits,
           (unsigned long long)st.misses, (unsigned long long)st.declined,
           (unsigned long long)st.fallback, (unsigned long long)st.errors);
    if (disagree)
        printf("WARNING: frame counts differ by more than 4 from fl_frames_walk at some depth\n");

    /* From a signal handler, depth 64. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    g_bottom = bottom_signal;
    recurse(64);
    printf("\nFrom a SIGUSR1 handler's ucontext (pc inside glibc's raise), depth 64:\n\n");
    printf("| %-44s | frames | ns/trace | ns/frame |\n", "method");
    printf("|----------------------------------------------|--------|----------|----------|\n");
    printf("| %-44s | %6u | %8.0f | %8.2f |\n", g_methods[0].name, g_sig[0].frames, g_sig[0].ns_trace,
           g_sig[0].ns_frame);
    printf("| %-44s | %6u | %8.0f | %8.2f |\n", g_methods[2].name, g_sig[1].frames, g_sig[1].ns_trace,
           g_sig[1].ns_frame);
    printf("\n");

    char buf[128];
    result_t *fp = &g_results[1][0], *fpb = &g_results[1][1], *cfi = &g_results[1][2],
             *cfis = &g_results[1][3];
    /* The crash path reads the crashed thread's stack mapping directly (as the buffer reader
     * here does) and everything else through the live safe reader. */
    snprintf(buf, sizeof buf, "%.1f ns/frame reading the stack mapping as the crash path does "
             "(%.0f through the live safe reader alone)", fpb->ns_frame, fp->ns_frame);
    bench_goal("FP walk @64", buf, "<= 2 ns/frame", fpb->ns_frame <= 2.0);
    snprintf(buf, sizeof buf, "%.1f us/trace, %u frames (%.1f us without the end-of-stack search)",
             cfi->ns_trace / 1e3, cfi->frames, cfis->ns_trace / 1e3);
    bench_goal("crash-path walk @64 (CFI-first)", buf, "(no own goal)", -1);
    result_t *cold = &g_results[1][4], *llvm_walk = &g_results[1][6], *llvm = &g_results[1][7],
             *ngb = &g_results[1][8], *ngs = &g_results[1][9];
    snprintf(buf, sizeof buf, "%.1f ns/frame (LLVM unw_step loop %.0f, nongnu unw_backtrace %.1f, "
             "nongnu unw_step %.0f; walker with LLVM as engine %.0f)", cfi->ns_frame,
             llvm->ns_frame, ngb->ns_frame, ngs->ns_frame, llvm_walk->ns_frame);
    bench_goal("CFI walk @64, warm (cache hits)", buf, "<= 10 ns/frame", cfi->ns_frame <= 10.0);
    snprintf(buf, sizeof buf, "%.1f ns/frame, every row computed (%.1fx faster than LLVM unw_step)",
             cold->ns_frame, llvm->ns_frame / cold->ns_frame);
    bench_goal("CFI walk @64, cold (no cache)", buf, "<= 100 ns/frame", cold->ns_frame <= 100.0);
    return 0;
}
