/* SPDX-License-Identifier: MIT */
/* Offline symbolication speed: faultline's symbol index (cold build, warm cache load, per-address lookups, the CLI end to end) against addr2line, eu-addr2line and llvm-symbolizer-14 on the same random in-function addresses. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "tools/tool.h"

/* Usage: bench_symbolize [--addrs N] [--cli FAULTLINE] [FILE...]
 * Default files: libc6-dbg's debug file for this machine's libc, libstdc++6-12-dbg's debug build
 * of libstdc++ and libLLVM-14 (no debug info: names only), whichever are installed. */

extern char **environ;
#define RUNS 3 /* external commands: best of RUNS */

static char g_dir[4096]; /* scratch: address list, cache */

/* Wall time of argv with stdin from `in` and stdout to /dev/null, best of RUNS; 0 on failure. */
static uint64_t time_cmd(char *const argv[], const char *in) {
    uint64_t best = 0;
    for (int r = 0; r < RUNS; r++) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        uint64_t t0 = bench_now_ns();
        pid_t pid;
        int st = 0;
        int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (e != 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 0;
        uint64_t dt = bench_now_ns() - t0;
        if (!best || dt < best) best = dt;
    }
    return best;
}

static void print_cmd(char *const argv[], const char *in) {
    printf("    $");
    for (int i = 0; argv[i]; i++) printf(" %s", argv[i]);
    printf(" < %s > /dev/null\n", in);
}

/* The debug file /usr/lib/debug/.build-id/xx/rest.debug of an installed library, in buf. */
static const char *debug_file_of(const char *lib, char *buf, size_t cap) {
    fl_elf_file_t *f;
    uint8_t id[FL_BUILD_ID_MAX];
    unsigned n = 0;
    if (fl_elf_file_open(lib, &f) != 0) return NULL;
    int e = fl_elf_file_build_id(f, id, sizeof id, &n);
    fl_elf_file_close(f);
    if (e || n < 2) return NULL;
    char hex[2 * FL_BUILD_ID_MAX + 1];
    fl_tool_hex(hex, id, n);
    snprintf(buf, cap, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static void bench_file(const char *path, size_t naddrs, const char *cli) {
    fl_tool_bin_t *b;
    if (fl_tool_bin_open(path, &b) != 0) {
        printf("%s: cannot open, skipped\n\n", path);
        return;
    }
    /* Random in-function addresses: sized function symbols, a random offset inside each. */
    fl_elf_file_t *ef = fl_tool_bin_elf(b);
    long nsyms = ef ? fl_elf_file_symbol_count(ef) : -1;
    uint64_t *addrs = malloc(naddrs * sizeof *addrs);
    size_t got = 0;
    for (size_t tries = 0; nsyms > 0 && got < naddrs && tries < naddrs * 100; tries++) {
        uint64_t a, sz;
        const char *name;
        if (fl_elf_file_symbol(ef, rnd() % (uint64_t)nsyms, &a, &sz, &name) == 0 && sz > 1)
            addrs[got++] = a + rnd() % sz;
    }
    if (got < naddrs) {
        printf("%s: only %zu in-function addresses, skipped\n\n", path, got);
        free(addrs);
        fl_tool_bin_close(b);
        return;
    }
    char list[4200], cache[4200];
    snprintf(list, sizeof list, "%s/addrs.txt", g_dir);
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    FILE *f = fopen(list, "w");
    for (size_t i = 0; i < naddrs; i++) fprintf(f, "0x%" PRIx64 "\n", addrs[i]);
    fclose(f);

    struct stat st;
    stat(path, &st);
    printf("%s (%.1f MB, %ld symbols)\n", path, st.st_size / 1e6, nsyms);
    /* Cold: build the index (no cache); then store it; then warm: load from the cache. */
    uint64_t t0 = bench_now_ns();
    fl_tool_symindex_t *ix;
    if (fl_tool_symindex_get(b, 0, path, NULL, &ix) != 0) {
        printf("  index build failed\n\n");
        goto out;
    }
    uint64_t cold = bench_now_ns() - t0;
    int quality = fl_tool_symindex_quality(ix);
    printf("  index: %zu symbol ranges, %zu line rows, quality %d; built in %.1f ms\n",
           fl_tool_symindex_count(ix), fl_tool_symindex_lines(ix), quality, cold / 1e6);
    fl_tool_symindex_free(ix);
    fl_tool_symindex_get(b, 0, path, cache, &ix); /* stores it */
    fl_tool_symindex_free(ix);
    t0 = bench_now_ns();
    if (fl_tool_symindex_get(b, 0, path, cache, &ix) != 0 || !fl_tool_symindex_from_cache(ix)) {
        printf("  the cache did not answer\n\n");
        goto out;
    }
    printf("  warm load from the cache (fingerprint, map, checksum): %.2f ms\n",
           (bench_now_ns() - t0) / 1e6);

    /* Per-address lookups, warm, in process: 5 rounds over the addresses, best round. */
    double per[2];
    for (int lines = 0; lines < 2; lines++) {
        uint64_t best = 0;
        size_t found = 0;
        for (int round = 0; round < 5; round++) {
            found = 0;
            t0 = bench_now_ns();
            for (size_t i = 0; i < naddrs; i++) {
                fl_tool_loc_t loc;
                found += fl_tool_symindex_lookup(ix, addrs[i], lines, &loc);
                __asm__ volatile("" ::"r"(loc.name), "r"(loc.file) : "memory");
            }
            uint64_t dt = bench_now_ns() - t0;
            if (!best || dt < best) best = dt;
        }
        per[lines] = (double)best / (double)naddrs;
        printf("  lookup %s: %.0f ns/address (%zu of %zu named)\n",
               lines ? "name + file:line" : "name only       ", per[lines], found, naddrs);
    }
    fl_tool_symindex_free(ix);

    /* End to end, one process each, the same address list on stdin. */
    printf("  end to end, %zu addresses, best of %d runs:\n", naddrs, RUNS);
    char *fl_names[] = {(char *)cli, "symbolicate", "--cache-dir", cache, (char *)path, NULL};
    char *fl_lines[] = {(char *)cli, "symbolicate", "--lines", "--cache-dir", cache, (char *)path, NULL};
    char *a2l_names[] = {"addr2line", "-f", "-C", "-e", (char *)path, NULL};
    char *a2l_inl[] = {"addr2line", "-f", "-C", "-i", "-e", (char *)path, NULL};
    char *eu[] = {"eu-addr2line", "-f", "-C", "-e", (char *)path, NULL};
    char *llvm_names[] = {"llvm-symbolizer-14", "--obj", (char *)path, "--no-inlines", NULL};
    char *llvm_inl[] = {"llvm-symbolizer-14", "--obj", (char *)path, NULL};
    struct {
        const char *what;
        char **argv;
    } cmds[] = {{"faultline symbolicate (names, warm cache)", fl_names},
                {"faultline symbolicate --lines (warm cache)", fl_lines},
                {"addr2line -f -C (names + lines)", a2l_names},
                {"addr2line -f -C -i (+ inlines)", a2l_inl},
                {"eu-addr2line -f -C (names + lines)", eu},
                {"llvm-symbolizer-14 --no-inlines", llvm_names},
                {"llvm-symbolizer-14 (+ inlines)", llvm_inl}};
    uint64_t t[7];
    for (size_t i = 0; i < 7; i++) {
        t[i] = time_cmd(cmds[i].argv, list);
        if (t[i])
            printf("  %-44s %8.1f ms  %7.2f us/address\n", cmds[i].what, t[i] / 1e6,
                   t[i] / 1e3 / (double)naddrs);
        else
            printf("  %-44s failed or not installed\n", cmds[i].what);
        print_cmd(cmds[i].argv, list);
    }
    uint64_t ours = quality == FL_TOOL_Q_LINES ? t[1] : t[0];
    if (ours && t[5])
        printf("  speed-up of faultline%s over llvm-symbolizer-14 --no-inlines: %.1fx end to end, "
               "%.0fx per address in process\n",
               quality == FL_TOOL_Q_LINES ? " --lines" : "", (double)t[5] / (double)ours,
               (double)t[5] / (double)naddrs / per[quality == FL_TOOL_Q_LINES]);
    char m[128];
    snprintf(m, sizeof m, "warm lookup, %s", fl_tool_basename(path));
    char v[64];
    snprintf(v, sizeof v, "%.0f ns/address (with lines: %.0f)", per[0], per[1]);
    bench_goal(m, v, "<= 1 us/address", per[1] <= 1000.0);
    if (ours && t[5]) {
        snprintf(m, sizeof m, "end to end vs llvm-symbolizer-14, %s", fl_tool_basename(path));
        snprintf(v, sizeof v, "%.1fx", (double)t[5] / (double)ours);
        bench_goal(m, v, ">= 10x", (double)t[5] / (double)ours >= 10.0);
    }
    putchar('\n');
out:
    free(addrs);
    fl_tool_bin_close(b);
}

int main(int argc, char **argv) {
    size_t naddrs = 10000;
    const char *cli = FL_BENCH_CLI;
    const char *files[16];
    size_t nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--addrs") == 0 && i + 1 < argc) naddrs = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--cli") == 0 && i + 1 < argc) cli = argv[++i];
        else if (nfiles < 16) files[nfiles++] = argv[i];
    }
    static char libc_dbg[4200];
    if (!nfiles) {
        if (debug_file_of("/lib/x86_64-linux-gnu/libc.so.6", libc_dbg, sizeof libc_dbg))
            files[nfiles++] = libc_dbg;
        files[nfiles++] = "/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30";
        files[nfiles++] = "/usr/lib/llvm-14/lib/libLLVM-14.so.1";
    }
    if (!bench_mkdtemp(g_dir, sizeof g_dir, "symbolize")) return 1;
    printf("## Offline symbolication (%zu random in-function addresses per file)\n\n", naddrs);
    for (size_t i = 0; i < nfiles; i++) bench_file(files[i], naddrs, cli);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_symbolize: could not remove %s\n", g_dir);
    return 0;
}
