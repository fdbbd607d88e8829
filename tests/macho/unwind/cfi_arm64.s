// SPDX-License-Identifier: MIT
// arm64 functions whose CFI compact unwind cannot encode, so that the linker gives them
// DWARF-mode __unwind_info entries (0x03000000 | FDE offset); see build.sh. Never executed: only
// the unwind tables matter, but the code is what the CFI says it is.
.text

// The CFA in a callee-saved register (a dynamic frame without x29).
.macro CFA_IN name, reg, size
.globl \name
.p2align 2
\name:
.cfi_startproc
    stp x29, x30, [sp, #-16]!
.cfi_def_cfa_offset 16
.cfi_offset w30, -8
.cfi_offset w29, -16
    str \reg, [sp, #-16]!
.cfi_def_cfa_offset 32
.cfi_offset \reg, -32
    sub sp, sp, #\size
.cfi_def_cfa_offset 32 + \size
    add \reg, sp, #(\size + 32)
.cfi_def_cfa \reg, 0
    bl _cfi_sink
    sub sp, \reg, #32
.cfi_def_cfa wsp, 32
    ldr \reg, [sp], #16
.cfi_def_cfa_offset 16
.cfi_restore \reg
    ldp x29, x30, [sp], #16
.cfi_def_cfa_offset 0
.cfi_restore w29
.cfi_restore w30
    ret
.cfi_endproc
.endm
CFA_IN _cfi_cfa_x19, x19, 16
CFA_IN _cfi_cfa_x20, x20, 48
CFA_IN _cfi_cfa_x21, x21, 4048
CFA_IN _cfi_cfa_x25, x25, 208
CFA_IN _cfi_cfa_x28, x28, 32

// A signal trampoline: 'S' in the CIE, the CFA and the registers read from a context at sp
// (DW_CFA_def_cfa_expression and DW_CFA_expression on breg31).
.globl _cfi_sigtramp
.p2align 2
    nop
_cfi_sigtramp:
.cfi_startproc
.cfi_signal_frame
.cfi_escape 0x0f, 0x04, 0x8f, 0x80, 0x02, 0x06   // CFA = [sp+256]
.cfi_escape 0x10, 0x1e, 0x03, 0x8f, 0xf8, 0x01   // x30 at sp+248
.cfi_escape 0x10, 0x1d, 0x03, 0x8f, 0xf0, 0x01   // x29 at sp+240
.cfi_escape 0x10, 0x13, 0x03, 0x8f, 0x98, 0x01   // x19 at sp+152
.cfi_escape 0x16, 0x1f, 0x03, 0x8f, 0x80, 0x02   // sp is sp+256 (val_expression)
    mov x8, #0xb8
    svc #0x80
    brk #1
.cfi_endproc

// A signal frame described with plain offsets.
.globl _cfi_sigframe
.p2align 2
_cfi_sigframe:
.cfi_startproc
.cfi_signal_frame
    stp x29, x30, [sp, #-16]!
.cfi_def_cfa_offset 16
.cfi_offset w30, -8
.cfi_offset w29, -16
    mov x29, sp
.cfi_def_cfa w29, 16
    bl _cfi_sink
    ldp x29, x30, [sp], #16
.cfi_def_cfa wsp, 0
.cfi_restore w29
.cfi_restore w30
    ret
.cfi_endproc

// Return-address signing: DW_CFA_AARCH64_negate_ra_state around the frame.
.globl _cfi_pac
.p2align 2
_cfi_pac:
.cfi_startproc
    hint #25 // paciasp
.cfi_negate_ra_state
    stp x29, x30, [sp, #-16]!
.cfi_def_cfa_offset 16
.cfi_offset w30, -8
.cfi_offset w29, -16
    bl _cfi_sink
    ldp x29, x30, [sp], #16
.cfi_def_cfa_offset 0
.cfi_restore w29
.cfi_restore w30
    hint #29 // autiasp
.cfi_negate_ra_state
    ret
.cfi_endproc

// Early returns: DW_CFA_remember_state / DW_CFA_restore_state, nested, the CFA moving between,
// with return-address signing.
.globl _cfi_remember
.p2align 2
_cfi_remember:
.cfi_startproc
    hint #25
.cfi_negate_ra_state
    stp x29, x30, [sp, #-32]!
.cfi_def_cfa_offset 32
.cfi_offset w30, -24
.cfi_offset w29, -32
    str x19, [sp, #16]
.cfi_offset w19, -16
    cbz w0, 1f
.cfi_remember_state
    ldr x19, [sp, #16]
.cfi_restore w19
    cbz w1, 2f
.cfi_remember_state
    ldp x29, x30, [sp], #32
.cfi_def_cfa_offset 0
.cfi_restore w29
.cfi_restore w30
    hint #29
.cfi_negate_ra_state
    ret
2:
.cfi_restore_state
    ldp x29, x30, [sp], #32
.cfi_def_cfa_offset 0
.cfi_restore w29
.cfi_restore w30
    hint #29
.cfi_negate_ra_state
    ret
1:
.cfi_restore_state
    bl _cfi_sink
    ldr x19, [sp, #16]
    ldp x29, x30, [sp], #32
.cfi_def_cfa_offset 0
    hint #29
.cfi_negate_ra_state
    ret
.cfi_endproc

// The outermost frame: the return address is undefined (a thread's entry).
.globl _cfi_thread_start
.p2align 2
_cfi_thread_start:
.cfi_startproc
.cfi_undefined w30
    mov x29, #0
    bl _cfi_sink
    brk #1
.cfi_endproc

// The return address moved to x9 (DW_CFA_register), then back; x19 marked same_value.
.globl _cfi_ra_in_reg
.p2align 2
_cfi_ra_in_reg:
.cfi_startproc
.cfi_same_value w19
    mov x9, x30
.cfi_register w30, w9
    bl _cfi_sink
    mov x30, x9
.cfi_restore w30
    ret
.cfi_endproc

// The signed-factored and extended forms, val_offset, restore_extended, d registers (which
// the evaluator does not track).
.globl _cfi_escapes
.p2align 2
_cfi_escapes:
.cfi_startproc
    stp x29, x30, [sp, #-48]!
.cfi_escape 0x12, 0x1f, 0x7a            // def_cfa_sf sp, -6 * -8 = 48
.cfi_escape 0x11, 0x1e, 0x05            // offset_extended_sf x30, 5 * -8 = -40
.cfi_escape 0x05, 0x1d, 0x06            // offset_extended x29, 6 * -8 = -48
    stp d8, d9, [sp, #16]
.cfi_offset d8, -32
.cfi_offset d9, -24
    add x20, sp, #48
.cfi_escape 0x14, 0x14, 0x00            // val_offset x20, 0: x20 = CFA
    sub sp, sp, #16
.cfi_escape 0x13, 0x78                  // def_cfa_offset_sf -8 * -8 = 64
.cfi_escape 0x15, 0x15, 0x7e            // val_offset_sf x21, -2 * -8 = +16
    bl _cfi_sink
    add sp, sp, #16
.cfi_def_cfa_offset 48
.cfi_escape 0x06, 0x15                  // restore_extended x21
.cfi_escape 0x06, 0x48                  // restore_extended d8 (72)
.cfi_restore d9
    ldp x29, x30, [sp], #48
.cfi_def_cfa_offset 0
.cfi_escape 0x06, 0x1d                  // restore_extended x29
.cfi_restore w30
    ret
.cfi_endproc

// Rows far apart: DW_CFA_advance_loc1, advance_loc2 and advance_loc4.
.globl _cfi_far
.p2align 2
_cfi_far:
.cfi_startproc
    stp x19, x20, [sp, #-16]!
.cfi_def_cfa_offset 16
.cfi_offset w20, -8
.cfi_offset w19, -16
    .fill 25, 4, 0xd503201f
    sub sp, sp, #16
.cfi_def_cfa_offset 32
    .fill 100, 4, 0xd503201f
    sub sp, sp, #16
.cfi_def_cfa_offset 48
    .fill 17000, 4, 0xd503201f
    add sp, sp, #32
.cfi_def_cfa_offset 16
    ldp x19, x20, [sp], #16
.cfi_def_cfa_offset 0
.cfi_restore w19
.cfi_restore w20
    ret
.cfi_endproc

// A register saved in a register the evaluator does not track (DW_CFA_register x19, d8):
// the row cannot be used, so the evaluator declines (FL_ENOSYS) from that row on.
.globl _cfi_decline
.p2align 2
_cfi_decline:
.cfi_startproc
    str x19, [sp, #-16]!
.cfi_def_cfa_offset 16
.cfi_offset w19, -16
    fmov d8, x19
.cfi_escape 0x09, 0x13, 0x48
    nop
    ldr x19, [sp], #16
.cfi_def_cfa_offset 0
.cfi_restore w19
    ret
.cfi_endproc
