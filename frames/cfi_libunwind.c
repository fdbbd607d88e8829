/* SPDX-License-Identifier: MIT */
/* The CFI stepper: one DWARF CFI step through the privatised LLVM libunwind, under a fault guard. */
#include "frames/unwind_internal.h"

int fl_cfi_step(fl_cfi_cursor_t *c, fl_regs_t *r) {
    fl_guard_t guard;
    volatile int ret = -1; /* survives the guard's longjmp */
    if (FL_GUARD_ENTER(&guard)) {
        if (!c->valid) {
            /* libunwind treats the seeded pc as exact (not a return address): right for frame 0
             * and for a pc reached by a frame-pointer step, off by one only for a call that is
             * the very last instruction of its function. */
            fl_unwind_arch_to_context(r, &c->context);
            c->valid = unw_init_local(&c->cursor, &c->context) == UNW_ESUCCESS;
        }
        if (c->valid) {
            int s = unw_step(&c->cursor);
            if (s > 0) {
                fl_unwind_arch_from_cursor(r, &c->cursor);
                ret = 1;
            } else {
                ret = s == 0 ? 0 : -1;
            }
        }
    }
    FL_GUARD_LEAVE(&guard);
    if (ret != 1) c->valid = false;
    return ret;
}

int fl_frames_prepare(void) {
    /* Run one walk over our own stack now, so that every first-use path inside libunwind (its
     * static initialisers, the dlsym probe for _dl_find_object) has run before a crash. */
    static fl_image_list_t images;
    int e = fl_elf_images_collect(fl_memory_reader(), &images);
    if (e) return e;
    fl_regs_t regs;
    unw_context_t ctx;
    unw_cursor_t cur;
    if (unw_getcontext(&ctx) != UNW_ESUCCESS) return FL_ENOSYS;
    fl_unwind_shims_set_images(&images);
    if (unw_init_local(&cur, &ctx) != UNW_ESUCCESS) return FL_ENOSYS;
    fl_memset(&regs, 0, sizeof regs);
    fl_unwind_arch_from_cursor(&regs, &cur);
    fl_cfi_cursor_t c = {.valid = false};
    (void)fl_cfi_step(&c, &regs);
    fl_unwind_shims_set_images(NULL);
    return 0;
}
