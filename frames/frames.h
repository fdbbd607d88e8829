/* SPDX-License-Identifier: MIT */
/* frames: register sets and stack walking (unwind tables, frame pointers, link register). */
#ifndef FAULTLINE_FRAMES_H
#define FAULTLINE_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

/* ---- Register sets (one *_x86_64.c / *_arm64.c per architecture) ---- */

#define FL_REGS_MAX 40u

/* General registers of one thread, in the architecture's order (see fl_regs_name). */
typedef struct fl_regs {
    uint64_t r[FL_REGS_MAX];
} fl_regs_t;

unsigned fl_regs_count(void);                     /* AS-SAFE */
const char *fl_regs_name(unsigned i);             /* AS-SAFE; "rax", "x0", ... */
uint64_t fl_regs_pc(const fl_regs_t *r);          /* AS-SAFE */
uint64_t fl_regs_sp(const fl_regs_t *r);          /* AS-SAFE */
uint64_t fl_regs_fp(const fl_regs_t *r);          /* AS-SAFE */
/* Fills r from a signal handler's ucontext_t. AS-SAFE. */
void fl_regs_from_ucontext(fl_regs_t *r, const void *ucontext);
/* Darwin: fills r with thread_get_state of the Mach thread `thread` (a thread_act_t), which must
 * not be the caller and should be suspended or blocked in the kernel (an exception). On x86_64
 * err/trapno/cr2 come from the exception state. 0, or FL_EIO if the kernel refused (the thread is
 * gone). AS-SAFE (Mach calls only). */
int fl_regs_from_mach_thread(fl_regs_t *r, uint32_t thread);
/* Fills r with the registers of the function that calls it, as they are just after the call
 * returns (pc = the return address, sp = the caller's). The caller's frame must stay live while
 * r is used, so call it from the function whose stack is to be walked. Only the general registers
 * are set (the caller zeroes r first). AS-SAFE. */
void fl_regs_get_current(fl_regs_t *r);
/* The proto's Arch value for this build (1 = x86_64, 2 = arm64). AS-SAFE. */
int fl_regs_arch(void);

/* Register names of any architecture, whatever the build's (report readers need them for
 * reports from elsewhere). The order is that of fl_regs_t in a build for `arch`, and of
 * Thread.register_values in reports (docs/report-format.md); a *_<arch>.c register set must
 * keep to it. */
enum { FL_REGS_ARCH_UNKNOWN = 0, FL_REGS_ARCH_X86_64 = 1, FL_REGS_ARCH_ARM64 = 2 }; /* = Arch */
#define FL_REGS_X86_64_COUNT 24u
#define FL_REGS_ARM64_COUNT 34u /* x0..x28, fp (x29), lr (x30), sp, pc, pstate */
unsigned fl_regs_arch_count(int arch);               /* AS-SAFE; 0 for an unknown arch */
const char *fl_regs_arch_name(int arch, unsigned i); /* AS-SAFE; "" past the count */

/* ---- Frames ---- */

enum { /* values equal faultline.Frame.Method in proto/faultline.proto */
    FL_FRAME_UNKNOWN = 0,
    FL_FRAME_CONTEXT = 1,
    FL_FRAME_CFI = 2,
    FL_FRAME_FP = 3,
    FL_FRAME_LR = 4,
    FL_FRAME_SCAN = 5
};

typedef struct fl_frame {
    uint64_t pc; /* exact for frame 0, a return address for the others */
    uint64_t sp;
    uint32_t method; /* FL_FRAME_* */
} fl_frame_t;

/* What a walk may look at. All memory is read through `mem`. */
typedef struct fl_walk_env {
    const fl_reader_t *mem;
    const fl_image_list_t *images; /* executable ranges; unwind tables for the table stepper */
    uint64_t stack_lo, stack_hi;   /* the thread's stack mapping; 0,0 = unknown */
    bool use_cfi;                  /* try the unwind tables (fl_frames_walk, step 1) */
} fl_walk_env_t;

typedef struct fl_walk_result {
    unsigned count;
    bool truncated;          /* max frames reached */
    const char *stop_reason; /* static string: why the walk ended */
} fl_walk_result_t;

/* Prepares the unwind-table stepper at install time (Linux: first-use initialisation inside LLVM
 * libunwind, a dry run of one step; Darwin: nothing to prepare). NOT AS-SAFE. */
int fl_frames_prepare(void);

/* Walks the stack described by `regs` into out[0..max). Frame 0 is the context's pc. Each step
 * is taken by the first stepper that gives a plausible caller (caller sp above the callee's,
 * inside the stack, return address inside an executable segment):
 *   1. the unwind tables (method CFI). Linux: DWARF CFI, LLVM libunwind over the images'
 *      .eh_frame_hdr (exact even in code without frame pointers, in prologues and in leaf
 *      functions). Darwin: compact unwind from each image's __unwind_info (exact at call sites;
 *      functions whose entry says DWARF fall through to the next steppers);
 *   2. the frame-pointer record, under the same trust checks (code without unwind tables);
 *   3. the link register (arm64, frame 0 only).
 * Why CFI before frame pointers on Linux: see docs/unwinding.md (a frame-pointer chain through
 * code built without frame pointers looks valid and silently skips callers).
 * Never faults: memory goes through env->mem and libunwind runs under a fault guard. AS-SAFE. */
int fl_frames_walk(const fl_walk_env_t *env, const fl_regs_t *regs, fl_frame_t *out, unsigned max,
                   fl_walk_result_t *res);

/* Frame-pointer-only walk (the trust checks, no CFI); for tests and benchmarks. Return addresses
 * lose their pointer-authentication bits in both walks. AS-SAFE. */
int fl_frames_walk_fp(const fl_walk_env_t *env, const fl_regs_t *regs, fl_frame_t *out,
                      unsigned max, fl_walk_result_t *res);

#endif
