/* SPDX-License-Identifier: MIT */
/* The CFI stepper: one DWARF CFI step through the privatised LLVM libunwind, under a fault guard. */
#include "frames/unwind_internal.h"

int fl_cfi_step(fl_cfi_cursor_t *c, fl_regs_t *r) {
    fl_guard_t guard;
    volatile int ret = -1; /* survives the guard's longjmp */
    if (FL_GUARD_ENTER(&guard, c->tid)) {
        if (!c->valid) {
            /* libunwind applies the CFI rows that start strictly below the pc it is seeded with:
             * right for a return address (the call lies below it), one row short for the exact
             * pc of an interrupted instruction that starts a new row (the one after a push).
             * Seeding pc + 1 for frame 0 applies that row, and still finds the same function:
             * the interrupted instruction is at least one byte long. */
            fl_regs_t seed = *r;
            if (c->exact_pc && fl_regs_pc(r))
                fl_unwind_arch_set(&seed, fl_regs_pc(r) + 1, fl_regs_sp(r), fl_regs_fp(r));
            c->exact_pc = false;
            fl_unwind_arch_to_context(&seed, &c->context);
            c->valid = unw_init_local(&c->cursor, &c->context) == UNW_ESUCCESS;
        }
        if (c->valid) {
            int s = unw_step(&c->cursor);
            if (s > 0) {
                fl_unwind_arch_from_cursor(r, &c->cursor);
                ret = 1;
            } else if (s == 0) {
                /* libunwind says "end" both for the outermost frame (its CFI leaves the return
                 * address undefined: the cursor moved to pc 0) and for a pc it has no tables for
                 * (the cursor did not move); only the first is an end. */
                unw_word_t ip = 1;
                ret = unw_get_reg(&c->cursor, UNW_REG_IP, &ip) == UNW_ESUCCESS && ip == 0 &&
                              fl_regs_pc(r) != 0 ? 0 : -1;
            }
        }
    }
    FL_GUARD_LEAVE(&guard);
    if (guard.fired) c->faulted = true;
    if (ret != 1) c->valid = false;
    return ret;
}

int fl_frames_prepare(void) {
    /* Initialise one cursor now, so that libunwind's first-use paths have run before a crash
     * (with no images handed to the shims, its table lookup returns at once). */
    unw_context_t ctx;
    unw_cursor_t cur;
    fl_unwind_shims_set_images(NULL);
    if (unw_getcontext(&ctx) != UNW_ESUCCESS) return FL_ENOSYS;
    (void)unw_init_local(&cur, &ctx);
    return 0;
}
