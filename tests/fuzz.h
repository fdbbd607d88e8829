/* SPDX-License-Identifier: MIT */
/* What the libFuzzer targets share: a check whose failure is a finding (abort), and a private
 * temporary directory removed with its content at exit. */
#ifndef FAULTLINE_TESTS_FUZZ_H
#define FAULTLINE_TESTS_FUZZ_H
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "CHECK failed: %s\n", #c); abort(); } } while (0)

static int fuzz_rm_one(const char *p, const struct stat *st, int type, struct FTW *ftw) {
    (void)st, (void)type, (void)ftw;
    return remove(p);
}

/* Removes dir and everything in it (symbolic links themselves, not what they name). */
static inline void fuzz_rmtree(const char *dir) { nftw(dir, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static char *fuzz_tmpdir_path;
static inline void fuzz_tmpdir_cleanup(void) { fuzz_rmtree(fuzz_tmpdir_path); }

/* mkdtemp on tmpl (writable, ending in XXXXXX), removed at exit; aborts if it cannot be made. */
static inline void fuzz_tmpdir(char *tmpl) {
    if (!mkdtemp(tmpl)) abort();
    fuzz_tmpdir_path = tmpl;
    atexit(fuzz_tmpdir_cleanup);
}

#endif
