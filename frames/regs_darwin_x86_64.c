/* SPDX-License-Identifier: MIT */
/* x86_64 Darwin register set: extraction from a ucontext or a Mach thread, the compact-unwind glue. */
#include <mach/mach.h>
#include <sys/ucontext.h>

#include "frames/unwind_internal.h"

#include "frames/arch_x86_64.h"
#include "frames/regs_mach.h"

_Static_assert(RAX == 0 && GS == 20 && ERR == 21 && TRAPNO == 22 && CR2 == 23, "regs_mach.h order");
_Static_assert(sizeof(x86_thread_state64_t) == sizeof(fl_mach_x86_thread_state64_t) &&
                   sizeof(x86_exception_state64_t) == sizeof(fl_mach_x86_exception_state64_t),
               "base/mach_layouts.h (checked field by field by tests/darwin/apple_layouts.c)");

void fl_regs_from_ucontext(fl_regs_t *r, const void *ucontext) {
    const ucontext_t *uc = ucontext;
    fl_mach_x86_thread_state64_t ss;
    fl_mach_x86_exception_state64_t es;
    fl_memcpy(&ss, &uc->uc_mcontext->__ss, sizeof ss);
    fl_memcpy(&es, &uc->uc_mcontext->__es, sizeof es);
    fl_regs_from_mach_x86_64(r, &ss, &es);
}

int fl_regs_from_mach_thread(fl_regs_t *r, uint32_t thread) {
    fl_mach_x86_thread_state64_t ss;
    fl_mach_x86_exception_state64_t es;
    mach_msg_type_number_t count = x86_THREAD_STATE64_COUNT;
    if (thread_get_state(thread, x86_THREAD_STATE64, (thread_state_t)&ss, &count) != KERN_SUCCESS)
        return FL_EIO;
    count = x86_EXCEPTION_STATE64_COUNT;
    bool have_es = thread_get_state(thread, x86_EXCEPTION_STATE64, (thread_state_t)&es, &count) ==
                   KERN_SUCCESS;
    fl_regs_from_mach_x86_64(r, &ss, have_es ? &es : NULL);
    return 0;
}

/* Register indices are slots of 8 bytes in fl_regs_t.r: rax 0, rbx 1, rcx 2, rdx 3, rdi 4, rsi 5,
 * rbp 6, rsp 7, r8..r15 8..15, rip 16. */
_Static_assert(RAX == 0 && RBP == 6 && RSP == 7 && R8 == 8 && R15 == 15 && RIP == 16, "asm layout");
__asm__(".text\n"
        ".globl _fl_regs_get_current\n"
        ".private_extern _fl_regs_get_current\n"
        "_fl_regs_get_current:\n"
        "  .cfi_startproc\n"
        "  movq %rax, 0(%rdi)\n  movq %rbx, 8(%rdi)\n  movq %rcx, 16(%rdi)\n"
        "  movq %rdx, 24(%rdi)\n  movq %rdi, 32(%rdi)\n  movq %rsi, 40(%rdi)\n"
        "  movq %rbp, 48(%rdi)\n  leaq 8(%rsp), %rax\n  movq %rax, 56(%rdi)\n"
        "  movq %r8, 64(%rdi)\n  movq %r9, 72(%rdi)\n  movq %r10, 80(%rdi)\n"
        "  movq %r11, 88(%rdi)\n  movq %r12, 96(%rdi)\n  movq %r13, 104(%rdi)\n"
        "  movq %r14, 112(%rdi)\n  movq %r15, 120(%rdi)\n  movq (%rsp), %rax\n"
        "  movq %rax, 128(%rdi)\n"
        "  movq 0(%rdi), %rax\n"
        "  ret\n"
        "  .cfi_endproc\n");
