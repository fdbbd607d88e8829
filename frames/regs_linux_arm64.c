/* SPDX-License-Identifier: MIT */
/* arm64 Linux register set: names, accessors, extraction from a signal ucontext, step hooks. */
#include <sys/ucontext.h>

#include "frames/frames.h"
#include "frames/cfi_linux.h"

/* x0..x28, fp (x29), lr (x30), sp, pc: also the first 33 words of LLVM libunwind's arm64
 * unw_context_t (Registers_arm64 GPRs), so a register set seeds a libunwind cursor by copy. */
enum { X0 = 0, X19 = 19, X28 = 28, FP = 29, LR = 30, SP = 31, PC = 32, PSTATE = 33, REG_COUNT };
_Static_assert(REG_COUNT == FL_REGS_ARM64_COUNT, "names in regs_names.c");

unsigned fl_regs_count(void) { return REG_COUNT; }
const char *fl_regs_name(unsigned i) { return fl_regs_arch_name(FL_REGS_ARCH_ARM64, i); }
uint64_t fl_regs_pc(const fl_regs_t *r) { return r->r[PC]; }
uint64_t fl_regs_sp(const fl_regs_t *r) { return r->r[SP]; }
uint64_t fl_regs_fp(const fl_regs_t *r) { return r->r[FP]; }
int fl_regs_arch(void) { return FL_REGS_ARCH_ARM64; }

void fl_regs_from_ucontext(fl_regs_t *r, const void *ucontext) {
    const mcontext_t *m = &((const ucontext_t *)ucontext)->uc_mcontext;
    fl_memset(r, 0, sizeof *r);
    for (unsigned i = 0; i <= LR; i++) r->r[i] = m->regs[i];
    r->r[SP] = m->sp;
    r->r[PC] = m->pc;
    r->r[PSTATE] = m->pstate;
}

/* x0 points at fl_regs_t (8-byte slots, in the order above). A bl left sp as the caller has it
 * and the return address in x30, which is both the caller's pc and its lr. */
_Static_assert(FP == 29 && LR == 30 && SP == 31 && PC == 32, "asm layout");
__asm__(".text\n"
        ".globl fl_regs_get_current\n"
        ".hidden fl_regs_get_current\n"
        ".type fl_regs_get_current,%function\n"
        ".p2align 2\n"
        "fl_regs_get_current:\n"
        "  .cfi_startproc\n"
        "  stp x0, x1, [x0, #0]\n    stp x2, x3, [x0, #16]\n   stp x4, x5, [x0, #32]\n"
        "  stp x6, x7, [x0, #48]\n   stp x8, x9, [x0, #64]\n   stp x10, x11, [x0, #80]\n"
        "  stp x12, x13, [x0, #96]\n stp x14, x15, [x0, #112]\n stp x16, x17, [x0, #128]\n"
        "  stp x18, x19, [x0, #144]\n stp x20, x21, [x0, #160]\n stp x22, x23, [x0, #176]\n"
        "  stp x24, x25, [x0, #192]\n stp x26, x27, [x0, #208]\n stp x28, x29, [x0, #224]\n"
        "  mov x1, sp\n"
        "  stp x30, x1, [x0, #240]\n"
        "  str x30, [x0, #256]\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size fl_regs_get_current, .-fl_regs_get_current\n");

/* ---- Architecture hooks for the walker and the CFI stepper ---- */

/* Return addresses are stripped of pointer-authentication bits by fl_unwind_strip_pac
 * (pac_arm64.c: XPACLRI). */

void fl_unwind_arch_set(fl_regs_t *r, uint64_t pc, uint64_t sp, uint64_t fp) {
    r->r[PC] = pc;
    r->r[SP] = sp;
    r->r[FP] = fp;
}

void fl_unwind_arch_to_context(const fl_regs_t *r, unw_context_t *ctx) {
    _Static_assert(sizeof(unw_context_t) >= (PC + 2) * sizeof(uint64_t), "unw_context_t layout");
    uint64_t *d = (uint64_t *)(void *)ctx;
    fl_memset(ctx, 0, sizeof *ctx); /* word 33, libunwind's ra_sign_state, starts 0 per frame */
    for (unsigned i = 0; i <= PC; i++) d[i] = r->r[i];
}

void fl_unwind_arch_from_cursor(fl_regs_t *r, unw_cursor_t *c) {
    unw_word_t v;
    for (int i = UNW_AARCH64_X19; i <= UNW_AARCH64_LR; i++)
        if (unw_get_reg(c, i, &v) == 0) r->r[i] = v;
    /* libunwind authenticates a return address its CFI marks as signed; one signed by code whose
     * CFI does not say so would still carry the signature. */
    if (unw_get_reg(c, UNW_REG_IP, &v) == 0) r->r[PC] = fl_unwind_strip_pac(v);
    if (unw_get_reg(c, UNW_REG_SP, &v) == 0) r->r[SP] = v;
}

/* Until a function stores its frame record, its return address is in lr and sp is still the
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
