/* SPDX-License-Identifier: MIT */
/* The Swift demangler against Swift's own test corpus (tests/demangle/swift/, an independent
 * oracle: the pairs swift-demangle's tests expect), and its bounds on hostile input. */
#include "demangle/demangle.h"
#include "faultline/faultline.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The share of exact pairs may only go up: these are the floors reached (per mille). */
#define FULL_FLOOR_PERMILLE 990
#define SIMPLIFIED_FLOOR_PERMILLE 570

static int verbose;

/* Runs the corpus file: lines "MANGLED ---> DEMANGLED" (others are skipped, as Swift's test
 * does). The expected text may start with swift-demangle -classify's "{...} " tag, which is
 * not part of the demangled name. A line whose expectation is the input itself counts as
 * exact when the demangler declines. Returns the per mille of exact pairs. */
static long run_corpus(const char *path, unsigned flags, const char *what) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return 0;
    char line[16384], out[8192];
    long total = 0, exact = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *arrow = strstr(line, " ---> ");
        if (!arrow) continue;
        char *exp = arrow + 6;
        char *e = arrow;
        while (e > line && e[-1] == ' ') e--;
        *e = 0;
        if (exp[0] == '{') {
            char *close = strstr(exp, "} ");
            if (close) exp = close + 2;
        }
        total++;
        int r = fl_demangle_swift(line, out, sizeof out, flags);
        int ok;
        if (r < 0) ok = strcmp(exp, line) == 0;
        else ok = strcmp(out, exp) == 0 && (size_t)r == strlen(out);
        exact += ok;
        if (!ok && verbose)
            printf("FAIL %s\n  want %s\n  got  %s\n", line, exp, r < 0 ? "(declined)" : out);
    }
    fclose(f);
    CHECK(total > 0);
    long pm = exact * 1000 / total;
    printf("swift corpus%s: %ld of %ld exact (%ld.%ld %%)\n", what, exact, total, pm / 10, pm % 10);
    return pm;
}

/* Whether s ends with a complete UTF-8 sequence (a cut never splits one). */
static int utf8_complete(const char *s) {
    size_t n = strlen(s), i = n;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--;
    if (i == 0) return n == 0;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t want = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    return n - (i - 1) == want;
}

/* Every output is NUL-terminated inside its cap, whatever the cap. */
static void check_caps(const char *sym) {
    char full[8192];
    int r = fl_demangle_swift(sym, full, sizeof full, 0);
    for (size_t cap = 1; cap < 48; cap++) {
        char buf[64];
        memset(buf, 'Z', sizeof buf);
        int q = fl_demangle_swift(sym, buf, cap, 0);
        CHECK(buf[cap - 1] == 0 || memchr(buf, 0, cap) != NULL);
        for (size_t i = cap; i < sizeof buf; i++) CHECK(buf[i] == 'Z');
        if (r >= 0) {
            CHECK(q >= 0 && (size_t)q < cap && strlen(buf) == (size_t)q);
            CHECK(strncmp(buf, full, (size_t)q) == 0);
            CHECK(utf8_complete(buf));
        } else {
            CHECK(q == FL_ENOTFOUND);
        }
    }
    CHECK(fl_demangle_swift(sym, full, 0, 0) == FL_EINVAL);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Pathological input finishes, bounded: deep nesting, long substitution chains, repeats. */
static void check_hostile(void) {
    static char sym[8192];
    char out[4096];
    struct {
        const char *head, *unit, *tail;
        int reps;
    } cases[] = {
        {"$s", "Say", "G", 2000},           /* nested arrays, unterminated */
        {"$s4main", "SaySi", "GD", 600},    /* deep but well-formed */
        {"$s1a", "AA", "D", 1800},          /* substitution chain */
        {"$s1a1bC", "AB", "yD", 1800},      /* repeated reference to one type */
        {"$s", "999999999", "a", 300},      /* huge numbers */
        {"$sSi", "_", "t", 3000},           /* markers */
        {"$s", "2a", "", 1500},             /* identifiers, words */
        {"$s", "SiSi_t", "D", 700},         /* many tuples */
        {"_T0", "S2S", "D", 1000},          /* standard substitution repeats */
        {"$s4main1AV", "A9999a", "D", 600}, /* large repeat counts */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].head);
        memcpy(sym, cases[i].head, n);
        /* under the 4096-byte bound on names, so that the parser itself is exercised */
        for (int r = 0; r < cases[i].reps; r++) {
            size_t u = strlen(cases[i].unit);
            if (n + u + strlen(cases[i].tail) >= 4000) break;
            memcpy(sym + n, cases[i].unit, u);
            n += u;
        }
        strcpy(sym + n, cases[i].tail);
        double t0 = now();
        int r = fl_demangle_swift(sym, out, sizeof out, 0);
        double dt = now() - t0;
        CHECK(r == FL_ENOTFOUND || (r >= 0 && (size_t)r < sizeof out && out[r] == 0));
        /* A wide margin (CI is a busy machine, and may run this under qemu or ASan). */
        CHECK(dt < 5.0);
        check_caps(sym);
    }
    /* Each level a dictionary of the previous one twice (a substitution): 2^25 copies if
     * printed naively. */
    strcpy(sym, "$sSDySiSiG");
    for (int i = 0; i < 25; i++) {
        char lvl[16];
        snprintf(lvl, sizeof lvl, "SDyA%cA%cG", 'A' + i, 'A' + i);
        strcat(sym, lvl);
    }
    strcat(sym, "D");
    double t0 = now();
    int r = fl_demangle_swift(sym, out, sizeof out, 0);
    CHECK(now() - t0 < 5.0);
    CHECK(r == FL_ENOTFOUND || (r >= 0 && out[r] == 0));
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "-v") == 0) verbose = 1, argc--, argv++;
    CHECK(argc >= 3);
    if (argc < 3) TEST_END();
    long full = run_corpus(argv[1], FL_DEMANGLE_FULL, "");
    long simp = run_corpus(argv[2], FL_DEMANGLE_SIMPLIFIED, " (simplified)");
    CHECK(full >= FULL_FLOOR_PERMILLE);
    CHECK(simp >= SIMPLIFIED_FLOOR_PERMILLE);
    /* Every corpus symbol through every small cap. */
    FILE *f = fopen(argv[1], "r");
    CHECK(f != NULL);
    char line[16384];
    while (f && fgets(line, sizeof line, f)) {
        char *arrow = strstr(line, " ---> ");
        if (!arrow) continue;
        while (arrow > line && arrow[-1] == ' ') arrow--;
        *arrow = 0;
        check_caps(line);
    }
    if (f) fclose(f);
    check_hostile();
    /* Not Swift names. */
    char out[64];
    CHECK(fl_demangle_swift("_ZN3foo3barEv", out, sizeof out, 0) == FL_ENOTFOUND && out[0] == 0);
    CHECK(fl_demangle_swift("", out, sizeof out, 0) == FL_ENOTFOUND);
    CHECK(fl_demangle_swift("$s", out, sizeof out, 0) == FL_ENOTFOUND);
    CHECK(fl_demangle_swift(NULL, out, sizeof out, 0) == FL_ENOTFOUND);
    TEST_END();
}
