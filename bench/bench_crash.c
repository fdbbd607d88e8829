/* SPDX-License-Identifier: MIT */
/* bench_crash: crash -> death of a forked child at depth 64 with faultline installed (an upper
 * bound of crash -> report on disk: the report is renamed into place before the process dies),
 * against the same child without faultline; plus the report's size. */
#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "faultline/faultline.h"

#define RUNS 50u
#define DEPTH 64u

typedef struct shared {
    volatile uint64_t crash_ns; /* written by the child right before the fault */
} shared_t;

static shared_t *g_shared;
static bool g_core_piped; /* kernel.core_pattern starts with '|' */
static volatile int *volatile g_null;

NOINLINE static unsigned recurse(unsigned n) {
    if (n <= 1) {
        g_shared->crash_ns = bench_now_ns();
        *g_null = 1;
        return 0;
    }
    unsigned r = recurse(n - 1);
    NOTAIL();
    return r + 1;
}

/* Files in dir (excluding . and ..); the first regular file's size goes to *size. */
static int count_files(const char *dir, long long *size, char *first, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n++ == 0) {
            struct stat st;
            char path[1400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            *size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
            snprintf(first, cap, "%s", path);
        }
    }
    closedir(d);
    return n;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[1400];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* One crash; returns crash->death in ns, or 0 on failure (reported on stderr). */
static uint64_t run_once(const char *dir, bool install, long long *report_size, int *errors) {
    g_shared->crash_ns = 0;
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
            fl_options o = {.report_dir = dir, .app_name = "bench_crash", .app_version = "0"};
            if (fl_install(&o) != 0) _exit(100);
        }
        recurse(DEPTH);
        _exit(101);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
    }
    uint64_t death = bench_now_ns();
    uint64_t crash = g_shared->crash_ns;
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) {
        fprintf(stderr, "bench_crash: ERROR: child %s %d, expected death by SIGSEGV\n",
                WIFSIGNALED(status) ? "died of signal" : "exited with",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        ++*errors;
        return 0;
    }
    if (install) {
        char first[1400] = "";
        int n = count_files(dir, report_size, first, sizeof first);
        char **paths = NULL;
        size_t complete = 0;
        if (fl_list_reports(dir, &paths, &complete) == 0) fl_free_report_list(paths, complete);
        if (n != 1 || complete != 1) {
            fprintf(stderr, "bench_crash: ERROR: %d files, %zu complete reports in %s (expected 1)\n",
                    n, complete, dir);
            ++*errors;
        }
    }
    if (!crash || death < crash) {
        fprintf(stderr, "bench_crash: ERROR: no crash time recorded\n");
        ++*errors;
        return 0;
    }
    return death - crash;
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

static const char *fs_name(const char *path) {
    struct statfs sf;
    if (statfs(path, &sf) != 0) return "unknown";
    switch ((unsigned long)sf.f_type) {
    case 0xEF53: return "ext2/3/4";
    case 0x01021994: return "tmpfs";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794C7630: return "overlayfs";
    default: return "other";
    }
}

/* Prints one table row; returns the median (0 if no samples). */
static uint64_t row(const char *what, uint64_t *v, unsigned n) {
    if (!n) return 0;
    uint64_t p50 = bench_percentile(v, n, 50), p90 = bench_percentile(v, n, 90);
    printf("| %-40s | %9.1f | %6.1f | %6.1f | %6.1f |\n", what, p50 / 1e3, p90 / 1e3, v[0] / 1e3,
           v[n - 1] / 1e3);
    return p50;
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
    const char *tmpdir = getenv("TMPDIR");
    char base[1024];
    snprintf(base, sizeof base, "%s/fl-bench-crash-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    uint64_t *with = calloc(runs, 8), *without = calloc(runs, 8);
    long long *sizes = calloc(runs, sizeof *sizes);
    if (!with || !without || !sizes) return 1;
    int errors = 0;
    unsigned nwith = 0, nwithout = 0;
    long long size_min = -1, size_max = -1;
    /* Interleaved so that drift in the machine's load affects both alike. */
    for (unsigned i = 0; i < runs; i++) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/run%u", base, i);
        long long sz = -1;
        uint64_t t = run_once(dir, true, &sz, &errors);
        if (t) with[nwith++] = t;
        if (sz >= 0) {
            if (size_min < 0 || sz < size_min) size_min = sz;
            if (sz > size_max) size_max = sz;
        }
        remove_dir(dir);
        t = run_once(dir, false, &sz, &errors);
        if (t) without[nwithout++] = t;
    }
    uint64_t *fops = calloc(runs, 8);
    unsigned nfops = 0;
    for (unsigned i = 0; fops && i < runs; i++) {
        uint64_t t = file_ops_ns(base, size_max);
        if (t) fops[nfops++] = t;
    }
    const char *fs = fs_name(base);
    rmdir(base);

    printf("## bench_crash (%u runs, depth %u, one thread; child forked, fl_install in the child)\n\n",
           runs, DEPTH);
    printf("| %-40s | median us | p90 us | min us | max us |\n", "crash -> parent sees death");
    printf("|------------------------------------------|-----------|--------|--------|--------|\n");
    uint64_t m_with = row("with faultline (report written)", with, nwith);
    uint64_t m_without = row("without faultline (baseline)", without, nwithout);
    if (fops) row("reference: create+write+fsync+rename", fops, nfops);
    printf("\nreport directories under %s (file system: %s)\n", tmpdir && *tmpdir ? tmpdir : "/tmp", fs);
    printf("report size: %lld bytes", size_max);
    if (size_min != size_max) printf(" (min %lld)", size_min);
    printf("; errors: %d (each run checks: death by SIGSEGV, exactly one complete report)\n\n", errors);

    char buf[128];
    snprintf(buf, sizeof buf, "%.0f us median crash->death (baseline %.0f us, difference %.0f us)",
             m_with / 1e3, m_without / 1e3, ((double)m_with - (double)m_without) / 1e3);
    bench_goal("crash->report, 1 thread, depth 64", buf, "<= 1 ms", nwith && m_with <= 1000000 && !errors);
    snprintf(buf, sizeof buf, "%lld bytes", size_max);
    bench_goal("report size, 1 thread, depth 64", buf, "(reported)", -1);
    return errors ? 1 : 0;
}
