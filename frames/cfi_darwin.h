/* SPDX-License-Identifier: MIT */
/* Internal to frames/ on Darwin: what the compact-unwind stepper needs from the register set. */
#ifndef FAULTLINE_FRAMES_CFI_DARWIN_H
#define FAULTLINE_FRAMES_CFI_DARWIN_H

#include "frames/unwind_internal.h"
#include "macho/macho.h"

/* The fl_regs_t index of DWARF register `dwarf` (compact unwind's numbering, see
 * fl_macho_regs_t), or -1 when the register set has none. (regs_darwin_<arch>.c; AS-SAFE.) */
int fl_unwind_arch_dwarf_reg(unsigned dwarf);
/* The DWARF numbers of the pc, sp and fp. */
extern const unsigned fl_unwind_arch_dwarf_pc, fl_unwind_arch_dwarf_sp, fl_unwind_arch_dwarf_fp;

#endif
