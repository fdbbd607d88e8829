/* SPDX-License-Identifier: MIT */
/* Internal to frames/ on Linux: the privatised LLVM libunwind API and the hooks that feed it. */
#ifndef FAULTLINE_FRAMES_CFI_LINUX_H
#define FAULTLINE_FRAMES_CFI_LINUX_H

/* cmake/privatize-libunwind.sh renamed every libunwind symbol fl_lu_<name>. */
#define unw_init_local fl_lu_unw_init_local
#define unw_step fl_lu_unw_step
#define unw_get_reg fl_lu_unw_get_reg
#define unw_getcontext fl_lu_unw_getcontext
#include <libunwind.h>

#include "frames/unwind_internal.h"

/* Architecture hooks for libunwind (regs_linux_<arch>.c; AS-SAFE). */
void fl_unwind_arch_to_context(const fl_regs_t *r, unw_context_t *ctx);
void fl_unwind_arch_from_cursor(fl_regs_t *r, unw_cursor_t *c);

/* The images the loader shim hands to libunwind during a walk (AS-SAFE). */
void fl_unwind_shims_set_images(const fl_image_list_t *images);

#endif
