/* SPDX-License-Identifier: MIT */
/* bench_install: the cost of fl_install (cold, then warm over many install/uninstall cycles). */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "elf/elf.h"
#include "faultline/faultline.h"
#include "frames/frames.h"

#define ITERS 200u

static fl_image_list_t g_images;

static void stats_row(const char *what, uint64_t *v, size_t n) {
    uint64_t p50 = bench_percentile(v, n, 50), p90 = bench_percentile(v, n, 90);
    printf("| %-38s | %8.2f | %8.2f | %8.2f | %8.2f |\n", what, p50 / 1e3, p90 / 1e3, v[0] / 1e3,
           v[n - 1] / 1e3);
}

int main(int argc, char **argv) {
    unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : ITERS;
    if (iters < 10) iters = 10;
    char dir[4096];
    if (!bench_mkdtemp(dir, sizeof dir, "install")) return 1;
    fl_options opts = {.report_dir = dir, .app_name = "bench_install", .app_version = "0"};
    uint64_t *ins = calloc(iters, sizeof *ins), *unins = calloc(iters, sizeof *unins);
    if (!ins || !unins) return 1;

    /* Cold: the first install in the process (first-use paths in libunwind, the alternate
     * stack's mmap, the pipe of the safe reader if process_vm_readv is refused). */
    uint64_t t0 = bench_now_ns();
    int e = fl_install(&opts);
    uint64_t cold = bench_now_ns() - t0;
    if (e) {
        fprintf(stderr, "bench_install: fl_install: %s\n", fl_strerror(e));
        return 1;
    }
    fl_uninstall();

    for (unsigned i = 0; i < iters; i++) {
        t0 = bench_now_ns();
        e = fl_install(&opts);
        uint64_t t1 = bench_now_ns();
        if (e) {
            fprintf(stderr, "bench_install: fl_install (iteration %u): %s\n", i, fl_strerror(e));
            return 1;
        }
        fl_uninstall();
        ins[i] = t1 - t0;
        unins[i] = bench_now_ns() - t1;
    }

    /* Where the warm time goes: the install steps that can be called on their own (the rest is
     * the report directory, readlink, uname, the alternate stack check and 7 sigactions). */
    uint64_t *mem = calloc(iters, 8), *elfp = calloc(iters, 8), *coll = calloc(iters, 8);
    if (!mem || !elfp || !coll) return 1;
    for (unsigned i = 0; i < iters; i++) {
        t0 = bench_now_ns();
        fl_memory_init(FL_MEMORY_NONE);
        uint64_t t1 = bench_now_ns();
        fl_elf_images_prepare();
        uint64_t t2 = bench_now_ns();
        fl_elf_images_collect(fl_memory_reader(), &g_images);
        uint64_t t3 = bench_now_ns();
        mem[i] = t1 - t0, elfp[i] = t2 - t1, coll[i] = t3 - t2;
    }

    printf("## bench_install (%u warm iterations, CLOCK_MONOTONIC)\n\n", iters);
    printf("memory reader: %s; images loaded: %u\n\n",
           fl_memory_method() == FL_MEMORY_VM_READV ? "process_vm_readv" : "pipe", g_images.count);
    printf("| %-38s | %8s | %8s | %8s | %8s |\n", "call (us)", "median", "p90", "min", "max");
    printf("|%s|----------|----------|----------|----------|\n", "----------------------------------------");
    printf("| %-38s | %8.2f | %8s | %8s | %8s |\n", "fl_install, first call (cold)", cold / 1e3, "", "", "");
    stats_row("fl_install (warm)", ins, iters);
    stats_row("fl_uninstall", unins, iters);
    stats_row("  step: fl_memory_init", mem, iters);
    stats_row("  step: fl_elf_images_prepare", elfp, iters);
    stats_row("  (crash time) fl_elf_images_collect", coll, iters);
    printf("\n");

    char buf[96];
    uint64_t p50 = bench_percentile(ins, iters, 50);
    snprintf(buf, sizeof buf, "%.1f us median (p90 %.1f, cold %.1f)", p50 / 1e3,
             bench_percentile(ins, iters, 90) / 1e3, cold / 1e3);
    bench_goal("install", buf, "<= 20 us", p50 <= 20000);
    rmdir(dir);
    return 0;
}
