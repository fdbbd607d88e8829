/* SPDX-License-Identifier: MIT */
/* x86_64 crash scenarios whose first frames need exact code: a leaf, and a prologue. */
#include "crasher.h"

/* leaf_c pushes nothing: its return address is on top of the stack and rbp is leaf_b's. */
__asm__(".text\n"
        ".type leaf_c, @function\n"
        "leaf_c:\n"
        ".cfi_startproc\n"
        "  movl $0, 0\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size leaf_c, .-leaf_c\n"
        /* The fault comes after rbp is pushed and before it points at the new frame. */
        ".type prologue_c, @function\n"
        "prologue_c:\n"
        ".cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "  movl $0, 0\n"
        "  movq %rsp, %rbp\n"
        "  popq %rbp\n"
        "  .cfi_def_cfa_offset 8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size prologue_c, .-prologue_c\n");
void leaf_c(void);
void prologue_c(void);

NOINLINE static void leaf_b(void) { leaf_c(); NOTAIL(); }
NOINLINE static void leaf_a(void) { leaf_b(); NOTAIL(); }
NOINLINE static void prologue_b(void) { prologue_c(); NOTAIL(); }
NOINLINE static void prologue_a(void) { prologue_b(); NOTAIL(); }

static void run_leaf(const char *dir) { (void)dir; leaf_a(); }
static void run_prologue(const char *dir) { (void)dir; prologue_a(); }

/* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret */
const unsigned char jit_thunk[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};
const unsigned jit_thunk_len = sizeof jit_thunk, jit_thunk_ret = 6;

const crasher_scenario_t crasher_arch_scenarios[] = {
    {"leaf", run_leaf},
    {"prologue", run_prologue},
};
const unsigned crasher_arch_scenario_count = sizeof crasher_arch_scenarios / sizeof crasher_arch_scenarios[0];
