/* SPDX-License-Identifier: MIT */
/* arm64 crash scenarios whose first frames need exact code: leaf, prologue, no CFI, signed lr. */
#include <stdint.h>
#include <stdio.h>

#include "crasher.h"

/* leaf_c never stores a frame record: its return address stays in lr and x29 is leaf_b's. */
__asm__(".text\n"
        ".p2align 2\n"
        ".type leaf_c, %function\n"
        "leaf_c:\n"
        ".cfi_startproc\n"
        "  mov x9, #0\n"
        "  str wzr, [x9]\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size leaf_c, .-leaf_c\n"
        /* The fault comes after the frame record is stored and before x29 points at it. */
        ".p2align 2\n"
        ".type prologue_c, %function\n"
        "prologue_c:\n"
        ".cfi_startproc\n"
        "  mov x9, #0\n"
        "  stp x29, x30, [sp, #-32]!\n"
        "  .cfi_def_cfa_offset 32\n"
        "  .cfi_offset 29, -32\n"
        "  .cfi_offset 30, -24\n"
        "  str wzr, [x9]\n"
        "  mov x29, sp\n"
        "  ldp x29, x30, [sp], #32\n"
        "  .cfi_def_cfa_offset 0\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size prologue_c, .-prologue_c\n"
        /* A leaf without unwind information (no FDE): only lr knows its caller. */
        ".p2align 2\n"
        ".type nocfi_c, %function\n"
        "nocfi_c:\n"
        "  mov x9, #0\n"
        "  str wzr, [x9]\n"
        "  ret\n"
        ".size nocfi_c, .-nocfi_c\n");
void leaf_c(void);
void prologue_c(void);
void nocfi_c(void);

NOINLINE static void leaf_b(void) { leaf_c(); NOTAIL(); }
NOINLINE static void leaf_a(void) { leaf_b(); NOTAIL(); }
NOINLINE static void prologue_b(void) { prologue_c(); NOTAIL(); }
NOINLINE static void prologue_a(void) { prologue_b(); NOTAIL(); }
NOINLINE static void nocfi_b(void) { nocfi_c(); NOTAIL(); }
NOINLINE static void nocfi_a(void) { nocfi_b(); NOTAIL(); }

static void run_leaf(const char *dir) { (void)dir; leaf_a(); }
static void run_prologue(const char *dir) { (void)dir; prologue_a(); }
static void run_nocfi(const char *dir) { (void)dir; nocfi_a(); }

/* stp x29, x30, [sp, #-16]!; mov x29, sp; blr x0; ldp x29, x30, [sp], #16; ret */
const unsigned char jit_thunk[] = {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91, 0x00, 0x00, 0x3f, 0xd6,
                                   0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6};
const unsigned jit_thunk_len = sizeof jit_thunk, jit_thunk_ret = 12;

const crasher_scenario_t crasher_arch_scenarios[] = {
    {"leaf", run_leaf},
    {"prologue", run_prologue},
    {"leaf_nocfi", run_nocfi},
    {"pac", scenario_pac}, /* crasher_pac_arm64.c */
};
const unsigned crasher_arch_scenario_count = sizeof crasher_arch_scenarios / sizeof crasher_arch_scenarios[0];
