# SPDX-License-Identifier: MIT
# x86_64 functions whose CFI compact unwind cannot encode, so that the linker gives them
# DWARF-mode __unwind_info entries (0x04000000 | FDE offset); see build.sh. Never executed: only
# the unwind tables matter, but the code is what the CFI says it is.
.text

# The CFA in a callee-saved register other than rbp (a realigned or dynamic frame without rbp).
.macro CFA_IN name, reg, size
.globl \name
.p2align 4
\name:
.cfi_startproc
    pushq %\reg
.cfi_def_cfa_offset 16
.cfi_offset %\reg, -16
    subq $\size, %rsp
.cfi_adjust_cfa_offset \size
    leaq \size(%rsp), %\reg
.cfi_def_cfa %\reg, 16
    subq $32, %rsp
    callq _cfi_sink
    addq $32, %rsp
.cfi_def_cfa %rsp, 16 + \size
    addq $\size, %rsp
.cfi_adjust_cfa_offset -\size
    popq %\reg
.cfi_def_cfa_offset 8
.cfi_restore %\reg
    retq
.cfi_endproc
.endm
CFA_IN _cfi_cfa_rbx, rbx, 16
CFA_IN _cfi_cfa_r12, r12, 48
CFA_IN _cfi_cfa_r13, r13, 4096
CFA_IN _cfi_cfa_r14, r14, 200
CFA_IN _cfi_cfa_r15, r15, 8

# A signal trampoline: 'S' in the CIE, the CFA and the registers read from a ucontext at rsp
# (glibc's __restore_rt shape: DW_CFA_def_cfa_expression and DW_CFA_expression).
.globl _cfi_sigtramp
.p2align 4
    nop
_cfi_sigtramp:
.cfi_startproc
.cfi_signal_frame
.cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06        # CFA = [rsp+160]
.cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01        # rip at rsp+168
.cfi_escape 0x10, 0x07, 0x03, 0x77, 0xa0, 0x01        # rsp at rsp+160
.cfi_escape 0x10, 0x06, 0x02, 0x77, 0x38              # rbp at rsp+56
.cfi_escape 0x10, 0x03, 0x03, 0x77, 0x80, 0x01        # rbx at rsp+128
.cfi_escape 0x10, 0x00, 0x03, 0x77, 0x90, 0x01        # rax at rsp+144
    movq $15, %rax
    syscall
    hlt
.cfi_endproc

# A signal frame described with plain offsets (a trampoline whose frame is at a fixed offset).
.globl _cfi_sigframe
.p2align 4
_cfi_sigframe:
.cfi_startproc
.cfi_signal_frame
    pushq %rbp
.cfi_def_cfa_offset 16
.cfi_offset %rbp, -16
    movq %rsp, %rbp
.cfi_def_cfa_register %rbp
    callq _cfi_sink
    popq %rbp
.cfi_def_cfa %rsp, 8
    retq
.cfi_endproc

# Early returns: DW_CFA_remember_state / DW_CFA_restore_state, nested, the CFA moving between.
.globl _cfi_remember
.p2align 4
_cfi_remember:
.cfi_startproc
    pushq %rbx
.cfi_def_cfa_offset 16
.cfi_offset %rbx, -16
    pushq %r12
.cfi_def_cfa_offset 24
.cfi_offset %r12, -24
    testl %edi, %edi
    je 1f
.cfi_remember_state
    popq %r12
.cfi_def_cfa_offset 16
.cfi_restore %r12
    testl %esi, %esi
    je 2f
.cfi_remember_state
    popq %rbx
.cfi_def_cfa_offset 8
.cfi_restore %rbx
    retq
2:
.cfi_restore_state
    popq %rbx
.cfi_def_cfa_offset 8
.cfi_restore %rbx
    retq
1:
.cfi_restore_state
    callq _cfi_sink
    popq %r12
.cfi_def_cfa_offset 16
    popq %rbx
.cfi_def_cfa_offset 8
    retq
.cfi_endproc

# The outermost frame: the return address is undefined (a thread's entry).
.globl _cfi_thread_start
.p2align 4
_cfi_thread_start:
.cfi_startproc
.cfi_undefined %rip
    xorl %ebp, %ebp
    callq _cfi_sink
    hlt
.cfi_endproc

# The return address moved to r11 (DW_CFA_register), then back; rbx marked same_value.
.globl _cfi_ra_in_reg
.p2align 4
_cfi_ra_in_reg:
.cfi_startproc
.cfi_same_value %rbx
    popq %r11
.cfi_def_cfa_offset 0
.cfi_register %rip, %r11
    movq %rdi, %rax
    pushq %r11
.cfi_def_cfa_offset 8
.cfi_offset %rip, -8
    retq
.cfi_endproc

# The signed-factored and extended forms, val_offset, restore_extended, an xmm register.
.globl _cfi_escapes
.p2align 4
_cfi_escapes:
.cfi_startproc
    pushq %rbx
.cfi_def_cfa_offset 16
.cfi_offset %rbx, -16
    pushq %rbp
.cfi_escape 0x12, 0x07, 0x7d                 # def_cfa_sf rsp, -3 * -8 = 24
.cfi_escape 0x11, 0x06, 0x03                 # offset_extended_sf rbp, 3 * -8 = -24
    pushq %r13
.cfi_escape 0x13, 0x7c                       # def_cfa_offset_sf -4 * -8 = 32
.cfi_escape 0x05, 0x0d, 0x04                 # offset_extended r13, 4 * -8 = -32
    leaq 16(%rsp), %r12
.cfi_escape 0x14, 0x0c, 0x02                 # val_offset r12, 2 * -8 = -16
    subq $40, %rsp
.cfi_escape 0x15, 0x0e, 0x7b                 # val_offset_sf r14, -5 * -8 = +40
.cfi_def_cfa_offset 72
    movdqu %xmm6, (%rsp)
.cfi_offset %xmm6, -72
    callq _cfi_sink
    addq $40, %rsp
.cfi_def_cfa_offset 32
.cfi_escape 0x06, 0x0e                       # restore_extended r14
.cfi_restore %xmm6
    popq %r13
.cfi_def_cfa_offset 24
.cfi_escape 0x06, 0x0d                       # restore_extended r13
    popq %rbp
.cfi_def_cfa_offset 16
.cfi_restore %rbp
    popq %rbx
.cfi_def_cfa_offset 8
.cfi_restore %rbx
    retq
.cfi_endproc

# Rows far apart: DW_CFA_advance_loc1, advance_loc2 and advance_loc4 (same_value keeps the
# function out of compact unwind).
.globl _cfi_far
.p2align 4
_cfi_far:
.cfi_startproc
.cfi_same_value %r13
    pushq %rbx
.cfi_def_cfa_offset 16
.cfi_offset %rbx, -16
    .fill 100, 1, 0x90
    pushq %r12
.cfi_def_cfa_offset 24
.cfi_offset %r12, -24
    .fill 300, 1, 0x90
    subq $8, %rsp
.cfi_def_cfa_offset 32
    .fill 70000, 1, 0x90
    addq $8, %rsp
.cfi_def_cfa_offset 24
    popq %r12
.cfi_def_cfa_offset 16
    popq %rbx
.cfi_def_cfa_offset 8
    retq
.cfi_endproc

# A register saved in a register the evaluator does not track (DW_CFA_register rbx, reg64):
# the row cannot be used, so the evaluator declines (FL_ENOSYS) from that row on.
.globl _cfi_decline
.p2align 4
_cfi_decline:
.cfi_startproc
    pushq %rbx
.cfi_def_cfa_offset 16
.cfi_offset %rbx, -16
    callq _cfi_sink
.cfi_escape 0x09, 0x03, 0x40
    nop
    popq %rbx
.cfi_def_cfa_offset 8
    retq
.cfi_endproc
