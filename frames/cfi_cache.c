/* SPDX-License-Identifier: MIT */
/* The CFI row cache (see unwind_internal.h): computed rows keyed by lookup address and image
 * identity, shared by every walk and thread without locks. */
#include "frames/unwind_internal.h"

#pragma GCC poison malloc calloc realloc free

_Alignas(64) fl_cfi_entry_t fl_cfi_entries[1u << FL_CFI_CACHE_BITS];
static uint64_t g_generation = 1;

/* Applies a plain entry's copy, as fl_cfi_row_apply would, to regs: 1 stepped, 0 the outermost
 * frame, -1 a register it needs is unknown or a slot unreadable (regs unchanged). */
static int plain_step(const fl_cfi_plain_t *p, const uint16_t *slots, const fl_reader_t *stack,
                      fl_dwarf_regs_t *regs) {
    uint64_t npc, nfp, val[FL_CFI_CACHE_RULES], mask = p->regmask;
    if (!(regs->valid >> p->cfa_reg & 1)) return -1;
    if (p->kind & FL_CFI_ENTRY_OUTERMOST) return 0;
    uint64_t base = regs->r[p->cfa_reg], first = base + (uint64_t)p->lo_off;
    const char *w = (const char *)fl_reader_direct(stack, first, p->reach); /* (slots in reach) */
    if (w) {
        __builtin_memcpy(&npc, w + p->ra_at, 8);
        __builtin_memcpy(&nfp, w + p->fp_at, 8);
        for (unsigned i = 0; i < p->nsaved; i++) __builtin_memcpy(&val[i], w + slots[i], 8);
    } else {
        if (fl_read_u64(stack, first + p->ra_at, &npc) ||
            fl_read_u64(stack, first + p->fp_at, &nfp))
            return -1;
        for (unsigned i = 0; i < p->nsaved; i++)
            if (fl_read_u64(stack, first + slots[i], &val[i])) return -1;
    }
    if (!npc) return 0; /* libunwind's convention for the outermost frame */
    regs->valid |= mask | 1ull << p->ra_reg | 1ull << FL_DWARF_PC | 1ull << FL_DWARF_SP;
    for (unsigned i = 0; mask; i++, mask &= mask - 1) /* (one bit per slot) */
        regs->r[__builtin_ctzll(mask)] = val[i];
    regs->r[p->ra_reg] = npc; /* (arm64: lr, as fl_cfi_row_apply leaves it) */
    regs->r[FL_DWARF_PC] = npc;
    regs->r[FL_DWARF_SP] = base + (uint64_t)p->cfa_off;
    if (p->kind & FL_CFI_ENTRY_PLAIN_FP) {
        regs->r[FL_DWARF_FP] = nfp;
        regs->valid |= 1ull << FL_DWARF_FP;
    }
    return 1;
}

int fl_cfi_cache_step(uint64_t at, uint64_t image_id, const fl_reader_t *stack,
                      fl_dwarf_regs_t *regs, fl_cfi_row_t *row) {
    const fl_cfi_entry_t *e = fl_cfi_cache_slot(at, image_id);
    fl_cfi_plain_t p;
    uint16_t slots[FL_CFI_CACHE_RULES];
    if (fl_cfi_cache_plain(e, at, image_id, &p, slots) && (p.kind & FL_CFI_ENTRY_PLAIN))
        return plain_step(&p, slots, stack, regs);
    uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
    if ((seq & 1) || e->key != at || e->image != image_id || e->kind) return -1;
    row->h = e->u.row.h;
    if (row->h.nrules > FL_CFI_CACHE_RULES) row->h.nrules = FL_CFI_CACHE_RULES;
    row->start = row->end = at; /* the cache keeps rows by address, not their ranges */
    /* all: a fixed size copies inline */
    __builtin_memcpy(row->rule, e->u.row.rule, sizeof e->u.row.rule);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq ? 2 : -1;
}

/* Whether the row takes the plain form (FL_CFI_ENTRY_PLAIN); if so, fills e's plain fields. */
static bool plain(const fl_cfi_row_t *row, fl_cfi_entry_t *e) {
    const fl_cfi_head_t *h = &row->h;
    if (h->nrules > FL_CFI_CACHE_RULES || h->cfa_kind != FL_CFI_CFA_REG || (h->flags & FL_CFI_ROW_SIGNAL) ||
        h->ra_reg == FL_DWARF_SP || h->ra_reg == FL_DWARF_FP || h->cfa_reg >= FL_DWARF_REGS ||
        h->cfa_offset != (int32_t)h->cfa_offset)
        return false;
    unsigned kind = FL_CFI_ENTRY_PLAIN | (h->cfa_reg == FL_DWARF_SP   ? FL_CFI_ENTRY_CFA_SP
                                         : h->cfa_reg == FL_DWARF_FP ? FL_CFI_ENTRY_CFA_FP
                                                                     : 0);
    e->cfa_reg = h->cfa_reg;
    e->ra_reg = h->ra_reg;
    e->cfa_off = (int32_t)h->cfa_offset;
    if (h->nrules == 1 && row->rule[0].reg == h->ra_reg &&
        row->rule[0].kind == FL_CFI_RULE_UNDEFINED) {
        /* A thread's entry (_start, clone's child): fl_cfi_row_apply would find the CFA's
         * register known and then stop (0) on the undefined return address. */
        e->kind = (uint8_t)(kind | FL_CFI_ENTRY_OUTERMOST);
        e->nsaved = 0;
        e->regmask = 0;
        e->span = e->ra_at = e->fp_at = 0;
        e->reach = 8;
        e->lo_off = e->cfa_off;
        return true;
    }
    int32_t ra_off = 0, fp_off = 0, lo = INT32_MAX, hi = INT32_MIN, off[FL_CFI_CACHE_RULES];
    bool ra = false;
    uint64_t mask = 0;
    unsigned n = 0;
    for (unsigned i = 0; i < h->nrules; i++) {
        const fl_cfi_rule_t *u = &row->rule[i];
        if (u->kind != FL_CFI_RULE_OFFSET || u->reg == FL_DWARF_SP || u->reg >= FL_DWARF_REGS ||
            (u->reg == FL_DWARF_PC && u->reg != h->ra_reg))
            return false;
        if (u->reg == h->ra_reg) {
            ra = true;
            ra_off = u->value;
        } else if (u->reg == FL_DWARF_FP) {
            kind |= FL_CFI_ENTRY_PLAIN_FP;
            fp_off = u->value;
        } else { /* (ascending, as in the row and in mask) */
            mask |= 1ull << u->reg;
            off[n++] = u->value;
        }
        lo = u->value < lo ? u->value : lo;
        hi = u->value > hi ? u->value : hi;
    }
    /* (rows save registers below the CFA: the CFA lies above the lowest slot) */
    int64_t lo_off = (int64_t)e->cfa_off + lo, reach = hi - (int64_t)lo + 8;
    if (!ra || hi - (int64_t)lo > FL_CFI_PLAIN_SPAN || lo >= 0 ||
        -(int64_t)lo > FL_CFI_PLAIN_SPAN || lo_off != (int32_t)lo_off)
        return false;
    for (unsigned i = 0; i < n; i++) e->u.at[i] = (uint16_t)(off[i] - lo);
    e->kind = (uint8_t)kind;
    e->nsaved = (uint8_t)n;
    e->regmask = mask;
    e->span = (uint16_t)(hi - lo);
    e->reach = (uint16_t)(reach > -(int64_t)lo ? reach : -(int64_t)lo);
    e->ra_at = (uint16_t)(ra_off - lo);
    e->fp_at = (uint16_t)((kind & FL_CFI_ENTRY_PLAIN_FP ? fp_off : ra_off) - lo);
    e->lo_off = (int32_t)lo_off;
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
    return plain(row, e);
}

void fl_cfi_cache_put(uint64_t at, uint64_t image_id, const fl_cfi_row_t *row) {
    uint32_t seq;
    fl_cfi_entry_t *e;
    if (row->h.nrules > FL_CFI_CACHE_RULES || !(e = take(at, image_id, &seq))) return;
    if (!plain(row, e)) {
        e->kind = 0;
        e->u.row.h = row->h;
        __builtin_memcpy(e->u.row.rule, row->rule, row->h.nrules * sizeof row->rule[0]);
    }
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

void fl_cfi_cache_put_entry(uint64_t at, uint64_t image_id, const fl_cfi_entry_t *src) {
    uint32_t seq;
    fl_cfi_entry_t *e;
    if (!(src->kind & FL_CFI_ENTRY_PLAIN) || src->nsaved > FL_CFI_CACHE_RULES ||
        !(e = take(at, image_id, &seq)))
        return;
    e->kind = src->kind;
    e->cfa_reg = src->cfa_reg;
    e->ra_reg = src->ra_reg;
    e->nsaved = src->nsaved;
    e->span = src->span;
    e->ra_at = src->ra_at;
    e->fp_at = src->fp_at;
    e->reach = src->reach;
    e->cfa_off = src->cfa_off;
    e->lo_off = src->lo_off;
    e->regmask = src->regmask;
    __builtin_memcpy(e->u.at, src->u.at, src->nsaved * sizeof src->u.at[0]);
    __atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

int fl_cfi_entry_apply(const fl_cfi_entry_t *e, const fl_reader_t *stack, fl_dwarf_regs_t *regs) {
    fl_cfi_plain_t p = {.kind = e->kind, .cfa_reg = e->cfa_reg, .ra_reg = e->ra_reg,
                        .nsaved = e->nsaved, .reach = e->reach, .ra_at = e->ra_at,
                        .fp_at = e->fp_at, .cfa_off = e->cfa_off, .lo_off = e->lo_off,
                        .regmask = e->regmask};
    if (!(p.kind & FL_CFI_ENTRY_PLAIN) || p.nsaved > FL_CFI_CACHE_RULES) return -1;
    return plain_step(&p, e->u.at, stack, regs);
}

uint64_t fl_cfi_cache_generation(void) { return __atomic_load_n(&g_generation, __ATOMIC_ACQUIRE); }

/* Entries made before the flush keep their keys, but every identity computed afterwards differs. */
void fl_frames_cfi_cache_flush(void) { __atomic_add_fetch(&g_generation, 1, __ATOMIC_ACQ_REL); }
