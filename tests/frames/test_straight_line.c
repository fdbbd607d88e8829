/* SPDX-License-Identifier: MIT */
/* The prologue and epilogue emulation of frame 0 (fl_unwind_arch_prologue/_epilogue) on the
 * build's architecture, on instruction bytes taken from the assembler (objdump of the sequences
 * in the comments) and a stack laid out by hand. Each case says what the CPU would compute. */
#include <stdint.h>
#include <string.h>

#include "frames/unwind_internal.h"
#include "test.h"

#define CODE 0x10000u
#define STACK 0x7000u

static uint8_t g_code[256];
static uint64_t g_stack[64]; /* at STACK */
static fl_reader_t g_code_r, g_stack_r;

static void setup(const void *code, size_t len) {
    memset(g_code, 0xcc, sizeof g_code); /* int3 / not an instruction the emulation follows */
    memcpy(g_code, code, len);
    for (unsigned i = 0; i < 64; i++) g_stack[i] = 0x1000u + i;
    fl_reader_init_buffer(&g_code_r, g_code, sizeof g_code, CODE);
    fl_reader_init_buffer(&g_stack_r, g_stack, sizeof g_stack, STACK);
}

static fl_dwarf_regs_t regs_at(uint64_t pc, uint64_t sp) {
    fl_dwarf_regs_t r;
    memset(&r, 0, sizeof r);
    for (unsigned i = 0; i < FL_DWARF_REGS; i++) r.r[i] = 0xa000u + i;
    r.r[FL_DWARF_PC] = pc;
    r.r[FL_DWARF_SP] = sp;
    r.valid = (1ull << FL_DWARF_REGS) - 1;
    return r;
}

int main(void) {
    fl_dwarf_regs_t r;
#if defined(FL_ARCH_X86_64)
    /* pop rbx; pop r14; pop rbp; ret */
    static const uint8_t epi[] = {0x5b, 0x41, 0x5e, 0x5d, 0xc3};
    setup(epi, sizeof epi);
    r = regs_at(CODE, STACK + 16);
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 1);
    CHECK_EQ_U64(r.r[3], 0x1002u);  /* rbx = [sp] */
    CHECK_EQ_U64(r.r[14], 0x1003u); /* r14 */
    CHECK_EQ_U64(r.r[6], 0x1004u);  /* rbp */
    CHECK_EQ_U64(r.r[16], 0x1005u); /* the return address */
    CHECK_EQ_U64(r.r[7], STACK + 48u);
    /* add rsp, 0x18; leave; ret */
    static const uint8_t epi2[] = {0x48, 0x83, 0xc4, 0x18, 0xc9, 0xc3};
    setup(epi2, sizeof epi2);
    r = regs_at(CODE, STACK);
    r.r[6] = STACK + 64; /* rbp: leave reloads rbp from [rbp] and returns through [rbp + 8] */
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 1);
    CHECK_EQ_U64(r.r[6], 0x1008u);
    CHECK_EQ_U64(r.r[16], 0x1009u);
    CHECK_EQ_U64(r.r[7], STACK + 80u);
    /* mov rax, [rdi]; ret: a body instruction first, so no answer */
    static const uint8_t body[] = {0x48, 0x8b, 0x07, 0xc3};
    setup(body, sizeof body);
    r = regs_at(CODE, STACK);
    fl_dwarf_regs_t before = r;
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 0);
    CHECK(memcmp(&r, &before, sizeof r) == 0);

    /* push rbp; mov rbp, rsp; push rbx; sub rsp, 0x18; mov rax, [rdi] */
    static const uint8_t pro[] = {0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xec, 0x18, 0x48, 0x8b, 0x07};
    struct { unsigned at, pushed; bool frame; } cases[] = {
        {0, 0, false}, {1, 8, false}, {4, 8, true}, {5, 16, true}, {9, 40, true}};
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        setup(pro, sizeof pro);
        uint64_t entry_sp = STACK + 256; /* the return address is at entry_sp */
        r = regs_at(CODE + cases[k].at, entry_sp - cases[k].pushed);
        if (cases[k].frame) r.r[6] = entry_sp - 8;
        CHECK(fl_unwind_arch_prologue(&g_code_r, CODE, &g_stack_r, &r) == 1);
        CHECK_EQ_U64(r.r[16], 0x1000u + 32u);   /* [entry_sp] */
        CHECK_EQ_U64(r.r[7], entry_sp + 8);
        CHECK_EQ_U64(r.r[6], cases[k].frame ? 0x1000u + 31u : 0xa006u); /* pushed rbp, or as is */
        CHECK_EQ_U64(r.r[3], 0xa003u); /* rbx: still the caller's */
    }
    setup(pro, sizeof pro);
    r = regs_at(CODE + 12, STACK);
    CHECK(fl_unwind_arch_prologue(&g_code_r, CODE, &g_stack_r, &r) == 0); /* in the body */
    r = regs_at(CODE + 2, STACK);
    CHECK(fl_unwind_arch_prologue(&g_code_r, CODE, &g_stack_r, &r) == 0); /* mid-instruction */
#else
    /* ldp x29, x30, [sp, #16]; ldp x20, x19, [sp], #32; autiasp; ret */
    static const uint32_t epi[] = {0xa9417bfd, 0xa8c24ff4, 0xd50323bf, 0xd65f03c0};
    setup(epi, sizeof epi);
    r = regs_at(CODE, STACK);
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 1);
    CHECK_EQ_U64(r.r[29], 0x1002u);
    CHECK_EQ_U64(r.r[30], 0x1003u);
    CHECK_EQ_U64(r.r[20], 0x1000u);
    CHECK_EQ_U64(r.r[19], 0x1001u);
    CHECK_EQ_U64(r.r[32], 0x1003u); /* ret: pc = lr */
    CHECK_EQ_U64(r.r[31], STACK + 32u);
    /* add sp, sp, #0x40; mov sp, x29 ... : mov sp, x29; ldp x29, x30, [sp, #16] ... */
    static const uint32_t epi2[] = {0x910003bf, 0xa9417bfd, 0xa8c24ff4, 0xd65f03c0};
    setup(epi2, sizeof epi2);
    r = regs_at(CODE, STACK + 200);
    r.r[29] = STACK + 64;
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 1);
    CHECK_EQ_U64(r.r[32], 0x100bu);
    CHECK_EQ_U64(r.r[31], STACK + 96u);
    /* ldr x0, [x0]; ret: a leaf that faulted on its load returns through lr */
    static const uint32_t leaf[] = {0xf9400000, 0xd65f03c0};
    setup(leaf, sizeof leaf);
    r = regs_at(CODE, STACK);
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 1);
    CHECK_EQ_U64(r.r[32], 0xa000u + 30u);
    CHECK_EQ_U64(r.r[31], STACK);
    /* ldp x29, x30, [sp, #16]; ldr x0, [x0] (scheduled into the epilogue, where it faulted);
     * ldp x20, x19, [sp], #32; ret */
    static const uint32_t mixed[] = {0xa9417bfd, 0xf9400000, 0xa8c24ff4, 0xd65f03c0};
    setup(mixed, sizeof mixed);
    r = regs_at(CODE + 4, STACK);
    r.r[30] = 0x1003u; /* as the first ldp left it */
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 1);
    CHECK_EQ_U64(r.r[32], 0x1003u);
    CHECK_EQ_U64(r.r[31], STACK + 32u);
    CHECK_EQ_U64(r.r[19], 0x1001u);
    /* ldr x0, [x0]; bl .; ret: a call first, so no answer; ldr x30, [x0]; ret: lr rewritten */
    static const uint32_t body[] = {0xf9400000, 0x94000000, 0xd65f03c0};
    setup(body, sizeof body);
    r = regs_at(CODE, STACK);
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 0);
    static const uint32_t lr_load[] = {0xf940001e, 0xd65f03c0};
    setup(lr_load, sizeof lr_load);
    r = regs_at(CODE, STACK);
    CHECK(fl_unwind_arch_epilogue(&g_code_r, &g_stack_r, &r) == 0);

    /* paciasp; stp x20, x19, [sp, #-32]!; stp x29, x30, [sp, #16]; add x29, sp, #16;
     * sub sp, sp, #64; ldr x0, [x0] */
    static const uint32_t pro[] = {0xd503233f, 0xa9be4ff4, 0xa9017bfd, 0x910043fd, 0xd10103ff, 0xf9400000};
    struct { unsigned at, pushed; bool frame; } cases[] = {
        {0, 0, false}, {4, 0, false}, {8, 32, false}, {12, 32, false}, {16, 32, true}, {20, 96, true}};
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        setup(pro, sizeof pro);
        uint64_t entry_sp = STACK + 256;
        r = regs_at(CODE + cases[k].at, entry_sp - cases[k].pushed);
        CHECK(fl_unwind_arch_prologue(&g_code_r, CODE, &g_stack_r, &r) == 1);
        CHECK_EQ_U64(r.r[32], 0xa000u + 30u); /* lr */
        CHECK_EQ_U64(r.r[31], entry_sp);
        /* x29 was stored at entry_sp - 16 (slot 30 of g_stack) */
        CHECK_EQ_U64(r.r[29], cases[k].frame ? 0x1000u + 30u : 0xa000u + 29u);
        CHECK_EQ_U64(r.r[19], 0xa000u + 19u);
    }
    setup(pro, sizeof pro);
    r = regs_at(CODE + 24, STACK);
    CHECK(fl_unwind_arch_prologue(&g_code_r, CODE, &g_stack_r, &r) == 0);
#endif
    TEST_END();
}
