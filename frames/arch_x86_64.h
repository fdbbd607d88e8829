/* SPDX-License-Identifier: MIT */
/* Internal to frames/: x86_64 register indices in fl_regs_t, shared by arch_x86_64.c and the regs_<platform>_x86_64.c files. */
#ifndef FAULTLINE_FRAMES_ARCH_X86_64_H
#define FAULTLINE_FRAMES_ARCH_X86_64_H

#include "frames/unwind_internal.h"

/* The order of regs_names.c. The first 21 follow LLVM libunwind's unw_context_t (Registers_x86_64
 * GPRs), so a register set seeds a libunwind cursor by copy on Linux; they are also
 * x86_thread_state64_t's fields in its own order on Darwin. */
enum { RAX, RBX, RCX, RDX, RDI, RSI, RBP, RSP, R8, R9, R10, R11, R12, R13, R14, R15, RIP, RFLAGS,
       CS, FS, GS, ERR, TRAPNO, CR2, REG_COUNT };
_Static_assert(REG_COUNT == FL_REGS_X86_64_COUNT, "names in regs_names.c");

#endif
