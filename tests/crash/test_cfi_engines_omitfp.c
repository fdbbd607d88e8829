/* SPDX-License-Identifier: MIT */
/* Built without frame pointers (tests/crash/CMakeLists.txt): only the unwind tables can walk
 * through these frames. */
#define NOINLINE __attribute__((noinline))

void omitfp_recurse(int n, void (*fn)(void));

NOINLINE void omitfp_recurse(int n, void (*fn)(void)) {
    volatile char pad[24 + (n & 7) * 8]; /* frames of different sizes */
    pad[0] = (char)n;
    if (n <= 1) fn();
    else omitfp_recurse(n - 1, fn);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    (void)pad[0];
}
