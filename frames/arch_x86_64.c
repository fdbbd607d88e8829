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

const bool fl_unwind_arch_entry_on_stack = true;

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

/* ---- Straight-line code around an exact pc (fl_unwind_arch_prologue/_epilogue) ---- */

#define SIM_INSNS_MAX 24u
/* DWARF numbers of the registers in the 3-bit fields of push/pop (rax rcx rdx rbx rsp rbp rsi
 * rdi); REX.B adds 8 (r8..r15, the same in both numberings). */
static const uint8_t k_dwarf_of[8] = {0, 2, 1, 3, 7, 6, 4, 5};

static int sim_load(const fl_reader_t *stack, fl_dwarf_regs_t *r, unsigned reg, uint64_t addr) {
    uint64_t v;
    if (fl_read_u64(stack, addr, &v)) return FL_EFAULT;
    r->r[reg] = v;
    r->valid |= 1ull << reg;
    return 0;
}

int fl_unwind_arch_epilogue(const fl_reader_t *code, const fl_reader_t *stack, fl_dwarf_regs_t *regs) {
    fl_dwarf_regs_t r = *regs;
    uint64_t ip = r.r[16];
    if ((r.valid & (1ull << 7 | 1ull << 16)) != (1ull << 7 | 1ull << 16)) return 0;
    for (unsigned n = 0; n < SIM_INSNS_MAX; n++) {
        uint8_t b[8];
        if (fl_read(code, ip, b, sizeof b)) return 0;
        uint64_t *sp = &r.r[7], rbp = r.r[6];
        bool rbp_ok = r.valid >> 6 & 1;
        if (b[0] >= 0x58 && b[0] <= 0x5f) { /* pop r */
            if (sim_load(stack, &r, k_dwarf_of[b[0] - 0x58], *sp)) return 0;
            if (b[0] == 0x5c) return 0; /* pop rsp: not an epilogue */
            *sp += 8, ip += 1;
        } else if (b[0] == 0x41 && b[1] >= 0x58 && b[1] <= 0x5f) { /* pop r8..r15 */
            if (sim_load(stack, &r, 8u + (b[1] - 0x58u), *sp)) return 0;
            *sp += 8, ip += 2;
        } else if (b[0] == 0x48 && b[1] == 0x83 && b[2] == 0xc4) { /* add rsp, imm8 */
            *sp += (uint64_t)(int64_t)(int8_t)b[3], ip += 4;
        } else if (b[0] == 0x48 && b[1] == 0x81 && b[2] == 0xc4) { /* add rsp, imm32 */
            int32_t imm;
            __builtin_memcpy(&imm, b + 3, 4);
            *sp += (uint64_t)(int64_t)imm, ip += 7;
        } else if (b[0] == 0xc9 && rbp_ok) { /* leave */
            *sp = rbp;
            if (sim_load(stack, &r, 6, *sp)) return 0;
            *sp += 8, ip += 1;
        } else if (b[0] == 0x48 && b[1] == 0x89 && b[2] == 0xec && rbp_ok) { /* mov rsp, rbp */
            *sp = rbp, ip += 3;
        } else if (b[0] == 0x48 && b[1] == 0x8d && b[2] == 0x65 && rbp_ok) { /* lea rsp, [rbp+d8] */
            *sp = rbp + (uint64_t)(int64_t)(int8_t)b[3], ip += 4;
        } else if (b[0] == 0x48 && b[1] == 0x8d && b[2] == 0xa5 && rbp_ok) { /* lea rsp, [rbp+d32] */
            int32_t d;
            __builtin_memcpy(&d, b + 3, 4);
            *sp = rbp + (uint64_t)(int64_t)d, ip += 7;
        } else if (b[0] == 0x90) { /* nop */
            ip += 1;
        } else if (b[0] == 0xc5 && b[1] == 0xf8 && b[2] == 0x77) { /* vzeroupper */
            ip += 3;
        } else if (b[0] == 0xc3 || (b[0] == 0xf3 && b[1] == 0xc3) || b[0] == 0xc2) { /* ret */
            uint64_t pop = b[0] == 0xc2 ? (uint64_t)(b[1] | b[2] << 8) : 0;
            if (sim_load(stack, &r, 16, *sp)) return 0;
            *sp += 8 + pop;
            *regs = r;
            return 1;
        } else {
            return 0;
        }
    }
    return 0;
}

int fl_unwind_arch_prologue(const fl_reader_t *code, uint64_t start, const fl_reader_t *stack,
                            fl_dwarf_regs_t *regs) {
    uint64_t pc = regs->r[16], ip = start, delta = 0, rbp_at = 0;
    bool rbp_pushed = false, frame = false;
    if ((regs->valid & (1ull << 7 | 1ull << 16)) != (1ull << 7 | 1ull << 16) || pc < start)
        return 0;
    for (unsigned n = 0; ip < pc; n++) {
        uint8_t b[8];
        if (n == SIM_INSNS_MAX || fl_read(code, ip, b, sizeof b)) return 0;
        if (b[0] >= 0x50 && b[0] <= 0x57 && b[0] != 0x54) { /* push r (not rsp) */
            delta += 8, ip += 1;
            if (b[0] == 0x55 && !rbp_pushed) rbp_pushed = true, rbp_at = delta;
        } else if (b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57) { /* push r8..r15 */
            delta += 8, ip += 2;
        } else if (b[0] == 0x48 && b[1] == 0x89 && b[2] == 0xe5 && rbp_pushed) { /* mov rbp, rsp */
            frame = true, ip += 3;
        } else if (b[0] == 0x48 && b[1] == 0x83 && b[2] == 0xec && (int8_t)b[3] > 0) { /* sub rsp, i8 */
            delta += b[3], ip += 4;
        } else if (b[0] == 0x48 && b[1] == 0x81 && b[2] == 0xec) { /* sub rsp, imm32 */
            int32_t imm;
            __builtin_memcpy(&imm, b + 3, 4);
            if (imm <= 0) return 0;
            delta += (uint64_t)imm, ip += 7;
        } else if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) { /* endbr64 */
            ip += 4;
        } else if (b[0] == 0x90) {
            ip += 1;
        } else {
            return 0; /* the body (or code this does not follow): pc is past the prologue */
        }
    }
    if (ip != pc) return 0;
    /* Every register still holds the caller's value but rsp, and rbp once it is the frame's. */
    fl_dwarf_regs_t r = *regs;
    uint64_t entry_sp = r.r[7] + delta;
    if (sim_load(stack, &r, 16, entry_sp) || (frame && sim_load(stack, &r, 6, entry_sp - rbp_at)))
        return 0;
    r.r[7] = entry_sp + 8;
    *regs = r;
    return 1;
}
