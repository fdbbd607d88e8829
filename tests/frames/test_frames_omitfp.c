/* SPDX-License-Identifier: MIT */
/* Functions without frame records (built with -fomit-frame-pointer) for test_frames.c. */
#include <signal.h>

#define NOINLINE __attribute__((noinline))
#define NOTAIL() __asm__ volatile("" ::: "memory")

NOINLINE void nofp_leaf(void) {
    raise(SIGUSR1);
    NOTAIL();
}
NOINLINE void nofp_mid(void) {
    nofp_leaf();
    NOTAIL();
}
