/* SPDX-License-Identifier: MIT */
/* x86_64 Linux register set: extraction from a signal ucontext, the current registers, the libunwind glue. */
#include <sys/ucontext.h>

#include "frames/frames.h"
#include "frames/cfi_linux.h"

#include "frames/arch_x86_64.h"

void fl_regs_from_ucontext(fl_regs_t *r, const void *ucontext) {
    const greg_t *g = ((const ucontext_t *)ucontext)->uc_mcontext.gregs;
    fl_memset(r, 0, sizeof *r);
    static const unsigned char map[][2] = {
        {RAX, REG_RAX}, {RBX, REG_RBX}, {RCX, REG_RCX}, {RDX, REG_RDX}, {RDI, REG_RDI},
        {RSI, REG_RSI}, {RBP, REG_RBP}, {RSP, REG_RSP}, {R8, REG_R8},   {R9, REG_R9},
        {R10, REG_R10}, {R11, REG_R11}, {R12, REG_R12}, {R13, REG_R13}, {R14, REG_R14},
        {R15, REG_R15}, {RIP, REG_RIP}, {RFLAGS, REG_EFL}, {ERR, REG_ERR}, {TRAPNO, REG_TRAPNO},
        {CR2, REG_CR2}};
    for (unsigned i = 0; i < FL_ARRAY_LEN(map); i++) r->r[map[i][0]] = (uint64_t)g[map[i][1]];
    uint64_t csgsfs = (uint64_t)g[REG_CSGSFS]; /* cs | gs << 16 | fs << 32 */
    r->r[CS] = csgsfs & 0xffff;
    r->r[GS] = (csgsfs >> 16) & 0xffff;
    r->r[FS] = (csgsfs >> 32) & 0xffff;
}

/* Register indices are slots of 8 bytes in fl_regs_t.r: rax 0, rbx 1, rcx 2, rdx 3, rdi 4, rsi 5,
 * rbp 6, rsp 7, r8..r15 8..15, rip 16. */
_Static_assert(RAX == 0 && RBP == 6 && RSP == 7 && R8 == 8 && R15 == 15 && RIP == 16, "asm layout");
__asm__(".text\n"
        ".globl fl_regs_get_current\n"
        ".hidden fl_regs_get_current\n"
        ".type fl_regs_get_current,@function\n"
        "fl_regs_get_current:\n"
        "  .cfi_startproc\n"
        "  movq %rax, 0(%rdi)\n  movq %rbx, 8(%rdi)\n  movq %rcx, 16(%rdi)\n"
        "  movq %rdx, 24(%rdi)\n  movq %rdi, 32(%rdi)\n  movq %rsi, 40(%rdi)\n"
        "  movq %rbp, 48(%rdi)\n  leaq 8(%rsp), %rax\n  movq %rax, 56(%rdi)\n"
        "  movq %r8, 64(%rdi)\n  movq %r9, 72(%rdi)\n  movq %r10, 80(%rdi)\n"
        "  movq %r11, 88(%rdi)\n  movq %r12, 96(%rdi)\n  movq %r13, 104(%rdi)\n"
        "  movq %r14, 112(%rdi)\n  movq %r15, 120(%rdi)\n  movq (%rsp), %rax\n"
        "  movq %rax, 128(%rdi)\n"
        "  movq 0(%rdi), %rax\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size fl_regs_get_current, .-fl_regs_get_current\n");

/* ---- libunwind glue ---- */

void fl_unwind_arch_to_context(const fl_regs_t *r, unw_context_t *ctx) {
    _Static_assert(sizeof(unw_context_t) >= 21 * sizeof(uint64_t), "unw_context_t layout");
    uint64_t *d = (uint64_t *)(void *)ctx;
    fl_memset(ctx, 0, sizeof *ctx);
    for (unsigned i = 0; i <= GS; i++) d[i] = r->r[i];
}

/* Callee-saved registers CFI may restore, copied back so a later FP or CFI step sees them. */
static const int k_cfi_regs[][2] = {{RBX, UNW_X86_64_RBX}, {RBP, UNW_X86_64_RBP},
                                    {R12, UNW_X86_64_R12}, {R13, UNW_X86_64_R13},
                                    {R14, UNW_X86_64_R14}, {R15, UNW_X86_64_R15}};

void fl_unwind_arch_from_cursor(fl_regs_t *r, unw_cursor_t *c) {
    unw_word_t v;
    for (unsigned i = 0; i < FL_ARRAY_LEN(k_cfi_regs); i++)
        if (unw_get_reg(c, k_cfi_regs[i][1], &v) == 0) r->r[k_cfi_regs[i][0]] = v;
    if (unw_get_reg(c, UNW_REG_IP, &v) == 0) r->r[RIP] = v;
    if (unw_get_reg(c, UNW_REG_SP, &v) == 0) r->r[RSP] = v;
}


/* ---- The signal return trampoline ----
 * A restorer is `mov $15, %rax; syscall` (glibc's __restore_rt, which carries CFI of its own) or
 * `mov $15, %eax; syscall` (musl). At it, rsp points at the ucontext_t the kernel saved (the
 * handler's return popped the restorer's address), whose gregs start 40 bytes in. */
bool fl_unwind_os_is_sigreturn(const fl_reader_t *mem, uint64_t pc) {
    static const uint8_t rax[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    static const uint8_t eax[] = {0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    uint8_t code[sizeof rax];
    return (fl_read(mem, pc, code, sizeof eax) == 0 && fl_memcmp(code, eax, sizeof eax) == 0) ||
           (fl_read(mem, pc, code, sizeof rax) == 0 && fl_memcmp(code, rax, sizeof rax) == 0);
}

/* rt_sigframe: the restorer's address (popped by now), the kernel's ucontext (uc_flags, uc_link,
 * uc_stack: 40 bytes; the 256-byte sigcontext, rip 128 and cr2 176 bytes in; the 8-byte
 * sigset), then the siginfo. */
int fl_frames_sigframe(uint64_t trampoline_sp, fl_sigframe_t *out) {
    if (trampoline_sp > UINT64_MAX - 4096) return FL_ERANGE;
    *out = (fl_sigframe_t){.info = trampoline_sp + 40 + 256 + 8,
                           .fault_addr = trampoline_sp + 40 + 176, .pc = trampoline_sp + 40 + 128};
    return 0;
}

int fl_unwind_os_sigreturn(const fl_reader_t *mem, fl_dwarf_regs_t *regs) {
    uint64_t sp = regs->r[7];
    if (!(regs->valid >> 7 & 1) || !fl_unwind_os_is_sigreturn(mem, regs->r[16])) return FL_ENOTFOUND;
    uint64_t g[17]; /* REG_R8 .. REG_RIP */
    if (fl_read(mem, sp + 40, g, sizeof g)) return FL_ENOTFOUND;
    /* DWARF number of each of REG_R8..REG_RIP: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp,
     * rip. */
    static const uint8_t dwarf[17] = {8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7, 16};
    for (unsigned i = 0; i < 17; i++) regs->r[dwarf[i]] = g[i];
    regs->valid |= (1ull << 17) - 1;
    return 1;
}
