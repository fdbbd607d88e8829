# SPDX-License-Identifier: MIT
# Hand-written functions of the emulation test program (cases.c), x86_64.

    .text
# A leaf without CFI: no compact-unwind entry (encoding 0) in every build.
    .globl _leaf_asm
    .p2align 4
_leaf_asm:
    movl (%rdi), %eax
    retq

# DWARF in every build: DW_CFA_GNU_args_size (.cfi_escape 0x2e), which compact unwind cannot
# hold, makes the linker point the entry at the FDE. Saves rbx, sets up no frame record (rbp
# stays the caller's), calls k_after_dwarf (cases.c).
    .globl _k_dwarf_asm
    .p2align 4
_k_dwarf_asm:
    .cfi_startproc
    pushq %rbx
    .cfi_def_cfa_offset 16
    .cfi_offset %rbx, -16
    .cfi_escape 0x2e, 0x00
    movl %edi, %ebx
    callq _k_after_dwarf
    addl %ebx, %eax
    popq %rbx
    .cfi_def_cfa_offset 8
    retq
    .cfi_endproc

# libSystem's stack probe, called by prologues of frames over 4 KiB with the size in rax, which
# it must preserve (as every register). The emulator maps the whole stack: nothing to probe.
    .globl ___chkstk_darwin
    .p2align 4
___chkstk_darwin:
    .cfi_startproc
    retq
    .cfi_endproc
