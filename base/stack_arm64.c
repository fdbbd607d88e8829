/* SPDX-License-Identifier: MIT */
/* fl_call_on_stack for arm64 (Linux and Darwin). */
#include "base/base.h"

/* Inline assembly in an ordinary function (gcc has no naked functions on arm64 before 14), so
 * that one file serves gcc, clang and both object formats. The old stack pointer lives in x19,
 * which fn preserves; everything fn may change is declared clobbered but x18 (reserved on
 * Darwin, so it cannot be named there; a temporary on Linux), kept on the new stack instead. */
void fl_call_on_stack(void (*fn)(void *), void *arg, void *top) {
    /* A dynamic allocation (of nothing) makes the compiler keep a frame pointer and describe the
     * frame by it, so its unwind tables stay right while sp points to the other stack: debuggers
     * (and the real-program tests' gdb, stopped inside a capture) cross back to the caller. */
    volatile size_t none = 0;
    __asm__ volatile("" : : "r"(__builtin_alloca(none)) : "memory");
    register void *x0 __asm__("x0") = arg;
    register void (*x1)(void *) __asm__("x1") = fn;
    register void *x2 __asm__("x2") = top;
    __asm__ volatile("mov x19, sp\n\t"
                     "mov sp, x2\n\t"
                     "str x18, [sp, #-16]!\n\t"
                     "blr x1\n\t"
                     "ldr x18, [sp], #16\n\t"
                     "mov sp, x19"
                     : "+r"(x0), "+r"(x1), "+r"(x2)
                     :
                     : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
                       "x14", "x15", "x16", "x17", "x19", "x30", "v0", "v1", "v2", "v3", "v4",
                       "v5", "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23",
                       "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc", "memory");
}
