/* SPDX-License-Identifier: MIT */
/* x86_64 register set accessors and the walker's step hooks, the same on every OS. */
#include "frames/arch_x86_64.h"

unsigned fl_regs_count(void) { return REG_COUNT; }
const char *fl_regs_name(unsigned i) { return fl_regs_arch_name(FL_REGS_ARCH_X86_64, i); }
uint64_t fl_regs_pc(const fl_regs_t *r) { return r->r[RIP]; }
uint64_t fl_regs_sp(const fl_regs_t *r) { return r->r[RSP]; }
uint64_t fl_regs_fp(const fl_regs_t *r) { return r->r[RBP]; }
int fl_regs_arch(void) { return FL_REGS_ARCH_X86_64; }

void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp) {
    r->r[RIP] = pc;
    r->r[RSP] = sp;
    r->r[RBP] = fp;
}

/* At a function's first instruction (a call through a bad pointer lands pc there) the return
 * address is on top of the stack. */
int fl_unwind_arch_entry_step(const fl_reader_t *mem, const fl_regs_t *r, uint64_t *caller_pc,
                              uint64_t *caller_sp) {
    uint64_t sp = r->r[RSP];
    if (sp & 7) return FL_EBADDATA;
    if (fl_read_u64(mem, sp, caller_pc)) return FL_EFAULT;
    *caller_sp = sp + 8;
    return 0;
}

/* x86_64 call encodings that can precede a return address R: E8 rel32; FF /2 with
 * register, [reg], [reg+disp8], [reg+disp32], [rip+disp32] and SIB forms (R-2 .. R-7). */
bool fl_unwind_arch_is_return_address(const fl_reader_t *mem, uint64_t pc) {
    uint8_t b[8];
    if (pc < 8 || fl_read(mem, pc - 8, b, sizeof b)) return false;
    /* b[8 - k] is the byte at pc - k */
    if (b[3] == 0xe8) return true;                                          /* call rel32 */
    if (b[6] == 0xff && ((b[7] & 0xf8) == 0xd0 || ((b[7] & 0xf8) == 0x10 && (b[7] & 7) != 4 && (b[7] & 7) != 5)))
        return true;                                                        /* call reg / [reg] */
    if (b[5] == 0xff && ((b[6] & 0xf8) == 0x50 && (b[6] & 7) != 4)) return true; /* [reg+d8] */
    if (b[5] == 0xff && b[6] == 0x14) return true;                          /* [sib] */
    if (b[4] == 0xff && b[5] == 0x54) return true;                          /* [sib+d8] */
    if (b[2] == 0xff && (b[3] == 0x15 || ((b[3] & 0xf8) == 0x90 && (b[3] & 7) != 4))) return true;
    if (b[1] == 0xff && b[2] == 0x94) return true;                          /* [sib+d32] */
    return false;
}

/* DWARF x86_64 numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, the return address (rip);
 * 17..32 are xmm0..15, which the register set does not hold. */
const signed char fl_unwind_arch_dwarf_map[FL_DWARF_REGS] = {
    RAX, RDX, RCX, RBX, RSI, RDI, RBP, RSP, R8, R9, R10, R11, R12, R13, R14, R15, RIP,
    -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1, -1, -1,  -1,  -1,  -1,  -1,  -1};
_Static_assert(FL_DWARF_PC == 16 && FL_DWARF_SP == 7 && FL_DWARF_FP == 6, "DWARF numbers");
