/* SPDX-License-Identifier: MIT */
/* The CFI row cache (see unwind_internal.h): computed rows keyed by lookup address and image
 * identity, shared by every walk and thread without locks. */
#include "frames/unwind_internal.h"

#pragma GCC poison malloc calloc realloc free

_Alignas(64) fl_cfi_entry_t fl_cfi_entries[1u << FL_CFI_CACHE_BITS];
static uint64_t g_generation = 1;

int fl_cfi_cache_step(uint64_t at, uint64_t image_id, const fl_reader_t *stack,
                      fl_dwarf_regs_t *regs, fl_cfi_row_t *row) {
    uint32_t seq;
    const fl_cfi_entry_t *e = fl_cfi_cache_find(at, image_id, &seq);
    if (!e) return -1;
    if (e->h.flags & FL_CFI_ENTRY_PLAIN) {
        uint64_t pc = regs->r[FL_DWARF_PC], sp = regs->r[FL_DWARF_SP], fp = regs->r[FL_DWARF_FP];
        bool fp_known = regs->valid >> FL_DWARF_FP & 1;
        int ret = fl_cfi_plain_step(e, seq, stack, regs, &pc, &sp, &fp, &fp_known);
        if (ret == 1) {
            regs->r[FL_DWARF_PC] = pc;
            regs->r[FL_DWARF_SP] = sp;
            regs->r[FL_DWARF_FP] = fp;
            regs->valid |= 1ull << FL_DWARF_PC | 1ull << FL_DWARF_SP |
                           (uint64_t)fp_known << FL_DWARF_FP;
        }
        return ret;
    }
    row->h = e->h;
    if (row->h.nrules > FL_CFI_CACHE_RULES) row->h.nrules = FL_CFI_CACHE_RULES;
    row->start = row->end = at; /* the cache keeps rows by address, not their ranges */
    __builtin_memcpy(row->rule, e->rule, sizeof e->rule); /* all: a fixed size copies inline */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq ? 2 : -1;
}

/* Whether the row takes the plain form (FL_CFI_ENTRY_PLAIN); if so, fills e's plain fields and
 * rules. */
static bool plain(const fl_cfi_row_t *row, fl_cfi_entry_t *e) {
    if (row->h.cfa_kind != FL_CFI_CFA_REG || (row->h.flags & FL_CFI_ROW_SIGNAL) ||
        row->h.ra_reg == FL_DWARF_SP || row->h.ra_reg == FL_DWARF_FP)
        return false;
    if (row->h.nrules == 1 && row->rule[0].reg == row->h.ra_reg &&
        row->rule[0].kind == FL_CFI_RULE_UNDEFINED) {
        /* A thread's entry (_start, clone's child): fl_cfi_row_apply would find the CFA's
         * register known and then stop (0) on the undefined return address. */
        e->h.flags |= FL_CFI_ENTRY_OUTERMOST;
        e->h.nrules = 0;
        e->regmask = 0;
        e->ra_off = e->fp_off = e->off_lo = e->off_hi = 0;
        return true;
    }
    bool ra = false;
    unsigned n = 0;
    uint64_t mask = 0;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (unsigned i = 0; i < row->h.nrules; i++) {
        const fl_cfi_rule_t *u = &row->rule[i];
        if (u->kind != FL_CFI_RULE_OFFSET || u->reg == FL_DWARF_SP || u->reg >= FL_DWARF_REGS ||
            (u->reg == FL_DWARF_PC && u->reg != row->h.ra_reg))
            return false;
        if (u->reg == row->h.ra_reg) {
            ra = true;
            e->ra_off = u->value;
        } else if (u->reg == FL_DWARF_FP) {
            e->h.flags |= FL_CFI_ENTRY_PLAIN_FP;
            e->fp_off = u->value;
        } else {
            e->rule[n++] = *u; /* (ascending, as in the row) */
            mask |= 1ull << u->reg;
        }
        lo = u->value < lo ? u->value : lo;
        hi = u->value > hi ? u->value : hi;
    }
    if (!ra || hi - (int64_t)lo > 4096) return false;
    if (!(e->h.flags & FL_CFI_ENTRY_PLAIN_FP)) e->fp_off = e->ra_off;
    e->h.nrules = (uint8_t)n;
    e->regmask = mask;
    e->off_lo = lo;
    e->off_hi = hi;
    return true;
}

void fl_cfi_cache_put(uint64_t at, uint64_t image_id, const fl_cfi_row_t *row) {
    if (row->h.nrules > FL_CFI_CACHE_RULES) return;
    fl_cfi_entry_t *e = fl_cfi_cache_slot(at, image_id);
    uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
    if ((seq & 1) || !__atomic_compare_exchange_n(&e->seq, &seq, seq + 1, false, __ATOMIC_ACQ_REL,
                                                  __ATOMIC_RELAXED))
        return;
    e->key = at;
    e->image = image_id;
    e->h = row->h;
    if (plain(row, e)) {
        e->h.flags |= FL_CFI_ENTRY_PLAIN;
    } else {
        __builtin_memcpy(e->rule, row->rule, row->h.nrules * sizeof row->rule[0]);
    }
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

uint64_t fl_cfi_cache_generation(void) { return __atomic_load_n(&g_generation, __ATOMIC_ACQUIRE); }

/* Entries made before the flush keep their keys, but every identity computed afterwards differs. */
void fl_frames_cfi_cache_flush(void) { __atomic_add_fetch(&g_generation, 1, __ATOMIC_ACQ_REL); }
