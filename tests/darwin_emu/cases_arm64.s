// SPDX-License-Identifier: MIT
// Hand-written functions of the emulation test program (cases.c), arm64.

    .text
// A leaf without CFI: no compact-unwind entry (encoding 0) in every build.
    .globl _leaf_asm
    .p2align 2
_leaf_asm:
    ldr w0, [x0]
    ret

// DWARF in every build: DW_CFA_GNU_args_size (.cfi_escape 0x2e), which compact unwind cannot
// hold, makes the linker point the entry at the FDE. Saves x19 and lr without a frame record
// (fp stays the caller's), calls k_after_dwarf (cases.c).
    .globl _k_dwarf_asm
    .p2align 2
_k_dwarf_asm:
    .cfi_startproc
    stp x19, x30, [sp, #-16]!
    .cfi_def_cfa_offset 16
    .cfi_offset x30, -8
    .cfi_offset x19, -16
    .cfi_escape 0x2e, 0x00
    mov w19, w0
    bl _k_after_dwarf
    add w0, w0, w19
    ldp x19, x30, [sp], #16
    ret
    .cfi_endproc

// libSystem's stack probe, called by prologues of frames over 4 KiB with the size / 16 in x15,
// preserving every register but x16, x17. The emulator maps the whole stack: nothing to probe.
    .globl ___chkstk_darwin
    .p2align 2
___chkstk_darwin:
    .cfi_startproc
    ret
    .cfi_endproc
