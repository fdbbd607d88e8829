/* SPDX-License-Identifier: MIT */
/* bench_crash: crash -> report of a forked child whose threads (1 to 1,000) all sit at the bottom
 * of a 64-deep recursion, the others asleep: the time until the report is renamed into place
 * (seen through inotify) and until the parent sees the death, against the same child without
 * faultline; plus the report's size. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "faultline/faultline.h"
#include "frames/frames.h" /* fl_frames_cfi_stats */
#include "parked.h"
#include "reports.h"

#define RUNS 50u
#define DEPTH 64u

typedef struct shared {
    volatile uint64_t crash_ns; /* written by the child right before the fault */
    volatile uint64_t steps, hits, misses, declined; /* CFI counts of the capture (faultline's
                                                      * own handler runs first, then ours) */
} shared_t;

static shared_t *g_shared;
static bool g_core_piped; /* kernel.core_pattern starts with '|' */
static volatile int *volatile g_null;

/* The application's own handler, installed before faultline: faultline runs it after its
 * capture, and it publishes the capture's CFI counts before the process dies of the signal. */
static void after_capture(int sig) {
    fl_cfi_stats_t st;
    fl_frames_cfi_stats(&st);
    g_shared->steps = st.steps;
    g_shared->hits = st.hits;
    g_shared->misses = st.misses;
    g_shared->declined = st.declined;
    signal(sig, SIG_DFL);
    raise(sig);
}

NOINLINE static void crash_now(void *arg) {
    (void)arg;
    g_shared->crash_ns = bench_now_ns();
    *g_null = 1;
}

/* One run's results. */
typedef struct sample {
    uint64_t report_ns; /* crash -> the report renamed into place (0: not seen) */
    uint64_t death_ns;  /* crash -> the parent sees the death */
    uint64_t steps, hits, misses, declined; /* the capture's CFI steps; rows from the cache or
                                             * computed */
    bench_report_t rep; /* with faultline */
} sample_t;

static int g_errors;
static bool g_stack_off; /* fl_options.crashed_stack_bytes = FL_STACK_BYTES_NONE (no stack memory) */
#define FAIL(...) (fprintf(stderr, "bench_crash: ERROR: " __VA_ARGS__), ++g_errors, false)

/* Whether the one report in dir describes `threads` threads, all captured at depth >= DEPTH. */
static bool check_report(const char *dir, unsigned threads, bench_report_t *rep) {
    char path[1400];
    int files = bench_dir_count(dir), n = bench_report_find(dir, path, sizeof path);
    if (files != 1 || n != 1) return FAIL("%d files, %d complete reports in %s (expected 1)\n", files, n, dir);
    if (bench_report_read(path, rep) != 0) return FAIL("unreadable report\n");
    if (!rep->complete || rep->threads != threads || rep->threads_total != threads ||
        rep->captured != threads || rep->min_frames < DEPTH)
        return FAIL("%u threads: report lists %u of %u, %u captured, frames %u..%u%s\n", threads,
                    rep->threads, rep->threads_total, rep->captured, rep->min_frames,
                    rep->max_frames, rep->complete ? "" : ", incomplete");
    return true;
}

/* One crash of a child with `threads` threads; false on failure (reported on stderr). */
static bool run_once(const char *dir, bool install, unsigned threads, sample_t *s) {
    memset(s, 0, sizeof *s);
    g_shared->crash_ns = g_shared->steps = g_shared->hits = g_shared->misses = 0;
    g_shared->declined = 0;
    int watch = -1;
    if (install) {
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) return FAIL("mkdir %s: %s\n", dir, strerror(errno));
        watch = bench_watch_dir(dir);
        if (watch < 0) return FAIL("inotify on %s: %s\n", dir, strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        /* No core dump: its cost is the kernel's, not the reporter's, and would dominate. */
        struct rlimit rl = {0, 0};
        setrlimit(RLIMIT_CORE, &rl);
        if (g_core_piped) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* a pipe ignores RLIMIT_CORE */
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2); /* "crash report written to ..." */
        if (install) {
            signal(SIGSEGV, after_capture);
            fl_options o = {.report_dir = dir, .app_name = "bench_crash", .app_version = "0",
                            .crashed_stack_bytes = g_stack_off ? FL_STACK_BYTES_NONE : 0};
            if (fl_install(&o) != 0) _exit(100);
        }
        if (threads > 1 && bench_parked_start(threads - 1, DEPTH) != 0) _exit(102);
        bench_parked_recurse(DEPTH, crash_now, NULL);
        _exit(101);
    }
    uint64_t seen = install ? bench_wait_renamed(watch, 30000) : 0;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
    }
    uint64_t death = bench_now_ns(), crash = g_shared->crash_ns;
    if (watch >= 0) close(watch);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
        return FAIL("child %s %d, expected death by SIGSEGV\n",
                    WIFSIGNALED(status) ? "died of signal" : "exited with",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    if (!crash || death < crash) return FAIL("no crash time recorded\n");
    s->death_ns = death - crash;
    if (!install) return true;
    if (!seen || seen < crash) return FAIL("the report's rename was not seen\n");
    s->report_ns = seen - crash;
    s->steps = g_shared->steps;
    s->hits = g_shared->hits;
    s->misses = g_shared->misses;
    s->declined = g_shared->declined;
    return check_report(dir, threads, &s->rep);
}

/* Reference: what just the report's file operations cost here (create, write, fsync, close,
 * rename), for a file of the report's size in the same file system. */
static uint64_t file_ops_ns(const char *base, long long size) {
    static char buf[1 << 16];
    char tmp[1100], dst[1100];
    snprintf(tmp, sizeof tmp, "%s/.tmp-ref", base);
    snprintf(dst, sizeof dst, "%s/ref", base);
    if (size < 0 || size > (long long)sizeof buf) size = 2048;
    uint64_t t0 = bench_now_ns();
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return 0;
    ssize_t w = write(fd, buf, (size_t)size);
    fsync(fd);
    close(fd);
    rename(tmp, dst);
    uint64_t t = bench_now_ns() - t0;
    unlink(dst);
    return w == size ? t : 0;
}

/* Median and p90 of n values (sorted in place). */
typedef struct stat2 {
    uint64_t p50, p90;
} stat2_t;
static stat2_t stats(uint64_t *v, unsigned n) {
    stat2_t s = {bench_percentile(v, n, 50), bench_percentile(v, n, 90)};
    return s;
}

/* The thread counts, each with its share of the runs: the big ones cost ~0.1-0.3 s per run, most
 * of it creating the threads and the kernel tearing them down. */
static const struct {
    unsigned threads, runs_div;
} k_cases[] = {{1, 1}, {16, 2}, {64, 2}, {256, 3}, {1000, 5}};
#define NCASES (sizeof k_cases / sizeof k_cases[0])

typedef struct result {
    unsigned threads, runs;
    stat2_t report, death, base;
    long long bytes_min, bytes_max;
    unsigned frames_min, frames_max;
    uint64_t steps, hits, misses, declined; /* CFI counts of all the runs' captures */
} result_t;

static result_t run_case(const char *base, unsigned threads, unsigned runs) {
    result_t r = {.threads = threads, .runs = runs, .bytes_min = -1, .bytes_max = -1,
                  .frames_min = ~0u};
    uint64_t *rep = calloc(runs, 8), *death = calloc(runs, 8), *without = calloc(runs, 8);
    if (!rep || !death || !without) exit(1);
    unsigned n = 0, nb = 0;
    /* Interleaved so that drift in the machine's load affects both alike. */
    for (unsigned i = 0; i < runs; i++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/t%u-run%u", base, threads, i);
        sample_t s;
        if (run_once(dir, true, threads, &s)) {
            rep[n] = s.report_ns;
            death[n++] = s.death_ns;
            if (r.bytes_min < 0 || s.rep.bytes < r.bytes_min) r.bytes_min = s.rep.bytes;
            if (s.rep.bytes > r.bytes_max) r.bytes_max = s.rep.bytes;
            if (s.rep.min_frames < r.frames_min) r.frames_min = s.rep.min_frames;
            if (s.rep.max_frames > r.frames_max) r.frames_max = s.rep.max_frames;
            r.steps += s.steps, r.hits += s.hits, r.misses += s.misses, r.declined += s.declined;
        }
        bench_dir_clear(dir, true);
        if (run_once(dir, false, threads, &s)) without[nb++] = s.death_ns;
    }
    r.report = stats(rep, n);
    r.death = stats(death, n);
    r.base = stats(without, nb);
    r.runs = n;
    if (!n) r.frames_min = 0;
    free(rep);
    free(death);
    free(without);
    return r;
}

static const result_t *find(const result_t *res, unsigned threads) {
    for (unsigned i = 0; i < NCASES; i++)
        if (res[i].threads == threads) return &res[i];
    return NULL;
}

int main(int argc, char **argv) {
    unsigned runs = argc > 1 ? (unsigned)atoi(argv[1]) : RUNS;
    if (runs < 1) runs = RUNS;
    g_shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_shared == MAP_FAILED) return 1;
    FILE *cp = fopen("/proc/sys/kernel/core_pattern", "r");
    if (cp) {
        g_core_piped = fgetc(cp) == '|';
        fclose(cp);
    }
    char base[1024];
    if (!bench_mkdtemp(base, sizeof base, "crash")) return 1;
    /* A second argument runs only that thread count (for profiling: perf record -g). */
    unsigned only = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
    result_t res[NCASES];
    for (unsigned i = 0; i < NCASES; i++) {
        unsigned r = runs / k_cases[i].runs_div;
        if (only && k_cases[i].threads != only) {
            res[i] = (result_t){.threads = k_cases[i].threads};
            continue;
        }
        res[i] = run_case(base, k_cases[i].threads, r < 3 ? 3 : r);
    }
    result_t off[2] = {{0}};
    static const unsigned off_threads[2] = {1, 64};
    g_stack_off = true;
    for (unsigned i = 0; i < 2 && !only; i++) off[i] = run_case(base, off_threads[i], runs / 2 < 3 ? 3 : runs / 2);
    g_stack_off = false;
    const result_t *one = find(res, 1);
    uint64_t *fops = calloc(runs, 8);
    unsigned nfops = 0;
    for (unsigned i = 0; fops && one->runs && i < runs; i++) {
        uint64_t t = file_ops_ns(base, one->bytes_max);
        if (t) fops[nfops++] = t;
    }
    const char *fs = bench_fs_name(base);
    rmdir(base);

    printf("## bench_crash (depth %u: every thread at the bottom of a %u-deep recursion, the others "
           "asleep in a futex wait; one crashes; child forked, fl_install in the child)\n\n",
           DEPTH, DEPTH);
    printf("Times from the crash, median / p90 in ms: until the report is renamed into place (seen "
           "through inotify), until the parent sees the death; baseline: the same child without "
           "faultline.\n\n");
    printf("| threads | runs | report renamed    | death             | baseline death    | "
           "report bytes | bytes/thread | frames/thread | CFI steps/run | from the row cache |\n");
    printf("|--------:|-----:|------------------:|------------------:|------------------:|"
           "-------------:|-------------:|--------------:|--------------:|-------------------:|\n");
    for (unsigned i = 0; i < NCASES; i++) {
        const result_t *r = &res[i];
        if (!r->runs) continue;
        printf("| %7u | %4u | %7.2f / %7.2f | %7.2f / %7.2f | %7.2f / %7.2f | %12lld | %12.0f | "
               "%6u..%-6u | %13.0f | %17.1f%% |\n",
               r->threads, r->runs, r->report.p50 / 1e6, r->report.p90 / 1e6, r->death.p50 / 1e6,
               r->death.p90 / 1e6, r->base.p50 / 1e6, r->base.p90 / 1e6, r->bytes_max,
               (double)r->bytes_max / r->threads, r->frames_min, r->frames_max,
               (double)r->steps / r->runs,
               r->hits + r->misses ? 100.0 * r->hits / (r->hits + r->misses) : 0.0);
        if (r->declined)
            printf("WARNING: %llu CFI steps declined to LLVM libunwind\n", (unsigned long long)r->declined);
    }
    printf("(CFI steps: the capture's DWARF steps by faultline's evaluator, counted in the crashing "
           "process; row cache: the share of rows looked up that it had. Each run is a new "
           "process, so its cache starts empty)\n");
    printf("\n");
    /* Stack memory (docs/interop.md): the default (the crashed thread's 8 KiB, as above) against
     * none, for 1 and 64 threads, run after the table's cases. */
    if (!only) {
        printf("Stack memory: the default (the crashed thread's first 8 KiB from its sp) against none "
               "(crashed_stack_bytes = FL_STACK_BYTES_NONE); report bytes and crash -> report renamed, "
               "median ms.\n\n");
        printf("| threads | bytes, none | bytes, default | added | report, none | report, default |\n");
        printf("|--------:|------------:|---------------:|------:|-------------:|----------------:|\n");
        for (unsigned i = 0; i < 2; i++) {
            const result_t *on = find(res, off_threads[i]);
            printf("| %7u | %11lld | %14lld | %5lld | %9.2f ms | %12.2f ms |\n", off_threads[i],
                   off[i].bytes_max, on->bytes_max, on->bytes_max - off[i].bytes_max,
                   off[i].report.p50 / 1e6, on->report.p50 / 1e6);
        }
        printf("\n");
    }
    const result_t *big = find(res, 1000);
    if (one->bytes_max > 0 && big->bytes_max > 0)
        printf("each thread beyond the first adds %.0f bytes (1 -> 1,000 threads)\n",
               (double)(big->bytes_max - one->bytes_max) / (big->threads - 1));
    if (nfops && one->runs)
        printf("reference: create+write+fsync+rename of a %lld-byte file: %.2f ms median\n",
               one->bytes_max, bench_percentile(fops, nfops, 50) / 1e6);
    printf("report directories under %s (file system: %s); crash -> report renamed is seen by the "
           "parent through inotify\n", bench_tmp_root(), fs);
    printf("errors: %d (each run checks: death by SIGSEGV, exactly one complete report listing "
           "every thread as captured with >= %u frames)\n\n", g_errors, DEPTH);

    if (only) return g_errors ? 1 : 0;
    char buf[160];
    snprintf(buf, sizeof buf, "%.2f ms median crash->report renamed, p90 %.2f (->death %.2f, baseline %.2f)",
             one->report.p50 / 1e6, one->report.p90 / 1e6, one->death.p50 / 1e6, one->base.p50 / 1e6);
    bench_goal("crash->report, 1 thread, depth 64", buf, "<= 1 ms", one->runs && one->report.p50 <= 1000000);
    const result_t *r256 = find(res, 256), *r64 = find(res, 64);
    snprintf(buf, sizeof buf, "%.2f ms median crash->report renamed, p90 %.2f (%u runs)",
             r256->report.p50 / 1e6, r256->report.p90 / 1e6, r256->runs);
    bench_goal("crash->report, 256 threads x 64", buf, "<= 20 ms", r256->runs && r256->report.p50 <= 20000000);
    snprintf(buf, sizeof buf, "%.2f ms median, p90 %.2f (%u runs)", big->report.p50 / 1e6,
             big->report.p90 / 1e6, big->runs);
    bench_goal("crash->report, 1000 threads x 64", buf, "(reported)", -1);
    snprintf(buf, sizeof buf, "%lld bytes (%.0f per thread)", r64->bytes_max,
             (double)r64->bytes_max / r64->threads);
    bench_goal("report size, 64 threads x 64", buf, "<= 32 KB", r64->runs && r64->bytes_max <= 32768);
    snprintf(buf, sizeof buf, "1 thread %lld, 256 threads %lld, 1000 threads %lld bytes",
             one->bytes_max, r256->bytes_max, big->bytes_max);
    bench_goal("report size, other counts", buf, "(reported)", -1);
    return g_errors ? 1 : 0;
}
