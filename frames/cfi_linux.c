/* SPDX-License-Identifier: MIT */
/* The table stepper on Linux: faultline's DWARF evaluator (cfi_step.c) over each image's
 * .eh_frame_hdr; the privatised LLVM libunwind, guarded, for the steps it declines and in
 * FL_CFI_MODE_LLVM. */
#include <signal.h>

#include "frames/cfi_linux.h"

const bool fl_cfi_have_llvm = true;

typedef struct state {
    unw_cursor_t cursor;
    unw_context_t context;
    sigset_t mask;   /* saved before the walk's first LLVM step, restored if a step faulted */
    bool llvm_valid; /* the LLVM cursor continues from its last step */
    bool mask_saved;
} state_t;
_Static_assert(sizeof(state_t) <= FL_CFI_STATE_BYTES, "FL_CFI_STATE_BYTES too small");

static state_t *state_of(fl_cfi_cursor_t *c) { return (state_t *)(void *)c->state; }

void fl_cfi_begin(fl_cfi_cursor_t *c, const fl_walk_env_t *env) {
    fl_cfi_cursor_init(c, env);
    state_of(c)->llvm_valid = false;
    state_of(c)->mask_saved = false;
    /* (a global: concurrent walks, which never call LLVM libunwind, leave it alone) */
    if (!env->concurrent) fl_unwind_shims_set_images(env->images);
}

void fl_cfi_end(fl_cfi_cursor_t *c) {
    if (!c->env->concurrent) fl_unwind_shims_set_images(NULL);
    if (c->faulted) sigprocmask(SIG_SETMASK, &state_of(c)->mask, NULL);
    fl_cfi_cursor_finish(c);
}

/* One LLVM libunwind step of r (re-seeded from r when `reseed`), under the fault guard. `exact`:
 * r's pc is an interrupted instruction, not a return address. */
static int llvm_step(fl_cfi_cursor_t *c, fl_regs_t *r, bool reseed, bool exact) {
    state_t *s = state_of(c);
    if (!s->mask_saved) { /* two system calls, only in walks that need LLVM */
        sigprocmask(SIG_SETMASK, NULL, &s->mask);
        s->mask_saved = true;
        c->tid = (int)fl_sys_gettid();
    }
    fl_guard_t guard;
    volatile int ret = -1; /* survives the guard's longjmp */
    if (FL_GUARD_ENTER(&guard, c->tid)) {
        if (reseed || !s->llvm_valid) {
            /* libunwind applies the CFI rows that start strictly below the pc it is seeded with:
             * right for a return address (the call lies below it), one row short for the exact
             * pc of an interrupted instruction that starts a new row (the one after a push).
             * Seeding pc + 1 for an exact pc applies that row, and still finds the same
             * function: the interrupted instruction is at least one byte long. */
            fl_regs_t seed = *r;
            if (exact && fl_regs_pc(r))
                fl_unwind_arch_set(&seed, fl_regs_pc(r) + 1, fl_regs_sp(r), fl_regs_fp(r));
            fl_unwind_arch_to_context(&seed, &s->context);
            s->llvm_valid = unw_init_local(&s->cursor, &s->context) == UNW_ESUCCESS;
        }
        if (s->llvm_valid) {
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
    if (ret != 1) s->llvm_valid = false;
    if (ret == 1) c->stats.fallback++;
    return ret;
}

/* An LLVM libunwind step of the current frame (the cursor's registers, pc, sp and fp from r). */
static int llvm(fl_cfi_cursor_t *c, const fl_regs_t *r, bool reseed, bool exact, uint64_t *pc,
                uint64_t *sp, uint64_t *fp) {
    fl_regs_t cur;
    fl_cfi_cursor_regs(c, r, &cur);
    int ret = llvm_step(c, &cur, reseed, exact);
    if (ret != 1) return ret;
    fl_cfi_cursor_from_regs(c, &cur);
    c->exact_pc = false;
    return fl_cfi_cursor_caller(c, pc, sp, fp);
}

int fl_cfi_step(fl_cfi_cursor_t *c, const fl_regs_t *r, uint64_t *pc, uint64_t *sp, uint64_t *fp) {
    bool reseed = !c->valid;
    if (reseed) fl_cfi_cursor_seed(c, r);
    bool exact = c->exact_pc;
    if (c->mode == FL_CFI_MODE_LLVM) return llvm(c, r, reseed, exact, pc, sp, fp);
    uint64_t cpc = c->regs.r[FL_DWARF_PC], at = exact ? cpc : cpc - 1;
    const fl_image_t *img = cpc ? fl_cfi_cursor_image(c, at) : 0;
    if (img && img->cputype) return fl_cfi_macho_step(c, img, pc, sp, fp); /* a Darwin state */
    int e = img ? fl_cfi_dwarf_step(c, img, at, 0) : FL_ENOTFOUND;
    if (e == FL_ENOTFOUND && cpc && fl_unwind_os_sigreturn(c->env->mem, &c->regs) == 1) {
        c->exact_pc = true;
        e = 1;
    }
    /* Declined (a rule or expression the evaluator does not support): LLVM libunwind takes this
     * step, and the evaluator goes on from its result (not in a concurrent walk: the walker's
     * other steppers do). */
    if (e == FL_ENOSYS && !c->env->concurrent) return llvm(c, r, true, exact, pc, sp, fp);
    if (e == 1) return fl_cfi_cursor_caller(c, pc, sp, fp);
    return e == 0 ? 0 : -1;
}
