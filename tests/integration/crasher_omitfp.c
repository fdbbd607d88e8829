/* SPDX-License-Identifier: MIT */
/* Crash functions built with -fomit-frame-pointer: their frames have no frame record. */
#include "crasher.h"

static volatile int *volatile g_null;

NOINLINE static void omit_c(int depth) {
    *g_null = depth;
    NOTAIL();
}
NOINLINE static void omit_b(int depth) {
    omit_c(depth + 1);
    NOTAIL();
}
NOINLINE void omit_a(int depth) {
    omit_b(depth + 1);
    NOTAIL();
}
