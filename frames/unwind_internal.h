/* SPDX-License-Identifier: MIT */
/* Internal to frames/: the privatised LLVM libunwind API and the per-architecture step hooks. */
#ifndef FAULTLINE_FRAMES_UNWIND_INTERNAL_H
#define FAULTLINE_FRAMES_UNWIND_INTERNAL_H

/* cmake/privatize-libunwind.sh renamed every libunwind symbol fl_lu_<name>. */
#define unw_init_local fl_lu_unw_init_local
#define unw_step fl_lu_unw_step
#define unw_get_reg fl_lu_unw_get_reg
#define unw_getcontext fl_lu_unw_getcontext
#include <libunwind.h>

#include "frames/frames.h"

/* All AS-SAFE. */
void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp);
void fl_unwind_arch_to_context(const fl_regs_t *r, unw_context_t *ctx);
void fl_unwind_arch_from_cursor(fl_regs_t *r, unw_cursor_t *c);
/* The caller as a function's first instruction sees it: x86_64 the return address on top of the
 * stack (caller sp = sp + 8); arm64 lr (caller sp = sp), still valid until the frame record is
 * stored. */
int fl_unwind_arch_entry_step(const fl_reader_t *mem, const fl_regs_t *r, uint64_t *caller_pc,
                              uint64_t *caller_sp);

/* A return address as stored in a register or a frame record -> the code address it names
 * (arm64: pointer-authentication bits stripped; x86_64: unchanged). */
uint64_t fl_unwind_arch_return_address(uint64_t stored);

/* True when the bytes just before pc encode a call instruction. */
bool fl_unwind_arch_is_return_address(const fl_reader_t *mem, uint64_t pc);

/* The images the loader shim hands to libunwind during a walk (AS-SAFE). */
void fl_unwind_shims_set_images(const fl_image_list_t *images);

/* CFI stepper over the privatised libunwind. */
typedef struct fl_cfi_cursor {
    unw_cursor_t cursor;
    unw_context_t context;
    bool valid;   /* the cursor continues from the last CFI step */
    bool exact_pc; /* the next seeding is an interrupted context (frame 0), not a return address */
    int tid;      /* the walking thread, for the fault guard */
    bool faulted; /* a step faulted and was recovered */
} fl_cfi_cursor_t;

/* Steps r to its caller with DWARF CFI: 1 stepped, 0 the unwind tables mark the outermost frame,
 * <0 no unwind information, an error, or a fault.
 * AS-SAFE (libunwind runs under a fault guard). */
int fl_cfi_step(fl_cfi_cursor_t *c, fl_regs_t *r);

#endif
