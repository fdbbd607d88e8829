/* SPDX-License-Identifier: MIT */
/* fl_demangle_rust in-process over a list of names (one a line): names per second, full or
 * simplified form, the best of several passes over the whole list. Driven by bench/demangle.py,
 * which times c++filt and `faultline demangle` on the same list.
 * Usage: bench_demangle LIST [--simplified] [PASSES] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "demangle/demangle.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_demangle LIST [--simplified] [PASSES]\n");
        return 2;
    }
    unsigned flags = argc > 2 && strcmp(argv[2], "--simplified") == 0 ? FL_DEMANGLE_SIMPLIFIED
                                                                        : FL_DEMANGLE_FULL;
    int passes = argc > 3 ? atoi(argv[3]) : 5;
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t n = 0, cap = 0;
    char **names = NULL, *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) > 0) {
        if (line[len - 1] == '\n') line[len - 1] = 0;
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            names = realloc(names, cap * sizeof *names);
            if (!names) return 1;
        }
        names[n++] = strdup(line);
    }
    fclose(f);
    free(line);
    static char out[4096]; /* the CLI's FL_TOOL_NAME_MAX */
    uint64_t best = UINT64_MAX, bytes = 0;
    size_t ok = 0;
    for (int p = 0; p < passes; p++) {
        uint64_t t0 = bench_now_ns();
        bytes = ok = 0;
        for (size_t i = 0; i < n; i++) {
            int r = fl_demangle_rust(names[i], out, sizeof out, flags);
            if (r >= 0) ok++, bytes += (uint64_t)r;
        }
        uint64_t t = bench_now_ns() - t0;
        if (t < best) best = t;
    }
    printf("%zu names, %zu demangled, %.0f names/s, %.1f ns/name, %llu output bytes a pass\n", n,
           ok, best ? n * 1e9 / (double)best : 0.0, (double)best / (double)(n ? n : 1),
           (unsigned long long)bytes);
    return 0;
}
