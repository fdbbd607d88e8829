/* SPDX-License-Identifier: MIT */
/* Triage throughput: `faultline triage` on a folder of N real crash reports (children crashing at 4 sites, copied to N files), cold and warm symbol cache. */
#include <faultline/faultline.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "reports.h"

/* Usage: bench_triage [--reports N] [--cli FAULTLINE]   (default 10,000 reports) */

extern char **environ;
static volatile int g_zero, g_seven = 7;

NOINLINE static void site_null(void) {
    *(volatile int *)(uintptr_t)g_zero = 1;
    NOTAIL();
}
NOINLINE static void site_abort(void) {
    abort();
    NOTAIL();
}
NOINLINE static void site_div(void) {
    volatile int x = g_seven / g_zero; /* 1 / x compiles to no division */
    (void)x;
    NOTAIL();
}
static void *thread_body(void *arg) {
    (void)arg;
    site_null();
    return NULL;
}
NOINLINE static void site_thread(void) {
    pthread_t t;
    pthread_create(&t, NULL, thread_body, NULL);
    pthread_join(t, NULL);
}

/* Crashes a child at site s with its reports in dir; waits for it. */
static int crash_child(const char *dir, int s) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        fl_options o = {.report_dir = dir, .app_name = "bench-triage", .app_version = "1.0"};
        if (fl_install(&o) != 0) _exit(100);
        void (*sites[])(void) = {site_null, site_abort, site_div, site_thread};
        sites[s]();
        _exit(101);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFSIGNALED(st) ? 0 : -1;
}

static int copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[65536];
    ssize_t n;
    int rc = in >= 0 && out >= 0 ? 0 : -1;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n) rc = -1;
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    return rc;
}

static uint64_t run_triage(const char *cli, const char *dir, const char *cache) {
    char *argv[] = {(char *)cli, "triage", "--json", "--no-progress", "--cache-dir", (char *)cache,
                    (char *)dir, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    uint64_t t0 = bench_now_ns();
    pid_t pid;
    int st = 0;
    int e = posix_spawn(&pid, cli, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 0;
    return bench_now_ns() - t0;
}

int main(int argc, char **argv) {
    size_t n = 10000;
    const char *cli = FL_BENCH_CLI;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reports") == 0) n = strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--cli") == 0) cli = argv[i + 1];
    }
    char dir[4096], src[4200], many[4200], cache[4200];
    if (!bench_mkdtemp(dir, sizeof dir, "triage")) return 1;
    snprintf(src, sizeof src, "%s/src", dir);
    snprintf(many, sizeof many, "%s/reports", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    mkdir(src, 0700);
    mkdir(many, 0700);
    /* 8 real crashes: 4 sites, twice each (each child has its own ASLR slides). */
    for (int k = 0; k < 8; k++)
        if (crash_child(src, k % 4) != 0) {
            fprintf(stderr, "bench_triage: the child for site %d did not crash\n", k % 4);
            return 1;
        }
    char first[4200];
    int nsrc = bench_report_find(src, first, sizeof first);
    if (nsrc != 8) {
        fprintf(stderr, "bench_triage: %d reports, not 8\n", nsrc);
        return 1;
    }
    char **paths;
    size_t np;
    fl_list_reports(src, &paths, &np);
    long long bytes = 0;
    for (size_t i = 0; i < n; i++) {
        char to[4300];
        snprintf(to, sizeof to, "%s/faultline-%08zx.flr", many, i);
        if (copy_file(paths[i % np], to) != 0) {
            fprintf(stderr, "bench_triage: cannot write %s\n", to);
            return 1;
        }
        struct stat st;
        if (i < np && stat(paths[i], &st) == 0) bytes += st.st_size;
    }
    fl_free_report_list(paths, np);
    printf("## Triage throughput\n\n%zu reports (copies of 8 real crashes at 4 sites, %lld bytes on "
           "average) in %s\n", n, bytes / (long long)np, many);
    printf("    $ %s triage --json --no-progress --cache-dir %s %s > /dev/null\n", cli, cache, many);
    uint64_t cold = run_triage(cli, many, cache); /* builds and stores the indexes */
    uint64_t warm = 0;
    for (int r = 0; r < 3; r++) {
        uint64_t t = run_triage(cli, many, cache);
        if (t && (!warm || t < warm)) warm = t;
    }
    if (!cold || !warm) {
        fprintf(stderr, "bench_triage: faultline triage failed\n");
        return 1;
    }
    double rate = (double)n / (warm / 1e9);
    printf("  cold symbol cache: %.0f ms (%.0f reports/s)\n", cold / 1e6, (double)n / (cold / 1e9));
    printf("  warm symbol cache: %.0f ms (%.0f reports/s, %.1f us/report), best of 3\n\n",
           warm / 1e6, rate, warm / 1e3 / (double)n);
    char v[64];
    snprintf(v, sizeof v, "%.0f reports/s", rate);
    bench_goal("triage, warm symbol cache", v, ">= 10,000 reports/s", rate >= 10000);
    bench_dir_clear(src, true);
    bench_dir_clear(many, true);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_triage: could not remove %s\n", dir);
    return 0;
}
