/* SPDX-License-Identifier: MIT */
/* Darwin thread states into faultline's register order (shared: tested on Linux, used by regs_darwin_*.c). */
#ifndef FAULTLINE_FRAMES_REGS_MACH_H
#define FAULTLINE_FRAMES_REGS_MACH_H

#include "base/mach_layouts.h"
#include "frames/frames.h"

/* Fills r (zeroed first) with an x86_64 thread state in the order of a build for x86_64
 * (fl_regs_arch_name(FL_REGS_ARCH_X86_64, i): rax..r15, rip, rflags, cs, fs, gs, then err,
 * trapno and cr2 from the exception state, which may be NULL). AS-SAFE. */
static inline void fl_regs_from_mach_x86_64(fl_regs_t *r, const fl_mach_x86_thread_state64_t *ss,
                                            const fl_mach_x86_exception_state64_t *es) {
    fl_memset(r, 0, sizeof *r);
    /* The flavour's fields are faultline's order: 21 words. */
    _Static_assert(sizeof *ss == 21 * 8, "x86_THREAD_STATE64");
    fl_memcpy(r->r, ss, sizeof *ss);
    if (es) {
        r->r[21] = es->err;
        r->r[22] = es->trapno;
        r->r[23] = es->faultvaddr;
    }
}

/* Fills r (zeroed first) with an arm64 thread state in the order of a build for arm64: x0..x28,
 * fp, lr, sp, pc, then pstate (cpsr). Values are kept as the thread had them, pointer
 * authentication bits included (the walker strips them where it uses one as an address).
 * AS-SAFE. */
static inline void fl_regs_from_mach_arm64(fl_regs_t *r, const fl_mach_arm_thread_state64_t *ss) {
    fl_memset(r, 0, sizeof *r);
    fl_memcpy(r->r, ss, 33 * 8); /* x0..x28, fp, lr, sp, pc */
    r->r[33] = ss->cpsr;
}

#endif
