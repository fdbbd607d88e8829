/* SPDX-License-Identifier: MIT */
/* Benchmarks: a monotonic clock, order statistics and the summary-line format bench/run.sh reads. */
#ifndef FAULTLINE_BENCH_H
#define FAULTLINE_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))
#define NOTAIL() __asm__ volatile("" ::: "memory")

static inline uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bench_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place and returns its p-th percentile (nearest rank, 0 <= p <= 100). */
static inline uint64_t bench_percentile(uint64_t *v, size_t n, unsigned p) {
    if (!n) return 0;
    qsort(v, n, sizeof *v, bench_cmp_u64);
    size_t rank = (n * p + 99) / 100; /* 1-based nearest rank */
    return v[rank ? rank - 1 : 0];
}

/* Where reports go: $TMPDIR, or /tmp. */
static inline const char *bench_tmp_root(void) {
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* Creates a fresh directory <bench_tmp_root()>/fl-bench-<name>-XXXXXX and puts its path in buf;
 * returns buf, or NULL (with a message on stderr). */
static inline char *bench_mkdtemp(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/fl-bench-%s-XXXXXX", bench_tmp_root(), name);
    if (mkdtemp(buf)) return buf;
    perror("mkdtemp");
    return NULL;
}

/* One line per issue goal; bench/run.sh gathers them into its summary table.
 * Format: GOAL|<metric>|<measured>|<goal>|<verdict> */
static inline void bench_goal(const char *metric, const char *measured, const char *goal, int met) {
    printf("GOAL|%s|%s|%s|%s\n", metric, measured, goal, met < 0 ? "n/a" : met ? "met" : "NOT met");
}

#endif
