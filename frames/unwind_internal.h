/* SPDX-License-Identifier: MIT */
/* Internal to frames/: the per-architecture step hooks and the unwind-table stepper's interface. */
#ifndef FAULTLINE_FRAMES_UNWIND_INTERNAL_H
#define FAULTLINE_FRAMES_UNWIND_INTERNAL_H

#include "frames/frames.h"

/* ---- Architecture hooks (arch_<arch>.c, the same on every OS; all AS-SAFE) ---- */

void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp);
/* The caller as a function's first instruction sees it: x86_64 the return address on top of the
 * stack (caller sp = sp + 8); arm64 lr (caller sp = sp), still valid until the frame record is
 * stored. */
int fl_unwind_arch_entry_step(const fl_reader_t *mem, const fl_regs_t *r, uint64_t *caller_pc,
                              uint64_t *caller_sp);

/* True when the bytes just before pc encode a call instruction. */
bool fl_unwind_arch_is_return_address(const fl_reader_t *mem, uint64_t pc);

/* A code address as stored in memory or a register (a return address, a saved lr) without the
 * pointer-authentication bits arm64e and pac-ret code sign it with; other architectures return it
 * unchanged. (arch_<arch>.c; AS-SAFE.) */
uint64_t fl_unwind_strip_pac(uint64_t addr);

/* ---- The unwind-table stepper: one per platform, chosen by CMake ----
 * Linux: DWARF CFI through the privatised LLVM libunwind (cfi_linux.c, cfi_linux.h).
 * Darwin: compact unwind (__TEXT,__unwind_info) through macho/ (cfi_darwin.c).
 * Both report their frames as FL_FRAME_CFI. A walk owns one cursor on its stack. */

#define FL_CFI_STATE_BYTES 3072u /* the platform stepper's own state; each checks it fits */

typedef struct fl_cfi_cursor {
    const fl_walk_env_t *env;
    bool valid;    /* the cursor continues from the last table step (cleared by the walker when
                    * another stepper moved the registers) */
    bool exact_pc; /* the next seeding is an interrupted context (frame 0), not a return address */
    int tid;       /* the walking thread, for the fault guard */
    bool faulted;  /* a step faulted and was recovered */
    _Alignas(16) unsigned char state[FL_CFI_STATE_BYTES];
} fl_cfi_cursor_t;

/* Starts a walk over env (images, memory): c is reset to an exact frame-0 context. AS-SAFE. */
void fl_cfi_begin(fl_cfi_cursor_t *c, const fl_walk_env_t *env);

/* Steps r to its caller with the unwind tables: 1 stepped, 0 the tables mark the outermost frame,
 * <0 no unwind information, an error, or a recovered fault (c->valid is then false). AS-SAFE. */
int fl_cfi_step(fl_cfi_cursor_t *c, fl_regs_t *r);

/* Ends the walk begun by fl_cfi_begin (undoes what it set up). AS-SAFE. */
void fl_cfi_end(fl_cfi_cursor_t *c);

#endif
