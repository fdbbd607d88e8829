/* SPDX-License-Identifier: MIT */
/* Compact unwind's rules as CFI rows (fl_cfi_macho_row) and as the row cache's plain entries
 * (fl_cfi_entry_plain of that row, what the walker applies and stores on a miss) against the direct step of
 * macho/ (fl_macho_unwind_step, checked against llvm-objdump and real stacks by tests/macho):
 * for every valid encoding of the build's architecture among a million random ones (registers
 * named twice aside), on random stacks, all give the same caller (pc, sp, fp and every
 * register the rule restores), and a rule one rejects the others reject too (an entry is
 * declined only for arm64 FRAMELESS, whose return address stays in lr); the entry the walker's
 * fast loop builds from the rule directly (fl_cfi_macho_entry) equals the row's entry. */
#include <stdint.h>
#include <string.h>

#include "frames/unwind_internal.h"
#include "macho/macho.h"
#include "test.h"

#define STACK 0x10000u
#define CODE 0x40000u

static uint64_t g_stack[1024];
static uint8_t g_code[64];

static uint64_t rnd(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

int main(void) {
    uint32_t cputype = (int)FL_ARCH == (int)FL_REGS_ARCH_ARM64 ? FL_MACHO_CPU_ARM64 : FL_MACHO_CPU_X86_64;
    fl_reader_t stack, code;
    fl_reader_init_buffer(&stack, g_stack, sizeof g_stack, STACK);
    fl_reader_init_buffer(&code, g_code, sizeof g_code, CODE);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    unsigned compared = 0, rejected = 0, entries = 0, directs = 0, twices = 0, kinds[8] = {0};
    for (unsigned iter = 0; iter < 1000000; iter++) {
        uint32_t enc = (uint32_t)rnd(&seed);
        /* Mostly the modes that have rules (the high byte holds the mode), small stack sizes. */
        enc = (enc & 0x00ffffffu) | (uint32_t)(1 + rnd(&seed) % 4) << 24;
        if (rnd(&seed) & 1) enc &= 0xff00ffffu | (uint32_t)(rnd(&seed) % 16) << 16;
        fl_macho_unwind_rule_t rule;
        if (fl_macho_unwind_decode(cputype, enc, &rule)) continue;
        /* A register saved twice: no compiler's encoding (the direct step reads both slots, the
         * row keeps the last, so an unreadable first slot would tell them apart): compared only
         * as entries, below. */
        bool twice = false;
        for (unsigned i = 0; i < rule.nregs; i++)
            for (unsigned k = 0; k < i; k++) twice |= rule.reg[i] == rule.reg[k];
        for (unsigned i = 0; i < sizeof g_stack / 8; i++) g_stack[i] = rnd(&seed) % 0x100000u;
        for (unsigned i = 0; i < sizeof g_code; i++) g_code[i] = (uint8_t)rnd(&seed);
        g_code[1] = g_code[1] % 4; /* a STACK_IND immediate of a sane size */
        g_code[2] = g_code[3] = 0;
        fl_dwarf_regs_t a;
        for (unsigned i = 0; i < FL_DWARF_REGS; i++) a.r[i] = 0x5000u + i;
        a.valid = (1ull << FL_DWARF_REGS) - 1;
        a.r[FL_DWARF_SP] = STACK + 8 * (rnd(&seed) % 256);
        a.r[FL_DWARF_FP] = a.r[FL_DWARF_SP] + 8 * (rnd(&seed) % 256);
        fl_dwarf_regs_t b = a, c = a;
        fl_cfi_row_t row;
        fl_cfi_entry_t ent;
        int es = fl_macho_unwind_step(&rule, &code, CODE, &stack, &a);
        int er = fl_cfi_macho_row(&rule, &code, CODE, &row);
        int ee = er ? er : fl_cfi_entry_plain(&row, &ent) ? 0 : FL_ENOSYS;
        /* The walker's fast loop builds the entry from the rule directly (fl_cfi_macho_entry):
         * it must be the row's, field by field, and declined where the row's is. */
        fl_cfi_entry_t direct;
        int ed = fl_cfi_macho_entry(&rule, &code, CODE, &direct);
        CHECK_EQ_U64((uint64_t)(int64_t)ed, (uint64_t)(int64_t)ee);
        if (ed == 0 && ee == 0) {
            CHECK(direct.kind == ent.kind && direct.cfa_reg == ent.cfa_reg &&
                  direct.ra_reg == ent.ra_reg && direct.nsaved == ent.nsaved &&
                  direct.span == ent.span && direct.ra_at == ent.ra_at &&
                  direct.fp_at == ent.fp_at && direct.reach == ent.reach &&
                  direct.cfa_off == ent.cfa_off && direct.lo_off == ent.lo_off &&
                  direct.regmask == ent.regmask);
            CHECK(memcmp(direct.u.at, ent.u.at, ent.nsaved * sizeof ent.u.at[0]) == 0);
            directs++;
            twices += twice;
        }
        if (twice) continue;
        if (er == 0) er = fl_cfi_row_apply(&row, FL_ARCH, &stack, &stack, &b) == 1 ? 0 : -1;
        bool lr = rule.kind == FL_MACHO_RULE_FRAMELESS && cputype == FL_MACHO_CPU_ARM64;
        CHECK(lr ? ee == FL_ENOSYS : ee == 0 || er != 0);
        if (ee == 0) {
            ee = fl_cfi_entry_apply(&ent, &stack, &c) == 1 ? 0 : -1;
            CHECK((ee == 0) == (er == 0));
            if (ee == 0 && er == 0) {
                CHECK(memcmp(c.r, b.r, sizeof c.r) == 0); /* the same registers as the row */
                CHECK_EQ_U64(c.valid, b.valid);
                entries++;
            }
        }
        if (es) {
            /* The direct step also refuses a caller whose sp does not rise (the walker checks
             * that for rows); anything else it rejects, the row must reject too. */
            if (es != FL_EBADDATA || er != 0 || b.r[FL_DWARF_SP] > a.r[FL_DWARF_SP] ||
                (b.r[FL_DWARF_SP] == a.r[FL_DWARF_SP] && rule.kind == FL_MACHO_RULE_FRAMELESS))
                CHECK(er != 0);
            rejected++;
            continue;
        }
        CHECK(er == 0);
        if (er) continue;
        compared++;
        kinds[rule.kind & 7]++;
        CHECK_EQ_U64(b.r[FL_DWARF_PC], a.r[FL_DWARF_PC]);
        CHECK_EQ_U64(b.r[FL_DWARF_SP], a.r[FL_DWARF_SP]);
        CHECK_EQ_U64(b.r[FL_DWARF_FP], a.r[FL_DWARF_FP]);
        for (unsigned i = 0; i < rule.nregs; i++)
            if (rule.reg[i] < FL_DWARF_REGS) CHECK_EQ_U64(b.r[rule.reg[i]], a.r[rule.reg[i]]);
        if (fl_test_failures > 20) break;
    }
    printf("rules compared: %u (frame %u, frameless %u, stack_ind %u; as plain entries %u), "
           "rejected by both: %u; entries built directly: %u (%u naming a register twice)\n",
           compared, kinds[FL_MACHO_RULE_FRAME], kinds[FL_MACHO_RULE_FRAMELESS],
           kinds[FL_MACHO_RULE_STACK_IND], entries, rejected, directs, twices);
    CHECK(compared > 10000);
    CHECK(entries > compared / 2);
    CHECK(directs > compared / 2);
    /* (x86_64 RBP_FRAME's five register slots can repeat one; arm64's pairs cannot) */
    CHECK(cputype != FL_MACHO_CPU_X86_64 || twices > 100);
    TEST_END();
}
