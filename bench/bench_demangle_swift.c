/* SPDX-License-Identifier: MIT */
/* Swift names demangled per second (in-process, the symbols of Swift's own test corpus), next to
 * c++filt on the C++ names libstdc++ exports, measured in the same run. No swift-demangle exists
 * on this machine, so c++filt is the only outside reference: a different scheme, and a separate
 * process reading a pipe, so the ratio says how the costs compare, not which demangler is better.
 * Usage: bench_demangle_swift [MANGLINGS.TXT [ROUNDS]] */
#include "bench.h"
#include "demangle/demangle.h"

#include <string.h>
#include <unistd.h>

enum { MAX_SYMS = 4096 };

static char *syms[MAX_SYMS];
static size_t nsyms;

static void load(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(1);
    }
    char line[16384];
    while (nsyms < MAX_SYMS && fgets(line, sizeof line, f)) {
        char *a = strstr(line, " ---> ");
        if (!a) continue;
        while (a > line && a[-1] == ' ') a--;
        *a = 0;
        syms[nsyms++] = strdup(line);
    }
    fclose(f);
}

/* One round: every symbol `reps` times, both forms; returns ns per symbol. */
static double round_ns(unsigned reps, size_t *decoded) {
    char out[4096];
    size_t ok = 0;
    uint64_t t0 = bench_now_ns();
    for (unsigned r = 0; r < reps; r++)
        for (size_t i = 0; i < nsyms; i++) ok += fl_demangle_swift(syms[i], out, sizeof out, 0) >= 0;
    uint64_t t1 = bench_now_ns();
    *decoded = ok / reps;
    return (double)(t1 - t0) / ((double)reps * (double)nsyms);
}

/* c++filt over `lines` C++ names (libstdc++'s dynamic symbols, repeated) from a file. */
static double cxxfilt_ns(size_t *count, double *avg_len) {
    char lib[512] = "", cmd[2048];
    FILE *p = popen("gcc -print-file-name=libstdc++.so.6 2>/dev/null", "r");
    if (p && fgets(lib, sizeof lib, p)) lib[strcspn(lib, "\n")] = 0;
    if (p) pclose(p);
    char path[] = "/tmp/fl-bench-cxx-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || !lib[0]) return -1;
    close(fd);
    snprintf(cmd, sizeof cmd,
             "nm -D --defined-only '%s' | awk '$3 ~ /^_Z/ {print $3}' > %s.one && "
             "for i in $(seq 1 20); do cat %s.one; done > %s && wc -lc < %s",
             lib, path, path, path, path);
    p = popen(cmd, "r");
    long lines = 0, bytes = 0;
    if (!p || fscanf(p, "%ld %ld", &lines, &bytes) != 2) lines = 0;
    if (p) pclose(p);
    if (lines <= 0) return -1;
    *count = (size_t)lines;
    *avg_len = (double)(bytes - lines) / (double)lines;
    snprintf(cmd, sizeof cmd, "c++filt < %s > /dev/null", path);
    uint64_t best = UINT64_MAX;
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = bench_now_ns();
        if (system(cmd) != 0) return -1;
        uint64_t dt = bench_now_ns() - t0;
        if (dt < best) best = dt;
    }
    snprintf(cmd, sizeof cmd, "rm -f %s %s.one", path, path);
    if (system(cmd) != 0) { /* nothing to undo */ }
    return (double)best / (double)lines;
}

int main(int argc, char **argv) {
    load(argc > 1 ? argv[1] : FL_BENCH_SWIFT_CORPUS);
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    if (!nsyms || rounds < 1) return 1;
    size_t total_len = 0, decoded = 0;
    for (size_t i = 0; i < nsyms; i++) total_len += strlen(syms[i]);
    uint64_t ns[64];
    if (rounds > 64) rounds = 64;
    round_ns(20, &decoded); /* warm-up */
    for (int r = 0; r < rounds; r++) ns[r] = (uint64_t)(round_ns(200, &decoded) * 1000.0); /* ps */
    double med = (double)bench_percentile(ns, (size_t)rounds, 50) / 1000.0;
    printf("swift: %zu corpus symbols (%zu demangled, mean length %.1f), median of %d rounds:\n",
           nsyms, decoded, (double)total_len / (double)nsyms, rounds);
    printf("  %.0f ns per symbol, %.0f symbols/s\n", med, 1e9 / med);
    size_t cn = 0;
    double clen = 0;
    double cns = cxxfilt_ns(&cn, &clen);
    if (cns > 0) {
        printf("c++filt: %zu libstdc++ C++ symbols (mean length %.1f), best of 3 runs:\n", cn, clen);
        printf("  %.0f ns per symbol, %.0f symbols/s\n", cns, 1e9 / cns);
        printf("ratio: swift in-process %.1fx the symbols/s of c++filt\n", cns / med);
    } else {
        printf("c++filt: not measured (needs gcc, nm, c++filt)\n");
    }
    return 0;
}
