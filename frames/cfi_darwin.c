/* SPDX-License-Identifier: MIT */
/* The unwind-table stepper on Darwin: every image is Mach-O (cfi_macho.c). */
#include "frames/unwind_internal.h"

#pragma GCC poison malloc calloc realloc free

const bool fl_cfi_have_llvm = false;

void fl_cfi_begin(fl_cfi_cursor_t *c, const fl_walk_env_t *env) { fl_cfi_cursor_init(c, env); }

void fl_cfi_end(fl_cfi_cursor_t *c) { fl_cfi_cursor_finish(c); }

/* Darwin's signal trampoline (_sigtramp) is in libsystem_platform, an image with unwind tables. */
bool fl_unwind_os_is_sigreturn(const fl_reader_t *mem, uint64_t pc) {
    (void)mem, (void)pc;
    return false;
}

int fl_frames_sigframe(uint64_t trampoline_sp, fl_sigframe_t *out) {
    (void)trampoline_sp, (void)out;
    return FL_ENOSYS;
}

int fl_cfi_step(fl_cfi_cursor_t *c, const fl_regs_t *r, uint64_t *pc, uint64_t *sp, uint64_t *fp) {
    if (!c->valid) fl_cfi_cursor_seed(c, r);
    uint64_t cpc = c->regs.r[FL_DWARF_PC];
    /* A return address follows its call, which may be the last instruction of its function
     * (a noreturn call): look the caller up by the call, one byte back. */
    const fl_image_t *img = cpc ? fl_cfi_cursor_image(c, c->exact_pc ? cpc : cpc - 1) : 0;
    return img ? fl_cfi_macho_step(c, img, pc, sp, fp) : -1;
}
