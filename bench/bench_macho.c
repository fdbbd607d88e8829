/* SPDX-License-Identifier: MIT */
/* Benchmark: Mach-O symbol lookups per second (crash-time scan, sorted index) and compact unwind
 * lookups, on a file with thousands of functions, next to llvm-symbolizer-14 on the same file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "macho/macho.h"

#ifndef FL_BENCH_MACHO_FILE
#define FL_BENCH_MACHO_FILE "tests/macho/fixtures/arm64/big"
#endif

static uint64_t *g_addr;
static size_t g_naddr, g_cap;

static int add_start(void *ctx, uint64_t a) {
    (void)ctx;
    if (g_naddr == g_cap) {
        g_cap = g_cap ? g_cap * 2 : 4096;
        g_addr = realloc(g_addr, g_cap * sizeof *g_addr);
    }
    g_addr[g_naddr++] = a;
    return 0;
}

/* Seconds a shell command takes (median of 3). */
static double time_cmd(const char *cmd) {
    uint64_t t[3];
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = bench_now_ns();
        if (system(cmd) != 0) return -1;
        t[i] = bench_now_ns() - t0;
    }
    return bench_percentile(t, 3, 50) / 1e9;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : FL_BENCH_MACHO_FILE;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_macho: cannot open %s (build the fixtures: ctest -R "
                "macho_fixtures)\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *file = malloc((size_t)size);
    if (fread(file, 1, (size_t)size, f) != (size_t)size) return 1;
    fclose(f);
    fl_reader_t r;
    fl_reader_init_buffer(&r, file, (uint64_t)size, 0);
    fl_macho_slice_t sl;
    unsigned n;
    fl_macho_image_t img;
    if (fl_macho_slices(&r, (uint64_t)size, &sl, 1, &n) != 0 ||
        fl_macho_image_init(&img, &r, sl.offset, sl.size, false) != 0) {
        fprintf(stderr, "bench_macho: %s is not a 64-bit Mach-O file\n", path);
        return 1;
    }

    /* Queries: every function start and the middle of every function. */
    fl_macho_function_starts(&img, add_start, NULL);
    size_t nstarts = g_naddr;
    for (size_t i = 0; i + 1 < nstarts; i++)
        add_start(NULL, g_addr[i] + (g_addr[i + 1] - g_addr[i]) / 2);

    /* Index build. */
    uint64_t t0 = bench_now_ns();
    fl_macho_symindex_t *ix;
    if (fl_macho_symindex_build(&img, &ix) != 0) return 1;
    double build_ms = (bench_now_ns() - t0) / 1e6;

    /* Scan: one pass (each lookup reads the whole table). */
    char name[256];
    uint64_t a, found = 0;
    t0 = bench_now_ns();
    for (size_t i = 0; i < g_naddr; i++)
        found += fl_macho_symbol_find(&img, g_addr[i], name, sizeof name, &a) == 0;
    double scan_ns = (double)(bench_now_ns() - t0) / g_naddr;

    /* Index: enough passes for ~0.2 s; the answers must equal the scan's. */
    unsigned mismatches = 0;
    for (size_t i = 0; i < g_naddr; i++) {
        const char *in;
        uint64_t ia;
        int s = fl_macho_symbol_find(&img, g_addr[i], name, sizeof name, &a);
        int t = fl_macho_symindex_find(ix, g_addr[i], &in, &ia);
        mismatches += s != t || (s == 0 && (a != ia || strcmp(in, name)));
    }
    unsigned passes = 0, ipasses;
    uint64_t ifound = 0;
    t0 = bench_now_ns();
    do {
        for (size_t i = 0; i < g_naddr; i++) {
            const char *in;
            ifound += fl_macho_symindex_find(ix, g_addr[i], &in, &a) == 0;
        }
        passes++;
    } while (bench_now_ns() - t0 < 200000000ull);
    double index_ns = (double)(bench_now_ns() - t0) / ((double)g_naddr * passes);
    ipasses = passes;

    /* Compact unwind lookups. */
    fl_macho_unwind_info_t ui;
    double unwind_ns = -1;
    uint64_t ufound = 0;
    int ue = fl_macho_unwind_info_init(&img, &ui);
    if (ue == 0) {
        passes = 0;
        t0 = bench_now_ns();
        do {
            for (size_t i = 0; i < g_naddr; i++) {
                fl_macho_unwind_entry_t e;
                ufound += fl_macho_unwind_find(&ui, g_addr[i], &e) == 0;
            }
            passes++;
        } while (bench_now_ns() - t0 < 200000000ull);
        unwind_ns = (double)(bench_now_ns() - t0) / ((double)g_naddr * passes);
        ufound /= passes;
    }

    /* The reference: llvm-symbolizer-14 given every address on stdin, less its start-up (one
     * address); and llvm-objdump-14 listing the symbol table. */
    char addrs[] = "/tmp/fl-bench-macho-XXXXXX";
    int fd = mkstemp(addrs);
    FILE *af = fdopen(fd, "w");
    for (size_t i = 0; i < g_naddr; i++) fprintf(af, "0x%llx\n", (unsigned long long)g_addr[i]);
    fclose(af);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "llvm-symbolizer-14 --obj='%s' --functions=linkage < %s > /dev/null",
             path, addrs);
    double sym_all = time_cmd(cmd);
    snprintf(cmd, sizeof cmd, "echo 0x%llx | llvm-symbolizer-14 --obj='%s' > /dev/null",
             (unsigned long long)g_addr[0], path);
    double sym_one = time_cmd(cmd);
    snprintf(cmd, sizeof cmd, "llvm-objdump-14 --macho --syms '%s' > /dev/null", path);
    double objdump = time_cmd(cmd);
    unlink(addrs);

    printf("## bench_macho\n\n");
    printf("file: %s (%s, %u nlist entries, %zu indexed symbols, %zu function starts)\n", path,
           fl_macho_arch_name(img.cputype, img.cpusubtype), img.nsyms, fl_macho_symindex_count(ix),
           nstarts);
    printf("queries: %zu addresses (each function start and each function's middle)\n\n", g_naddr);
    printf("| %-52s | %12s | %14s |\n", "method", "ns/lookup", "lookups/s");
    printf("|------------------------------------------------------|--------------|"
           "----------------|\n");
    printf("| %-52s | %12.0f | %14.0f |\n", "fl_macho_symbol_find (scan, AS-safe)", scan_ns,
           1e9 / scan_ns);
    printf("| %-52s | %12.1f | %14.0f |\n", "fl_macho_symindex_find (sorted index)", index_ns,
           1e9 / index_ns);
    if (unwind_ns >= 0)
        printf("| %-52s | %12.1f | %14.0f |\n", "fl_macho_unwind_find (compact unwind)", unwind_ns,
               1e9 / unwind_ns);
    if (sym_all > 0 && sym_one > 0) {
        double per = (sym_all - sym_one) * 1e9 / (double)(g_naddr - 1);
        printf("| %-52s | %12.0f | %14.0f |\n",
               "llvm-symbolizer-14 --obj (batch, start-up removed)",
               per, 1e9 / per);
    }
    printf("\nindex build: %.2f ms; named: scan %llu, index %llu per pass; index vs scan "
           "mismatches: %u\n",
           build_ms, (unsigned long long)found, (unsigned long long)(ifound / ipasses), mismatches);
    if (unwind_ns >= 0)
        printf("compact unwind entries found: %llu of %zu\n", (unsigned long long)ufound, g_naddr);
    else
        printf("compact unwind: fl_macho_unwind_info_init returned %d\n", ue);
    printf("llvm-symbolizer-14, %zu addresses in one process: %.3f s (one address: %.3f s); "
           "llvm-objdump-14 --macho --syms: %.3f s\n\n",
           g_naddr, sym_all, sym_one, objdump);
    fl_macho_symindex_free(ix);
    free(file);
    free(g_addr);
    return mismatches ? 1 : 0;
}
