/* SPDX-License-Identifier: MIT */
/* Signed return addresses (built with -mbranch-protection=pac-ret+leaf) and no unwind tables: the
 * walk finds these callers through lr and frame records, whose signatures it must strip. */
#include <stdint.h>
#include <stdio.h>

#include "crasher.h"

static volatile int *volatile g_null;

NOINLINE static void pac_c(void) { *g_null = 5; } /* a leaf: lr signed in place, no record */
NOINLINE static void pac_b(void) { pac_c(); NOTAIL(); }
/* Whether the CPU signs code pointers: PACIA1716 (a hint, a no-op without pointer
 * authentication) of an address with eight modifiers. One signature can be all zeros by chance
 * (about 1 in 128 under qemu, whose user-space pointers keep only 7 bits for it). */
static int cpu_signs(void) {
    for (uint64_t m = 1; m <= 8; m++) {
        register uint64_t x17 __asm__("x17") = (uint64_t)(uintptr_t)&cpu_signs;
        register uint64_t x16 __asm__("x16") = m;
        __asm__ volatile("hint #8" : "+r"(x17) : "r"(x16));
        if (x17 >> 48) return 1;
    }
    return 0;
}

NOINLINE static void pac_a(void) {
    /* The return address in our own frame record: signed if the CPU authenticates pointers. */
    uint64_t ra = ((volatile uint64_t *)__builtin_frame_address(0))[1];
    printf("return addresses %s\n", ra >> 48 || cpu_signs() ? "signed" : "not signed");
    fflush(stdout);
    pac_b();
    NOTAIL();
}

void scenario_pac(const char *dir) { (void)dir; pac_a(); }
