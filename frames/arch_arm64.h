/* SPDX-License-Identifier: MIT */
/* Internal to frames/: arm64 register indices in fl_regs_t, shared by arch_arm64.c and the regs_<platform>_arm64.c files. */
#ifndef FAULTLINE_FRAMES_ARCH_ARM64_H
#define FAULTLINE_FRAMES_ARCH_ARM64_H

#include "frames/unwind_internal.h"

/* x0..x28, fp (x29), lr (x30), sp, pc, pstate: the order of regs_names.c, and the first 33 words of
 * LLVM libunwind's arm64 unw_context_t (Registers_arm64 GPRs), so a register set seeds a
 * libunwind cursor by copy; also DWARF's numbering for x0..sp. */
enum { X0 = 0, X19 = 19, X28 = 28, FP = 29, LR = 30, SP = 31, PC = 32, PSTATE = 33, REG_COUNT };
_Static_assert(REG_COUNT == FL_REGS_ARM64_COUNT, "names in regs_names.c");

#endif
