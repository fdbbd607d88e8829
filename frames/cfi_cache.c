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
    if (e->h.flags & FL_CFI_ENTRY_PLAIN) return fl_cfi_entry_apply(e, seq, stack, regs);
    row->h = e->h;
    if (row->h.nrules > FL_CFI_CACHE_RULES) row->h.nrules = FL_CFI_CACHE_RULES;
    row->start = row->end = at; /* the cache keeps rows by address, not their ranges */
    __builtin_memcpy(row->rule, e->rule, sizeof e->rule); /* all: a fixed size copies inline */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq ? 2 : -1;
}

/* Whether the row takes the plain form (FL_CFI_ENTRY_PLAIN); if so, fills e's plain fields and
 * rules (e->h is the row's already). */
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

/* The entry for (at, image_id), taken for writing (its count made odd; *seq the even count it
 * had), or NULL while another writer holds it. */
static fl_cfi_entry_t *take(uint64_t at, uint64_t image_id, uint32_t *seq) {
    fl_cfi_entry_t *e = fl_cfi_cache_slot(at, image_id);
    *seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
    if ((*seq & 1) || !__atomic_compare_exchange_n(&e->seq, seq, *seq + 1, false,
                                                   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;
    e->key = at;
    e->image = image_id;
    return e;
}

bool fl_cfi_entry_plain(const fl_cfi_row_t *row, fl_cfi_entry_t *e) {
    if (row->h.nrules > FL_CFI_CACHE_RULES) return false;
    e->h = row->h;
    if (!plain(row, e)) return false;
    e->h.flags |= FL_CFI_ENTRY_PLAIN;
    return true;
}

void fl_cfi_cache_put(uint64_t at, uint64_t image_id, const fl_cfi_row_t *row) {
    uint32_t seq;
    fl_cfi_entry_t *e;
    if (row->h.nrules > FL_CFI_CACHE_RULES || !(e = take(at, image_id, &seq))) return;
    if (!fl_cfi_entry_plain(row, e)) {
        e->h = row->h;
        __builtin_memcpy(e->rule, row->rule, row->h.nrules * sizeof row->rule[0]);
    }
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

void fl_cfi_cache_put_entry(uint64_t at, uint64_t image_id, const fl_cfi_entry_t *src) {
    uint32_t seq;
    fl_cfi_entry_t *e;
    if (src->h.nrules > FL_CFI_CACHE_RULES || !(e = take(at, image_id, &seq))) return;
    e->ra_off = src->ra_off;
    e->fp_off = src->fp_off;
    e->off_lo = src->off_lo;
    e->off_hi = src->off_hi;
    e->h = src->h;
    e->regmask = src->regmask;
    __builtin_memcpy(e->rule, src->rule, src->h.nrules * sizeof src->rule[0]);
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

uint64_t fl_cfi_cache_generation(void) { return __atomic_load_n(&g_generation, __ATOMIC_ACQUIRE); }

/* Entries made before the flush keep their keys, but every identity computed afterwards differs. */
void fl_frames_cfi_cache_flush(void) { __atomic_add_fetch(&g_generation, 1, __ATOMIC_ACQ_REL); }
