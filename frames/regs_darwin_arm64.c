/* SPDX-License-Identifier: MIT */
/* arm64 Darwin register set: extraction from a ucontext or a Mach thread, the compact-unwind glue. */
#include <mach/mach.h>
#include <sys/ucontext.h>

#include "frames/unwind_internal.h"

#include "frames/arch_arm64.h"
#include "frames/regs_mach.h"

/* Built for arm64, not arm64e: the thread-state structs have plain fields
 * (__DARWIN_OPAQUE_ARM_THREAD_STATE64 is 0). */
_Static_assert(FP == 29 && PC == 32 && PSTATE == 33, "regs_mach.h order");
_Static_assert(sizeof(arm_thread_state64_t) == sizeof(fl_mach_arm_thread_state64_t),
               "base/mach_layouts.h (checked field by field by tests/darwin/apple_layouts.c)");

void fl_regs_from_ucontext(fl_regs_t *r, const void *ucontext) {
    const ucontext_t *uc = ucontext;
    fl_mach_arm_thread_state64_t ss;
    fl_memcpy(&ss, &uc->uc_mcontext->__ss, sizeof ss);
    fl_regs_from_mach_arm64(r, &ss);
}

int fl_regs_from_mach_thread(fl_regs_t *r, uint32_t thread) {
    fl_mach_arm_thread_state64_t ss;
    mach_msg_type_number_t count = ARM_THREAD_STATE64_COUNT;
    if (thread_get_state(thread, ARM_THREAD_STATE64, (thread_state_t)&ss, &count) != KERN_SUCCESS)
        return FL_EIO;
    fl_regs_from_mach_arm64(r, &ss);
    return 0;
}

/* Stores the general registers into r (x0 in the first slot, 8 bytes each): pc is the return
 * address (lr at entry) and sp is the caller's (a leaf without a frame leaves it unchanged). */
_Static_assert(FP == 29 && LR == 30 && SP == 31 && PC == 32, "asm layout");
__asm__(".text\n"
        ".globl _fl_regs_get_current\n"
        ".private_extern _fl_regs_get_current\n"
        ".p2align 2\n"
        "_fl_regs_get_current:\n"
        "  stp x0, x1, [x0, #0]\n   stp x2, x3, [x0, #16]\n   stp x4, x5, [x0, #32]\n"
        "  stp x6, x7, [x0, #48]\n  stp x8, x9, [x0, #64]\n   stp x10, x11, [x0, #80]\n"
        "  stp x12, x13, [x0, #96]\n stp x14, x15, [x0, #112]\n stp x16, x17, [x0, #128]\n"
        "  stp x18, x19, [x0, #144]\n stp x20, x21, [x0, #160]\n stp x22, x23, [x0, #176]\n"
        "  stp x24, x25, [x0, #192]\n stp x26, x27, [x0, #208]\n stp x28, x29, [x0, #224]\n"
        "  mov x1, sp\n"
        "  stp x30, x1, [x0, #240]\n"
        "  str x30, [x0, #256]\n"
        "  ret\n");
