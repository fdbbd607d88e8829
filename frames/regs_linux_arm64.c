/* SPDX-License-Identifier: MIT */
/* arm64 Linux register set: extraction from a signal ucontext, the current registers, the libunwind glue. */
#include <sys/ucontext.h>

#include "frames/frames.h"
#include "frames/cfi_linux.h"

#include "frames/arch_arm64.h"

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

/* ---- libunwind glue ---- */

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


/* ---- The signal return trampoline ----
 * The vDSO's __kernel_rt_sigreturn (`mov x8, #139; svc #0`) lost its CFI in Linux 5.8; qemu-user's
 * trampoline is the same two instructions. At it, sp points at the kernel's rt_sigframe: a
 * 128-byte siginfo, then the ucontext, whose sigcontext (fault_address, regs[31], sp, pc) starts
 * 176 bytes in (uc_flags, uc_link, uc_stack, the 128-byte kernel sigset, alignment to 16). */
bool fl_unwind_os_is_sigreturn(const fl_reader_t *mem, uint64_t pc) {
    uint32_t code[2];
    return fl_read(mem, pc, code, sizeof code) == 0 && code[0] == 0xd2801168u &&
           code[1] == 0xd4000001u;
}

/* rt_sigframe begins with the siginfo, at the trampoline's sp; the sigcontext (fault_address,
 * regs[31], sp, pc) follows 128 + 176 bytes in (see above). */
int fl_frames_sigframe(uint64_t trampoline_sp, fl_sigframe_t *out) {
    if (trampoline_sp > UINT64_MAX - 4096) return FL_ERANGE;
    uint64_t sc = trampoline_sp + 128 + 176;
    *out = (fl_sigframe_t){.info = trampoline_sp, .fault_addr = sc, .pc = sc + 8 + 31 * 8 + 8};
    return 0;
}

int fl_unwind_os_sigreturn(const fl_reader_t *mem, fl_dwarf_regs_t *regs) {
    uint64_t sp = regs->r[SP];
    if (!(regs->valid >> SP & 1) || !fl_unwind_os_is_sigreturn(mem, regs->r[PC])) return FL_ENOTFOUND;
    uint64_t sc[33]; /* regs[31], sp, pc (after fault_address) */
    if (fl_read(mem, sp + 128 + 176 + 8, sc, sizeof sc)) return FL_ENOTFOUND;
    for (unsigned i = 0; i < 31; i++) regs->r[i] = sc[i];
    regs->r[SP] = sc[31];
    regs->r[PC] = sc[32];
    regs->valid |= (1ull << 33) - 1;
    return 1;
}
