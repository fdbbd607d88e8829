/* SPDX-License-Identifier: MIT */
/* macho: fl_macho_unwind_step for every rule kind and arch over hand-made stacks. */
#include "macho/macho.h"
#include "test.h"

#define STACK_ORIGIN 0x7ff000000000ull
#define STACK_WORDS 2048u
static uint64_t g_stack[STACK_WORDS];
static fl_reader_t g_sr;

static uint64_t at(unsigned word) {
    return STACK_ORIGIN + 8ull * word;
}
static void put(uint64_t addr, uint64_t v) {
    g_stack[(addr - STACK_ORIGIN) / 8] = v;
}

/* Registers before the step: every one valid, each holding a recognisable value. */
static fl_dwarf_regs_t all_regs(void) {
    fl_dwarf_regs_t r;
    for (unsigned i = 0; i < 33; i++) r.r[i] = 0xaaaa000000000000ull | i;
    r.valid = (1ull << 33) - 1;
    return r;
}

static fl_macho_unwind_rule_t rule_of(uint32_t cpu, uint32_t enc) {
    fl_macho_unwind_rule_t rule;
    int err = fl_macho_unwind_decode(cpu, enc, &rule);
    CHECK_EQ_U64(err, 0);
    return rule;
}

/* After a step: exactly the registers in `want_valid` are valid; those in `changed` hold the
 * given values and the other valid ones kept theirs. */
static void check_regs(const fl_dwarf_regs_t *before, const fl_dwarf_regs_t *after,
                       uint64_t want_valid, const unsigned *reg, const uint64_t *val, unsigned n) {
    CHECK_EQ_U64(after->valid, want_valid);
    for (unsigned i = 0; i < 33; i++) {
        if (!(want_valid >> i & 1)) continue;
        uint64_t want = before->r[i];
        for (unsigned k = 0; k < n; k++)
            if (reg[k] == i) want = val[k];
        if (after->r[i] != want) fprintf(stderr, "register %u\n", i);
        CHECK_EQ_U64(after->r[i], want);
    }
}

#define X86_CALLEE (1ull << 3 | 1ull << 6 | 1ull << 12 | 1ull << 13 | 1ull << 14 | 1ull << 15)
#define X86_SP_IP (1ull << 7 | 1ull << 16)
#define A64_CALLEE (0x7ffull << 19) /* x19..x29 */
#define A64_SP_PC (1ull << 31 | 1ull << 32)

/* ---- x86_64 ---- */

/* push rbp; mov rsp, rbp; push r15; push r14; push rbx; sub $8, rsp: encoding 0x01030161. */
static void test_x86_rbp_frame(void) {
    fl_macho_unwind_rule_t rule = rule_of(FL_MACHO_CPU_X86_64, 0x01030161);
    uint64_t cfa = at(100), rbp = cfa - 16;
    put(cfa - 8, 0x100001234);          /* return address */
    put(rbp, at(200));                  /* caller's rbp */
    put(rbp - 8, 0x1515);               /* r15 */
    put(rbp - 16, 0x1414);              /* r14 */
    put(rbp - 24, 0x0303);              /* rbx */
    fl_dwarf_regs_t r = all_regs(), before;
    r.r[7] = rbp - 32;
    r.r[6] = rbp;
    before = r;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    static const unsigned reg[] = {16, 7, 6, 15, 14, 3};
    const uint64_t val[] = {0x100001234, cfa, at(200), 0x1515, 0x1414, 0x0303};
    check_regs(&before, &r, X86_CALLEE | X86_SP_IP, reg, val, 6);

    /* A plain frame: nothing but the frame record. */
    rule = rule_of(FL_MACHO_CPU_X86_64, 0x01000000);
    r = before;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    check_regs(&before, &r, X86_CALLEE | X86_SP_IP, reg, val, 3);

    /* Registers that were invalid stay so unless restored; rsp and rip become valid. */
    r = before;
    r.valid = 1ull << 7 | 1ull << 6 | 1ull << 0;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    CHECK_EQ_U64(r.valid, 1ull << 6 | X86_SP_IP);

    /* rbp below rsp - 16: the caller's rsp would not be above ours. */
    rule = rule_of(FL_MACHO_CPU_X86_64, 0x01030161);
    r = before;
    r.r[7] = rbp + 16;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EBADDATA);
    r.r[7] = rbp + 24;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EBADDATA);
    /* unreadable frame record, unreadable saved register slot */
    r = before;
    r.r[6] = 0x1000;
    r.r[7] = 0x800;
    fl_dwarf_regs_t copy = r;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EFAULT);
    CHECK(memcmp(&r, &copy, sizeof r) == 0); /* unchanged on failure */
    r = before;
    r.r[6] = STACK_ORIGIN + 8; /* record readable, rbx slot at rbp-24 is not */
    r.r[7] = STACK_ORIGIN;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EFAULT);
    r = before;
    r.r[6] = UINT64_MAX - 8; /* fp + 16 overflows */
    r.r[7] = 0;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EBADDATA);
    r = before;
    r.valid &= ~(1ull << 6);
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EINVAL);
    r = before;
    r.valid &= ~(1ull << 7);
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EINVAL);
}

/* push r15; push r14; push r13; push r12; push rbx; sub $16, rsp: stack immd 64 with
 * rbx r12 r13 r14 r15 (permutation 0), 0x02081400. */
static void test_x86_stack_immd(void) {
    fl_macho_unwind_rule_t rule = rule_of(FL_MACHO_CPU_X86_64, 0x02081400);
    uint64_t cfa = at(300), sp = cfa - 64;
    put(cfa - 8, 0x100005678);
    put(cfa - 16, 0x1515);
    put(cfa - 24, 0x1414);
    put(cfa - 32, 0x1313);
    put(cfa - 40, 0x1212);
    put(cfa - 48, 0x0303);
    put(sp, 0xdead); /* locals */
    put(sp + 8, 0xdead);
    fl_dwarf_regs_t r = all_regs(), before;
    r.r[7] = sp;
    before = r;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    static const unsigned reg[] = {16, 7, 15, 14, 13, 12, 3};
    const uint64_t val[] = {0x100005678, cfa, 0x1515, 0x1414, 0x1313, 0x1212, 0x0303};
    check_regs(&before, &r, X86_CALLEE | X86_SP_IP, reg, val, 7);

    /* push rbp; push r14; push rbx (no frame pointer), no locals: 0x02040c0b saves
     * rbx r14 rbp upwards: rbp is restored from the stack, not from a frame record. */
    rule = rule_of(FL_MACHO_CPU_X86_64, 0x02040c0b);
    put(cfa - 16, 0x0606);
    put(cfa - 24, 0x1414);
    put(cfa - 32, 0x0303);
    r = before;
    r.r[7] = cfa - 32;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    static const unsigned reg2[] = {16, 7, 6, 14, 3};
    const uint64_t val2[] = {0x100005678, cfa, 0x0606, 0x1414, 0x0303};
    check_regs(&before, &r, X86_CALLEE | X86_SP_IP, reg2, val2, 5);

    /* A leaf with nothing on the stack but the return address. */
    rule = rule_of(FL_MACHO_CPU_X86_64, 0x02010000);
    r = before;
    r.r[7] = cfa - 8;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    check_regs(&before, &r, X86_CALLEE | X86_SP_IP, reg2, val2, 2);

    /* Unreadable, and sp + size overflowing. */
    r = before;
    r.r[7] = 0x1000;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EFAULT);
    r.r[7] = UINT64_MAX - 4;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EBADDATA);
}

/* push r14; push rbx; sub $0x1388, rsp: the immediate at offset 2 + 1 + 3 = 6, adjust 3
 * (two pushes and the return address), rbx then r14 upwards (permutation 0*5 + 2):
 * 0x03066802. */
static void test_x86_stack_ind(void) {
    static const uint8_t code[] = {0x41, 0x56,                         /* push %r14 */
                                   0x53,                               /* push %rbx */
                                   0x48, 0x81, 0xec, 0x88, 0x13, 0, 0, /* sub $0x1388,%rsp */
                                   0xc3};
    const uint64_t func = 0x100003f00;
    fl_reader_t cr;
    fl_reader_init_buffer(&cr, code, sizeof code, func);
    fl_macho_unwind_rule_t rule = rule_of(FL_MACHO_CPU_X86_64, 0x03066802);
    uint64_t size = 0x1388 + 24, cfa = at(STACK_WORDS - 4), sp = cfa - size;
    put(cfa - 8, 0x10000abcd);
    put(cfa - 16, 0x1414); /* r14, pushed first */
    put(cfa - 24, 0x0303); /* rbx */
    fl_dwarf_regs_t r = all_regs(), before;
    r.r[7] = sp;
    before = r;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, &cr, func, &g_sr, &r), 0);
    static const unsigned reg[] = {16, 7, 14, 3};
    const uint64_t val[] = {0x10000abcd, cfa, 0x1414, 0x0303};
    check_regs(&before, &r, X86_CALLEE | X86_SP_IP, reg, val, 4);

    /* The code cannot be read, or no code reader was given. */
    r = before;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, &cr, func + sizeof code - 6, &g_sr, &r), FL_EFAULT);
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, func, &g_sr, &r), FL_EINVAL);
    CHECK(memcmp(&r, &before, sizeof r) == 0);
    /* An immediate too small for what the encoding says was pushed. */
    static const uint8_t tiny[] = {0x41, 0x56, 0x53, 0x48, 0x81, 0xec, 0, 0, 0, 0};
    fl_reader_init_buffer(&cr, tiny, sizeof tiny, func);
    rule = rule_of(FL_MACHO_CPU_X86_64, 0x03060802); /* adjust 0 */
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, &cr, func, &g_sr, &r), FL_EBADDATA);
}

/* ---- arm64 ---- */

/* stp x22, x21, [sp, #-48]!; stp x20, x19, [sp, #16]; stp x29, x30, [sp, #32];
 * add x29, sp, #32: FRAME with x19/x20 x21/x22, 0x04000003. */
static void test_arm64_frame(void) {
    fl_macho_unwind_rule_t rule = rule_of(FL_MACHO_CPU_ARM64, 0x04000003);
    uint64_t cfa = at(500), fp = cfa - 16;
    put(fp, at(600));      /* caller's fp */
    put(fp + 8, 0x100004444); /* saved lr */
    put(fp - 8, 0x1919);
    put(fp - 16, 0x2020);
    put(fp - 24, 0x2121);
    put(fp - 32, 0x2222);
    fl_dwarf_regs_t r = all_regs(), before;
    r.r[31] = fp - 64;
    r.r[29] = fp;
    before = r;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    static const unsigned reg[] = {32, 31, 29, 19, 20, 21, 22};
    const uint64_t val[] = {0x100004444, cfa, at(600), 0x1919, 0x2020, 0x2121, 0x2222};
    check_regs(&before, &r, A64_CALLEE | A64_SP_PC, reg, val, 7);

    /* x19/x20 x25/x26 and the d8/d9 d14/d15 pairs below them: d registers are read from
     * nowhere (not tracked), the x registers from their slots. */
    rule = rule_of(FL_MACHO_CPU_ARM64, 0x04000909);
    put(fp - 24, 0x2525);
    put(fp - 32, 0x2626);
    r = before;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    static const unsigned reg2[] = {32, 31, 29, 19, 20, 25, 26};
    const uint64_t val2[] = {0x100004444, cfa, at(600), 0x1919, 0x2020, 0x2525, 0x2626};
    check_regs(&before, &r, A64_CALLEE | A64_SP_PC, reg2, val2, 7);

    /* fp at sp (no locals) is fine; fp more than 16 below sp is not. */
    rule = rule_of(FL_MACHO_CPU_ARM64, 0x04000000);
    r = before;
    r.r[31] = fp;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    CHECK_EQ_U64(r.r[31], cfa);
    r = before;
    r.r[31] = fp + 16;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EBADDATA);
    r = before;
    r.r[29] = 0x10;
    r.r[31] = 0;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EFAULT);
    r = before;
    r.valid &= ~(1ull << 29);
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EINVAL);
}

/* sub sp, sp, #32 in a leaf: FRAMELESS 32; with stp x20, x19, [sp, #-16]! first: x19/x20. */
static void test_arm64_frameless(void) {
    fl_macho_unwind_rule_t rule = rule_of(FL_MACHO_CPU_ARM64, 0x02002000);
    uint64_t cfa = at(700);
    fl_dwarf_regs_t r = all_regs(), before;
    r.r[31] = cfa - 32;
    r.r[30] = 0x100007777;
    before = r;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    static const unsigned reg[] = {32, 31, 19, 20};
    const uint64_t val[] = {0x100007777, cfa, 0x1919, 0x2020};
    check_regs(&before, &r, A64_CALLEE | A64_SP_PC, reg, val, 2);

    rule = rule_of(FL_MACHO_CPU_ARM64, 0x02003001); /* 48 bytes, x19/x20 at the top */
    put(cfa - 8, 0x1919);
    put(cfa - 16, 0x2020);
    r = before;
    r.r[31] = cfa - 48;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    check_regs(&before, &r, A64_CALLEE | A64_SP_PC, reg, val, 4);

    /* A leaf without stack: the caller's sp is ours. */
    rule = rule_of(FL_MACHO_CPU_ARM64, 0x02000000);
    r = before;
    r.r[31] = cfa;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), 0);
    check_regs(&before, &r, A64_CALLEE | A64_SP_PC, reg, val, 2);

    /* lr unknown; sp + size overflowing; the saved pair unreadable. */
    r = before;
    r.valid &= ~(1ull << 30);
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EINVAL);
    rule = rule_of(FL_MACHO_CPU_ARM64, 0x02003001);
    r = before;
    r.r[31] = UINT64_MAX - 16;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EBADDATA);
    r.r[31] = 0x1000;
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_EFAULT);
}

static void test_unsupported(void) {
    fl_dwarf_regs_t r = all_regs(), before = r;
    static const struct {
        uint32_t cpu, enc;
    } cases[] = {{FL_MACHO_CPU_ARM64, 0}, {FL_MACHO_CPU_ARM64, 0x03000100},
                 {FL_MACHO_CPU_X86_64, 0}, {FL_MACHO_CPU_X86_64, 0x04000100}};
    for (unsigned i = 0; i < FL_ARRAY_LEN(cases); i++) {
        fl_macho_unwind_rule_t rule = rule_of(cases[i].cpu, cases[i].enc);
        CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_ENOSYS);
    }
    CHECK(memcmp(&r, &before, sizeof r) == 0);
    fl_macho_unwind_rule_t rule = rule_of(FL_MACHO_CPU_ARM64, 0x04000000);
    rule.cputype = 7; /* i386 */
    CHECK_EQ_U64(fl_macho_unwind_step(&rule, NULL, 0, &g_sr, &r), FL_ENOSYS);
    CHECK_EQ_U64(fl_macho_unwind_step(NULL, NULL, 0, &g_sr, &r), FL_EINVAL);
}

int main(void) {
    fl_reader_init_buffer(&g_sr, g_stack, sizeof g_stack, STACK_ORIGIN);
    test_x86_rbp_frame();
    test_x86_stack_immd();
    test_x86_stack_ind();
    test_arm64_frame();
    test_arm64_frameless();
    test_unsupported();
    TEST_END();
}
