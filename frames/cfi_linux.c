/* SPDX-License-Identifier: MIT */
/* The CFI stepper on Linux: one DWARF CFI step through the privatised LLVM libunwind, guarded. */
#include <signal.h>

#include "frames/cfi_linux.h"

typedef struct state {
    unw_cursor_t cursor;
    unw_context_t context;
    sigset_t mask; /* restored if a step faulted (see FL_GUARD_ENTER) */
} state_t;
_Static_assert(sizeof(state_t) <= FL_CFI_STATE_BYTES, "FL_CFI_STATE_BYTES too small");

static state_t *state_of(fl_cfi_cursor_t *c) { return (state_t *)(void *)c->state; }

void fl_cfi_begin(fl_cfi_cursor_t *c, const fl_walk_env_t *env) {
    c->env = env;
    c->valid = false;
    c->exact_pc = true;
    c->faulted = false;
    c->tid = (int)fl_sys_gettid();
    sigprocmask(SIG_SETMASK, NULL, &state_of(c)->mask);
    fl_unwind_shims_set_images(env->images);
}

void fl_cfi_end(fl_cfi_cursor_t *c) {
    fl_unwind_shims_set_images(NULL);
    if (c->faulted) sigprocmask(SIG_SETMASK, &state_of(c)->mask, NULL);
}

int fl_cfi_step(fl_cfi_cursor_t *c, fl_regs_t *r) {
    state_t *s = state_of(c);
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
            fl_unwind_arch_to_context(&seed, &s->context);
            c->valid = unw_init_local(&s->cursor, &s->context) == UNW_ESUCCESS;
        }
        if (c->valid) {
            int st = unw_step(&s->cursor);
            if (st > 0) {
                fl_unwind_arch_from_cursor(r, &s->cursor);
                ret = 1;
            } else if (st == 0) {
                /* libunwind says "end" both for the outermost frame (its CFI leaves the return
                 * address undefined: the cursor moved to pc 0) and for a pc it has no tables for
                 * (the cursor did not move); only the first is an end. */
                unw_word_t ip = 1;
                ret = unw_get_reg(&s->cursor, UNW_REG_IP, &ip) == UNW_ESUCCESS && ip == 0 &&
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
