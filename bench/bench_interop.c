/* SPDX-License-Identifier: MIT */
/* bench_interop: what converting one report costs the CLI: `faultline minidump` (fl_tool_minidump)
 * and `show --format sentry` (fl_tool_show_sentry) against `show --json` (fl_tool_show_json,
 * the reference, measured in the same run), on a snapshot of this process with 1 and with 64
 * threads parked 64 calls deep, each thread's 8 KiB of stack memory kept. The report is decoded
 * once; the conversions reuse one symbolizer (its indexes built by a first, unmeasured round).
 * Usage: bench_interop [ROUNDS] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "faultline/faultline.h"
#include "parked.h"
#include "tools/tool.h"

#define DEPTH 64u

static char g_dir[1024];
static int g_rc;

static void snap(void *arg) { g_rc = fl_snapshot(arg); }

/* The newest report of g_dir (the only one), read and decoded. */
static Faultline__Report *take_report(long *bytes) {
    DIR *d = opendir(g_dir);
    struct dirent *e;
    char path[2048] = "";
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "faultline-", 10) == 0) snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
    if (d) closedir(d);
    Faultline__Report *r = NULL;
    bool truncated;
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (f) {
        fseek(f, 0, SEEK_END);
        *bytes = ftell(f);
        fclose(f);
    }
    if (!path[0] || fl_report_read_file(path, &r, &truncated) != 0) return NULL;
    unlink(path);
    return r;
}

typedef void (*conv_fn)(const Faultline__Report *r, fl_tool_symbolizer_t *s, FILE *o);
static void conv_json(const Faultline__Report *r, fl_tool_symbolizer_t *s, FILE *o) { fl_tool_show_json(o, r, false, s); }
static void conv_sentry(const Faultline__Report *r, fl_tool_symbolizer_t *s, FILE *o) { fl_tool_show_sentry(o, r, false, s); }
static void conv_minidump(const Faultline__Report *r, fl_tool_symbolizer_t *s, FILE *o) {
    (void)s;
    uint8_t *md;
    size_t len;
    if (fl_tool_minidump(r, &md, &len) == 0) {
        fwrite(md, 1, len, o);
        free(md);
    }
}

/* Median µs per conversion over rounds, and the output's size. */
static double measure(conv_fn fn, const Faultline__Report *r, fl_tool_symbolizer_t *s, unsigned rounds,
                      size_t *out_bytes) {
    uint64_t *t = calloc(rounds, sizeof *t);
    char *buf = NULL;
    size_t len = 0;
    for (unsigned i = 0; i <= rounds; i++) {
        FILE *o = open_memstream(&buf, &len);
        uint64_t t0 = bench_now_ns();
        fn(r, s, o);
        fclose(o);
        if (i) t[i - 1] = bench_now_ns() - t0; /* round 0 builds the symbol indexes */
        *out_bytes = len;
        free(buf);
        buf = NULL;
    }
    double us = bench_percentile(t, rounds, 50) / 1e3;
    free(t);
    return us;
}

int main(int argc, char **argv) {
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    if (!rounds) rounds = 200;
    if (!bench_mkdtemp(g_dir, sizeof g_dir, "interop")) return 1;
    fl_options o = {.report_dir = g_dir, .app_name = "bench_interop", .app_version = "0",
                    .stack_bytes = 8192};
    if (fl_install(&o) != 0) return 1;
    printf("## bench_interop (one report converted: median us per report over %u rounds; the same "
           "symbolizer throughout, its indexes built by a first round)\n\n", rounds);
    printf("| threads | report bytes | show --json (reference) | minidump | minidump bytes | sentry event | event bytes |\n");
    printf("|--------:|-------------:|------------------------:|---------:|---------------:|-------------:|------------:|\n");
    static const unsigned counts[] = {1, 64};
    unsigned started = 1;
    for (unsigned c = 0; c < 2; c++) {
        if (counts[c] > started && bench_parked_start(counts[c] - started, DEPTH) != 0) return 1;
        started = counts[c];
        bench_parked_recurse(DEPTH, snap, "bench_interop");
        long bytes = 0;
        Faultline__Report *r = g_rc == 0 ? take_report(&bytes) : NULL;
        if (!r) {
            fprintf(stderr, "bench_interop: no report (%d)\n", g_rc);
            return 1;
        }
        fl_tool_symopts_t so = {0};
        fl_tool_symstore_t *st = fl_tool_symstore_new(&so);
        fl_tool_symbolizer_t *sym = st ? fl_tool_symbolizer_new(st, r) : NULL;
        if (!sym) return 1;
        size_t jb, mb, sb;
        double j = measure(conv_json, r, sym, rounds, &jb);
        double m = measure(conv_minidump, r, sym, rounds, &mb);
        double s = measure(conv_sentry, r, sym, rounds, &sb);
        printf("| %7zu | %12ld | %20.1f us | %5.1f us (%.2fx) | %14zu | %5.1f us (%.2fx) | %11zu |\n",
               r->n_threads, bytes, j, m, m / j, mb, s, s / j, sb);
        fl_tool_symbolizer_free(sym);
        fl_tool_symstore_free(st);
        fl_report_free(r);
    }
    rmdir(g_dir);
    printf("\n(ratios against show --json of the same report in the same run)\n\n");
    return 0;
}
