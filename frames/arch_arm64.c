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

const bool fl_unwind_arch_entry_on_stack = false;

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

/* ---- Straight-line code around an exact pc (fl_unwind_arch_prologue/_epilogue) ---- */

#define SIM_INSNS_MAX 32u

static int64_t sext(uint32_t v, unsigned bits) {
    return (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

static bool is_hint_nop(uint32_t i) { /* nop, bti, paciasp/pacibsp, autiasp/autibsp, xpaclri */
    return (i & 0xfffff01fu) == 0xd503201fu;
}

static int sim_load(const fl_reader_t *stack, fl_dwarf_regs_t *r, unsigned reg, uint64_t addr) {
    uint64_t v;
    if (reg >= 31) return FL_EINVAL; /* xzr/sp as a load target: not an epilogue */
    if (fl_read_u64(stack, addr, &v)) return FL_EFAULT;
    r->r[reg] = v;
    r->valid |= 1ull << reg;
    return 0;
}

/* An instruction the epilogue emulation may step over: one that can change neither sp, fp, lr
 * nor the flow of control (compilers schedule body instructions into epilogues, such as the load
 * that faulted between the two ldp of `ldp x29, x30, [sp, #16]; ldr x0, [x8]; ldp x20, x19,
 * [sp], #32; ret`). A callee-saved register it writes is reloaded before the return, or the
 * function would break the ABI; the others are not the caller's. Conservative: every branch and
 * system instruction, every load or store based on sp (which may write it back) and anything
 * whose destination field names x29, x30 or sp stops the emulation. */
static bool skippable(uint32_t i) {
    unsigned op0 = i >> 25 & 0xf, rd = i & 31, rn = i >> 5 & 31, rt2 = i >> 10 & 31;
    if (rd == 29 || rd == 30) return false;
    if ((op0 & 0x5) == 0x4) /* loads and stores (x1x0) */
        return rn != 31 && rn != 29 && rn != 30 && !((op0 & 0x7) == 0x4 && (rt2 == 29 || rt2 == 30));
    if ((op0 & 0xe) == 0x8) return rd != 31; /* data processing, immediate (100x) */
    if ((op0 & 0x7) == 0x5) return rd != 31; /* data processing, register (x101) */
    if ((op0 & 0x7) == 0x7) return true;     /* SIMD and floating point (x111) */
    return false;                            /* branches, system, reserved */
}

#define SIM_SKIP_MAX 8u

int fl_unwind_arch_epilogue(const fl_reader_t *code, const fl_reader_t *stack, fl_dwarf_regs_t *regs) {
    fl_dwarf_regs_t r = *regs;
    uint64_t ip = r.r[32];
    unsigned skipped = 0;
    if ((r.valid & (1ull << 31 | 1ull << 32)) != (1ull << 31 | 1ull << 32)) return 0;
    for (unsigned n = 0; n < SIM_INSNS_MAX; n++, ip += 4) {
        uint32_t i;
        if (fl_read_u32(code, ip, &i)) return 0;
        uint64_t *sp = &r.r[31];
        unsigned rt = i & 31, rt2 = i >> 10 & 31, rn = i >> 5 & 31;
        int64_t imm7 = sext(i >> 15 & 0x7f, 7) * 8, imm9 = sext(i >> 12 & 0x1ff, 9);
        uint64_t imm12 = (uint64_t)(i >> 10 & 0xfff) << ((i >> 22 & 1) ? 12 : 0);
        if (is_hint_nop(i)) continue;
        if ((i & 0xffc00000u) == 0xa8c00000u && rn == 31) { /* ldp x, x, [sp], #imm */
            if (sim_load(stack, &r, rt, *sp) || sim_load(stack, &r, rt2, *sp + 8)) return 0;
            *sp += (uint64_t)imm7;
        } else if ((i & 0xffc00000u) == 0xa9400000u && rn == 31) { /* ldp x, x, [sp, #imm] */
            if (sim_load(stack, &r, rt, *sp + (uint64_t)imm7) ||
                sim_load(stack, &r, rt2, *sp + (uint64_t)imm7 + 8))
                return 0;
        } else if ((i & 0xffc00000u) == 0xa9c00000u && rn == 31) { /* ldp x, x, [sp, #imm]! */
            *sp += (uint64_t)imm7;
            if (sim_load(stack, &r, rt, *sp) || sim_load(stack, &r, rt2, *sp + 8)) return 0;
        } else if ((i & 0xffc00000u) == 0x6cc00000u && rn == 31) { /* ldp d, d, [sp], #imm */
            *sp += (uint64_t)imm7;
        } else if ((i & 0xffc00000u) == 0x6d400000u && rn == 31) { /* ldp d, d, [sp, #imm] */
        } else if ((i & 0xffe00c00u) == 0xf8400400u && rn == 31) { /* ldr x, [sp], #imm */
            if (sim_load(stack, &r, rt, *sp)) return 0;
            *sp += (uint64_t)imm9;
        } else if ((i & 0xffc00000u) == 0xf9400000u && rn == 31) { /* ldr x, [sp, #imm] */
            if (sim_load(stack, &r, rt, *sp + ((uint64_t)(i >> 10 & 0xfff) << 3))) return 0;
        } else if ((i & 0xffe00c00u) == 0xfc400400u && rn == 31) { /* ldr d, [sp], #imm */
            *sp += (uint64_t)imm9;
        } else if ((i & 0xffc00000u) == 0xfd400000u && rn == 31) { /* ldr d, [sp, #imm] */
        } else if ((i & 0xff8003ffu) == 0x910003ffu) { /* add sp, sp, #imm */
            *sp += imm12;
        } else if ((i & 0xff8003ffu) == 0x910003bfu && (r.valid >> 29 & 1)) { /* add sp, x29, #imm */
            *sp = r.r[29] + imm12;
        } else if ((i & 0xff8003ffu) == 0xd10003bfu && (r.valid >> 29 & 1)) { /* sub sp, x29, #imm */
            *sp = r.r[29] - imm12;
        } else if (i == 0xd65f03c0u || i == 0xd65f0bffu || i == 0xd65f0fffu) { /* ret, retaa/ab */
            if (!(r.valid >> 30 & 1)) return 0;
            r.r[32] = fl_unwind_strip_pac(r.r[30]);
            r.valid |= 1ull << 32;
            *regs = r;
            return 1;
        } else if (!(skipped++ < SIM_SKIP_MAX && skippable(i))) {
            return 0;
        }
    }
    return 0;
}

int fl_unwind_arch_prologue(const fl_reader_t *code, uint64_t start, const fl_reader_t *stack,
                            fl_dwarf_regs_t *regs) {
    uint64_t pc = regs->r[32], ip = start;
    int64_t off = 0, fp_at = 1; /* sp and x29's slot relative to the entry sp (1: not stored) */
    bool frame = false;
    if ((regs->valid & (1ull << 30 | 1ull << 31 | 1ull << 32)) != (1ull << 30 | 1ull << 31 | 1ull << 32) ||
        pc < start || (pc - start) / 4 > SIM_INSNS_MAX)
        return 0;
    for (; ip < pc; ip += 4) {
        uint32_t i;
        if (fl_read_u32(code, ip, &i)) return 0;
        unsigned rt = i & 31, rt2 = i >> 10 & 31, rn = i >> 5 & 31;
        int64_t imm7 = sext(i >> 15 & 0x7f, 7) * 8, imm9 = sext(i >> 12 & 0x1ff, 9);
        uint64_t imm12 = (uint64_t)(i >> 10 & 0xfff) << ((i >> 22 & 1) ? 12 : 0);
        if (is_hint_nop(i)) continue;
        if (((i & 0xffc00000u) == 0xa9800000u || (i & 0xffc00000u) == 0xa9000000u) && rn == 31) {
            /* stp x, x, [sp, #imm]! and stp x, x, [sp, #imm] */
            int64_t at = (i & 0x00800000u) ? (off += imm7) : off + imm7;
            if (rt == 29) fp_at = at;
            if (rt2 == 29) fp_at = at + 8;
        } else if ((i & 0xffc00000u) == 0x6d800000u && rn == 31) { /* stp d, d, [sp, #imm]! */
            off += imm7;
        } else if ((i & 0xffc00000u) == 0x6d000000u && rn == 31) { /* stp d, d, [sp, #imm] */
        } else if ((i & 0xffe00c00u) == 0xf8000c00u && rn == 31) { /* str x, [sp, #imm]! */
            off += imm9;
            if (rt == 29) fp_at = off;
        } else if ((i & 0xffc00000u) == 0xf9000000u && rn == 31) { /* str x, [sp, #imm] */
            if (rt == 29) fp_at = off + (int64_t)((i >> 10 & 0xfff) << 3);
        } else if ((i & 0xff8003ffu) == 0xd10003ffu) { /* sub sp, sp, #imm */
            off -= (int64_t)imm12;
        } else if ((i & 0xff8003ffu) == 0x910003fdu && fp_at <= 0) { /* add x29, sp, #imm */
            frame = true;
        } else {
            return 0; /* the body (or code this does not follow): pc is past the prologue */
        }
    }
    if (ip != pc || off > 0) return 0;
    /* Every register still holds the caller's value (lr the return address) but sp, and x29
     * once it is the frame's. */
    fl_dwarf_regs_t r = *regs;
    uint64_t entry_sp = r.r[31] - (uint64_t)off;
    if (frame && sim_load(stack, &r, 29, entry_sp + (uint64_t)fp_at)) return 0;
    r.r[31] = entry_sp;
    r.r[32] = fl_unwind_strip_pac(r.r[30]);
    *regs = r;
    return 1;
}
