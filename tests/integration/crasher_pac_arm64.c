/* SPDX-License-Identifier: MIT */
/* Signed return addresses (built with -mbranch-protection=pac-ret+leaf) and no unwind tables: the
 * walk finds these callers through lr and frame records, whose signatures it must strip. */
#include <stdint.h>
#include <stdio.h>

#include "crasher.h"

static volatile int *volatile g_null;

NOINLINE static void pac_c(void) { *g_null = 5; } /* a leaf: lr signed in place, no record */
NOINLINE static void pac_b(void) { pac_c(); NOTAIL(); }
NOINLINE static void pac_a(void) {
    /* The return address in our own frame record: signed if the CPU authenticates pointers. */
    uint64_t ra = ((volatile uint64_t *)__builtin_frame_address(0))[1];
    printf("return addresses %s\n", ra >> 48 ? "signed" : "not signed");
    fflush(stdout);
    pac_b();
    NOTAIL();
}

void scenario_pac(const char *dir) { (void)dir; pac_a(); }
