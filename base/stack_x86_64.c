/* SPDX-License-Identifier: MIT */
/* fl_call_on_stack for x86_64 (Linux and Darwin). */
#include "base/base.h"

/* Inline assembly in an ordinary function (no naked attribute, no symbol of its own), so that
 * one file serves gcc, clang and both object formats. The old stack pointer lives in rbx, which
 * fn preserves; everything fn may change is declared clobbered. */
void fl_call_on_stack(void (*fn)(void *), void *arg, void *top) {
    /* A dynamic allocation (of nothing) makes the compiler keep a frame pointer and describe the
     * frame by it, so its unwind tables stay right while sp points to the other stack: debuggers
     * (and the real-program tests' gdb, stopped inside a capture) cross back to the caller. */
    volatile size_t none = 0;
    __asm__ volatile("" : : "r"(__builtin_alloca(none)) : "memory");
    __asm__ volatile("mov %%rsp, %%rbx\n\t"
                     "mov %%rdx, %%rsp\n\t"
                     "call *%%rax\n\t"
                     "mov %%rbx, %%rsp"
                     : "+a"(fn), "+D"(arg), "+d"(top)
                     :
                     : "rbx", "rcx", "rsi", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2",
                       "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
                       "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
}
