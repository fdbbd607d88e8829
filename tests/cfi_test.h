/* SPDX-License-Identifier: MIT */
/* Equality of the CFI evaluator's FDEs and rows, for the tests that compute them two ways. */
#ifndef FAULTLINE_TESTS_CFI_TEST_H
#define FAULTLINE_TESTS_CFI_TEST_H
#include <stdbool.h>

#include "frames/frames.h"

static inline bool fde_eq(const fl_cfi_fde_t *a, const fl_cfi_fde_t *b) {
    return a->addr == b->addr && a->pc_start == b->pc_start && a->pc_end == b->pc_end &&
           a->insns == b->insns && a->insns_end == b->insns_end && a->cie.addr == b->cie.addr &&
           a->cie.insns == b->cie.insns && a->cie.insns_end == b->cie.insns_end &&
           a->cie.code_align == b->cie.code_align && a->cie.data_align == b->cie.data_align &&
           a->cie.ra_reg == b->cie.ra_reg && a->cie.ptr_enc == b->cie.ptr_enc &&
           a->cie.signal_frame == b->cie.signal_frame && a->cie.has_z == b->cie.has_z;
}

/* The same row: range, CFA rule and every register rule (fields a rule does not use are not
 * compared: cfa_reg of an expression CFA, len of an offset rule). */
static inline bool row_eq(const fl_cfi_row_t *a, const fl_cfi_row_t *b) {
    if (a->start != b->start || a->end != b->end || a->h.cfa_kind != b->h.cfa_kind ||
        a->h.cfa_offset != b->h.cfa_offset || a->h.ra_reg != b->h.ra_reg ||
        a->h.flags != b->h.flags || a->h.nrules != b->h.nrules || a->h.expr_base != b->h.expr_base)
        return false;
    if (a->h.cfa_kind == FL_CFI_CFA_REG && a->h.cfa_reg != b->h.cfa_reg) return false;
    if (a->h.cfa_kind == FL_CFI_CFA_EXPR && a->h.cfa_len != b->h.cfa_len) return false;
    for (unsigned i = 0; i < a->h.nrules && i < FL_DWARF_REGS; i++) {
        const fl_cfi_rule_t *u = &a->rule[i], *v = &b->rule[i];
        if (u->reg != v->reg || u->kind != v->kind || u->value != v->value) return false;
        if ((u->kind == FL_CFI_RULE_EXPR || u->kind == FL_CFI_RULE_VAL_EXPR) && u->len != v->len)
            return false;
    }
    return true;
}

#endif
