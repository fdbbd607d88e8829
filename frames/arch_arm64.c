/* SPDX-License-Identifier: MIT */
/* arm64 register set accessors, the walker's step hooks and pointer-authentication stripping, the same on every OS. */
#include "frames/arch_arm64.h"

unsigned fl_regs_count(void) { return REG_COUNT; }
const char *fl_regs_name(unsigned i) { return fl_regs_arch_name(FL_REGS_ARCH_ARM64, i); }
uint64_t fl_regs_pc(const fl_regs_t *r) { return r->r[PC]; }
uint64_t fl_regs_sp(const fl_regs_t *r) { return r->r[SP]; }
uint64_t fl_regs_fp(const fl_regs_t *r) { return r->r[FP]; }
int fl_regs_arch(void) { return FL_REGS_ARCH_ARM64; }

void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp) {
    r->r[PC] = pc;
    r->r[SP] = sp;
    r->r[FP] = fp;
}

/* The caller as lr names it, with the caller's sp. Right wherever the frame record at fp is the
 * caller's: at its first instruction (where a call through a bad pointer lands), in a leaf that
 * never stores one, in a prologue before the store and in an epilogue after the reload. */
int fl_unwind_arch_entry_step(const fl_reader_t *mem, const fl_regs_t *r, uint64_t *caller_pc,
                              uint64_t *caller_sp) {
    (void)mem;
    if (r->r[SP] & 15) return FL_EBADDATA; /* AAPCS64: sp is 16-byte aligned at any call */
    *caller_pc = fl_unwind_strip_pac(r->r[LR]);
    *caller_sp = r->r[SP];
    return *caller_pc ? 0 : FL_EBADDATA;
}

/* The instruction before a return address is BL imm26, BLR Xn, or (with pointer authentication)
 * BLRAA/BLRAB Xn, Xm or BLRAAZ/BLRABZ Xn. */
bool fl_unwind_arch_is_return_address(const fl_reader_t *mem, uint64_t pc) {
    uint32_t i;
    if (pc < 4 || (pc & 3) || fl_read(mem, pc - 4, &i, sizeof i)) return false;
    return (i & 0xfc000000u) == 0x94000000u ||                                /* bl */
           (i & 0xfffffc1fu) == 0xd63f0000u ||                                /* blr */
           ((i & 0xfffff800u) == 0xd63f0800u && (i & 0x1fu) == 0x1fu) ||      /* blraaz/blrabz */
           (i & 0xfffff800u) == 0xd73f0800u;                                  /* blraa/blrab */
}

/* DWARF arm64 numbering is the register set's own for x0..x30, sp and pc. */
const signed char fl_unwind_arch_dwarf_map[FL_DWARF_REGS] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, FP, LR, SP, PC};
_Static_assert((int)FL_DWARF_PC == (int)PC && (int)FL_DWARF_SP == (int)SP && (int)FL_DWARF_FP == (int)FP,
               "DWARF numbers");
